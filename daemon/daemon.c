/* SPDX-License-Identifier: MIT */
/*
 * daemon: the helpers over struct daemon every module shares (daemon.h).
 * Kept out of main.c so that a unit test can link the handlers.
 */
#include "daemon.h"
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
		if (d->exports[i].conf->id == id)
			return &d->exports[i];
	return NULL;
}
