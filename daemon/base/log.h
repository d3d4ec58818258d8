/* SPDX-License-Identifier: MIT */
/*
 * log: one line per event on stderr (which the journal picks up), with a
 * level prefix systemd understands ("<3>".."<7>") when stderr is the
 * journal, a timestamp and a plain "error:".."debug:" prefix otherwise
 * ("2026-12-02T05:43:21.123+01:00 nfscached: info: ..."). No per-request
 * lines at the default level (info).
 */
#ifndef NFSCACHED_DAEMON_LOG_H
#define NFSCACHED_DAEMON_LOG_H

#include <stddef.h>
#include <time.h>

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

/* Set the threshold from a name ("error", "warn", "info", "debug").
 * Returns 0, or -1 for an unknown name (the level is unchanged). */
int log_set_level_name(const char *name);

/* True when lines of level would be printed. */
int log_enabled(enum log_level level);

/* Print one line at level; fmt is printf-style, no trailing newline. */
void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_enabled(LOG_LEVEL_DEBUG)) \
	log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__); } while (0)

/*
 * Where lines go instead of stderr: fn(arg, level, text) for each line
 * the level lets through (text without prefix or newline, borrowed for
 * the call); NULL restores stderr. For tests that count or read lines;
 * set it before any other thread logs.
 */
typedef void (*log_sink_fn)(void *arg, enum log_level level, const char *text);
void log_set_sink(log_sink_fn fn, void *arg);

/*
 * Write ts (CLOCK_REALTIME) into buf[0..len) as RFC 3339 local time with
 * milliseconds and the UTC offset, "2026-12-02T05:43:21.123+01:00" (the
 * time a line outside the journal starts with); "SECONDS.mmm" if the local
 * time cannot be had. Always terminated.
 */
void log_format_time(const struct timespec *ts, char *buf, size_t len);

/* Print an error and exit(1). Only before serving or for impossible states. */
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
