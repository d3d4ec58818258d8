/* SPDX-License-Identifier: MIT */
/*
 * daemon_mem_limit (daemon.h): the memory the process may use. A file of
 * its own so that a program linking the server without daemon.c (the
 * fuzzers, whose stubs stand in for daemon.c's functions) still links.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "daemon.h"

/* The memory limit of the cgroup v2 this process is in (memory.max), in
 * bytes; 0 when there is none or it cannot be read. */
static uint64_t cgroup_mem_limit(void)
{
	char line[512], path[600];
	unsigned long long v = 0;
	FILE *f = fopen("/proc/self/cgroup", "r");

	path[0] = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = 0;
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max",
				 line + 3);
		}
	if (f)
		fclose(f);
	if (!path[0] || !(f = fopen(path, "r")))
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;		/* "max": no limit */
	fclose(f);
	return v;
}

uint64_t daemon_mem_limit(void)
{
	struct rlimit rl;
	uint64_t lim = 0, cg = cgroup_mem_limit();

	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		lim = (uint64_t)rl.rlim_cur;
	if (cg && (!lim || cg < lim))
		lim = cg;
	return lim;
}
