/* SPDX-License-Identifier: MIT */
/*
 * daemon: the helpers over struct daemon every module shares (daemon.h).
 * Kept out of main.c so that a unit test can link the handlers.
 */
#include <stdio.h>

#include "daemon.h"
#include "log.h"
#include "nfs3_prot.h"

double daemon_now(void)
{
	return mclock_now();
}

const struct cache_ac *daemon_ac(const struct export_rt *ex, uint32_t type)
{
	return type == NF3DIR ? &ex->ac_dir : &ex->ac_reg;
}

struct export_rt *daemon_export(struct daemon *d, unsigned id)
{
	for (size_t i = 0; i < d->nexports; i++)
		if (d->exports[i]->conf->id == id)
			return d->exports[i];
	return NULL;
}

int daemon_cache_start(struct daemon *d, char *err, size_t len)
{
	struct cache_params cp = {
		.page_size = d->conf->page_size,
		.budget = (uint64_t)d->conf->cache_size << 20,
		.hole_granularity = d->conf->hole_granularity,
		.max_files = d->conf->max_files,
		.preallocate = d->conf->cache_preallocate,
	};
	uint64_t lim = cp.preallocate ? daemon_mem_limit() : 0;

	/* Preallocating up to the process's memory limit would have the
	 * cgroup's OOM killer end it at start (memory.max), or take the
	 * address space its threads and buffers need (RLIMIT_AS: their maps
	 * then fail): grow as needed instead, and say so. */
	if (lim && cp.budget > lim - lim / 8) {
		log_warn("cache_preallocate: cache_size %u MiB is more than "
			 "7/8 of the memory this process may use (%llu MiB: "
			 "RLIMIT_AS or the cgroup's memory.max); the cache's "
			 "memory is mapped as it grows instead",
			 d->conf->cache_size,
			 (unsigned long long)(lim >> 20));
		cp.preallocate = false;
	}

	d->cache = cache_new(&cp);
	if (!d->cache) {
		snprintf(err, len, "cannot create the cache (page_size %u)",
			 cp.page_size);
		return -1;
	}
	ra_params_default(&d->ra_params, d->conf->page_size);
	d->ra_params.max_window = d->conf->readahead_max;
	d->ra_params.cache_bytes = cp.budget;
	d->ra_params.max_streams = d->conf->readahead_streams;
	if (d->ra_params.min_window > d->ra_params.max_window)
		d->ra_params.min_window = d->ra_params.max_window;
	if (!ra_params_valid(&d->ra_params)) {
		snprintf(err, len, "readahead_max %u must be 0 or a multiple of page_size %u",
			 d->conf->readahead_max, d->conf->page_size);
		return -1;
	}
	return 0;
}
