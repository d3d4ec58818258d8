/* SPDX-License-Identifier: MIT */
/*
 * reload: swap a new configuration into the running daemon (reload.h).
 *
 * Ownership: struct daemon owns one struct conf; every export_rt borrows a
 * pointer to its struct conf_export inside it. A reload therefore moves
 * every such pointer to the new configuration before the old one is freed,
 * all within one event-loop callback (nothing in flight keeps a
 * conf_export pointer across callbacks: handlers look the export up per
 * call). Directives fixed at start are copied into the new configuration,
 * so that d->conf always describes what actually runs.
 */
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "daemon.h"
#include "log.h"
#include "reload.h"

int reload_check(const struct conf *cur, const struct conf *next, char *err,
		 size_t errlen)
{
	for (size_t i = 0; i < next->nexports; i++) {
		const struct conf_export *n = &next->exports[i];
		const struct conf_export *c = conf_export_by_id(cur, n->id);

		if (!c)
			return conf_error(err, errlen, next->source, n->line,
					  "export \"%s\" (id %u) is new: adding "
					  "an export needs a restart", n->path,
					  n->id);
		if (strcmp(c->path, n->path) != 0)
			return conf_error(err, errlen, next->source, n->line,
					  "export id %u: path changed from "
					  "\"%s\" to \"%s\": that needs a restart",
					  n->id, c->path, n->path);
		if (strcmp(c->upstream, n->upstream) != 0)
			return conf_error(err, errlen, next->source, n->line,
					  "export \"%s\" (id %u): upstream "
					  "changed from %s to %s: that needs a "
					  "restart", n->path, n->id, c->upstream,
					  n->upstream);
	}
	for (size_t i = 0; i < cur->nexports; i++) {
		const struct conf_export *c = &cur->exports[i];

		if (!conf_export_by_id(next, c->id))
			return conf_error(err, errlen, next->source, 0,
					  "export \"%s\" (id %u) is gone: "
					  "removing an export needs a restart",
					  c->path, c->id);
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
	n += KEEP_NUM(cur, next, upstream_timeout);
	n += KEEP_NUM(cur, next, start_without_upstream);
	n += KEEP_NUM(cur, next, max_record_size);
	n += KEEP_NUM(cur, next, max_reply_buffer);
	n += KEEP_NUM(cur, next, max_transfer);
	n += KEEP_NUM(cur, next, upstream_connections);
	n += KEEP_NUM(cur, next, drc_entries);
	n += KEEP_NUM(cur, next, drc_timeout);
	n += KEEP_NUM(cur, next, page_size);
	n += KEEP_NUM(cur, next, cache_size);
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

unsigned reload_apply(struct daemon *d, struct conf **nextp)
{
	struct conf *next = *nextp, *old = d->conf;
	unsigned kept;

	*nextp = NULL;
	kept = keep_fixed(old, next);
	log_global_changes(old, next);
	for (size_t i = 0; i < d->nexports; i++) {
		struct export_rt *ex = &d->exports[i];
		const struct conf_export *e = conf_export_by_id(next, ex->conf->id);

		log_export_changes(ex->conf, e);
		ex->conf = e;
		ex->ac_reg.min = e->acregmin;
		ex->ac_reg.max = e->acregmax;
		ex->ac_dir.min = e->acdirmin;
		ex->ac_dir.max = e->acdirmax;
	}
	if (strcmp(old->log_level, next->log_level) != 0 &&
	    log_set_level_name(next->log_level) == 0)
		log_info("reload: log_level is now %s", next->log_level);
	d->conf = next;
	conf_free(&old);
	return kept;
}
