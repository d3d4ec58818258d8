/* SPDX-License-Identifier: MIT */
/*
 * conf_text: the configuration file as text, for conf.c only (not part of
 * the conf.h interface).
 */
#ifndef NFSCACHED_CONF_TEXT_H
#define NFSCACHED_CONF_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Read the regular file at path (at most 4 MiB) into a malloc'd,
 * NUL-terminated buffer the caller frees, its length in *lenp. Returns
 * NULL with errno set: fopen's errno, EISDIR (a directory), EINVAL (not a
 * regular file), EFBIG (over 4 MiB), EIO (a read error), EAGAIN (it grew
 * while read), ENOMEM.
 */
char *conf_read_text(const char *path, size_t *lenp);

/*
 * Blank out, in place, the comments of buf[0..len) outside quoted strings:
 * '#' to the end of the line, and at the start of a token '//' to the end
 * of the line or a block comment. Newlines stay, so lines keep their
 * numbers: libconfuse 3.3 counts a comment line as three lines, which
 * would put every later error on the wrong line. Returns the line (from 1)
 * where a block comment that is never closed opens (it would swallow the
 * rest of the file), or 0.
 */
int conf_strip_comments(char *buf, size_t len);

/*
 * Find a string or '{' still open at the end of buf[0..len) (comments
 * already blanked): libconfuse takes the end of the file as the end of an
 * open section, and names the last line for an open string. Returns the
 * reason (a static string) and sets *line to the line where the open one
 * began, or returns NULL.
 */
const char *conf_find_unclosed(const char *buf, size_t len, int *line);

/* Called by conf_scan for each problem found: line (from 1), reason. */
typedef void (*conf_scan_fn)(void *arg, int line, const char *why);

/* Tell conf_scan whether name is a directive (or, at the top, a section)
 * of the scope: section NULL for the top, else the section's name. */
typedef bool (*conf_known_fn)(const char *section, const char *name);

/*
 * Walk the statements of buf[0..len) (comments already blanked, nothing
 * left open) as libconfuse will, and report through fn, at their lines:
 *  - a directive given twice in one scope (the global scope or one
 *    section), naming the line of the first ("+=" appends, not counted);
 *  - a name known() does not know ("unknown directive"; an unknown
 *    section is skipped whole);
 *  - habits of other NFS servers' files, with the nfscached form:
 *    a ';' after a value (ganesha.conf), a block without a title such as
 *    ganesha's "EXPORT {", a line starting with '/' (an exports(5) line).
 * What a habit covers (the ';', the block, the line) is blanked in place so
 * that libconfuse parses the rest of the file and reports its other errors
 * without repeating these. Stops at the first token it does not expect
 * (libconfuse reports that one). Returns 0 when it read the whole file,
 * -1 when it stopped early: then it may have missed unknown names, and
 * libconfuse must not be told to ignore them.
 */
int conf_scan(char *buf, size_t len, conf_scan_fn fn, conf_known_fn known,
	      void *arg);

#endif
