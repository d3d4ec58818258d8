/* SPDX-License-Identifier: MIT */
/*
 * conf_text: the configuration file as text, before libconfuse sees it:
 * reading it whole, blanking comments so that libconfuse's line numbers
 * stay true, and finding a string or section left open (conf_text.h).
 */
#include "conf_text.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* True if a token may start at buf[i]: after a blank or a symbol. */
static bool token_start(const char *buf, size_t i)
{
	return i == 0 || strchr(" \t\r\n{}(),=+", buf[i - 1]);
}

/* Blank buf[i..) with spaces up to the end of a comment, keeping
 * newlines; return the index of its last character. */
static size_t blank_comment(char *buf, size_t i, size_t len, bool block)
{
	for (; i < len; i++) {
		if (!block && buf[i] == '\n')
			return i - 1;
		if (block && buf[i] == '*' && i + 1 < len && buf[i + 1] == '/') {
			buf[i] = buf[i + 1] = ' ';
			return i + 1;
		}
		if (buf[i] != '\n')
			buf[i] = ' ';
	}
	return len;
}

int conf_strip_comments(char *buf, size_t len)
{
	char quote = 0;
	int n = 1;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i], next = i + 1 < len ? buf[i + 1] : '\0';

		if (c == '\n')
			n++;
		if (quote) {
			if (c == '\\' && ++i < len && buf[i] == '\n')
				n++;
			else if (c == quote)
				quote = 0;
		} else if (c == '"' || c == '\'') {
			quote = c;
		} else if (c == '#' ||
			   (c == '/' && next == '/' && token_start(buf, i))) {
			i = blank_comment(buf, i, len, false);
		} else if (c == '/' && next == '*' && token_start(buf, i)) {
			size_t from = i + 2;

			buf[i] = buf[i + 1] = ' ';
			i = blank_comment(buf, from, len, true);
			if (i >= len)
				return n;
			for (size_t k = from; k < i; k++)
				n += buf[k] == '\n';
		}
	}
	return 0;
}

const char *conf_find_unclosed(const char *buf, size_t len, int *line)
{
	int n = 1, depth = 0, brace = 0, string = 0;
	char quote = 0;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (c == '\n')
			n++;
		if (quote) {
			if (c == '\\' && i + 1 < len && buf[++i] == '\n')
				n++;
			else if (c == quote)
				quote = 0;
		} else if (c == '"' || c == '\'') {
			quote = c;
			string = n;
		} else if (c == '{' && depth++ == 0) {
			brace = n;
		} else if (c == '}' && depth > 0) {
			depth--;
		}
	}
	*line = quote ? string : brace;
	if (quote)
		return "string is never closed";
	return depth ? "'{' is never closed" : NULL;
}

char *conf_read_text(const char *path, size_t *lenp)
{
	enum { MAX_CONFIG = 4 << 20 };
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = fopen(path, "r");

	if (!fp)
		return NULL;
	if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > MAX_CONFIG) {
		errno = S_ISDIR(st.st_mode) ? EISDIR :
			S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf) {
		len = fread(buf, 1, (size_t)st.st_size + 1, fp);
		if (ferror(fp) || len > (size_t)st.st_size) {
			free(buf);
			buf = NULL;
			errno = ferror(fp) ? EIO : EAGAIN;	/* it grew */
			goto out;
		}
		buf[len] = '\0';
		*lenp = len;
	}
out:
	fclose(fp);
	return buf;
}

/* ---- conf_scan: statements, duplicates and other servers' habits ---- */

enum { T_EOF = 0, T_WORD = 256, T_STR };

struct scan {
	char *buf;
	size_t len, pos;
	int line;
	conf_scan_fn fn;
	conf_known_fn known;
	void *arg;
	int reports;
	bool stopped;		/* met a token it does not expect */
	int type;		/* of the last token read */
	size_t start, end;	/* its bytes */
	int tline;		/* its line */
};

/* One directive name seen in a scope, and where. */
struct seen {
	char *name;
	int line;
};

/* True for a byte libconfuse keeps inside an unquoted word. */
static bool word_byte(char c)
{
	return !isspace((unsigned char)c) && !strchr("{}=+,()\"'", c);
}

/* Read the next token of s (libconfuse's: a symbol, a string, a word). */
static int scan_next(struct scan *s)
{
	while (s->pos < s->len && isspace((unsigned char)s->buf[s->pos]))
		s->line += s->buf[s->pos++] == '\n';
	s->start = s->pos;
	s->tline = s->line;
	if (s->pos >= s->len) {
		s->type = T_EOF;
	} else if (strchr("{}=+,()", s->buf[s->pos])) {
		s->type = (unsigned char)s->buf[s->pos++];
	} else if (s->buf[s->pos] == '"' || s->buf[s->pos] == '\'') {
		char q = s->buf[s->pos++];

		while (s->pos < s->len && s->buf[s->pos] != q) {
			if (s->buf[s->pos] == '\\' && s->pos + 1 < s->len)
				s->pos++;
			s->line += s->buf[s->pos++] == '\n';
		}
		s->pos += s->pos < s->len;
		s->type = T_STR;
	} else {
		while (s->pos < s->len && word_byte(s->buf[s->pos]))
			s->pos++;
		s->type = T_WORD;
	}
	s->end = s->pos;
	return s->type;
}

/* The type of the token after the current one, without reading it. */
static int scan_peek(const struct scan *s)
{
	struct scan t = *s;

	return scan_next(&t);
}

/* Blank buf[from..to) keeping newlines. */
static void scan_blank(struct scan *s, size_t from, size_t to)
{
	for (size_t i = from; i < to && i < s->len; i++)
		if (s->buf[i] != '\n')
			s->buf[i] = ' ';
}

static void scan_report(struct scan *s, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void scan_report(struct scan *s, int line, const char *fmt, ...)
{
	char why[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	s->fn(s->arg, line, why);
	s->reports++;
}

static const char semicolon_why[] =
	"';' after a value is ganesha.conf syntax; nfscached ends a "
	"directive at its value: remove the ';'";

/* After a value: report and blank a ';' glued to it or standing next. */
static void scan_semicolon(struct scan *s)
{
	if (s->type == T_WORD && s->end > s->start &&
	    s->buf[s->end - 1] == ';') {
		scan_report(s, s->tline, semicolon_why);
		scan_blank(s, s->end - 1, s->end);
		return;
	}
	if (scan_peek(s) == T_WORD) {
		struct scan t = *s;

		scan_next(&t);
		if (t.end - t.start == 1 && t.buf[t.start] == ';') {
			*s = t;
			scan_report(s, s->tline, semicolon_why);
			scan_blank(s, s->start, s->end);
		}
	}
}

/* Read the value after '=' (a word, a string or a {list}). */
static int scan_value(struct scan *s)
{
	int t = scan_next(s);

	if (t == '{') {
		while ((t = scan_next(s)) != '}')
			if (t != T_WORD && t != T_STR && t != ',')
				return -1;
	} else if (t != T_WORD && t != T_STR) {
		return -1;
	}
	scan_semicolon(s);
	return 0;
}

/* Note name in a scope's seen list; report it unknown, or the second
 * time it is set. */
static int scan_note(struct scan *s, struct seen **seen, size_t *n,
		     const char *title, size_t from, size_t to, int line,
		     bool assign)
{
	char *name = strndup(s->buf + from, to - from);
	struct seen *grown;

	if (!name)
		return -1;
	if (!s->known(title ? "export" : NULL, name)) {
		scan_report(s, line, "%s%s%sunknown directive '%s'",
			    title ? "export \"" : "", title ? title : "",
			    title ? "\": " : "", name);
		free(name);
		return 0;
	}
	for (size_t i = 0; !assign && i < *n; i++)
		if (strcmp((*seen)[i].name, name) == 0)
			return free(name), 0;	/* "+=" appends */
	for (size_t i = 0; i < *n; i++) {
		if (strcmp((*seen)[i].name, name) != 0)
			continue;
		scan_report(s, line, "%s%s%s%s given twice: lines %d and %d "
			    "(keep one)", title ? "export \"" : "",
			    title ? title : "", title ? "\": " : "", name,
			    (*seen)[i].line, line);
		free(name);
		return 0;
	}
	grown = realloc(*seen, (*n + 1) * sizeof(**seen));
	if (!grown) {
		free(name);
		return -1;
	}
	*seen = grown;
	grown[*n].name = name;
	grown[(*n)++].line = line;
	return 0;
}

/* Blank the untitled block the word at from opens (the '{' is next). */
static void scan_skip_block(struct scan *s, size_t from)
{
	int depth = 0, t;

	while ((t = scan_next(s)) != T_EOF) {
		if (t == '{')
			depth++;
		else if (t == '}' && --depth == 0)
			break;
	}
	scan_blank(s, from, s->end);
}

/* A statement starting with a word that is not "NAME =": the habits. */
static int scan_habit(struct scan *s)
{
	size_t from = s->start, wlen = s->end - s->start;
	int line = s->tline;

	if (s->buf[from] == '/') {
		size_t eol = from;

		while (eol < s->len && s->buf[eol] != '\n')
			eol++;
		scan_report(s, line, "\"%.*s\" looks like an exports(5) line; "
			    "nfscached's form is export \"/PATH\" { id = N  "
			    "upstream = \"nfs://HOST/PATH\"  clients = "
			    "{\"ADDR/PREFIX\"} }", (int)(eol - from > 60 ? 60 :
			    eol - from), s->buf + from);
		scan_blank(s, from, eol);
		s->pos = eol;
		return 0;
	}
	if (wlen == 1 && s->buf[from] == ';') {
		scan_report(s, line, semicolon_why);
		scan_blank(s, from, s->end);
		return 0;
	}
	if (scan_peek(s) != '{')
		return -1;
	scan_report(s, line, "\"%.*s {\" is ganesha.conf syntax; nfscached's "
		    "export is export \"/PATH\" { id = N  upstream = "
		    "\"nfs://HOST/PATH\" }", (int)(wlen > 40 ? 40 : wlen),
		    s->buf + from);
	scan_skip_block(s, from);
	return 0;
}

/* A titled section "NAME TITLE {" at the word from..to: 1 when it is an
 * export section at the top (to scan), 0 when it was reported and
 * skipped, -1 when it is not followed by '{'. */
static int scan_section(struct scan *s, const char *title, size_t from,
			size_t to, int line)
{
	struct scan t = *s;
	char name[16];
	size_t n = to - from;

	scan_next(&t);
	if (scan_next(&t) != '{')
		return -1;
	snprintf(name, sizeof(name), "%.*s", (int)(n < 15 ? n : 15),
		 s->buf + from);
	if (!title && n < 15 && s->known(NULL, name) &&
	    strcmp(name, "export") == 0)
		return 1;
	scan_report(s, line, "%s%s%sunknown section '%.*s'", title ?
		    "export \"" : "", title ? title : "", title ? "\": " : "",
		    (int)(n > 40 ? 40 : n), s->buf + from);
	scan_skip_block(s, from);
	return 0;
}

/* Scan the statements of one scope up to its '}' (or the end of the
 * file at the top); title names the section, NULL at the top. */
static int scan_scope(struct scan *s, const char *title)
{
	struct seen *seen = NULL;
	size_t nseen = 0;
	int rc = -1, t;

	while ((t = scan_next(s)) == T_WORD) {
		size_t from = s->start, to = s->end;
		int line = s->tline, p = scan_peek(s);

		if (p == '=' || p == '+') {
			scan_next(s);
			if (p == '+' && scan_next(s) != '=')
				goto out;
			if (scan_note(s, &seen, &nseen, title, from, to, line,
				      p == '=') != 0)
				goto out;
			if (scan_value(s) != 0)
				goto out;
		} else if ((p == T_STR || p == T_WORD) && s->buf[from] != '/') {
			char *name;
			int k = scan_section(s, title, from, to, line);

			if (k < 0)
				goto out;
			if (k == 0)
				continue;
			scan_next(s);
			name = strndup(s->buf + s->start + (p == T_STR),
				       s->end - s->start - 2 * (p == T_STR));
			if (!name || scan_next(s) != '{' ||
			    scan_scope(s, name) != 0) {
				free(name);
				goto out;
			}
			free(name);
		} else if (scan_habit(s) != 0) {
			goto out;
		}
	}
	rc = (t == '}' && title) || (t == T_EOF && !title) ? 0 : -1;
	if (rc)
		s->stopped = true;
out:
	for (size_t i = 0; i < nseen; i++)
		free(seen[i].name);
	free(seen);
	return rc;
}

int conf_scan(char *buf, size_t len, conf_scan_fn fn, conf_known_fn known,
	      void *arg)
{
	struct scan s = { .buf = buf, .len = len, .line = 1, .fn = fn,
			  .known = known, .arg = arg };

	if (scan_scope(&s, NULL) != 0)
		s.stopped = true;
	return s.stopped ? -1 : 0;
}
