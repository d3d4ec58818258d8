/* SPDX-License-Identifier: MIT */
/*
 * loadgen: the benchmark's NFSv3 load generator, on libnfs 4.0's raw async
 * API (rpc_nfs3_read_async, rpc_nfs3_write_async, rpc_nfs3_commit_async)
 * with a configurable number of calls in flight on one connection.
 *
 * Usage:
 *   loadgen --url nfs://127.0.0.1/export?version=3&nfsport=N&mountport=M
 *           [--hook CMD] PHASE...
 *   loadgen --gen FILE --size BYTES --base SPEC     (write a local file)
 *
 * A PHASE is "op,key=value,key=value...", run in order on one mount:
 *   open,file=NAME[,create=1][,size=BYTES][,base=SPEC]
 *       open (or create and truncate) /NAME; size= sends SETATTR size.
 *       base= says what the file holds before this run writes to it:
 *       zero, pat:SEED, zpat:SEED:EVERY (64 KiB chunk i holds pat:SEED
 *       when i % EVERY == 0, zeros otherwise) or none (do not verify).
 *   read|write|rw,bs=B,pattern=seq|rand|written,qd=N,time=S,warmup=S,
 *       count=N,span=BYTES,start=BYTES,stable=unstable|filesync,
 *       commit_every=N,rmix=R,wmix=W,lat=1,label=L
 *       seq walks [start, span) in bs steps; rand picks offsets start +
 *       k*bs in [start, span); written (reads) picks blocks this process
 *       wrote. span defaults to the file size; span=prev is where the
 *       previous seq walk stopped (to read again what it read).
 *       rw mixes reads and writes rmix:wmix (default 1:2) and, with
 *       commit_every=N, sends a COMMIT after every N writes (sysbench's
 *       file-fsync-freq). Issuing stops at count ops, at the end of a seq
 *       walk, or warmup+time seconds after the phase starts, whichever
 *       comes first; calls still in flight are then drained.
 *   commit[,timeout=S]  one COMMIT of the whole file, timed; after S
 *       seconds without a reply the phase gives up (timed_out in its
 *       report) and the run goes on (any phase takes timeout=).
 *   snap,label=L     run "CMD L" (the --hook) and wait for it.
 *
 * Measurement: only calls that complete inside the timed window count.
 * The window opens warmup seconds after the phase starts and closes at
 * warmup+time, or at the last completion if issuing stopped earlier (count
 * or end of file). ops/s = counted calls / window; MB/s = counted payload
 * bytes / window / 1e6; latency (issue to completion, CLOCK_MONOTONIC) is
 * over counted calls; wall is the phase's whole time, drain included.
 * One JSON object per phase goes to stdout.
 *
 * Checking: every READ reply is compared with what the file must hold.
 * Bytes this process wrote must read back as written (pattern seed
 * LG_WSEED by absolute offset, so rewriting a block writes the same
 * bytes); the others must match the base. The write history is kept per
 * 1 KiB unit: wissued (a WRITE was sent) and wdone (the completion count
 * when the first WRITE of it was answered). A READ sent after wdone must
 * see the written bytes; a unit with a WRITE in flight when the READ was
 * sent may read either way; an unwritten unit must read as the base.
 *
 * Exit: 0 all phases ran clean; 1 usage or setup failure; 3 some call
 * failed, some READ returned wrong bytes or some phase timed out (the
 * phases still all run).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#define LG_UNIT		1024u		/* verification granule, bytes */
#define LG_ZCHUNK	65536u		/* zpat chunk, bytes */
#define LG_WSEED	0x5752495445ull	/* pattern of bytes we write */
#define LG_QD_MAX	256
#define LG_BS_MAX	(1024u * 1024)
#define LG_STALL_NS	(60ull * 1000000000)	/* no progress: give up */
#define LG_LAT_DUMP_MAX	64

/*
 * libnfs 4.0 returns its private { int len; char *val; } handle from
 * nfs_get_fh() without declaring the struct.
 */
struct nfs_fh {
	int len;
	char *val;
};

enum base_kind { BASE_NONE, BASE_ZERO, BASE_PAT, BASE_ZPAT };

/* What a file holds where this process has not written. */
struct base {
	enum base_kind kind;
	uint64_t seed;
	uint32_t every;
};

enum op_kind { OP_OPEN, OP_READ, OP_WRITE, OP_RW, OP_COMMIT, OP_SNAP };
enum pattern { PAT_SEQ, PAT_RAND, PAT_WRITTEN };

/* One phase as parsed from the command line. */
struct phase {
	enum op_kind op;
	char label[64];
	char file[256];
	bool create;
	uint64_t size;		/* open: SETATTR size, 0 = leave */
	bool has_size;
	struct base base;
	uint32_t bs;
	enum pattern pattern;
	int qd;
	double time, warmup;	/* seconds */
	uint64_t count;		/* 0 = no limit */
	uint64_t span, start;	/* bytes; span 0 = file size */
	bool span_prev;		/* span = where the last seq walk ended */
	int stable;		/* stable_how */
	uint64_t commit_every;
	unsigned rmix, wmix;
	bool lat_dump;
	double timeout;		/* seconds; give up on calls after it */
};

enum call_kind { CALL_READ, CALL_WRITE, CALL_COMMIT };

/* One call in flight. */
struct slot {
	struct lg *lg;
	bool busy;
	bool abandoned;		/* its phase gave up waiting for it */
	enum call_kind kind;
	uint64_t off;
	uint32_t len;
	uint64_t issue_ns;
	uint32_t issue_seq;	/* completions seen when it was sent */
	char *buf;		/* write payload, LG_BS_MAX bytes */
};

/* Counters of the phase being run. */
struct pstats {
	uint64_t issued, completed, counted, counted_bytes;
	uint64_t reads, writes, commits;
	uint64_t errors, verify_fail;
	uint64_t win_start, win_end;	/* ns; calls done inside count */
	uint64_t last_counted;		/* ns, last counted completion */
	uint64_t t0, t_end;		/* ns, phase start and drained */
	bool stopped_early;		/* count or end of file, not time */
	bool timed_out;			/* gave up after the phase's timeout */
	uint64_t *lat;		/* ns, counted calls */
	size_t nlat, caplat;
};

/* The generator: one mount, one open file, its write history. */
struct lg {
	struct nfs_context *nfs;
	struct rpc_context *rpc;
	struct nfsfh *fh;
	nfs_fh3 fh3;
	uint64_t fsize;
	struct base base;
	uint32_t *wdone;	/* per unit: completion seq of 1st write, 0 */
	uint8_t *wissued;	/* per unit: a write was sent */
	uint64_t nunits;
	uint64_t *wlist;	/* offsets this process wrote, for "written" */
	size_t nwlist, capwlist;
	uint32_t seq;		/* completions so far, all phases */
	uint64_t rng;
	const char *hook;
	const struct phase *ph;
	struct pstats st;
	uint64_t next_off;	/* seq walk */
	uint64_t span;		/* the running phase's span, bytes */
	uint64_t last_seq_end;	/* where the last seq walk stopped */
	uint64_t writes_since_commit;
	bool commit_wanted;
	int inflight;		/* calls sent and not answered */
	int abandoned;		/* of which no phase waits for */
	struct slot slots[LG_QD_MAX];
	uint8_t *scratch;	/* expected bytes, LG_BS_MAX */
	bool failed;
	bool conn_failed;	/* a call was cancelled or failed at RPC level */
};

/* Read the monotonic clock in nanoseconds. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Mix a 64-bit value (splitmix64's finalizer). */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* Draw the next pseudo-random number (xorshift64*). */
static uint64_t rnd(struct lg *g)
{
	g->rng ^= g->rng >> 12;
	g->rng ^= g->rng << 25;
	g->rng ^= g->rng >> 27;
	return g->rng * 0x2545f4914f6cdd1dull;
}

/* Fill out[0..len) with pattern seed's bytes for file offsets off.. */
static void pat_fill(uint64_t seed, uint64_t off, uint8_t *out, size_t len)
{
	size_t i = 0;

	while (i < len && ((off + i) & 7)) {
		uint64_t o = off + i;
		out[i++] = (uint8_t)(mix64(seed ^ ((o & ~7ull) * 0x9e3779b97f4a7c15ull)) >> (8 * (o & 7)));
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t w = mix64(seed ^ ((off + i) * 0x9e3779b97f4a7c15ull));
		memcpy(out + i, &w, 8);	/* little-endian hosts */
	}
	for (; i < len; i++) {
		uint64_t o = off + i;
		out[i] = (uint8_t)(mix64(seed ^ ((o & ~7ull) * 0x9e3779b97f4a7c15ull)) >> (8 * (o & 7)));
	}
}

/* Fill out[0..len) with what base b holds at file offsets off... */
static void base_fill(const struct base *b, uint64_t off, uint8_t *out,
		      size_t len)
{
	size_t i, n;

	switch (b->kind) {
	case BASE_PAT:
		pat_fill(b->seed, off, out, len);
		return;
	case BASE_ZPAT:
		for (i = 0; i < len; i += n) {
			uint64_t o = off + i;
			n = LG_ZCHUNK - (size_t)(o % LG_ZCHUNK);
			if (n > len - i)
				n = len - i;
			if ((o / LG_ZCHUNK) % b->every == 0)
				pat_fill(b->seed, o, out + i, n);
			else
				memset(out + i, 0, n);
		}
		return;
	default:
		memset(out, 0, len);
		return;
	}
}

/* Parse "1024", "64K", "1M", "1G" into *v. Returns 0 or -1. */
static int parse_size(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'K': case 'k': x <<= 10; end++; break;
	case 'M': case 'm': x <<= 20; end++; break;
	case 'G': case 'g': x <<= 30; end++; break;
	default: break;
	}
	if (*end)
		return -1;
	*v = x;
	return 0;
}

/* Parse a base SPEC (zero, none, pat:SEED, zpat:SEED:EVERY) into *b. */
static int parse_base(const char *s, struct base *b)
{
	unsigned long long seed;
	unsigned every;

	memset(b, 0, sizeof(*b));
	if (!strcmp(s, "zero"))
		b->kind = BASE_ZERO;
	else if (!strcmp(s, "none"))
		b->kind = BASE_NONE;
	else if (sscanf(s, "pat:%llu", &seed) == 1 && !strchr(s + 4, ':')) {
		b->kind = BASE_PAT;
		b->seed = seed;
	} else if (sscanf(s, "zpat:%llu:%u", &seed, &every) == 2 && every) {
		b->kind = BASE_ZPAT;
		b->seed = seed;
		b->every = every;
	} else
		return -1;
	return 0;
}

/* Set one key of phase p from "key=value". Returns 0 or -1. */
static int phase_key(struct phase *p, const char *k, const char *v)
{
	uint64_t x;

	if (!strcmp(k, "label"))
		snprintf(p->label, sizeof(p->label), "%s", v);
	else if (!strcmp(k, "file"))
		snprintf(p->file, sizeof(p->file), "%s", v);
	else if (!strcmp(k, "create"))
		p->create = atoi(v) != 0;
	else if (!strcmp(k, "base"))
		return parse_base(v, &p->base);
	else if (!strcmp(k, "pattern")) {
		if (!strcmp(v, "seq"))
			p->pattern = PAT_SEQ;
		else if (!strcmp(v, "rand"))
			p->pattern = PAT_RAND;
		else if (!strcmp(v, "written"))
			p->pattern = PAT_WRITTEN;
		else
			return -1;
	} else if (!strcmp(k, "stable")) {
		if (!strcmp(v, "unstable"))
			p->stable = UNSTABLE;
		else if (!strcmp(v, "filesync"))
			p->stable = FILE_SYNC;
		else
			return -1;
	} else if (!strcmp(k, "time"))
		p->time = atof(v);
	else if (!strcmp(k, "warmup"))
		p->warmup = atof(v);
	else if (!strcmp(k, "timeout"))
		p->timeout = atof(v);
	else if (!strcmp(k, "lat"))
		p->lat_dump = atoi(v) != 0;
	else if (!strcmp(k, "span") && !strcmp(v, "prev"))
		p->span_prev = true;
	else if (parse_size(v, &x) != 0)
		return -1;
	else if (!strcmp(k, "size")) {
		p->size = x;
		p->has_size = true;
	} else if (!strcmp(k, "bs"))
		p->bs = (uint32_t)x;
	else if (!strcmp(k, "qd"))
		p->qd = (int)x;
	else if (!strcmp(k, "count"))
		p->count = x;
	else if (!strcmp(k, "span"))
		p->span = x;
	else if (!strcmp(k, "start"))
		p->start = x;
	else if (!strcmp(k, "commit_every"))
		p->commit_every = x;
	else if (!strcmp(k, "rmix"))
		p->rmix = (unsigned)x;
	else if (!strcmp(k, "wmix"))
		p->wmix = (unsigned)x;
	else
		return -1;
	return 0;
}

/* Map a phase's leading word to its op. Returns 0 or -1. */
static int phase_op(const char *w, enum op_kind *op)
{
	static const char *const names[] = {
		[OP_OPEN] = "open", [OP_READ] = "read", [OP_WRITE] = "write",
		[OP_RW] = "rw", [OP_COMMIT] = "commit", [OP_SNAP] = "snap",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(w, names[i])) {
			*op = (enum op_kind)i;
			return 0;
		}
	}
	return -1;
}

/* Check what phase p needs. Returns 0, or -1 after saying why. */
static int phase_check(const struct phase *p, const char *arg)
{
	const char *why = NULL;
	const char *c;

	if (p->op == OP_OPEN && !p->file[0])
		why = "open needs file=";
	else if ((p->op == OP_READ || p->op == OP_WRITE || p->op == OP_RW) &&
		 (p->bs == 0 || p->bs > LG_BS_MAX || p->bs % LG_UNIT))
		why = "bs must be a multiple of 1024 up to 1M";
	else if (p->qd < 1 || p->qd > LG_QD_MAX)
		why = "qd must be 1..256";
	else if ((p->op == OP_READ || p->op == OP_WRITE || p->op == OP_RW) &&
		 p->time <= 0 && p->count == 0 && p->pattern != PAT_SEQ)
		why = "a phase needs time= or count=";
	else if (p->op == OP_SNAP && !p->label[0])
		why = "snap needs label=";
	else if (p->op == OP_RW && p->rmix + p->wmix == 0)
		why = "rmix+wmix must be > 0";
	for (c = p->label; !why && *c; c++)
		if (!(isalnum((unsigned char)*c) || *c == '-' || *c == '_' || *c == '.'))
			why = "label may hold only [A-Za-z0-9._-]";
	if (why) {
		fprintf(stderr, "loadgen: %s: %s\n", arg, why);
		return -1;
	}
	return 0;
}

/* Parse one PHASE argument into *p. Returns 0, or -1 after saying why. */
static int phase_parse(const char *arg, struct phase *p)
{
	char *copy = strdup(arg), *tok, *save = NULL, *eq;
	int rc = -1;

	memset(p, 0, sizeof(*p));
	p->qd = 1;
	p->rmix = 1;
	p->wmix = 2;
	p->stable = UNSTABLE;
	p->base.kind = BASE_NONE;
	if (!copy)
		return -1;
	tok = strtok_r(copy, ",", &save);
	if (!tok || phase_op(tok, &p->op) != 0) {
		fprintf(stderr, "loadgen: %s: unknown op\n", arg);
		goto out;
	}
	while ((tok = strtok_r(NULL, ",", &save))) {
		eq = strchr(tok, '=');
		if (!eq) {
			fprintf(stderr, "loadgen: %s: '%s' is not key=value\n", arg, tok);
			goto out;
		}
		*eq = '\0';
		if (phase_key(p, tok, eq + 1) != 0) {
			fprintf(stderr, "loadgen: %s: bad %s=%s\n", arg, tok, eq + 1);
			goto out;
		}
	}
	rc = phase_check(p, arg);
out:
	free(copy);
	return rc;
}

/* Mount url into g. Returns 0, or -1 after saying why. */
static int lg_mount(struct lg *g, const char *url)
{
	struct nfs_url *u;

	g->nfs = nfs_init_context();
	if (!g->nfs)
		return -1;
	u = nfs_parse_url_dir(g->nfs, url);
	if (!u) {
		fprintf(stderr, "loadgen: bad url %s: %s\n", url, nfs_get_error(g->nfs));
		return -1;
	}
	nfs_set_timeout(g->nfs, 60000);
	if (nfs_mount(g->nfs, u->server, u->path) != 0) {
		fprintf(stderr, "loadgen: mount %s: %s\n", url, nfs_get_error(g->nfs));
		nfs_destroy_url(u);
		return -1;
	}
	nfs_destroy_url(u);
	g->rpc = nfs_get_rpc_context(g->nfs);
	return 0;
}

/* Forget the open file's write history and size its tables. */
static int history_reset(struct lg *g, uint64_t size)
{
	free(g->wdone);
	free(g->wissued);
	g->nunits = (size + LG_UNIT - 1) / LG_UNIT;
	g->wdone = calloc(g->nunits ? g->nunits : 1, sizeof(*g->wdone));
	g->wissued = calloc(g->nunits ? g->nunits : 1, 1);
	g->nwlist = 0;
	return g->wdone && g->wissued ? 0 : -1;
}

/* Run an open phase. Returns 0 or -1. */
static int do_open(struct lg *g, const struct phase *p)
{
	char path[300];
	struct nfs_stat_64 st;
	struct nfs_fh *h;
	int rc;

	if (g->fh)
		nfs_close(g->nfs, g->fh);
	g->fh = NULL;
	snprintf(path, sizeof(path), "/%s", p->file);
	if (p->create)
		rc = nfs_create(g->nfs, path, O_RDWR | O_TRUNC, 0644, &g->fh);
	else
		rc = nfs_open(g->nfs, path, O_RDWR, &g->fh);
	if (rc == 0 && p->has_size)
		rc = nfs_ftruncate(g->nfs, g->fh, p->size);
	if (rc == 0)
		rc = nfs_fstat64(g->nfs, g->fh, &st);
	if (rc != 0) {
		fprintf(stderr, "loadgen: open %s: %s\n", path, nfs_get_error(g->nfs));
		return -1;
	}
	h = nfs_get_fh(g->fh);
	g->fh3.data.data_len = (u_int)h->len;
	g->fh3.data.data_val = h->val;
	g->fsize = st.nfs_size;
	g->base = p->base;
	return history_reset(g, g->fsize);
}

/* Make the write history cover file bytes [0, size). Returns 0 or -1. */
static int hist_grow(struct lg *g, uint64_t size)
{
	uint64_t n = (size + LG_UNIT - 1) / LG_UNIT, cap = g->nunits;
	uint32_t *d;
	uint8_t *i;

	if (n <= cap)
		return 0;
	while (cap < n)
		cap = cap < 1024 ? 1024 : cap * 2;
	d = realloc(g->wdone, cap * sizeof(*d));
	if (d)
		g->wdone = d;
	i = realloc(g->wissued, cap);
	if (i)
		g->wissued = i;
	if (!d || !i)
		return -1;
	memset(d + g->nunits, 0, (cap - g->nunits) * sizeof(*d));
	memset(i + g->nunits, 0, cap - g->nunits);
	g->nunits = cap;
	return 0;
}

/* Record that a write of [off, off+len) was sent. */
static void hist_issue(struct lg *g, uint64_t off, uint32_t len)
{
	uint64_t u;

	for (u = off / LG_UNIT; u < (off + len) / LG_UNIT && u < g->nunits; u++)
		g->wissued[u] = 1;
}

/* Record that a write of [off, off+len) completed as completion seq. */
static void hist_done(struct lg *g, uint64_t off, uint32_t len)
{
	uint64_t u;

	for (u = off / LG_UNIT; u < (off + len) / LG_UNIT && u < g->nunits; u++)
		if (!g->wdone[u])
			g->wdone[u] = g->seq;
}

/* True if bytes match either image word by word (a torn unit). */
static bool match_either(const uint8_t *got, const uint8_t *a,
			 const uint8_t *b, size_t len)
{
	size_t i, n;

	for (i = 0; i < len; i += 8) {
		n = len - i < 8 ? len - i : 8;
		if (memcmp(got + i, a + i, n) && memcmp(got + i, b + i, n))
			return false;
	}
	return true;
}

/* Check one unit-bounded piece of a READ reply. True if as expected. */
static bool verify_piece(struct lg *g, const struct slot *s, uint64_t off,
			 const uint8_t *got, size_t len)
{
	uint64_t u = off / LG_UNIT;
	uint8_t w[LG_UNIT];
	uint8_t *b = g->scratch;

	if (u >= g->nunits || !g->wissued[u]) {
		if (g->base.kind == BASE_NONE)
			return true;
		base_fill(&g->base, off, b, len);
		return memcmp(got, b, len) == 0;
	}
	pat_fill(LG_WSEED, off, w, len);
	if (g->wdone[u] && g->wdone[u] <= s->issue_seq)
		return memcmp(got, w, len) == 0;
	if (!memcmp(got, w, len) || g->base.kind == BASE_NONE)
		return true;
	base_fill(&g->base, off, b, len);
	return match_either(got, w, b, len);
}

/* Check a READ reply's data against what the file must hold. */
static bool verify_read(struct lg *g, const struct slot *s,
			const uint8_t *data, size_t len)
{
	size_t i = 0, n;
	uint64_t off;

	while (i < len) {
		off = s->off + i;
		n = LG_UNIT - (size_t)(off % LG_UNIT);
		if (n > len - i)
			n = len - i;
		if (!verify_piece(g, s, off, data + i, n)) {
			if (g->st.verify_fail++ < 5)
				fprintf(stderr, "loadgen: READ at %" PRIu64
					" returned wrong bytes in [%" PRIu64 ", %" PRIu64 ")\n",
					s->off, off, off + n);
			return false;
		}
		i += n;
	}
	return true;
}

/* Check a READ reply: status, length (short only at EOF), bytes. */
static bool read_ok(struct lg *g, const struct slot *s, const READ3res *r)
{
	const READ3resok *ok = &r->READ3res_u.resok;
	uint64_t want = s->len;

	if (r->status != NFS3_OK) {
		fprintf(stderr, "loadgen: READ at %" PRIu64 ": status %d\n", s->off,
			(int)r->status);
		return false;
	}
	if (s->off + want > g->fsize)
		want = s->off < g->fsize ? g->fsize - s->off : 0;
	if (ok->data.data_len != want) {
		if (g->st.verify_fail++ < 5)
			fprintf(stderr, "loadgen: READ at %" PRIu64 " returned %u bytes, want %" PRIu64 "\n",
				s->off, ok->data.data_len, want);
		return true;	/* counted as a verify failure, not an error */
	}
	verify_read(g, s, (const uint8_t *)ok->data.data_val, ok->data.data_len);
	return true;
}

/* Append one latency to the phase's sample. */
static void lat_add(struct pstats *st, uint64_t ns)
{
	uint64_t *n;

	if (st->nlat == st->caplat) {
		st->caplat = st->caplat ? st->caplat * 2 : 65536;
		n = realloc(st->lat, st->caplat * sizeof(*n));
		if (!n) {
			st->caplat = st->nlat;
			return;
		}
		st->lat = n;
	}
	st->lat[st->nlat++] = ns;
}

/* Account a finished call: window, latency, bytes. */
static void account(struct lg *g, struct slot *s, bool ok, uint64_t bytes)
{
	uint64_t t = now_ns();
	struct pstats *st = &g->st;

	st->completed++;
	if (!ok) {
		st->errors++;
		return;
	}
	if (s->kind == CALL_COMMIT && g->ph->op != OP_COMMIT)
		return;	/* rw's COMMITs are counted apart, as commits */
	if (t >= st->win_start && t <= st->win_end) {
		st->counted++;
		st->counted_bytes += bytes;
		st->last_counted = t;
		lat_add(st, t - s->issue_ns);
	}
}

/* Complete one call (libnfs rpc_cb). */
static void call_cb(struct rpc_context *rpc, int status, void *data,
		    void *priv)
{
	struct slot *s = priv;
	struct lg *g = s->lg;
	bool ok = status == RPC_STATUS_SUCCESS;
	uint64_t bytes = 0;

	(void)rpc;
	g->seq++;
	if (s->abandoned) {
		s->abandoned = false;
		s->busy = false;
		g->abandoned--;
		g->inflight--;
		return;
	}
	if (!ok)
		g->conn_failed = true;
	if (!ok)
		fprintf(stderr, "loadgen: call at %" PRIu64 " failed: %s\n", s->off,
			status == RPC_STATUS_ERROR && data ? (const char *)data : "cancelled");
	else if (s->kind == CALL_READ) {
		ok = read_ok(g, s, data);
		bytes = ((READ3res *)data)->READ3res_u.resok.count;
	} else if (s->kind == CALL_WRITE) {
		const WRITE3res *w = data;
		ok = w->status == NFS3_OK && w->WRITE3res_u.resok.count == s->len;
		if (!ok)
			fprintf(stderr, "loadgen: WRITE at %" PRIu64 ": status %d\n",
				s->off, (int)w->status);
		else
			hist_done(g, s->off, s->len);
		bytes = s->len;
	} else {
		ok = ((COMMIT3res *)data)->status == NFS3_OK;
		if (!ok)
			fprintf(stderr, "loadgen: COMMIT: status %d\n",
				(int)((COMMIT3res *)data)->status);
	}
	account(g, s, ok, bytes);
	s->busy = false;
	g->inflight--;
}

/* Send slot s's call as set up. Returns 0 or -1. */
static int send_call(struct lg *g, struct slot *s)
{
	int rc;

	s->issue_ns = now_ns();
	s->issue_seq = g->seq;
	if (s->kind == CALL_READ) {
		READ3args a = { .file = g->fh3, .offset = s->off, .count = s->len };
		rc = rpc_nfs3_read_async(g->rpc, call_cb, &a, s);
	} else if (s->kind == CALL_WRITE) {
		WRITE3args a = { .file = g->fh3, .offset = s->off, .count = s->len,
				 .stable = (stable_how)g->ph->stable };
		a.data.data_len = s->len;
		a.data.data_val = s->buf;
		pat_fill(LG_WSEED, s->off, (uint8_t *)s->buf, s->len);
		hist_issue(g, s->off, s->len);
		rc = rpc_nfs3_write_async(g->rpc, call_cb, &a, s);
	} else {
		COMMIT3args a = { .file = g->fh3, .offset = 0, .count = 0 };
		rc = rpc_nfs3_commit_async(g->rpc, call_cb, &a, s);
	}
	if (rc != 0) {
		fprintf(stderr, "loadgen: cannot queue a call: %s\n", rpc_get_error(g->rpc));
		return -1;
	}
	s->busy = true;
	g->inflight++;
	g->st.issued++;
	return 0;
}

/* Pick the offset of the next data call of phase p. False when done. */
static bool next_offset(struct lg *g, const struct phase *p, uint64_t *off)
{
	uint64_t nblk;

	if (p->pattern == PAT_SEQ) {
		if (g->next_off + p->bs > g->span)
			return false;
		*off = g->next_off;
		g->next_off += p->bs;
		return true;
	}
	if (p->pattern == PAT_WRITTEN) {
		if (!g->nwlist)
			return false;
		*off = g->wlist[rnd(g) % g->nwlist];
		return true;
	}
	nblk = g->span > p->start ? (g->span - p->start) / p->bs : 0;
	if (!nblk)
		return false;
	*off = p->start + (rnd(g) % nblk) * p->bs;
	return true;
}

/* Remember that this process wrote at off, for "written" reads. */
static void wlist_add(struct lg *g, uint64_t off)
{
	uint64_t *n;

	if (g->nwlist == g->capwlist) {
		g->capwlist = g->capwlist ? g->capwlist * 2 : 4096;
		n = realloc(g->wlist, g->capwlist * sizeof(*n));
		if (!n) {
			g->capwlist = g->nwlist;
			return;
		}
		g->wlist = n;
	}
	g->wlist[g->nwlist++] = off;
}

/* Decide the kind of the next call of phase p. */
static enum call_kind next_kind(struct lg *g, const struct phase *p)
{
	if (p->op == OP_READ)
		return CALL_READ;
	if (p->op == OP_WRITE)
		return CALL_WRITE;
	if (g->commit_wanted)
		return CALL_COMMIT;
	return rnd(g) % (p->rmix + p->wmix) < p->rmix ? CALL_READ : CALL_WRITE;
}

/* Send the next call of phase p in free slot s. False when done. */
static bool issue_one(struct lg *g, const struct phase *p, struct slot *s)
{
	uint64_t off = 0;

	s->kind = next_kind(g, p);
	if (s->kind == CALL_COMMIT) {
		g->commit_wanted = false;
		g->st.commits++;
		s->off = 0;
		s->len = 0;
		return send_call(g, s) == 0;
	}
	if (!next_offset(g, p, &off))
		return false;
	s->off = off;
	s->len = p->bs;
	if (s->kind == CALL_WRITE) {
		if (off + p->bs > g->fsize)
			g->fsize = off + p->bs;	/* the write extends the file */
		if (hist_grow(g, off + p->bs) != 0)
			return false;
		wlist_add(g, off);
		g->st.writes++;
		if (p->commit_every && ++g->writes_since_commit >= p->commit_every) {
			g->writes_since_commit = 0;
			g->commit_wanted = true;
		}
	} else
		g->st.reads++;
	return send_call(g, s) == 0;
}

/* Find a free slot if fewer than qd calls are awaited. */
static struct slot *free_slot(struct lg *g, int qd)
{
	int i;

	if (g->inflight - g->abandoned >= qd)
		return NULL;
	for (i = 0; i < LG_QD_MAX; i++)
		if (!g->slots[i].busy)
			return &g->slots[i];
	return NULL;
}

/* Stop waiting for the calls in flight (a phase's timeout passed). */
static void abandon_all(struct lg *g)
{
	int i;

	for (i = 0; i < LG_QD_MAX; i++) {
		if (g->slots[i].busy && !g->slots[i].abandoned) {
			g->slots[i].abandoned = true;
			g->abandoned++;
		}
	}
	g->st.timed_out = true;
}

/* Serve the connection once, waiting up to 100 ms. Returns 0 or -1. */
static int service(struct lg *g)
{
	struct pollfd pfd = { .fd = rpc_get_fd(g->rpc),
			      .events = (short)rpc_which_events(g->rpc) };
	int n = poll(&pfd, 1, 100);

	if (n < 0 && errno != EINTR)
		return -1;
	if (rpc_service(g->rpc, n > 0 ? pfd.revents : 0) < 0) {
		fprintf(stderr, "loadgen: connection failed: %s\n", rpc_get_error(g->rpc));
		return -1;
	}
	return 0;
}

/* Run the call loop of a read/write/rw/commit phase. Returns 0 or -1. */
static int run_calls(struct lg *g, const struct phase *p, double timeout)
{
	uint64_t last = g->seq, progress = now_ns(), t;
	uint64_t give_up = timeout > 0 ? g->st.t0 + (uint64_t)(timeout * 1e9) : UINT64_MAX;
	bool issuing = true;
	struct slot *s;

	for (;;) {
		while (issuing && (s = free_slot(g, p->qd))) {
			t = now_ns();
			if (g->conn_failed) {
				issuing = false;
			} else if (t >= g->st.win_end) {
				issuing = false;
			} else if ((p->count && g->st.reads + g->st.writes >= p->count) ||
				   (p->op == OP_COMMIT && g->st.issued) ||
				   !issue_one(g, p, s)) {
				issuing = false;
				g->st.stopped_early = true;
			}
		}
		if (g->inflight == g->abandoned)
			break;
		if (service(g) != 0)
			return -1;
		if (g->conn_failed)
			break;	/* do not wait for calls a dead link lost */
		t = now_ns();
		if (t >= give_up) {
			fprintf(stderr, "loadgen: %s: no reply after %.0f s; going on without it\n",
				p->label, timeout);
			abandon_all(g);
			break;
		}
		if (g->seq != last) {
			last = g->seq;
			progress = t;
		} else if (t - progress > LG_STALL_NS) {
			fprintf(stderr, "loadgen: no reply for 60 s; giving up\n");
			return -1;
		}
	}
	if (g->conn_failed) {
		fprintf(stderr, "loadgen: the connection failed; stopping\n");
		return -1;
	}
	return 0;
}

/* Compare two latencies for qsort. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Print the sorted sample's q-quantile in microseconds. */
static double quantile_us(const struct pstats *st, double q)
{
	size_t i;

	if (!st->nlat)
		return 0;
	i = (size_t)ceil(q * (double)st->nlat);
	if (i > 0)
		i--;
	if (i >= st->nlat)
		i = st->nlat - 1;
	return st->lat[i] / 1000.0;
}

/* Print phase p's result as one JSON object on stdout. */
static void report(struct lg *g, const struct phase *p, const char *name,
		   uint64_t *order)
{
	struct pstats *st = &g->st;
	uint64_t end = st->win_end;
	double secs, mean = 0;
	size_t i;

	if (st->stopped_early && st->last_counted && st->last_counted < end)
		end = st->last_counted;
	secs = end > st->win_start && st->counted ? (double)(end - st->win_start) / 1e9 : 0;
	for (i = 0; i < st->nlat; i++)
		mean += st->lat[i] / 1000.0;
	if (st->nlat)
		mean /= (double)st->nlat;
	printf("{\"phase\":\"%s\",\"label\":\"%s\",\"qd\":%d,\"bs\":%u,"
	       "\"issued\":%" PRIu64 ",\"completed\":%" PRIu64 ",\"ops\":%" PRIu64
	       ",\"bytes\":%" PRIu64 ",\"secs\":%.6f,\"ops_s\":%.1f,\"mb_s\":%.3f,"
	       "\"reads\":%" PRIu64 ",\"writes\":%" PRIu64 ",\"commits\":%" PRIu64
	       ",\"errors\":%" PRIu64 ",\"verify_fail\":%" PRIu64
	       ",\"p50_us\":%.1f,\"p99_us\":%.1f,\"mean_us\":%.1f,\"max_us\":%.1f,"
	       "\"wall\":%.6f,\"timed_out\":%s,\"time_boxed\":%s",
	       name, p->label, p->qd, p->bs, st->issued, st->completed, st->counted,
	       st->counted_bytes, secs, secs > 0 ? (double)st->counted / secs : 0,
	       secs > 0 ? (double)st->counted_bytes / secs / 1e6 : 0,
	       st->reads, st->writes, st->commits, st->errors, st->verify_fail,
	       quantile_us(st, 0.5), quantile_us(st, 0.99), mean,
	       st->nlat ? st->lat[st->nlat - 1] / 1000.0 : 0,
	       (double)(st->t_end - st->t0) / 1e9, st->timed_out ? "true" : "false",
	       st->stopped_early ? "false" : "true");
	if (p->lat_dump && order) {
		printf(",\"lat_us\":[");
		for (i = 0; i < st->nlat && i < LG_LAT_DUMP_MAX; i++)
			printf("%s%.1f", i ? "," : "", order[i] / 1000.0);
		printf("]");
	}
	printf("}\n");
	fflush(stdout);
}

/* Run one read/write/rw/commit phase and report it. Returns 0 or -1. */
static int do_calls(struct lg *g, const struct phase *p, const char *name)
{
	struct phase commit_ph = { .op = OP_COMMIT, .qd = 1 };
	uint64_t t0 = now_ns();
	uint64_t *order = NULL;
	int rc;

	if (!g->fh) {
		fprintf(stderr, "loadgen: %s before open\n", name);
		return -1;
	}
	free(g->st.lat);
	memset(&g->st, 0, sizeof(g->st));
	memcpy(commit_ph.label, p->label, sizeof(commit_ph.label));
	g->ph = p->op == OP_COMMIT ? &commit_ph : p;
	g->next_off = p->start;
	g->span = p->span_prev ? g->last_seq_end : p->span ? p->span : g->fsize;
	g->writes_since_commit = 0;
	g->commit_wanted = p->op == OP_COMMIT;
	g->st.win_start = t0 + (uint64_t)(p->warmup * 1e9);
	g->st.win_end = p->time > 0 ? g->st.win_start + (uint64_t)(p->time * 1e9) : UINT64_MAX;
	g->st.t0 = t0;
	rc = run_calls(g, g->ph, p->timeout);
	g->st.t_end = now_ns();
	if (p->pattern == PAT_SEQ && p->op != OP_COMMIT)
		g->last_seq_end = g->next_off;
	if (p->lat_dump && g->st.nlat) {
		order = malloc(g->st.nlat * sizeof(*order));
		if (order)
			memcpy(order, g->st.lat, g->st.nlat * sizeof(*order));
	}
	qsort(g->st.lat, g->st.nlat, sizeof(*g->st.lat), cmp_u64);
	report(g, p, name, order);
	free(order);
	if (g->st.errors || g->st.verify_fail || g->st.timed_out)
		g->failed = true;
	return rc;
}

/* Run the hook with label. Returns 0 or -1. */
static int do_snap(struct lg *g, const struct phase *p)
{
	char cmd[4096];
	int rc;

	if (!g->hook)
		return 0;
	snprintf(cmd, sizeof(cmd), "%s %s", g->hook, p->label);
	rc = system(cmd);
	if (rc != 0) {
		fprintf(stderr, "loadgen: hook '%s' failed (%d)\n", cmd, rc);
		return -1;
	}
	return 0;
}

/* Run phase p. Returns 0 or -1 (stop the run). */
static int run_phase(struct lg *g, const struct phase *p)
{
	static const char *const names[] = {
		[OP_OPEN] = "open", [OP_READ] = "read", [OP_WRITE] = "write",
		[OP_RW] = "rw", [OP_COMMIT] = "commit", [OP_SNAP] = "snap",
	};

	switch (p->op) {
	case OP_OPEN:
		return do_open(g, p);
	case OP_SNAP:
		return do_snap(g, p);
	default:
		return do_calls(g, p, names[p->op]);
	}
}

/* Write a local file of size bytes holding base spec. Returns 0 or -1. */
static int gen_file(const char *path, uint64_t size, const struct base *b)
{
	size_t chunk = 1024 * 1024, n;
	uint8_t *buf = malloc(chunk);
	uint64_t off;
	int fd, rc = -1;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !buf) {
		perror(path);
		goto out;
	}
	for (off = 0; off < size; off += n) {
		n = size - off < chunk ? (size_t)(size - off) : chunk;
		base_fill(b, off, buf, n);
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
			perror(path);
			goto out;
		}
	}
	rc = 0;
out:
	if (fd >= 0 && close(fd) != 0)
		rc = -1;
	free(buf);
	return rc;
}

/* Print usage on f. */
static void usage(FILE *f)
{
	fprintf(f, "usage: loadgen --url URL [--hook CMD] PHASE...\n"
		   "       loadgen --gen FILE --size BYTES --base SPEC\n"
		   "(see the comment at the top of bench/loadgen.c)\n");
}

/* Handle --gen. Returns the exit status. */
static int main_gen(const char *file, const char *size, const char *spec)
{
	struct base b;
	uint64_t n;

	if (!size || !spec || parse_size(size, &n) != 0 || parse_base(spec, &b) != 0) {
		usage(stderr);
		return 1;
	}
	return gen_file(file, n, &b) == 0 ? 0 : 1;
}

/* Set up the generator's buffers. Returns 0 or -1. */
static int lg_init(struct lg *g)
{
	int i;

	memset(g, 0, sizeof(*g));
	g->rng = 0x9e3779b97f4a7c15ull;
	g->scratch = malloc(LG_BS_MAX);
	if (!g->scratch)
		return -1;
	for (i = 0; i < LG_QD_MAX; i++) {
		g->slots[i].lg = g;
		g->slots[i].buf = malloc(LG_BS_MAX);
		if (!g->slots[i].buf)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *url = NULL, *gen = NULL, *size = NULL, *spec = NULL;
	static struct lg g;
	struct phase *ph;
	int i, n = 0, first;

	if (lg_init(&g) != 0)
		return 1;
	for (i = 1; i < argc && argv[i][0] == '-'; i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) {
			usage(stderr);
			return 1;
		}
		if (!strcmp(argv[i], "--url"))
			url = v;
		else if (!strcmp(argv[i], "--hook"))
			g.hook = v;
		else if (!strcmp(argv[i], "--gen"))
			gen = v;
		else if (!strcmp(argv[i], "--size"))
			size = v;
		else if (!strcmp(argv[i], "--base"))
			spec = v;
		else {
			usage(stderr);
			return 1;
		}
	}
	if (gen)
		return main_gen(gen, size, spec);
	first = i;
	ph = calloc((size_t)(argc - first) + 1, sizeof(*ph));
	if (!url || first == argc || !ph) {
		usage(stderr);
		return 1;
	}
	for (i = first; i < argc; i++)
		if (phase_parse(argv[i], &ph[n++]) != 0)
			return 1;
	if (lg_mount(&g, url) != 0)
		return 1;
	for (i = 0; i < n; i++)
		if (run_phase(&g, &ph[i]) != 0)
			return g.failed ? 3 : 1;
	if (g.fh)
		nfs_close(g.nfs, g.fh);
	nfs_destroy_context(g.nfs);
	return g.failed ? 3 : 0;
}
