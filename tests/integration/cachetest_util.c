/* SPDX-License-Identifier: MIT */
/*
 * cachetest_util: metrics, pipelined calls, files on disk, data patterns
 * and RSS for the page-cache integration tests (see cachetest_util.h).
 *
 * A pipe owns one libnfs context and one heap record per queued call
 * (struct call) linking the libnfs callback to the caller's ct_op. The
 * callback fills the op, decrements the pipe's pending count and frees
 * the record; libnfs runs every outstanding callback (status CANCEL) when
 * the context is destroyed, so no record outlives the pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cachetest_util.h"
#include "tcheck.h"


struct ct_pipe {
	struct nfs_context *nfs;
	struct rpc_context *rpc;
	unsigned pending;
	char *url;
};

struct call {
	struct ct_pipe *p;
	struct ct_op *op;
	int proc;
};

const char *ct_env(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		fprintf(stderr, "cachetest: %s is not set (run under harness.sh)\n",
			name);
		return NULL;
	}
	return v;
}

uint64_t ct_env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return dflt;
	x = strtoull(v, &end, 0);
	if (*end) {
		fprintf(stderr, "cachetest: %s=%s is not a number; using %llu\n",
			name, v, (unsigned long long)dflt);
		return dflt;
	}
	return x;
}

/* ---- metrics ---- */

int ct_metrics_read(struct ct_metrics *m)
{
	m->text = tmetrics_get();
	return m->text ? 0 : -1;
}

void ct_metrics_free(struct ct_metrics *m)
{
	free(m->text);
	m->text = NULL;
}

uint64_t ct_metric(const struct ct_metrics *m, const char *series)
{
	double v = tmetrics_value(m->text, series);

	return v < 0 ? CT_ABSENT : (uint64_t)(v + 0.5);
}

uint64_t ct_delta(const struct ct_metrics *before,
		  const struct ct_metrics *after, const char *series)
{
	uint64_t a = ct_metric(before, series), b = ct_metric(after, series);

	return a == CT_ABSENT || b == CT_ABSENT ? CT_ABSENT : b - a;
}

uint64_t ct_metric_now(const char *series)
{
	struct ct_metrics m;
	uint64_t v;

	if (ct_metrics_read(&m) != 0)
		return CT_ABSENT;
	v = ct_metric(&m, series);
	ct_metrics_free(&m);
	return v;
}

/* Series' value in m: from the next sample line at *cur (m's text ends at
 * stop) if that line is series, else by a search of the whole page
 * (ct_metric); *cur moves past that line either way, so two pages with
 * their series in one order are read in one pass. n = strlen(series). */
static uint64_t value_near(const struct ct_metrics *m, const char **cur,
			   const char *stop, const char *series, size_t n)
{
	const char *line = *cur, *nl;
	char *end;
	double v;

	for (;;) {
		if (line >= stop)
			return ct_metric(m, series);
		nl = memchr(line, '\n', (size_t)(stop - line));
		*cur = nl ? nl + 1 : stop;
		if (*line != '#')
			break;
		line = *cur;	/* HELP and TYPE lines */
	}
	if ((size_t)((nl ? nl : stop) - line) > n && line[n] == ' ' &&
	    memcmp(line, series, n) == 0) {
		v = strtod(line + n + 1, &end);
		if (end != line + n + 1)
			return v < 0 ? CT_ABSENT : (uint64_t)(v + 0.5);
	}
	return ct_metric(m, series);
}

void ct_print_deltas(const char *tag, const struct ct_metrics *before,
		     const struct ct_metrics *after)
{
	const char *line = after->text, *stop, *bcur, *bstop;
	char series[256], *end;
	double v;

	if (!line || !before->text)
		return;
	/* Lengths measured once, lines found with memchr: strchr from each
	 * line rescans the rest of the page under ASan's
	 * strict_string_checks (quadratic: minutes per call). */
	stop = line + strlen(line);
	bcur = before->text;
	bstop = bcur + strlen(bcur);
	while (line < stop) {
		const char *nl = memchr(line, '\n', (size_t)(stop - line));
		const char *eol = nl ? nl : stop;
		const char *sp = memchr(line, ' ', (size_t)(eol - line));
		size_t n = sp ? (size_t)(sp - line) : 0;

		if (*line != '#' && sp && n < sizeof(series)) {
			uint64_t a, b;

			memcpy(series, line, n);
			series[n] = '\0';
			a = value_near(before, &bcur, bstop, series, n);
			v = strtod(sp + 1, &end);
			b = end != sp + 1 && v >= 0 ? (uint64_t)(v + 0.5) :
				ct_metric(after, series);
			if (a != b && a != CT_ABSENT && b != CT_ABSENT &&
			    !strstr(series, "_seconds") &&
			    !strstr(series, "_bytes_total"))
				printf("cachetest: %s: %s %+lld (now %llu)\n",
				       tag, series, (long long)(b - a),
				       (unsigned long long)b);
		}
		line = nl ? nl + 1 : stop;
	}
}

/* ---- pipelined client ---- */

/* Fill op from a READ reply. */
static void take_read(struct ct_op *op, const READ3res *r)
{
	const READ3resok *ok = &r->READ3res_u.resok;
	uint32_t n;

	if (r->status != NFS3_OK)
		return;
	op->count = ok->count;
	op->eof = ok->eof ? 1 : 0;
	n = ok->data.data_len < op->len ? ok->data.data_len : op->len;
	if (op->buf && n)
		memcpy(op->buf, ok->data.data_val, n);
	if (ok->file_attributes.attributes_follow) {
		op->has_attr = 1;
		op->attr = ok->file_attributes.post_op_attr_u.attributes;
	}
}

/* Fill op from a WRITE reply. */
static void take_write(struct ct_op *op, const WRITE3res *r)
{
	const post_op_attr *pa;

	if (r->status != NFS3_OK)
		return;
	op->count = r->WRITE3res_u.resok.count;
	op->committed = (int)r->WRITE3res_u.resok.committed;
	pa = &r->WRITE3res_u.resok.file_wcc.after;
	if (pa->attributes_follow) {
		op->has_attr = 1;
		op->attr = pa->post_op_attr_u.attributes;
	}
}

/* Fill op from a COMMIT reply. */
static void take_commit(struct ct_op *op, const COMMIT3res *r)
{
	const post_op_attr *pa = &r->COMMIT3res_u.resok.file_wcc.after;

	if (r->status == NFS3_OK && pa->attributes_follow) {
		op->has_attr = 1;
		op->attr = pa->post_op_attr_u.attributes;
	}
}

/* libnfs callback of a pipe call: fill the op, release the record. */
static void pipe_cb(struct rpc_context *rpc, int status, void *data,
		    void *priv)
{
	struct call *k = priv;
	struct ct_op *op = k->op;

	(void)rpc;
	if (status == RPC_STATUS_SUCCESS && data) {
		op->st = (int)*(const nfsstat3 *)data;
		if (k->proc == NFS3_READ)
			take_read(op, data);
		else if (k->proc == NFS3_WRITE)
			take_write(op, data);
		else
			take_commit(op, data);
	} else {
		op->st = status == RPC_STATUS_CANCEL ? NFSC_ERR_CONN
						     : NFSC_ERR_RPC;
	}
	op->done = 1;
	k->p->pending--;
	free(k);
}

/* Prepare op and a call record for proc; NULL on ENOMEM. */
static struct call *call_new(struct ct_pipe *p, struct ct_op *op, int proc,
			     uint64_t off, uint32_t len)
{
	struct call *k = malloc(sizeof(*k));
	uint8_t *buf = op->buf;
	void *user = op->user;

	memset(op, 0, sizeof(*op));
	op->buf = buf;
	op->user = user;
	op->off = off;
	op->len = len;
	op->committed = -1;
	if (!k) {
		op->done = 1;
		op->st = NFSC_ERR_SEND;
		return NULL;
	}
	k->p = p;
	k->op = op;
	k->proc = proc;
	return k;
}

/* Account a queued call, or undo call_new when libnfs refused it. */
static int call_queued(struct ct_pipe *p, struct call *k, int rc)
{
	if (rc != 0) {
		fprintf(stderr, "cachetest: %s: cannot queue: %s\n", p->url,
			rpc_get_error(p->rpc));
		k->op->done = 1;
		k->op->st = NFSC_ERR_SEND;
		free(k);
		return -1;
	}
	p->pending++;
	return 0;
}

int ct_pipe_read(struct ct_pipe *p, const nfs_fh3 *fh, uint64_t off,
		 uint32_t len, struct ct_op *op)
{
	READ3args a;
	struct call *k = call_new(p, op, NFS3_READ, off, len);

	if (!k)
		return -1;
	memset(&a, 0, sizeof(a));
	a.file = *fh;
	a.offset = off;
	a.count = len;
	return call_queued(p, k, rpc_nfs3_read_async(p->rpc, pipe_cb, &a, k));
}

int ct_pipe_write(struct ct_pipe *p, const nfs_fh3 *fh, uint64_t off,
		  const void *buf, uint32_t len, int stable, struct ct_op *op)
{
	WRITE3args a;
	struct call *k = call_new(p, op, NFS3_WRITE, off, len);

	if (!k)
		return -1;
	memset(&a, 0, sizeof(a));
	a.file = *fh;
	a.offset = off;
	a.count = len;
	a.stable = (stable_how)stable;
	a.data.data_len = len;
	a.data.data_val = nfsc_mut(buf);
	return call_queued(p, k, rpc_nfs3_write_async(p->rpc, pipe_cb, &a, k));
}

int ct_pipe_commit(struct ct_pipe *p, const nfs_fh3 *fh, uint64_t off,
		   uint32_t len, struct ct_op *op)
{
	COMMIT3args a;
	struct call *k = call_new(p, op, NFS3_COMMIT, off, len);

	if (!k)
		return -1;
	memset(&a, 0, sizeof(a));
	a.file = *fh;
	a.offset = off;
	a.count = len;
	return call_queued(p, k, rpc_nfs3_commit_async(p->rpc, pipe_cb, &a, k));
}

/* Set TCP_CORK on the pipe's socket to on. 0 or -1. */
static int pipe_cork(struct ct_pipe *p, int on)
{
	if (setsockopt(rpc_get_fd(p->rpc), IPPROTO_TCP, TCP_CORK, &on,
		       sizeof(on)) != 0) {
		perror("cachetest: setsockopt TCP_CORK");
		return -1;
	}
	return 0;
}

int ct_pipe_send_all(struct ct_pipe *p, int timeout_ms)
{
	uint64_t deadline = nfsc_now_ms() + (uint64_t)timeout_ms;
	int rc = 0;

	if (pipe_cork(p, 1) != 0)
		return -1;
	while (rpc_which_events(p->rpc) & POLLOUT) {
		struct pollfd pfd = { .fd = rpc_get_fd(p->rpc),
				      .events = POLLOUT };
		int n;

		if (nfsc_now_ms() >= deadline) {
			fprintf(stderr, "cachetest: %s: cannot send the queued "
				"calls in %d ms\n", p->url, timeout_ms);
			rc = -1;
			break;
		}
		n = poll(&pfd, 1, 100);
		if (n < 0 && errno != EINTR) {
			perror("cachetest: poll");
			rc = -1;
			break;
		}
		if (n > 0 && rpc_service(p->rpc, pfd.revents & POLLOUT) < 0) {
			fprintf(stderr, "cachetest: %s: rpc_service: %s\n",
				p->url, rpc_get_error(p->rpc));
			rc = -1;
			break;
		}
	}
	if (pipe_cork(p, 0) != 0)
		rc = -1;
	return rc;
}

unsigned ct_pipe_pending(const struct ct_pipe *p)
{
	return p->pending;
}

int ct_pipe_wait(struct ct_pipe *p, unsigned max_pending, int timeout_ms)
{
	uint64_t deadline = nfsc_now_ms() + (uint64_t)timeout_ms;

	while (p->pending > max_pending) {
		unsigned before = p->pending;
		struct pollfd pfd;
		int n;

		if (nfsc_now_ms() >= deadline) {
			fprintf(stderr, "cachetest: %s: %u calls without a "
				"reply for %d ms\n", p->url, p->pending,
				timeout_ms);
			return -1;
		}
		pfd.fd = rpc_get_fd(p->rpc);
		pfd.events = (short)rpc_which_events(p->rpc);
		pfd.revents = 0;
		n = poll(&pfd, 1, 100);
		if (n < 0 && errno != EINTR) {
			perror("cachetest: poll");
			return -1;
		}
		if (rpc_service(p->rpc, n > 0 ? pfd.revents : 0) < 0) {
			fprintf(stderr, "cachetest: %s: rpc_service: %s\n",
				p->url, rpc_get_error(p->rpc));
			return -1;
		}
		if (p->pending < before)
			deadline = nfsc_now_ms() + (uint64_t)timeout_ms;
	}
	return 0;
}

struct ct_pipe *ct_pipe_open(const char *url, uint32_t uid, uint32_t gid)
{
	struct ct_pipe *p = calloc(1, sizeof(*p));
	struct nfs_url *u = NULL;

	if (!p || !(p->url = strdup(url)) || !(p->nfs = nfs_init_context()))
		goto fail;
	if (!(u = nfs_parse_url_dir(p->nfs, url))) {
		fprintf(stderr, "cachetest: bad url %s: %s\n", url,
			nfs_get_error(p->nfs));
		goto fail;
	}
	nfs_set_uid(p->nfs, (int)uid);
	nfs_set_gid(p->nfs, (int)gid);
	if (nfs_mount(p->nfs, u->server, u->path) != 0) {
		fprintf(stderr, "cachetest: mount %s: %s\n", url,
			nfs_get_error(p->nfs));
		goto fail;
	}
	nfs_destroy_url(u);
	p->rpc = nfs_get_rpc_context(p->nfs);
	return p;
fail:
	if (u)
		nfs_destroy_url(u);
	ct_pipe_close(&p);
	return NULL;
}

void ct_pipe_close(struct ct_pipe **pp)
{
	struct ct_pipe *p = *pp;

	if (!p)
		return;
	if (p->nfs)
		nfs_destroy_context(p->nfs);	/* cancels pending calls */
	free(p->url);
	free(p);
	*pp = NULL;
}

/* ---- synchronous extras ---- */

int ct_read(struct nfsc *c, const nfs_fh3 *fh, uint64_t off, uint32_t len,
	    void *buf, uint32_t *count, int *eof, fattr3 *attr)
{
	READ3args a = { .file = *fh, .offset = off, .count = len };
	READ3res r;
	struct ct_op op;
	int st = nfsc_call(c, NFS3_READ, &a, &r, NFSC_TIMEOUT_MS);

	memset(&op, 0, sizeof(op));
	op.buf = buf;
	op.len = len;
	if (st == NFS3_OK) {
		take_read(&op, &r);
		nfsc_res_free(NFS3_READ, &r);
	}
	if (count)
		*count = op.count;
	if (eof)
		*eof = op.eof;
	if (attr) {
		if (op.has_attr)
			*attr = op.attr;
		else
			memset(attr, 0, sizeof(*attr));
	}
	return st;
}

int ct_set_size(struct nfsc *c, const nfs_fh3 *fh, uint64_t size)
{
	SETATTR3args a;
	SETATTR3res r;

	memset(&a, 0, sizeof(a));
	a.object = *fh;
	a.new_attributes.size.set_it = 1;
	a.new_attributes.size.set_size3_u.size = size;
	return nfsc_call(c, NFS3_SETATTR, &a, &r, NFSC_TIMEOUT_MS);
}

int ct_lookup_root(struct nfsc *c, const char *name, nfs_fh3 *fh)
{
	return nfsc_lookup(c, nfsc_root(c), name, fh, NULL);
}

/* ---- files behind NFS's back ---- */

int ct_disk_path(const char *name, char *out, size_t n)
{
	const char *dir = ct_env("NFSC_EXPORT_DIR");
	int k;

	if (!dir)
		return -1;
	k = snprintf(out, n, "%s/%s", dir, name);
	return k > 0 && (size_t)k < n ? 0 : -1;
}

int ct_disk_write(const char *name, const void *buf, size_t len)
{
	char path[4096];
	const uint8_t *b = buf;
	int fd;

	if (ct_disk_path(name, path, sizeof(path)) != 0)
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			goto fail;
		}
		b += n;
		len -= (size_t)n;
	}
	if (close(fd) != 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "cachetest: write %s: %s\n", path, strerror(errno));
	return -1;
}

ssize_t ct_disk_read(const char *name, uint64_t off, void *buf, size_t len)
{
	char path[4096];
	size_t have = 0;
	int fd;

	if (ct_disk_path(name, path, sizeof(path)) != 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while (have < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + have, len - have,
				  (off_t)(off + have));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		have += (size_t)n;
	}
	close(fd);
	return (ssize_t)have;
}

int ct_disk_set_mtime(const char *name, int64_t sec, long nsec)
{
	char path[4096];
	struct timespec ts[2];

	if (ct_disk_path(name, path, sizeof(path)) != 0)
		return -1;
	ts[0].tv_sec = (time_t)sec;
	ts[0].tv_nsec = nsec;
	ts[1] = ts[0];
	if (utimensat(AT_FDCWD, path, ts, 0) != 0) {
		fprintf(stderr, "cachetest: utimensat %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- data ---- */

void ct_rng_seed(struct ct_rng *r, uint64_t seed)
{
	r->s = seed ? seed : 0x853c49e6748fea9bull;
	/* Decorrelate nearby seeds. */
	for (int i = 0; i < 4; i++)
		ct_rng_next(r);
}

uint64_t ct_rng_next(struct ct_rng *r)
{
	uint64_t x = r->s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

uint64_t ct_rng_below(struct ct_rng *r, uint64_t n)
{
	return n ? ct_rng_next(r) % n : 0;
}

void ct_pattern(uint8_t *buf, size_t n, uint64_t off, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x = (off + i) * 0x9E3779B97F4A7C15ull ^
			     ((uint64_t)seed * 0xD6E8FEB86659FD93ull);

		x ^= x >> 31;
		buf[i] = (uint8_t)(x * 0x94D049BB133111EBull >> 56);
	}
}

size_t ct_first_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i;

	if (memcmp(a, b, n) == 0)
		return n;
	for (i = 0; i < n && a[i] == b[i]; i++)
		;
	return i;
}

/* ---- processes ---- */

long ct_status_kib(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	FILE *f;
	long kib = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':' &&
		    sscanf(line + n + 1, " %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

long ct_vmrss_kib(pid_t pid)
{
	return ct_status_kib(pid, "VmRSS");
}
