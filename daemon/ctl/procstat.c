/* SPDX-License-Identifier: MIT */
/*
 * procstat: the process_* metrics, read from /proc at scrape time, as
 * client_golang's process collector reads them (procstat.h). No state.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "procstat.h"

/* Seconds since the epoch at which the machine booted (/proc/stat
 * "btime"), or 0. */
static double boot_time(void)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[256];
	unsigned long long bt = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", &bt) == 1)
			break;
	fclose(f);
	return (double)bt;
}

/* Number of entries in /proc/self/fd, the directory's own fd excluded. */
static uint64_t count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	uint64_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n ? n - 1 : 0;
}

/* Fill the /proc/self/stat values of *st; 0, or -1 if unreadable. */
static int read_stat(struct procstat *st)
{
	FILE *f = fopen("/proc/self/stat", "r");
	char buf[1024], *p;
	unsigned long long utime, stime, start, vsize;
	long long rss;
	double tck = (double)sysconf(_SC_CLK_TCK);
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* comm (field 2) may hold spaces and ')': fields resume after the
	 * last ')'. Then state (3) ... utime (14), stime (15), starttime
	 * (22), vsize (23), rss (24, pages). */
	if (!(p = strrchr(buf, ')')) || tck <= 0 ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu"
		   " %*d %*d %*d %*d %*d %*d %llu %llu %lld",
		   &utime, &stime, &start, &vsize, &rss) != 5)
		return -1;
	st->cpu_seconds = (double)(utime + stime) / tck;
	st->virtual_memory_bytes = vsize;
	st->resident_memory_bytes = rss > 0 ?
		(uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
	st->start_time = boot_time() + (double)start / tck;
	return 0;
}

int procstat_get(struct procstat *st)
{
	struct rlimit rl;

	memset(st, 0, sizeof(*st));
	st->open_fds = count_fds();
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		st->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX :
			      (uint64_t)rl.rlim_cur;
	return read_stat(st);
}
