/* SPDX-License-Identifier: MIT */
/*
 * procstat: the process's own resource use, exported as the process_*
 * metrics every Prometheus client library exposes (the names, types and
 * help texts of client_golang's process collector, which reads the same
 * Linux /proc files: prometheus.io/docs/instrumenting/writing_clientlibs,
 * "Process metrics"). Read at scrape time; nothing is kept.
 */
#ifndef NFSCACHED_DAEMON_PROCSTAT_H
#define NFSCACHED_DAEMON_PROCSTAT_H

#include <stdint.h>

/*
 * Declared once for struct procstat and for /metrics (rows as in
 * server.h's SERVER_METRICS; daemon/ctl/metrics.c renders them). These are
 * the only families without the nfscached_ prefix, by convention.
 */
#define PROCSTAT_METRICS(X, A) \
	X(double, cpu_seconds, counter, "process_cpu_seconds_total", \
	  "Total user and system CPU time spent in seconds.") \
	X(uint64_t, open_fds, gauge, "process_open_fds", \
	  "Number of open file descriptors.") \
	X(uint64_t, max_fds, gauge, "process_max_fds", \
	  "Maximum number of open file descriptors.") \
	X(uint64_t, virtual_memory_bytes, gauge, "process_virtual_memory_bytes", \
	  "Virtual memory size in bytes.") \
	X(uint64_t, resident_memory_bytes, gauge, \
	  "process_resident_memory_bytes", "Resident memory size in bytes.") \
	X(double, start_time, gauge, "process_start_time_seconds", \
	  "Start time of the process since unix epoch in seconds.")

struct procstat {
#define X(t, f, k, n, h) t f;
	PROCSTAT_METRICS(X, )
#undef X
};

/*
 * Fill *st for this process from /proc/self/stat (utime, stime, vsize,
 * rss, starttime: proc(5)), /proc/stat (btime), /proc/self/fd and
 * getrlimit(RLIMIT_NOFILE) (the soft limit). A value whose source cannot
 * be read is left 0. Returns 0, or -1 when /proc/self/stat could not be
 * read or parsed (the fd and limit values are filled all the same).
 */
int procstat_get(struct procstat *st);

#endif
