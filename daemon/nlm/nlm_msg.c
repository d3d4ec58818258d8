/* SPDX-License-Identifier: MIT */
/*
 * nlm_msg: a client's TEST_MSG .. UNLOCK_MSG answered by its _RES call
 * (see nlm_msg.h for what is sent where, the counters and the state).
 *
 * A struct nlm_msg goes: made (nlm_msg_new: the call's arguments and
 * source address copied) -> the forwarded call's arguments while it runs
 * (nlm_ops.c) -> answered (nlm_msg_answer: the _RES call submitted) ->
 * its done function told how that went and freed (res_done).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "checkobj.h"
#include "nlm4_prot.h"
#include "nlm_held.h"
#include "nlm_msg.h"
#include "nlm_owner.h"
#include "server.h"

#define NLM_MSG_MAGIC 0x4e4c4d4du	/* "NLMM" */

/* One _MSG call, from its copy to the end of its _RES call. */
struct nlm_msg {
	uint32_t magic;
	struct daemon *d;
	nlm_msg_done_fn done;
	uint32_t proc;			/* the synchronous form: TEST..UNLOCK */
	union {				/* each starts with the cookie */
		nlm4_netobj cookie;
		nlm4_testargs test;
		nlm4_lockargs lock;
		nlm4_cancargs cancel;
		nlm4_unlockargs unlock;
	} args;				/* pointing into the buffers below */
	char host[INET6_ADDRSTRLEN];	/* the client's address */
	char caller[LM_MAXSTRLEN + 1];	/* its caller name */
	uint8_t cookie[MAXNETOBJ_SZ];
	uint8_t fh[MAXNETOBJ_SZ];
	uint8_t oh[MAXNETOBJ_SZ];	/* the client's own owner */
	bool granted;			/* lk is held upstream: handed to
					 * done */
	struct nlm_held lk;		/* lk.oh is lk_oh */
	uint8_t lk_oh[NLM_OWNER_MAX];
};

int nlm_call_client(const struct nlm_msg_via *via, const char *host,
		    uint32_t proc, xdrproc_t xargs, const void *args,
		    xdrproc_t xres, size_t res_size, rpccall_done_fn done,
		    void *arg)
{
	struct rpccall_spec s = {
		.host = host, .port = 0, .prog = NLM_PROG,
		.vers = NLM4_VERS, .proc = proc, .timeout = via->timeout,
		.machine = via->machine, .cred = NULL,
	};

	return rpccall_submit(via->pool, &s, xargs, args, xres, res_size,
			      done, arg);
}

bool nlm_msg_is_msg(uint32_t proc)
{
	return proc >= NLMPROC4_TEST_MSG && proc <= NLMPROC4_UNLOCK_MSG;
}

uint32_t nlm_msg_sync_proc(uint32_t proc)
{
	/* RFC 1813 section 6.2 numbers them in the same order: TEST 1 ..
	 * UNLOCK 4, TEST_MSG 6 .. UNLOCK_MSG 9, TEST_RES 11 .. UNLOCK_RES
	 * 14. */
	return nlm_msg_is_msg(proc) ?
		proc - NLMPROC4_TEST_MSG + NLMPROC4_TEST : proc;
}

/* Point netobj o at buf, holding a copy of from's bytes. */
static void netobj_copy(nlm4_netobj *o, uint8_t *buf, const nlm4_netobj *from)
{
	if (from->nlm4_netobj_len)
		memcpy(buf, from->nlm4_netobj_val, from->nlm4_netobj_len);
	o->nlm4_netobj_val = (char *)buf;
	o->nlm4_netobj_len = from->nlm4_netobj_len;
}

struct nlm_msg *nlm_msg_new(struct req *r, const nlm4_lock *lk,
			    nlm_msg_done_fn done)
{
	const nlm4_netobj *cookie = r->args;
	size_t at = (size_t)((const char *)lk - (const char *)r->args);
	size_t clen = lk->caller_name ? strlen(lk->caller_name) : 0;
	struct nlm_msg *m;
	nlm4_lock *c;

	if (r->ent->args_size > sizeof(m->args) ||
	    at + sizeof(*lk) > r->ent->args_size ||
	    cookie->nlm4_netobj_len > sizeof(m->cookie) ||
	    lk->fh.nlm4_netobj_len > sizeof(m->fh) ||
	    lk->oh.nlm4_netobj_len > sizeof(m->oh) || clen > LM_MAXSTRLEN ||
	    !(m = calloc(1, sizeof(*m))))
		return NULL;
	m->magic = NLM_MSG_MAGIC;
	m->d = r->d;
	m->done = done;
	m->proc = nlm_msg_sync_proc(r->ent->proc);
	memcpy(&m->args, r->args, r->ent->args_size);
	netobj_copy(&m->args.cookie, m->cookie, cookie);
	c = (nlm4_lock *)((char *)&m->args + at);
	if (clen)
		memcpy(m->caller, lk->caller_name, clen);
	c->caller_name = m->caller;
	netobj_copy(&c->fh, m->fh, &lk->fh);
	netobj_copy(&c->oh, m->oh, &lk->oh);
	snprintf(m->host, sizeof(m->host), "%s", req_peer_host(r));
	return m;
}

void *nlm_msg_args(struct nlm_msg *m)
{
	return &m->args;
}

void nlm_msg_free(struct nlm_msg **m)
{
	if (!*m)
		return;
	CHECK_OBJ(*m, NLM_MSG_MAGIC);
	(*m)->magic = 0;
	free(*m);
	*m = NULL;
}

/* The client's lock manager answered a _RES call (void), or did not. */
static void res_done(enum clnt_stat st, void *res, void *arg)
{
	struct nlm_msg *m = arg;

	(void)res;
	CHECK_OBJ(m, NLM_MSG_MAGIC);
	m->done(m->d, st, m->caller, m->host, m->granted ? &m->lk : NULL);
	nlm_msg_free(&m);
}

/* Keep a copy of granted, the lock m's LOCK_MSG was granted. */
static void keep_granted(struct nlm_msg *m, const struct nlm_held *granted)
{
	if (granted->oh_len > sizeof(m->lk_oh))
		return;
	m->lk = *granted;
	memcpy(m->lk_oh, granted->oh, granted->oh_len);
	m->lk.oh = m->lk_oh;
	m->lk.next = NULL;
	m->granted = true;
}

void nlm_msg_answer(struct nlm_msg **mp, const struct nlm_msg_via *via,
		    nlm4_stats stat, const nlm4_holder *holder,
		    const struct nlm_held *granted)
{
	struct nlm_msg *m = *mp;
	nlm4_testres t;
	nlm4_res res;
	int rc;

	*mp = NULL;
	CHECK_OBJ(m, NLM_MSG_MAGIC);
	if (granted && m->proc == NLMPROC4_LOCK && stat == NLM4_GRANTED)
		keep_granted(m, granted);
	if (m->proc == NLMPROC4_TEST) {
		memset(&t, 0, sizeof(t));
		t.cookie = m->args.cookie;
		t.test_stat.stat = stat;
		if (holder && stat == NLM4_DENIED)
			t.test_stat.nlm4_testrply_u.holder = *holder;
		rc = nlm_call_client(via, m->host, NLMPROC4_TEST_RES,
				     (xdrproc_t)xdr_nlm4_testres, &t, NULL, 0,
				     res_done, m);
	} else {
		memset(&res, 0, sizeof(res));
		res.cookie = m->args.cookie;
		res.stat.stat = stat;
		/* LOCK_RES 12, CANCEL_RES 13, UNLOCK_RES 14. */
		rc = nlm_call_client(via, m->host,
				     m->proc - NLMPROC4_TEST + NLMPROC4_TEST_RES,
				     (xdrproc_t)xdr_nlm4_res, &res, NULL, 0,
				     res_done, m);
	}
	if (rc != 0)
		res_done(RPC_SYSTEMERROR, NULL, m);
}
