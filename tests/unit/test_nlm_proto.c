/* SPDX-License-Identifier: MIT */
/*
 * test_nlm_proto: the wire helpers of the lock manager: wrapped lock
 * owners (proto/nlm_owner.h) and calls made on worker threads
 * (proto/rpccall.h), the latter against a one-connection RPC server on a
 * thread of the test (loopback, a port the kernel picks).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "cunit_main.h"
#include "nlm4_prot.h"
#include "nlm_owner.h"
#include "rpccall.h"
#include "rpcmsg.h"

/* ---------------------------------------------------------- owners */

static struct sockaddr_in v4(const char *a)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons(700) };

	inet_pton(AF_INET, a, &s.sin_addr);
	return s;
}

static void test_owner_round_trip(void)
{
	struct sockaddr_in a = v4("10.1.2.3");
	uint8_t w[NLM_OWNER_MAX];
	struct nlm_owner o;
	size_t n = nlm_owner_wrap(7, (struct sockaddr *)&a, "client-a", 8,
				  (const uint8_t *)"77@a", 4, w);

	/* magic 4, id 1, family 1, address 4, name length 2, name, oh */
	CU_ASSERT_EQUAL(n, 4 + 1 + 1 + 4 + 2 + 8 + 4);
	CU_ASSERT_EQUAL(nlm_owner_unwrap(w, n, &o), 0);
	CU_ASSERT_EQUAL(o.export_id, 7);
	CU_ASSERT_EQUAL(o.family, AF_INET);
	CU_ASSERT_EQUAL(memcmp(o.addr, &a.sin_addr, 4), 0);
	CU_ASSERT_EQUAL(o.caller_len, 8);
	CU_ASSERT_EQUAL(memcmp(o.caller, "client-a", 8), 0);
	CU_ASSERT_EQUAL(o.oh_len, 4);
	CU_ASSERT_EQUAL(memcmp(o.oh, "77@a", 4), 0);
	/* The client's oh ends the wrapped one (a TEST holder is cut to it). */
	CU_ASSERT_EQUAL(memcmp(w + n - 4, "77@a", 4), 0);
}

static void test_owner_clients_differ(void)
{
	struct sockaddr_in a = v4("10.1.2.3"), b = v4("10.1.2.4");
	uint8_t wa[NLM_OWNER_MAX], wb[NLM_OWNER_MAX], wc[NLM_OWNER_MAX];
	size_t na = nlm_owner_wrap(1, (struct sockaddr *)&a, "h", 1,
				   (const uint8_t *)"1", 1, wa);
	size_t nb = nlm_owner_wrap(1, (struct sockaddr *)&b, "h", 1,
				   (const uint8_t *)"1", 1, wb);
	size_t nc = nlm_owner_wrap(1, (struct sockaddr *)&a, "g", 1,
				   (const uint8_t *)"1", 1, wc);

	/* Same owner and caller, other address; same address, other
	 * caller: three owners upstream. */
	CU_ASSERT_EQUAL(na, nb);
	CU_ASSERT_NOT_EQUAL(memcmp(wa, wb, na), 0);
	CU_ASSERT_EQUAL(na, nc);
	CU_ASSERT_NOT_EQUAL(memcmp(wa, wc, na), 0);
}

static void test_owner_ipv6_and_mapped(void)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a = v4("192.0.2.9");
	uint8_t w[NLM_OWNER_MAX], w4[NLM_OWNER_MAX];
	struct nlm_owner o;
	size_t n;

	inet_pton(AF_INET6, "fd00::5", &s6.sin6_addr);
	n = nlm_owner_wrap(3, (struct sockaddr *)&s6, "", 0, NULL, 0, w);
	CU_ASSERT_EQUAL(n, 4 + 1 + 1 + 16 + 2);
	CU_ASSERT_EQUAL(nlm_owner_unwrap(w, n, &o), 0);
	CU_ASSERT_EQUAL(o.family, AF_INET6);
	CU_ASSERT_EQUAL(memcmp(o.addr, &s6.sin6_addr, 16), 0);
	CU_ASSERT_EQUAL(o.oh_len, 0);
	/* An IPv4-mapped address is the IPv4 client it maps. */
	inet_pton(AF_INET6, "::ffff:192.0.2.9", &s6.sin6_addr);
	n = nlm_owner_wrap(3, (struct sockaddr *)&s6, "x", 1,
			   (const uint8_t *)"o", 1, w);
	CU_ASSERT_EQUAL(nlm_owner_wrap(3, (struct sockaddr *)&a, "x", 1,
				       (const uint8_t *)"o", 1, w4), n);
	CU_ASSERT_EQUAL(memcmp(w, w4, n), 0);
}

static void test_owner_limits(void)
{
	struct sockaddr_in a = v4("10.0.0.1");
	struct sockaddr un = { .sa_family = AF_UNIX };
	uint8_t w[NLM_OWNER_MAX], oh[NLM_OWNER_MAX];
	struct nlm_owner o;
	size_t room = NLM_OWNER_MAX - (4 + 1 + 1 + 4 + 2 + 3);

	memset(oh, 'z', sizeof(oh));
	/* The longest oh that fits, and one byte more. */
	CU_ASSERT_EQUAL(nlm_owner_wrap(1, (struct sockaddr *)&a, "abc", 3, oh,
				       room, w), NLM_OWNER_MAX);
	CU_ASSERT_EQUAL(nlm_owner_wrap(1, (struct sockaddr *)&a, "abc", 3, oh,
				       room + 1, w), 0);
	CU_ASSERT_EQUAL(nlm_owner_wrap(0, (struct sockaddr *)&a, "", 0, oh, 1,
				       w), 0);
	CU_ASSERT_EQUAL(nlm_owner_wrap(256, (struct sockaddr *)&a, "", 0, oh,
				       1, w), 0);
	CU_ASSERT_EQUAL(nlm_owner_wrap(1, &un, "", 0, oh, 1, w), 0);
	/* Another host's owner, and wrapped ones cut short. */
	CU_ASSERT_EQUAL(nlm_owner_unwrap((const uint8_t *)"4242@host", 9, &o),
			-1);
	size_t n = nlm_owner_wrap(1, (struct sockaddr *)&a, "abc", 3,
				  (const uint8_t *)"", 0, w);
	CU_ASSERT_EQUAL(nlm_owner_unwrap(w, n, &o), 0);
	CU_ASSERT_EQUAL(nlm_owner_unwrap(w, n - 1, &o), -1);
	CU_ASSERT_EQUAL(nlm_owner_unwrap(w, 9, &o), -1);
	w[5] = 5;	/* no such family */
	CU_ASSERT_EQUAL(nlm_owner_unwrap(w, n, &o), -1);
}

/* ----------------------------------------------------------- rpccall */

/* A server thread: accepts one connection, answers each NLM UNLOCK call
 * with NLM4_GRANTED and its cookie; holds its answer to a call with
 * svid 99 until release is set. With close_each, it closes each
 * connection after one answer (a lock manager that restarted while the
 * caller's connection was idle) and accepts the next. */
struct toy {
	int lfd;
	unsigned short port;
	pthread_t t;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool release;
	bool close_each;
	unsigned calls;
	unsigned closed;			/* connections closed */
	char machine[300];
	uint32_t proc;
};

static int read_full(int fd, void *p, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t r = read(fd, (char *)p + off, n - off);

		if (r <= 0)
			return -1;
		off += (size_t)r;
	}
	return 0;
}

/* Serve connection fd until it ends (or after one answer with
 * close_each). */
static void toy_serve(struct toy *t, int fd)
{
	for (;;) {
		uint8_t hdr[4], *rec;
		uint32_t len;
		struct rpcmsg_call call;
		nlm4_unlockargs a;
		nlm4_res res;
		struct evbuffer *out;

		if (read_full(fd, hdr, 4) != 0)
			break;
		out = evbuffer_new();
		len = (((uint32_t)hdr[0] & 0x7f) << 24) | (uint32_t)hdr[1] << 16 |
		      (uint32_t)hdr[2] << 8 | hdr[3];
		rec = malloc(len);
		if (!rec || read_full(fd, rec, len) != 0 ||
		    rpcmsg_decode_call(rec, len, &call) != RPCMSG_OK) {
			free(rec);
			evbuffer_free(out);
			break;
		}
		memset(&a, 0, sizeof(a));
		rpcmsg_decode_args(rec, len, call.args_off,
				   (xdrproc_t)xdr_nlm4_unlockargs, &a);
		pthread_mutex_lock(&t->mu);
		t->calls++;
		t->proc = call.proc;
		snprintf(t->machine, sizeof(t->machine), "%s", call.machine);
		while (a.alock.svid == 99 && !t->release)
			pthread_cond_wait(&t->cv, &t->mu);
		pthread_mutex_unlock(&t->mu);
		memset(&res, 0, sizeof(res));
		res.cookie = a.cookie;
		res.stat.stat = NLM4_GRANTED;
		rpcmsg_reply_success(out, call.xid, (xdrproc_t)xdr_nlm4_res, &res);
		rpcmsg_free_args((xdrproc_t)xdr_nlm4_unlockargs, &a);
		free(rec);
		while (evbuffer_get_length(out) > 0)
			if (evbuffer_write(out, fd) <= 0)
				break;
		evbuffer_free(out);
		if (t->close_each)
			break;
	}
}

static void *toy_main(void *arg)
{
	struct toy *t = arg;
	int fd;

	while ((fd = accept(t->lfd, NULL, NULL)) >= 0) {
		toy_serve(t, fd);
		close(fd);
		pthread_mutex_lock(&t->mu);
		t->closed++;
		pthread_mutex_unlock(&t->mu);
		if (!t->close_each)
			break;
	}
	return NULL;
}

static void toy_start(struct toy *t)
{
	struct sockaddr_in s = v4("127.0.0.1");
	socklen_t sl = sizeof(s);

	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	s.sin_port = 0;
	t->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(t->lfd >= 0);
	CU_ASSERT_FATAL(bind(t->lfd, (struct sockaddr *)&s, sizeof(s)) == 0);
	CU_ASSERT_FATAL(listen(t->lfd, 4) == 0);
	CU_ASSERT_FATAL(getsockname(t->lfd, (struct sockaddr *)&s, &sl) == 0);
	t->port = ntohs(s.sin_port);
	CU_ASSERT_FATAL(pthread_create(&t->t, NULL, toy_main, t) == 0);
}

static void toy_stop(struct toy *t)
{
	pthread_mutex_lock(&t->mu);
	t->release = true;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	shutdown(t->lfd, SHUT_RDWR);
	close(t->lfd);
	pthread_join(t->t, NULL);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
}

/* What a done callback saw. */
struct seen {
	int n;
	enum clnt_stat st;
	nlm4_stats stat;
	char cookie[8];
};

static void seen_done(enum clnt_stat st, void *res, void *arg)
{
	struct seen *s = arg;
	nlm4_res *r = res;

	s->n++;
	s->st = st;
	if (r) {
		s->stat = r->stat.stat;
		snprintf(s->cookie, sizeof(s->cookie), "%.*s",
			 (int)r->cookie.nlm4_netobj_len,
			 r->cookie.nlm4_netobj_val);
	}
}

static nlm4_unlockargs unlock_args(int svid)
{
	static char cookie[] = "c1", caller[] = "me", oh[] = "o";
	nlm4_unlockargs a;

	memset(&a, 0, sizeof(a));
	a.cookie.nlm4_netobj_len = 2;
	a.cookie.nlm4_netobj_val = cookie;
	a.alock.caller_name = caller;
	a.alock.oh.nlm4_netobj_len = 1;
	a.alock.oh.nlm4_netobj_val = oh;
	a.alock.svid = svid;
	return a;
}

/* Run base until every seen has n >= 1 (each call completes once). */
static void run_until(struct event_base *base, struct seen *s, size_t n)
{
	for (;;) {
		size_t done = 0;

		for (size_t i = 0; i < n; i++)
			done += s[i].n > 0;
		if (done == n)
			return;
		event_base_loop(base, EVLOOP_ONCE);
	}
}

static void test_rpccall_answers(void)
{
	struct event_base *base = event_base_new();
	/* One worker: its one kept connection is the toy's one. */
	struct rpccall_pool *p = rpccall_pool_new(base, 1);
	struct toy t;
	struct seen s[3];
	nlm4_unlockargs a = unlock_args(1);
	struct rpccall_spec spec = {
		.host = "127.0.0.1", .prog = NLM_PROG, .vers = NLM4_VERS,
		.proc = NLMPROC4_UNLOCK, .timeout = 60, .machine = "proxy-x",
	};

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	toy_start(&t);
	spec.port = t.port;
	memset(s, 0, sizeof(s));
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(rpccall_submit(p, &spec,
					       (xdrproc_t)xdr_nlm4_unlockargs,
					       &a, (xdrproc_t)xdr_nlm4_res,
					       sizeof(nlm4_res), seen_done,
					       &s[i]), 0);
	CU_ASSERT_EQUAL(s[0].n, 0);	/* never inside submit */
	run_until(base, s, 3);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(s[i].n, 1);
		CU_ASSERT_EQUAL(s[i].st, RPC_SUCCESS);
		CU_ASSERT_EQUAL(s[i].stat, NLM4_GRANTED);
		CU_ASSERT_STRING_EQUAL(s[i].cookie, "c1");
	}
	CU_ASSERT_EQUAL(rpccall_pending(p), 0);
	pthread_mutex_lock(&t.mu);
	CU_ASSERT_EQUAL(t.calls, 3);
	CU_ASSERT_EQUAL(t.proc, NLMPROC4_UNLOCK);
	CU_ASSERT_STRING_EQUAL(t.machine, "proxy-x");	/* AUTH_SYS */
	pthread_mutex_unlock(&t.mu);
	rpccall_pool_stop(&p);
	CU_ASSERT_PTR_NULL(p);
	toy_stop(&t);
	event_base_free(base);
}

static void test_rpccall_failures(void)
{
	struct event_base *base = event_base_new();
	struct rpccall_pool *p = rpccall_pool_new(base, 1);
	struct seen s[2];
	nlm4_unlockargs a = unlock_args(1);
	struct rpccall_spec spec = {
		.host = "no-such-host.invalid", .port = 4045,
		.prog = NLM_PROG, .vers = NLM4_VERS, .proc = NLMPROC4_UNLOCK,
		.timeout = 60,
	};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = v4("127.0.0.1");
	socklen_t sl = sizeof(sa);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(s, 0, sizeof(s));
	CU_ASSERT_EQUAL(rpccall_submit(p, &spec, (xdrproc_t)xdr_nlm4_unlockargs,
				       &a, (xdrproc_t)xdr_nlm4_res,
				       sizeof(nlm4_res), seen_done, &s[0]), 0);
	/* A port nothing listens on: bound, never listened to. */
	sa.sin_port = 0;
	CU_ASSERT_FATAL(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CU_ASSERT_FATAL(getsockname(fd, (struct sockaddr *)&sa, &sl) == 0);
	spec.host = "127.0.0.1";
	spec.port = ntohs(sa.sin_port);
	CU_ASSERT_EQUAL(rpccall_submit(p, &spec, (xdrproc_t)xdr_nlm4_unlockargs,
				       &a, (xdrproc_t)xdr_nlm4_res,
				       sizeof(nlm4_res), seen_done, &s[1]), 0);
	run_until(base, s, 2);
	CU_ASSERT_EQUAL(s[0].st, RPC_UNKNOWNHOST);
	CU_ASSERT_NOT_EQUAL(s[1].st, RPC_SUCCESS);
	CU_ASSERT_NOT_EQUAL(s[1].st, RPC_INTR);
	/* Bad arguments are refused at once. */
	spec.timeout = 0;
	CU_ASSERT_EQUAL(rpccall_submit(p, &spec, (xdrproc_t)xdr_nlm4_unlockargs,
				       &a, NULL, 0, seen_done, &s[0]), -1);
	close(fd);
	rpccall_pool_stop(&p);
	event_base_free(base);
}

static void test_rpccall_stop_answers_pending(void)
{
	struct event_base *base = event_base_new();
	struct rpccall_pool *p = rpccall_pool_new(base, 1);
	struct toy t;
	struct seen s[2];
	nlm4_unlockargs held = unlock_args(99), queued = unlock_args(1);
	struct rpccall_spec spec = {
		.host = "127.0.0.1", .prog = NLM_PROG, .vers = NLM4_VERS,
		.proc = NLMPROC4_UNLOCK, .timeout = 60,
	};

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	toy_start(&t);
	spec.port = t.port;
	memset(s, 0, sizeof(s));
	/* The first is held by the server on the one worker; the second
	 * waits in the queue. */
	CU_ASSERT_EQUAL(rpccall_submit(p, &spec, (xdrproc_t)xdr_nlm4_unlockargs,
				       &held, (xdrproc_t)xdr_nlm4_res,
				       sizeof(nlm4_res), seen_done, &s[0]), 0);
	CU_ASSERT_EQUAL(rpccall_submit(p, &spec, (xdrproc_t)xdr_nlm4_unlockargs,
				       &queued, (xdrproc_t)xdr_nlm4_res,
				       sizeof(nlm4_res), seen_done, &s[1]), 0);
	for (;;) {	/* until the server has the held call */
		unsigned n;

		pthread_mutex_lock(&t.mu);
		n = t.calls;
		pthread_mutex_unlock(&t.mu);
		if (n)
			break;
		usleep(1000);
	}
	CU_ASSERT_EQUAL(rpccall_pending(p), 2);
	rpccall_pool_stop(&p);
	CU_ASSERT_EQUAL(s[0].n, 1);
	CU_ASSERT_EQUAL(s[0].st, RPC_INTR);
	CU_ASSERT_EQUAL(s[1].n, 1);
	CU_ASSERT_EQUAL(s[1].st, RPC_INTR);
	/* The worker finishes its call and frees it on its own: no callback
	 * comes after stop. */
	toy_stop(&t);
	event_base_loop(base, EVLOOP_NONBLOCK);
	CU_ASSERT_EQUAL(s[0].n, 1);
	event_base_free(base);
}

/*
 * A kept connection the peer closed while idle (its lock manager
 * restarted) is given up before the next call, which goes out on a new
 * one and is answered: it used to fail as RPC_CANTRECV (the send on the
 * dead connection succeeds, the reply never comes), so the first lock
 * call after a file server's restart got ENOLCK.
 */
static void test_rpccall_peer_closed_idle(void)
{
	struct event_base *base = event_base_new();
	struct rpccall_pool *p = rpccall_pool_new(base, 1);
	struct toy t;
	struct seen s[2];
	nlm4_unlockargs a = unlock_args(1);
	struct rpccall_spec spec = {
		.host = "127.0.0.1", .prog = NLM_PROG, .vers = NLM4_VERS,
		.proc = NLMPROC4_UNLOCK, .timeout = 60,
	};
	unsigned closed = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	toy_start(&t);
	t.close_each = true;
	spec.port = t.port;
	memset(s, 0, sizeof(s));
	CU_ASSERT_EQUAL(rpccall_submit(p, &spec, (xdrproc_t)xdr_nlm4_unlockargs,
				       &a, (xdrproc_t)xdr_nlm4_res,
				       sizeof(nlm4_res), seen_done, &s[0]), 0);
	run_until(base, s, 1);
	CU_ASSERT_EQUAL(s[0].st, RPC_SUCCESS);
	while (closed == 0) {	/* until the server has closed it */
		pthread_mutex_lock(&t.mu);
		closed = t.closed;
		pthread_mutex_unlock(&t.mu);
		if (!closed)
			usleep(1000);
	}
	CU_ASSERT_EQUAL(rpccall_submit(p, &spec, (xdrproc_t)xdr_nlm4_unlockargs,
				       &a, (xdrproc_t)xdr_nlm4_res,
				       sizeof(nlm4_res), seen_done, &s[1]), 0);
	run_until(base, &s[1], 1);
	CU_ASSERT_EQUAL(s[1].st, RPC_SUCCESS);
	CU_ASSERT_EQUAL(s[1].stat, NLM4_GRANTED);
	pthread_mutex_lock(&t.mu);
	CU_ASSERT_EQUAL(t.calls, 2);
	pthread_mutex_unlock(&t.mu);
	rpccall_pool_stop(&p);
	toy_stop(&t);
	event_base_free(base);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nlm_owner", NULL, NULL);
	CU_pSuite r = CU_add_suite("rpccall", NULL, NULL);

	if (!s || !r ||
	    !CU_add_test(s, "round_trip", test_owner_round_trip) ||
	    !CU_add_test(s, "clients_differ", test_owner_clients_differ) ||
	    !CU_add_test(s, "ipv6_and_mapped", test_owner_ipv6_and_mapped) ||
	    !CU_add_test(s, "limits", test_owner_limits) ||
	    !CU_add_test(r, "answers", test_rpccall_answers) ||
	    !CU_add_test(r, "failures", test_rpccall_failures) ||
	    !CU_add_test(r, "stop_answers_pending",
			 test_rpccall_stop_answers_pending) ||
	    !CU_add_test(r, "peer_closed_idle",
			 test_rpccall_peer_closed_idle))
		return -1;
	return 0;
}
