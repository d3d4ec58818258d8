/* SPDX-License-Identifier: MIT */
/*
 * upstream_impl: the objects of upstream.c (an upstream, a call, a host
 * name lookup) and the constants they use, for upstream.c and for the
 * test that breaks a call list on purpose to see upstream_check_why name
 * it (tests/integration/test_upstream.c). No other module includes it;
 * the invariants are upstream.c's.
 */
#ifndef NFSCACHED_PROTO_UPSTREAM_IMPL_H
#define NFSCACHED_PROTO_UPSTREAM_IMPL_H

#include <sys/queue.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "delivery.h"
#include "upstream.h"

struct rpc_context;
struct evdns_base;
struct evdns_getaddrinfo_request;

#define UP_MAGIC		0x75707374u	/* "upst" */
#define UP_CALL_MAGIC		0x75706361u	/* "upca" */
#define UP_RESOLVE_MAGIC	0x75707265u	/* "upre" */
/* Largest reply libnfs 4.0 accepts is 1 MiB + 4 KiB; re-encoded it is the
 * same size, so this always fits. */
#define UP_SCRATCH_SIZE		(UPSTREAM_LIBNFS_MAX + 64 * 1024)
#define UP_BACKOFF_MIN		0.1
#define UP_BACKOFF_MAX		5.0
#define UP_IDLE_UP_MIN		1.0	/* seconds UP before a close with no
					 * call waiting is taken as an idle
					 * close, reconnected at once */
#define UP_DEFAULT_TIMEOUT	30.0
#define UP_PROBE_AFTER		1.0	/* s without a reply while calls wait,
					 * at least (2 x srtt on slow links) */
#define UP_PROBE_TIMEOUT	2.0	/* s a NULL probe may take, at least
					 * (4 x srtt on slow links) */
#define UP_PROBE_TICK_US	250000
#define UP_FLOOR_WINDOW		10.0	/* s per latency-floor window */
#define UP_FLOOR_BYTES		16384	/* largest reply it samples */
#define UP_MACHINE_MAX		255	/* RFC 5531 appendix A */
#define UP_FH_MAX		64	/* RFC 1813 NFS3_FHSIZE */
#define UP_PMAP_PORT		111
#define UP_DEFAULT_MACHINE	"nfscached"

enum up_phase {
	UP_PH_IDLE = 0,		/* no context: DOWN (or closed) */
	UP_PH_RESOLVE,		/* host name lookup (evdns), no context */
	UP_PH_PMAP_MNT,		/* portmapper GETPORT for MOUNT v3 */
	UP_PH_MNT,		/* MOUNT v3 MNT of the export path */
	UP_PH_PMAP_NFS,		/* portmapper GETPORT for NFS v3 */
	UP_PH_FSINFO,		/* NFS v3 connection, FSINFO of the root */
	UP_PH_UP,		/* serving calls on the NFS context */
};

/* Progress of the current connection phase, set by libnfs callbacks and
 * acted upon after rpc_service returns. */
enum up_step {
	UP_STEP_WAIT = 0,
	UP_STEP_DONE,
	UP_STEP_FAILED,
};

enum up_list {
	UP_LIST_NONE = 0,
	UP_LIST_CALLS,
	UP_LIST_FAILED,
	UP_LIST_ZOMBIES,
};

struct up_call {
	uint32_t magic;
	TAILQ_ENTRY(up_call) link;
	struct upstream *u;
	struct event *ev_timeout;
	uint32_t proc;
	upstream_cb cb;
	void *arg;
	enum up_list list;
	bool in_libnfs;		/* libnfs holds a PDU pointing here */
	bool done;		/* cb has been called */
	bool timed_out;		/* complete with ETIMEDOUT, not EDOWN */
	bool probe;		/* the liveness NULL (up_probe_cb) */
	double sent;		/* up_clock() when queued */
	struct delivery_mark mark;	/* u->rate when queued */
};

TAILQ_HEAD(up_call_list, up_call);

/*
 * One host name lookup in flight (phase RESOLVE). evdns calls back exactly
 * once, also after evdns_getaddrinfo_cancel (later, from the loop, with
 * EVUTIL_EAI_CANCEL), so the lookup is its own small object: cancelling
 * detaches it from u (u = NULL) and its callback then only frees it.
 */
struct up_resolve {
	uint32_t magic;
	struct upstream *u;		/* NULL once detached */
	struct evdns_getaddrinfo_request *req;	/* NULL if answered at once */
};

struct upstream {
	uint32_t magic;
	struct event_base *base;
	struct evdns_base *dns;		/* borrowed; NULL: literal only */
	char *server;
	bool server_literal;		/* server is an IPv4/IPv6 address */
	char addr[INET6_ADDRSTRLEN];	/* what the phases connect to */
	struct up_resolve *resolve;	/* lookup in flight (RESOLVE) */
	bool resolving;			/* inside evdns_getaddrinfo */
	char *export_path;
	int nfs_port;
	int mount_port;
	uint32_t max_transfer;
	struct timeval call_tv;
	const struct timeval *call_tv_common;
	upstream_state_cb state_cb;
	void *state_arg;

	enum upstream_state state;
	enum up_phase phase;
	enum up_step step;
	int found_port;			/* PMAP_* result */
	struct rpc_context *rpc;
	struct event *ev_io;
	int io_fd;
	short io_events;
	struct event *ev_retry;
	struct event *ev_phase;
	struct event *ev_probe;		/* liveness check while UP */
	bool probing;			/* a NULL probe is in flight */
	double last_reply;		/* up_clock() of the last reply */
	double up_at;			/* up_clock() when it last became UP */
	double srtt;			/* smoothed reply latency, s: seeded
					 * by the FSINFO phase (connect and
					 * one call), then 7/8 old + 1/8 new */
	double phase_start;		/* up_clock() when the phase began */
	double floor_cur;		/* shortest small-call reply latency,
					 * s, in the window begun at
					 * floor_start (0: none yet) */
	double floor_prev;		/* ... in the window before it */
	double floor_start;		/* up_clock() */
	struct delivery rate;		/* READ delivery rate (up_clock()) */
	double backoff;
	bool started;
	bool closed;
	bool tearing_down;		/* inside rpc_destroy_context */
	bool in_service;		/* inside rpc_service */
	unsigned busy;

	uint8_t root_fh[UP_FH_MAX];
	size_t root_fh_len;
	uint32_t rtmax;
	uint32_t wtmax;

	bool cred_valid;
	struct nfs_cred cred;		/* last set on the context; its
					 * machine points at cred_machine */
	char cred_machine[UP_MACHINE_MAX + 1];

	struct up_call_list calls;
	unsigned ncalls;		/* calls on the calls list */
	struct up_call_list failed;
	struct up_call_list zombies;

	uint8_t *scratch;		/* all zero outside up_deliver */
	char error[256];
	struct upstream_stats st;
};

#endif
