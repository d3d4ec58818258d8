/* SPDX-License-Identifier: MIT */
/*
 * conf_man: write nfscached.conf(5) from its template and the directive
 * table of conf/conf.c, so the manual's directive list cannot drift from
 * what the daemon accepts (the same table drives --dump-config and the
 * example configuration; ctest's man.conf_directives compares them).
 *
 * Usage: nfscached-conf-man TEMPLATE OUTPUT. The template is roff; a line
 * that is exactly MARK_GLOBAL or MARK_EXPORT is replaced by the global or
 * the export directives, one .TP paragraph each: the name, its help, and
 * the unit, range and default sentence --dump-config writes. Every other
 * line is copied as it is. A build tool only: it is not installed.
 */
#include "conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARK_GLOBAL ".\\\" @GLOBAL_DIRECTIVES@"
#define MARK_EXPORT ".\\\" @EXPORT_DIRECTIVES@"
#define LINE_MAX_LEN 4096

/* Write text as roff body text: backslashes escaped, no control dot or
 * quote at the start of a line. */
static void put_text(FILE *f, const char *text)
{
	if (*text == '.' || *text == '\'')
		fputs("\\&", f);
	for (const char *p = text; *p; p++) {
		if (*p == '\\')
			fputs("\\e", f);
		else if (*p == '-')
			fputs("\\-", f);
		else
			fputc(*p, f);
	}
}

/* Write the directives of one scope as .TP paragraphs; -1 on a table
 * entry that does not describe itself. */
static int put_directives(FILE *f, bool in_export)
{
	struct conf_directive_doc doc;

	for (size_t i = 0; i < conf_directive_count(); i++) {
		if (conf_directive_doc(i, &doc) != 0)
			return -1;
		if (doc.in_export != in_export)
			continue;
		fputs(".TP\n.B ", f);
		put_text(f, doc.name);
		fputc('\n', f);
		put_text(f, doc.help);
		fputs("\n.br\n", f);
		put_text(f, doc.facts);
		fputc('\n', f);
	}
	return 0;
}

/* Copy template in to out, expanding the two marks; 0 or -1. */
static int expand(FILE *in, FILE *out)
{
	char line[LINE_MAX_LEN];
	int marks = 0;

	while (fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, MARK_GLOBAL) == 0 ||
		    strcmp(line, MARK_EXPORT) == 0) {
			if (put_directives(out, strcmp(line, MARK_EXPORT) == 0))
				return -1;
			marks++;
		} else {
			fprintf(out, "%s\n", line);
		}
	}
	if (ferror(in) || marks != 2) {
		fprintf(stderr, "nfscached-conf-man: the template needs each "
			"of '%s' and '%s' once\n", MARK_GLOBAL, MARK_EXPORT);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	FILE *in, *out;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: nfscached-conf-man TEMPLATE OUTPUT\n");
		return 2;
	}
	in = fopen(argv[1], "r");
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		fclose(in);
		return 1;
	}
	rc = expand(in, out);
	fclose(in);
	if (fclose(out) != 0 || rc != 0) {
		fprintf(stderr, "nfscached-conf-man: cannot write %s\n", argv[2]);
		remove(argv[2]);
		return 1;
	}
	return 0;
}
