/* SPDX-License-Identifier: MIT */
/*
 * metatest_util: helpers for the metadata cache integration tests
 * (test_meta_*.c): /metrics series of the metadata cache and of upstream
 * calls by procedure, the sum of all upstream calls, directories and
 * files made behind NFS's back, path look-ups and listings through a
 * client. Builds on cachetest_util (metrics snapshots, disk paths) and
 * nfsclient (synchronous calls, listings).
 */
#ifndef NFSCACHED_TESTS_METATEST_UTIL_H
#define NFSCACHED_TESTS_METATEST_UTIL_H

#include <stdint.h>
#include "cachetest_util.h"

/* Series (exact label sets as /metrics renders them). */
#define MT_UP(proc)	"nfscached_upstream_rpcs_total{procedure=\"" proc "\"}"
#define MT_HIT(proc)	"nfscached_meta_requests_total{procedure=\"" proc \
			"\",result=\"hit\"}"
#define MT_MISS(proc)	"nfscached_meta_requests_total{procedure=\"" proc \
			"\",result=\"miss\"}"
#define MT_NEG_HITS	"nfscached_meta_negative_hits_total"
#define MT_REVALIDATIONS "nfscached_meta_revalidations_total"
#define MT_ENTRIES	"nfscached_meta_entries"
#define MT_LISTINGS	"nfscached_meta_listings"
#define MT_BYTES	"nfscached_meta_bytes"
#define MT_BUDGET	"nfscached_meta_budget_bytes"
#define MT_EVICTIONS	"nfscached_meta_evictions_total"

/* Listing page size the tests ask for (READDIRPLUS maxcount). */
#define MT_LIST_COUNT	16384u

/* The sum of nfscached_upstream_rpcs_total over every procedure in m, or
 * CT_ABSENT if a series is missing. */
uint64_t mt_upstream_total(const struct ct_metrics *m);

/* mt_upstream_total(after) - mt_upstream_total(before). */
uint64_t mt_upstream_total_delta(const struct ct_metrics *before,
				 const struct ct_metrics *after);

/* mkdir "$NFSC_EXPORT_DIR/rel" (0755; an existing one is fine). 0 or -1. */
int mt_disk_mkdir(const char *rel);

/* Create n empty files "$NFSC_EXPORT_DIR/dir/PREFIXnnnn" (%04u). 0 or -1. */
int mt_disk_files(const char *dir, const char *prefix, unsigned n);

/* Create the empty file "$NFSC_EXPORT_DIR/rel". 0 or -1. */
int mt_disk_touch(const char *rel);

/*
 * LOOKUP a directory "a" or a path "a/b" (components looked up one by
 * one from the export root) through c into *fh (the caller frees it with
 * nfsc_fh_free). Returns the last status.
 */
int mt_lookup_path(struct nfsc *c, const char *path, nfs_fh3 *fh);

/* List dir to eof through c (plus: READDIRPLUS) with MT_LIST_COUNT; the
 * caller frees *l. Returns l->st, or NFSC_ERR_RPC if the listing stuck. */
int mt_list(struct nfsc *c, const nfs_fh3 *dir, int plus,
	    struct nfsc_listing *l);

/* 1 if l has an entry called name. */
int mt_has_name(const struct nfsc_listing *l, const char *name);


#endif
