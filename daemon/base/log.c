/* SPDX-License-Identifier: MIT */
/*
 * log: leveled one-line messages to stderr. When stderr is connected to the
 * journal (JOURNAL_STREAM matches stderr's device and inode, as
 * systemd.exec(5) documents) each line gets the sd-daemon "<N>" priority
 * prefix so journald records the level, and no time (the journal adds its
 * own). Anywhere else (a terminal, a file, a pipe to another logger) each
 * line starts with the wall-clock time, RFC 3339 in local time with
 * milliseconds and the UTC offset: "2026-12-02T05:43:21.123+01:00".
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"

static enum log_level threshold = LOG_LEVEL_INFO;
static int journal = -1;
static log_sink_fn sink;		/* a test's, or NULL: stderr */
static void *sink_arg;

static const char *const level_names[] = {
	[LOG_LEVEL_ERROR] = "error",
	[LOG_LEVEL_WARN] = "warn",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_DEBUG] = "debug",
};
static const int level_prio[] = { 3, 4, 6, 7 };

int log_set_level_name(const char *name)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			__atomic_store_n(&threshold, (enum log_level)i,
					 __ATOMIC_RELAXED);
			return 0;
		}
	}
	return -1;
}

void log_set_sink(log_sink_fn fn, void *arg)
{
	sink = fn;
	sink_arg = arg;
}

int log_enabled(enum log_level level)
{
	/* Set on loop 0 by a reload, read on every loop and thread. */
	return level <= __atomic_load_n(&threshold, __ATOMIC_RELAXED);
}

/* Tell whether stderr is the journal's stream. */
static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%lu:%lu", &dev, &ino) != 2)
		return 0;
	if (fstat(2, &st) != 0)
		return 0;
	return st.st_dev == dev && st.st_ino == ino;
}

void log_format_time(const struct timespec *ts, char *buf, size_t len)
{
	struct tm tm;
	char date[32], zone[8];

	if (!localtime_r(&ts->tv_sec, &tm) ||
	    !strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) ||
	    !strftime(zone, sizeof(zone), "%z", &tm) || strlen(zone) != 5) {
		snprintf(buf, len, "%lld.%03ld", (long long)ts->tv_sec,
			 ts->tv_nsec / 1000000);
		return;
	}
	/* %z gives +0100; RFC 3339 wants +01:00. */
	snprintf(buf, len, "%s.%03ld%.3s:%.2s", date, ts->tv_nsec / 1000000,
		 zone, zone + 3);
}

/* Print one formatted line. */
static void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char buf[1024];
	int j = __atomic_load_n(&journal, __ATOMIC_RELAXED);

	if (j < 0) {	/* any thread may find it first: the same answer */
		j = stderr_is_journal();
		__atomic_store_n(&journal, j, __ATOMIC_RELAXED);
	}
	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (sink) {
		sink(sink_arg, level, buf);
	} else if (j) {
		fprintf(stderr, "<%d>%s\n", level_prio[level], buf);
	} else {
		struct timespec ts;
		char when[48];

		clock_gettime(CLOCK_REALTIME, &ts);
		log_format_time(&ts, when, sizeof(when));
		fprintf(stderr, "%s nfscached: %s: %s\n", when,
			level_names[level], buf);
	}
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LEVEL_ERROR, fmt, ap);
	va_end(ap);
	exit(1);
}
