/* SPDX-License-Identifier: MIT */
/*
 * conf_text: the configuration file as text, before libconfuse sees it:
 * reading it whole, blanking comments so that libconfuse's line numbers
 * stay true, and finding a string or section left open (conf_text.h).
 */
#include "conf_text.h"

#include <errno.h>
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
