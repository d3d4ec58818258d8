/* SPDX-License-Identifier: MIT */
/*
 * The three functions daemon/main.c gives the daemon library. The dispatch
 * table links the op handlers, which refer to them; the decoders never
 * call them, so each aborts.
 */
#include <stdlib.h>

#include "daemon.h"

double daemon_now(void)
{
	abort();
}

const struct cache_ac *daemon_ac(const struct export_rt *ex, uint32_t type)
{
	(void)ex;
	(void)type;
	abort();
}

struct export_rt *daemon_export(struct daemon *d, unsigned id)
{
	(void)d;
	(void)id;
	abort();
}
