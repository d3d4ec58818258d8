/* SPDX-License-Identifier: MIT */
/*
 * reload: swap a new configuration into the running daemon (reload.h),
 * and the exports' lives: started (at start and when a reload adds or
 * re-points one), retired (a reload removes or re-points one), closed.
 *
 * Ownership: struct daemon owns one struct conf; every live export_rt
 * borrows a pointer to its struct conf_export inside it. A reload moves
 * every live export's pointer to the new configuration; when it retires
 * an export, the old configuration is kept in a conf_hold (d->holds) for
 * the retired export's pointer, until exit. Directives fixed at start are
 * copied into the new configuration, so that d->conf always describes what
 * actually runs.
 *
 * An export's states: LIVE (in d->exports, found by daemon_export) ->
 * RETIRED (in d->retired only: its handles are NFS3ERR_STALE, its
 * connections stay open while files it wrote to have write-back bytes or
 * upstream WRITEs/COMMITs, which retire_poll_cb kicks with a COMMIT every
 * RELOAD_RETIRE_POLL) -> CLOSED (connections freed, upc is upcall_closed,
 * the files it wrote dropped from RAM and the disk tier). The export_rt
 * is never freed before exit: requests, fstates and upstream callbacks
 * borrow it. Invariants: a retired export is never in d->exports; a live
 * export's conf points into d->conf; an export is CLOSED only when none of
 * its files has write-back bytes and none of its lanes is busy, so a
 * removal never drops acknowledged data (a dead upstream keeps it
 * waiting, and it is written at the stop's flush like any other).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "cache.h"
#include "conf.h"
#include "daemon.h"
#include "disk_tier.h"
#include "fstate.h"
#include "log.h"
#include "reload.h"
#include "server.h"
#include "service.h"
#include "writeback.h"

/* How often a retired export's write-back is kicked and checked, µs. */
#define RELOAD_RETIRE_POLL_US 100000

int reload_check(const struct conf *cur, const struct conf *next, char *err,
		 size_t errlen)
{
	for (size_t i = 0; i < next->nexports; i++) {
		const struct conf_export *n = &next->exports[i];
		const struct conf_export *c = conf_export_by_id(cur, n->id);
		const struct conf_export *p = conf_export_by_path(cur, n->path);

		if (!c && p)
			return conf_error(err, errlen, next->source, n->line,
					  "export \"%s\": id changed from %u to "
					  "%u: clients' handles carry the id, so "
					  "the id of a served path cannot change "
					  "(add the path under a new name, or "
					  "restart and have clients remount)",
					  n->path, p->id, n->id);
		if (c && strcmp(c->path, n->path) != 0)
			return conf_error(err, errlen, next->source, n->line,
					  "export id %u: path changed from "
					  "\"%s\" to \"%s\": clients' handles "
					  "carry the id; remove the export and add "
					  "the new path under another id",
					  n->id, c->path, n->path);
	}
	return 0;
}

/* Keep the running value of string directive name; 1 if it had changed. */
static unsigned keep_str(const char *name, char **cur, char **next)
{
	char *t;

	if (strcmp(*cur, *next) == 0)
		return 0;
	log_warn("reload: %s changed from \"%s\" to \"%s\": keeping \"%s\" until a restart",
		 name, *cur, *next, *cur);
	t = *cur;
	*cur = *next;
	*next = t;
	return 1;
}

/* Log a kept numeric directive; 1 if it had changed. */
static unsigned keep_num(const char *name, double cur, double next)
{
	if (cur == next)
		return 0;
	log_warn("reload: %s changed from %.15g to %.15g: keeping %.15g until "
		 "a restart", name, cur, next, cur);
	return 1;
}

#define KEEP_NUM(cur, next, f) \
	(keep_num(#f, (double)(cur)->f, (double)(next)->f) ? \
	 ((next)->f = (cur)->f, 1u) : 0u)

/* Copy the directives fixed at start from cur into next. */
static unsigned keep_fixed(struct conf *cur, struct conf *next)
{
	unsigned n = 0;

	n += keep_str("listen", &cur->listen, &next->listen);
	n += keep_str("metrics_listen", &cur->metrics_listen, &next->metrics_listen);
	n += keep_str("state_dir", &cur->state_dir, &next->state_dir);
	n += keep_str("admin_socket", &cur->admin_socket, &next->admin_socket);
	n += KEEP_NUM(cur, next, nfs_port);
	n += KEEP_NUM(cur, next, mount_port);
	n += KEEP_NUM(cur, next, register_rpcbind);
	n += KEEP_NUM(cur, next, nlm);
	n += keep_str("nlm_caller_name", &cur->nlm_caller_name,
		      &next->nlm_caller_name);
	n += KEEP_NUM(cur, next, upstream_timeout);
	n += KEEP_NUM(cur, next, start_without_upstream);
	n += KEEP_NUM(cur, next, max_record_size);
	n += KEEP_NUM(cur, next, max_reply_buffer);
	n += KEEP_NUM(cur, next, max_transfer);
	n += KEEP_NUM(cur, next, upstream_connections);
	n += KEEP_NUM(cur, next, threads);
	n += KEEP_NUM(cur, next, drc_entries);
	n += KEEP_NUM(cur, next, drc_timeout);
	n += KEEP_NUM(cur, next, page_size);
	n += KEEP_NUM(cur, next, cache_size);
	n += KEEP_NUM(cur, next, cache_preallocate);
	n += keep_str("cache_dir", &cur->cache_dir, &next->cache_dir);
	n += KEEP_NUM(cur, next, disk_cache_size);
	n += KEEP_NUM(cur, next, max_files);
	n += KEEP_NUM(cur, next, hole_granularity);
	n += KEEP_NUM(cur, next, readahead_max);
	n += KEEP_NUM(cur, next, readahead_streams);
	return n;
}

/* True if a and b list the same clients entries in the same order. */
static bool same_clients(const struct conf_export *a,
			 const struct conf_export *b)
{
	if (a->nclients != b->nclients)
		return false;
	for (size_t i = 0; i < a->nclients; i++)
		if (!conf_client_equal(&a->clients[i], &b->clients[i]))
			return false;
	return true;
}

/* Append word to the comma-separated list buf[0..len). */
static void add_word(char *buf, size_t len, const char *word)
{
	size_t used = strlen(buf);

	snprintf(buf + used, len - used, "%s%s", used ? ", " : "", word);
}

/* Log one line naming what changed in export o -> n, if anything. */
static void log_export_changes(const struct conf_export *o,
			       const struct conf_export *n)
{
	char what[160] = "";

	if (!same_clients(o, n))
		add_word(what, sizeof(what), "clients");
	if (o->read_only != n->read_only)
		add_word(what, sizeof(what), "read_only");
	if (o->root_squash != n->root_squash)
		add_word(what, sizeof(what), "root_squash");
	if (o->all_squash != n->all_squash)
		add_word(what, sizeof(what), "all_squash");
	if (o->anonuid != n->anonuid || o->anongid != n->anongid)
		add_word(what, sizeof(what), "anonuid/anongid");
	if (o->secure != n->secure)
		add_word(what, sizeof(what), "secure");
	if (o->acregmin != n->acregmin || o->acregmax != n->acregmax ||
	    o->acdirmin != n->acdirmin || o->acdirmax != n->acdirmax)
		add_word(what, sizeof(what), "attribute timeouts");
	if (o->negative_timeout != n->negative_timeout)
		add_word(what, sizeof(what), "negative_timeout");
	if (o->strict != n->strict)
		add_word(what, sizeof(what), "strict");
	if (what[0])
		log_info("reload: export \"%s\": new %s", n->path, what);
}

/* Log one line naming the global settings a reload changes at once. */
static void log_global_changes(const struct conf *o, const struct conf *n)
{
	char what[512] = "", one[96];

#define NEW_NUM(f)                                                          \
	do {                                                                \
		if ((double)o->f != (double)n->f) {                         \
			snprintf(one, sizeof(one), "%s %.15g (was %.15g)",  \
				 #f, (double)n->f, (double)o->f);           \
			add_word(what, sizeof(what), one);                  \
		}                                                           \
	} while (0)
	NEW_NUM(max_requests_per_conn);
	NEW_NUM(record_timeout);
	NEW_NUM(idle_timeout);
	NEW_NUM(max_connections);
	NEW_NUM(max_connections_per_client);
	NEW_NUM(meta_cache_size);
	NEW_NUM(writeback_delay);
	NEW_NUM(dirty_limit);
	NEW_NUM(writeback_wsize);
	NEW_NUM(writeback_commit_delay);
	NEW_NUM(shutdown_flush_timeout);
	NEW_NUM(stale_on_error);
#undef NEW_NUM
	if (what[0])
		log_info("reload: new %s", what);
}

/* Pass upstream state changes on to the service (which logs them); arg is
 * the export. */
static void upstream_state_changed(struct upstream *u, enum upstream_state st,
				   void *arg)
{
	struct export_rt *ex = arg;

	service_upstream_state(ex->d, ex, st, upstream_last_error(u));
}

struct export_rt *reload_export_start(struct daemon *d,
				      const struct conf_export *e)
{
	struct export_rt *ex = calloc(1, sizeof(*ex));
	struct upstream_params p = {
		.server = e->url.server,
		.dns = d->dns,
		.nfs_port = e->url.nfs_port,
		.mount_port = e->url.mount_port,
		.export_path = e->url.path,
		.max_transfer = d->conf->max_transfer,
		.call_timeout = d->conf->upstream_timeout,
	};

	if (!ex)
		return NULL;
	ex->d = d;
	ex->conf = e;
	ex->ac_reg.min = e->acregmin;
	ex->ac_reg.max = e->acregmax;
	ex->ac_dir.min = e->acdirmin;
	ex->ac_dir.max = e->acdirmax;
	if (upcall_lanes_start(&ex->lanes, d->conf->upstream_connections,
			       d->base, &p, upstream_state_changed, ex) != 0) {
		free(ex);
		return NULL;
	}
	ex->upc.ops = &upcall_libnfs;
	ex->upc.impl = &ex->lanes;
	return ex;
}

/* Close ex's connections and free it (an export never served, or exit). */
static void export_free(struct export_rt **exp)
{
	struct export_rt *ex = *exp;

	*exp = NULL;
	if (!ex)
		return;
	upcall_lanes_close(&ex->lanes);
	free(ex);
}

void reload_exports_free(struct daemon *d)
{
	struct conf_hold *h;

	for (size_t i = 0; i < d->nexports; i++)
		export_free(&d->exports[i]);
	for (size_t i = 0; i < d->nretired; i++)
		export_free(&d->retired[i]);
	free(d->exports);
	free(d->retired);
	d->exports = d->retired = NULL;
	d->nexports = d->nretired = 0;
	while ((h = d->holds)) {
		d->holds = h->next;
		conf_free(&h->conf);
		free(h);
	}
	if (d->retire_timer)
		event_free(d->retire_timer);
	d->retire_timer = NULL;
}

bool reload_exports_busy(const struct daemon *d)
{
	for (size_t i = 0; i < d->nexports; i++)
		if (upcall_lanes_busy(&d->exports[i]->lanes))
			return true;
	for (size_t i = 0; i < d->nretired; i++)
		if (upcall_lanes_busy(&d->retired[i]->lanes))
			return true;
	return false;
}

size_t reload_retiring(const struct daemon *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->nretired; i++)
		n += !d->retired[i]->closed;
	return n;
}

/* A retired export's write-back wait ended (done, or timed out after
 * upstream_timeout: the next poll waits again). */
static void retire_waited(struct daemon *d, nfsstat3 status, void *arg)
{
	struct export_rt *ex = arg;

	(void)d;
	(void)status;
	ex->retire_waits--;
}

/* Write back (and COMMIT) every file of ex that has write-back bytes;
 * true if one has them or an upstream WRITE/COMMIT. A kick alone is not
 * enough: in the background the tail of a file written in the last
 * writeback_delay waits for more (wb_pump's keep_tail), and no more can
 * come through a retired export. A waiter, as a client's COMMIT has, takes
 * everything; one per file at a time, while the previous ones last. */
static bool retire_kick(struct daemon *d, struct export_rt *ex)
{
	struct cfile *f, *next;
	bool busy = false, wait = ex->retire_waits == 0;

	for (f = cache_wb_file_first(d->cache); f; f = next) {
		struct fstate *fs = fstate_find(f);

		next = cache_wb_file_next(d->cache, f);
		if (!fs || fs->ex != ex)
			continue;
		busy = true;
		if (!wait) {
			writeback_kick(d, f, ex, true);
			continue;
		}
		ex->retire_waits++;
		if (writeback_wait(d, f, ex, WB_WAIT_ALL, 0, 0, retire_waited,
				   ex) != 0) {
			ex->retire_waits--;
			writeback_kick(d, f, ex, true);
		}
	}
	return busy;
}

/* What retire_drop_one drops: the files of ex, counted in n. */
struct retire_drop {
	struct export_rt *ex;
	size_t n;
};

/* Drop f's clean data, attributes and disk-tier pages if it is rd's. */
static void retire_drop_one(struct cache *c, struct cfile *f,
			    struct fstate *fs, void *arg)
{
	struct retire_drop *rd = arg;
	const uint8_t *fh;
	size_t len;

	if (fs->ex != rd->ex)
		return;
	fh = cfile_fh(f, &len);
	disk_tier_forget(rd->ex->d, fh, len);
	cfile_invalidate(c, f);
	cfile_attr_expire(f);
	rd->n++;
}

/* Drop what the cache holds of the files ex wrote to (their fstate names
 * ex): RAM data, attributes, disk-tier pages. All are clean now. */
static size_t retire_drop(struct daemon *d, struct export_rt *ex)
{
	struct retire_drop rd = { .ex = ex, .n = 0 };

	cache_owner_each(d->cache, retire_drop_one, &rd);
	return rd.n;
}

/* Close retired export ex if nothing of it waits; true once closed. */
static bool retire_step(struct daemon *d, struct export_rt *ex)
{
	size_t n;

	if (ex->closed)
		return true;
	if (retire_kick(d, ex) || upcall_lanes_busy(&ex->lanes))
		return false;
	n = retire_drop(d, ex);
	upcall_lanes_close(&ex->lanes);
	ex->upc.ops = &upcall_closed;
	ex->upc.impl = NULL;
	ex->closed = true;
	log_info("reload: export \"%s\" (id %u) retired: nothing left to write "
		 "back to %s, connection closed, %zu written file%s dropped "
		 "from the cache", ex->conf->path, ex->conf->id,
		 ex->conf->upstream, n, n == 1 ? "" : "s");
	return true;
}

/* Every RELOAD_RETIRE_POLL_US: move the retired exports towards closed. */
static void retire_poll_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	struct timeval tv = { 0, RELOAD_RETIRE_POLL_US };
	bool open = false;

	(void)fd;
	(void)what;
	for (size_t i = 0; i < d->nretired; i++)
		if (!retire_step(d, d->retired[i]))
			open = true;
	if (open && !d->stopping)
		mclock_timer_add(d->retire_timer, &tv);
}

/* Keep ex (out of d->exports already; room reserved in d->retired) until
 * it can close; its conf points into hold's configuration. */
static void retire(struct daemon *d, struct export_rt *ex,
		   struct conf_hold *hold)
{
	d->retired[d->nretired++] = ex;
	ex->hold = hold;
}

/* What a reload does to the exports, decided before anything changes. */
struct export_plan {
	struct export_rt **next;	/* next->nexports: kept or started */
	struct export_rt **gone;	/* of d->exports: removed, re-pointed */
	size_t ngone;
	struct conf_hold *hold;		/* for the old configuration, when
					 * an export is retired */
};

/* Make room in d->retired for pl's retired exports and a hold for the old
 * configuration they keep pointing into; false on ENOMEM. */
static bool reserve_retired(struct daemon *d, struct export_plan *pl)
{
	struct export_rt **r = realloc(d->retired, (d->nretired + pl->ngone) *
				       sizeof(*r));

	if (!r)
		return false;
	d->retired = r;
	pl->hold = calloc(1, sizeof(*pl->hold));
	return pl->hold != NULL;
}

/* Fill plan for next: keep exports with the same id and upstream, start
 * the rest. Returns 0, or -1 (ENOMEM, an upstream client that cannot be
 * made: "export PATH: ..." in err) with nothing changed. */
static int plan_exports(struct daemon *d, const struct conf *next,
			struct export_plan *pl, char *err, size_t errlen)
{
	err[0] = '\0';
	pl->next = calloc(next->nexports + 1, sizeof(*pl->next));
	pl->gone = calloc(d->nexports + 1, sizeof(*pl->gone));
	if (!pl->next || !pl->gone)
		goto fail;
	for (size_t i = 0; i < next->nexports; i++) {
		const struct conf_export *e = &next->exports[i];
		struct export_rt *ex = daemon_export(d, e->id);

		if (ex && strcmp(ex->conf->upstream, e->upstream) == 0) {
			pl->next[i] = ex;
			continue;
		}
		pl->next[i] = reload_export_start(d, e);
		if (!pl->next[i]) {
			snprintf(err, errlen, "export \"%s\": cannot start its "
				 "upstream client (%s)", e->path, e->upstream);
			goto fail;
		}
	}
	for (size_t i = 0; i < d->nexports; i++) {
		struct export_rt *ex = d->exports[i];
		const struct conf_export *e = conf_export_by_id(next, ex->conf->id);

		if (!e || strcmp(ex->conf->upstream, e->upstream) != 0)
			pl->gone[pl->ngone++] = ex;
	}
	if (pl->ngone && !reserve_retired(d, pl))
		goto fail;
	return 0;
fail:
	for (size_t i = 0; pl->next && i < next->nexports; i++)
		if (pl->next[i] != daemon_export(d, next->exports[i].id))
			export_free(&pl->next[i]);
	free(pl->next);
	free(pl->gone);
	free(pl->hold);
	if (!err[0])
		snprintf(err, errlen, "out of memory");
	return -1;
}

/* Log what a reload does to the exports and count it. */
static void log_export_plan(struct daemon *d, const struct conf *next,
			    const struct export_plan *pl)
{
	for (size_t i = 0; i < next->nexports; i++) {
		const struct conf_export *e = &next->exports[i];
		struct export_rt *old = daemon_export(d, e->id);

		if (old == pl->next[i])
			continue;
		if (old) {
			log_info("reload: export \"%s\" now points at %s (was %s): "
				 "its cache is dropped once what it holds is "
				 "written back to the old upstream; clients must "
				 "remount", e->path, e->upstream,
				 old->conf->upstream);
			d->exports_repointed++;
		} else {
			log_info("reload: export \"%s\" added (id %u, upstream %s)",
				 e->path, e->id, e->upstream);
			d->exports_added++;
		}
	}
	for (size_t i = 0; i < pl->ngone; i++) {
		const struct export_rt *ex = pl->gone[i];

		if (conf_export_by_id(next, ex->conf->id))
			continue;
		log_info("reload: export \"%s\" (id %u) removed: its handles get "
			 "NFS3ERR_STALE; what it holds unwritten goes to %s "
			 "before its connection closes", ex->conf->path,
			 ex->conf->id, ex->conf->upstream);
		d->exports_removed++;
	}
}

/* Point the kept exports at their entry in next, with its timeouts. */
static void repoint_confs(struct daemon *d, const struct conf *next,
			  const struct export_plan *pl)
{
	for (size_t i = 0; i < next->nexports; i++) {
		const struct conf_export *e = &next->exports[i];
		struct export_rt *ex = pl->next[i];

		if (daemon_export(d, e->id) == ex)
			log_export_changes(ex->conf, e);
		else
			service_export_added(d, ex);
		ex->conf = e;
		ex->ac_reg.min = e->acregmin;
		ex->ac_reg.max = e->acregmax;
		ex->ac_dir.min = e->acdirmin;
		ex->ac_dir.max = e->acdirmax;
	}
}

int reload_apply(struct daemon *d, struct conf **nextp, unsigned *kept,
		 char *err, size_t errlen)
{
	struct conf *next = *nextp, *old = d->conf;
	struct export_plan pl = { 0 };
	struct timeval tv = { 0, RELOAD_RETIRE_POLL_US };

	*kept = 0;
	if (plan_exports(d, next, &pl, err, errlen) != 0)
		return -1;
	*nextp = NULL;
	*kept = keep_fixed(old, next);
	log_global_changes(old, next);
	log_export_plan(d, next, &pl);
	repoint_confs(d, next, &pl);
	for (size_t i = 0; i < pl.ngone; i++)
		retire(d, pl.gone[i], pl.hold);
	free(d->exports);
	free(pl.gone);
	d->exports = pl.next;
	d->nexports = next->nexports;
	if (strcmp(old->log_level, next->log_level) != 0 &&
	    log_set_level_name(next->log_level) == 0)
		log_info("reload: log_level is now %s", next->log_level);
	d->conf = next;
	server_reconf(d->server);
	if (pl.hold) {
		pl.hold->conf = old;
		pl.hold->next = d->holds;
		d->holds = pl.hold;
		if (!d->retire_timer)
			d->retire_timer = evtimer_new(d->base, retire_poll_cb, d);
		if (d->retire_timer)
			mclock_timer_add(d->retire_timer, &tv);
	} else {
		conf_free(&old);
	}
	return 0;
}
