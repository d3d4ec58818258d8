/* SPDX-License-Identifier: MIT */
/*
 * nfs3_harness: the real daemon (server, dispatch, NFSv3 handlers, cache,
 * write-back) in the test process, on one event loop, with a fake upstream
 * (fake_upstream.h) whose responder is a toy in-memory NFSv3 server, and
 * one client connection over a socketpair(2) that speaks ONC RPC records
 * (RFC 5531 sections 9 and 11, AUTH_SYS h.uid/h.gid, 1000 unless the test
 * changes them). No Ganesha, no
 * network, and the daemon's clock is the test clock (mclock.h), which only
 * h_advance() moves.
 */
#ifndef NFSCACHED_TESTS_NFS3_HARNESS_H
#define NFSCACHED_TESTS_NFS3_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rpc/rpc.h>

#include "daemon.h"
#include "fake_upstream.h"
#include "nfs3_prot.h"
#include "nfs3_write.h"

#define TOY_MAX_NODES	32
#define TOY_MAX_DATA	(16u << 20)	/* bytes per toy file (calloc: pages
					 * only as written) */
#define TOY_ROOT	1		/* the export root's fileid */

/* One toy file or directory; its upstream handle is 8 bytes of fileid. */
struct toy_node {
	bool present;
	uint64_t fileid;
	ftype3 type;
	uint64_t parent;
	char name[64];
	uint8_t *data;			/* TOY_MAX_DATA bytes (files) */
	uint64_t size;
	uint32_t mtime;			/* a change counter */
};

/* The toy upstream server the fake's responder runs. */
struct toy {
	struct toy_node nodes[TOY_MAX_NODES];
	uint64_t next_id;
	uint32_t clock;			/* bumped on every change */
	uint8_t verf[NFS3_WRITEVERFSIZE]; /* WRITE/COMMIT verifier */
	uint8_t fh[TOY_MAX_NODES][8];	/* handle bytes, by node index */
	uint32_t access_deny;		/* ACCESS bits never granted (0) */
};

/* A reply the client has received and not yet taken. */
struct h_reply {
	uint32_t xid;
	uint8_t *rec;
	size_t len;
	struct h_reply *next;
};

struct nfs3_h {
	struct daemon d;
	struct export_rt ex;
	struct export_rt *exs[1];	/* d.exports: &ex */
	struct fake_up fu;
	struct toy toy;
	int cfd;			/* the client's end */
	struct event *rd;		/* reads replies off cfd */
	uint8_t *in;			/* bytes read, not yet a record */
	size_t in_len;
	struct h_reply *replies;
	uint32_t next_xid;
	uint32_t uid, gid;		/* h_call's AUTH_SYS identity: 1000 */
	bool closed;			/* the server closed the connection
					 * (h_advance past idle_timeout) */
};

/* Tune the configuration before the daemon starts (may be NULL). */
typedef void (*h_conf_fn)(struct conf *c);

/* Start everything; the toy holds only the root directory. */
void h_init(struct nfs3_h *h, h_conf_fn tune);

/* Stop everything and free it. */
void h_fini(struct nfs3_h *h);

/* Assert (CUnit) that exactly wn WRITEs of h's daemon are in flight, all
 * in step ws, and exactly cn COMMITs, all in step cs (NSTEPS with a count
 * of 0: none); a step off its count is named on stderr. */
void h_expect_steps(const struct nfs3_h *h, enum nfs3_write_step ws,
		    uint64_t wn, enum nfs3_commit_step cs, uint64_t cn);

/* Add a toy file named name under the root with size bytes of pattern
 * (byte i is (uint8_t)(i * 7 + fileid)). Returns its fileid. */
uint64_t toy_add_file(struct toy *t, const char *name, uint64_t size);

/* Start t with the root directory only; toy_fini frees its data. */
void toy_init(struct toy *t);
void toy_fini(struct toy *t);

/* The fake upstream's responder over the toy (arg: the struct toy). */
enum upstream_status toy_respond(const struct fake_call *c, void *res,
				 void *arg);

/* The toy node of fileid (NULL if absent). */
struct toy_node *toy_node(struct toy *t, uint64_t fileid);

/* The client handle of toy fileid into *fh (its bytes in buf, 64 bytes). */
void h_fh(struct nfs3_h *h, uint64_t fileid, nfs_fh3 *fh, uint8_t *buf);

/* Send an NFSv3 call; returns its xid. */
uint32_t h_call(struct nfs3_h *h, uint32_t proc, xdrproc_t xargs,
		const void *args);

/* Send a call of program prog version vers (the NFS port's other
 * programs: NFSACL v3); returns its xid. */
uint32_t h_call_prog(struct nfs3_h *h, uint32_t prog, uint32_t vers,
		     uint32_t proc, xdrproc_t xargs, const void *args);

/* Send a READ of toy fileid's [off, off + count); returns its xid. */
uint32_t h_send_read(struct nfs3_h *h, uint64_t id, uint64_t off,
		     uint32_t count);

/* Send a WRITE of len bytes (at most 64 KiB), each of value v, at off of
 * toy fileid, as stable_how how; returns its xid. */
uint32_t h_send_write(struct nfs3_h *h, uint64_t id, uint64_t off,
		      uint32_t len, uint8_t v, stable_how how);

/* Send a COMMIT of the whole of toy fileid; returns its xid. */
uint32_t h_send_commit(struct nfs3_h *h, uint64_t id);

/* Run the loop until the reply to xid arrives and decode it into res
 * (xres; free with xdr_free). Returns 0, or -1 if it is not an accepted
 * SUCCESS reply, the server closed the connection, or none came within
 * 30 s of real time (a hang guard). */
int h_wait(struct nfs3_h *h, uint32_t xid, xdrproc_t xres, void *res);

/* LOOKUP name in the toy root and wait for the reply. Returns its status,
 * or H_NO_REPLY when no decodable reply came (h_wait failed). When fileid
 * is not NULL and the LOOKUP succeeded, *fileid is the object's fileid
 * from the reply's post_op_attr, or UINT64_MAX if it carried none. */
#define H_NO_REPLY ((nfsstat3)0xffffffffu)
nfsstat3 h_lookup(struct nfs3_h *h, char *name, uint64_t *fileid);

/* True when the reply to xid has arrived (runs no loop turn). */
bool h_replied(struct nfs3_h *h, uint32_t xid);

/* Run n loop turns that do not block. */
void h_turns(struct nfs3_h *h, int n);

/* Move the daemon's test clock forward by seconds and run a few turns. */
void h_advance(struct nfs3_h *h, double seconds);

/* Make a fresh directory $TMPDIR/TAG.XXXXXX (or under /tmp) for a test's
 * cache_dir; its path in out (room for n bytes). Fails the test (fatal)
 * when it cannot. */
void h_tmpdir(char *out, size_t n, const char *tag);

/* Remove dir and everything in it (what h_tmpdir made). */
void h_rmtree(const char *dir);

#endif
