/* SPDX-License-Identifier: MIT */
/*
 * conf_text: the configuration file as text, for conf.c only (not part of
 * the conf.h interface).
 */
#ifndef NFSCACHED_CONF_TEXT_H
#define NFSCACHED_CONF_TEXT_H

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

#endif
