/* SPDX-License-Identifier: MIT */
/*
 * conf: load, check, build and write nfscached's configuration.
 *
 * One table, directives[], names every directive with its scope (global or
 * inside an export section), kind, struct field, default (the text a file
 * would hold, unquoted), range, unit, string check and one line of help.
 * Everything else derives from it: the libconfuse option arrays (libconfuse
 * parses the defaults from that same text), per-value validation, the
 * conversion into struct conf, conf_from_flags' defaults, conf_set_global,
 * conf_dump, conf_write_example, the manual nfscached.conf(5) (through
 * conf_directive_doc, man/conf_man.c), conf_equal and conf_free.
 *
 * Loading runs in these steps, each reporting "FILE:LINE: reason"; every
 * error is recorded (report()) and the load goes on, so that a file's
 * errors all come out at once, sorted by line:
 *  0. (conf_text.c) the file is read whole and its comments blanked, and a
 *     string or section left open is refused at the line that opens it.
 *     conf_scan then walks the statements: directives given twice,
 *     unknown names, ganesha.conf and exports(5) habits (blanked, so that
 *     libconfuse reads on). When it read the whole file, libconfuse is
 *     told to skip unknown names (already reported) instead of stopping.
 *  1. libconfuse parses the file. Our parse callbacks (numbers, booleans)
 *     and validate callbacks (ranges, addresses, URLs, unique ids) run per
 *     value at the value's line; the export callback runs as each export
 *     section closes (path rules, required directives). libconfuse's own
 *     errors (syntax, unknown directive, duplicate title) reach on_error().
 *  2. The cfg tree is converted into struct conf.
 *  3. Rules that tie directives together (max_reply_buffer >=
 *     max_record_size) and "at least one export" run on struct conf,
 *     unless libconfuse stopped at a syntax error; a rule is skipped when
 *     one of its directives had its value refused. Its error points at
 *     the directive to blame (blame_second).
 *
 * A value refused is replaced by its default in libconfuse's tree and
 * marked bad (gbad, export_rec.bad), so that nothing built on it reports
 * more errors.
 *
 * Lines. libconfuse keeps no line per option: a callback sees only the
 * current line of the cfg_t being lexed. While a section is parsed, the
 * root cfg_t's line stays at the section's opening brace, so the first
 * callback inside a new export section records that line (libconfuse
 * parses a section's defaults as it opens it, so a callback always runs
 * there). Those records live in a per-load context, reached through a
 * thread-local pointer because libconfuse callbacks carry no user data,
 * and give the section's line to errors found when it closes and the id's
 * line to duplicate ids.
 *
 * Invariants of a loaded struct conf: every value is within its range,
 * export ids are unique within 1..63, export paths are absolute, normalised
 * and unique, nexports >= 1, max_reply_buffer >= max_record_size, and
 * mount_port differs from nfs_port unless it is 0.
 */
#include "conf.h"
#include "conf_text.h"
#include "disk_dir.h"

#include <arpa/inet.h>
#include <confuse.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT_PATH_MAX 1024	/* MNTPATHLEN, RFC 1813 section 5.1 */
#define WHY_MAX 512

enum dir_scope { S_GLOBAL, S_EXPORT };

enum dir_kind {
	K_BOOL,		/* bool */
	K_INT,		/* int */
	K_UINT,		/* unsigned */
	K_U32,		/* uint32_t */
	K_DOUBLE,	/* double */
	K_STR,		/* char *, owned */
	K_URL,		/* char *upstream and its parsed struct conf_export.url */
	K_NETS,		/* struct conf_export.clients and .nclients */
};

/* A string check: 0, or -1 with a reason (which quotes s) in why. */
typedef int (*check_fn)(const char *s, char *why, size_t len);

struct directive {
	const char *name;
	enum dir_scope scope;
	size_t off;		/* field in struct conf or struct conf_export */
	enum dir_kind kind;
	const char *def;	/* default as written in a file, unquoted;
				 * NULL: required */
	double min, max;	/* range of the numeric kinds */
	const char *unit;	/* NULL when none */
	check_fn check;		/* string kinds; K_NETS per element */
	const char *help;	/* one line */
};

/* One value on its way between text, libconfuse and struct conf. */
union dval {
	bool b;
	long l;
	double d;
	const char *s;
};

static int check_ip(const char *s, char *why, size_t len);
static int check_metrics(const char *s, char *why, size_t len);
static int check_nonempty(const char *s, char *why, size_t len);
static int check_admin_socket(const char *s, char *why, size_t len);
static int check_log_level(const char *s, char *why, size_t len);
static int check_cache_dir(const char *s, char *why, size_t len);
static int check_url(const char *s, char *why, size_t len);
static int check_net(const char *s, char *why, size_t len);
static int check_rpcbind_conflict(const char *s, char *why, size_t len);
static int check_commit(const char *s, char *why, size_t len);

#define GLOBAL(f) S_GLOBAL, offsetof(struct conf, f)
#define EXPORT(f) S_EXPORT, offsetof(struct conf_export, f)
#define NUM(name, where, kind, def, lo, hi, unit, help) \
	{ name, where, kind, def, lo, hi, unit, NULL, help }
#define STR(name, where, kind, def, check, help) \
	{ name, where, kind, def, 0, 0, NULL, check, help }
#define BOOL(name, where, def, help) \
	{ name, where, K_BOOL, def, 0, 0, NULL, NULL, help }

static const struct directive directives[] = {
	STR("listen", GLOBAL(listen), K_STR, "0.0.0.0", check_ip,
	    "Address the NFS and MOUNT listeners bind to (IPv4 or IPv6 "
	    "literal)."),
	NUM("nfs_port", GLOBAL(nfs_port), K_INT, "2049", 1, 65535, "TCP port",
	    "Port of the NFSv3 service; MOUNT v3 is served on it too."),
	NUM("mount_port", GLOBAL(mount_port), K_INT, "20048", 0, 65535,
	    "TCP port",
	    "Extra port for MOUNT v3; 0 serves MOUNT on nfs_port only."),
	STR("metrics_listen", GLOBAL(metrics_listen), K_STR, "127.0.0.1:9655",
	    check_metrics,
	    "ADDR:PORT of the Prometheus /metrics endpoint; \"\" disables it."),
	STR("admin_socket", GLOBAL(admin_socket), K_STR,
	    "/run/nfscached/admin.sock", check_admin_socket,
	    "Unix socket (mode 0600) of `nfscached cache` commands; \"\" "
	    "disables it."),
	STR("state_dir", GLOBAL(state_dir), K_STR, "/var/lib/nfscached",
	    check_nonempty,
	    "Directory for persistent state (the file handle key, mode 0600; "
	    "the start refuses a key others may read or a directory others "
	    "may write; with nlm, the table of the locks held upstream for "
	    "each client, nlm.mdb)."),
	NUM("max_record_size", GLOBAL(max_record_size), K_U32, "1114112", 4096,
	    16777216, "bytes",
	    "Largest RPC record a client may send; a larger one closes the "
	    "connection."),
	NUM("max_transfer", GLOBAL(max_transfer), K_U32, "1048576", 4096,
	    1048576, "bytes",
	    "Cap on READ and WRITE sizes, towards clients and upstream."),
	NUM("upstream_connections", GLOBAL(upstream_connections), K_U32, "1",
	    1, 16, "connections",
	    "TCP connections to each export's upstream, as the Linux "
	    "client's nconnect; calls go to the least busy one."),
	NUM("threads", GLOBAL(threads), K_U32, "1", 1, 64, "loops",
	    "Event loops serving clients, each on a thread of its own: "
	    "client connections are spread over them (reading calls, "
	    "writing replies) and loop 0 runs every call's handler; 1 "
	    "serves everything on one loop. Fixed at start."),
	BOOL("register_rpcbind", GLOBAL(register_rpcbind), "true",
	     "Register NFS and MOUNT with the local rpcbind at start."),
	BOOL("nlm", GLOBAL(nlm), "true",
	     "Serve the lock manager (NLM v4) on nfs_port and forward each "
	     "lock to the upstream's, so that a client mounted without "
	     "nolock locks; false refuses NLM (clients then need nolock)."),
	STR("nlm_caller_name", GLOBAL(nlm_caller_name), K_STR, "", NULL,
	    "The proxy's name in the locks it takes upstream: the upstream's "
	    "lock manager calls it back (GRANTED) and monitors it by this "
	    "name, so the upstream must resolve it to the proxy; "" uses "
	    "the host name (uname -n)."),
	STR("rpcbind_conflict", GLOBAL(rpcbind_conflict), K_STR, "skip",
	    check_rpcbind_conflict,
	    "What to do when a live server holds the NFS v3 or MOUNT v3 "
	    "mapping in rpcbind: skip (keep it, warn), refuse (do not "
	    "start) or replace (take it, put it back at exit)."),
	NUM("upstream_timeout", GLOBAL(upstream_timeout), K_DOUBLE, "30", 0.1,
	    3600, "seconds",
	    "Time an upstream call may take before it is given up on."),
	NUM("stale_on_error", GLOBAL(stale_on_error), K_DOUBLE, "0", 0, 86400,
	    "seconds",
	    "While the upstream is unreachable, serve cached data and "
	    "attributes up to this long past their expiry instead of "
	    "NFS3ERR_JUKEBOX; 0 never does."),
	BOOL("start_without_upstream", GLOBAL(start_without_upstream), "true",
	     "Serve clients (answering NFS3ERR_JUKEBOX) while the upstream is "
	     "down."),
	NUM("max_requests_per_conn", GLOBAL(max_requests_per_conn), K_U32, "64",
	    1, 4096, "requests",
	    "Calls in flight on one client connection before its reads pause."),
	NUM("max_reply_buffer", GLOBAL(max_reply_buffer), K_U32, "8388608",
	    65536, 1073741824, "bytes",
	    "Reply bytes queued to one client before its reads pause; at "
	    "least max_record_size."),
	NUM("client_buffer_limit", GLOBAL(client_buffer_limit), K_U32, "0", 0,
	    1048576, "MiB",
	    "Reply and request bytes held for all clients together; past it "
	    "the connections holding more than an equal share stop being "
	    "read. 0: an eighth of cache_size, at least 64 MiB, at most an "
	    "eighth of the memory limit (RLIMIT_AS or the cgroup's "
	    "memory.max)."),
	NUM("record_timeout", GLOBAL(record_timeout), K_DOUBLE, "30", 0.1,
	    3600, "seconds",
	    "Time a client may take to deliver a whole RPC record once its "
	    "first byte arrived; then the connection is closed."),
	NUM("idle_timeout", GLOBAL(idle_timeout), K_DOUBLE, "600", 0.1, 86400,
	    "seconds",
	    "Time a connection with no call in flight and nothing received "
	    "is kept open (knfsd closes idle ones after 6 minutes)."),
	NUM("max_connections", GLOBAL(max_connections), K_U32, "4096", 1,
	    1048576, "connections",
	    "Client connections open at once; a new one past it is refused "
	    "(closed at once). Also capped by the descriptor limit."),
	NUM("max_connections_per_client", GLOBAL(max_connections_per_client),
	    K_U32, "256", 1, 1048576, "connections",
	    "Connections open at once from one client address; a new one "
	    "past it is refused."),
	NUM("drc_entries", GLOBAL(drc_entries), K_U32, "4096", 0, 1048576,
	    "entries",
	    "Size of the duplicate request cache that answers retransmitted "
	    "calls; 0 disables it."),
	NUM("drc_timeout", GLOBAL(drc_timeout), K_DOUBLE, "120", 1, 86400,
	    "seconds", "How long a duplicate request cache entry is kept."),
	STR("log_level", GLOBAL(log_level), K_STR, "info", check_log_level,
	    "Log verbosity: error, warn, info or debug."),
	NUM("page_size", GLOBAL(page_size), K_U32, "65536", 4096, 1048576,
	    "bytes",
	    "Cache page size, a power of two; each page keeps exact valid "
	    "byte ranges."),
	NUM("cache_size", GLOBAL(cache_size), K_U32, "1024", 0, 1048576, "MiB",
	    "Budget for cached file data, each page charged with its "
	    "metadata; 0 caches no data."),
	BOOL("cache_preallocate", GLOBAL(cache_preallocate), "false",
	     "Map and fault in the memory of cache_size's pages at start, "
	     "on a thread of its own while clients are served, so that no "
	     "call pays for first touching memory and a budget the machine "
	     "cannot hold shows at start; false maps it as the cache grows. "
	     "Fixed at start."),
	STR("cache_dir", GLOBAL(cache_dir), K_STR, "", check_cache_dir,
	    "Directory of the disk tier, an absolute path (created if "
	    "missing); \"\" keeps the cache in RAM only."),
	NUM("disk_cache_size", GLOBAL(disk_cache_size), K_U32, "1024", 1,
	    4194304, "MiB",
	    "Budget of the disk tier in cache_dir, in whole pages; the least "
	    "recently used pages are culled past it."),
	NUM("disk_dirty_limit", GLOBAL(disk_dirty_limit), K_U32, "1024", 1,
	    1048576, "MiB",
	    "Locally committed bytes (commit = \"local\") kept in cache_dir "
	    "for write-back; past it COMMITs wait for the upstream again."),
	NUM("max_files", GLOBAL(max_files), K_U32, "65536", 16, 16777216,
	    "files",
	    "File records (attributes, holes, readahead state) kept; past it "
	    "the least recently used file with no cached data, nothing to "
	    "write back and no error to report is forgotten."),
	NUM("hole_granularity", GLOBAL(hole_granularity), K_U32, "4096", 0,
	    1048576, "bytes",
	    "Aligned blocks of this size that an upstream READ returns all "
	    "zero are kept as holes (no page memory, no upstream READ next "
	    "time); a power of two, 0 turns it off."),
	NUM("readahead_max", GLOBAL(readahead_max), K_U32, "67108864", 0,
	    268435456, "bytes",
	    "Cap of a sequential stream's readahead window (a multiple of "
	    "page_size), which is sized by the upstream's measured bandwidth "
	    "x latency floor, at least 4 MiB and at most this and a sixteenth "
	    "of cache_size; 4 MiB or less pins it here; 0 turns readahead "
	    "off."),
	NUM("readahead_streams", GLOBAL(readahead_streams), K_U32, "8", 1, 32,
	    "streams",
	    "Sequential streams tracked per file (readers at different "
	    "offsets)."),
	NUM("writeback_delay", GLOBAL(writeback_delay), K_DOUBLE, "5", 0, 3600,
	    "seconds",
	    "Age after which absorbed (dirty) data is written back and "
	    "committed upstream in the background."),
	NUM("dirty_limit", GLOBAL(dirty_limit), K_U32, "0", 0, 1048576, "MiB",
	    "Dirty bytes past which write-back starts at once; 0: 256 MiB "
	    "or a quarter of cache_size, whichever is less."),
	NUM("writeback_wsize", GLOBAL(writeback_wsize), K_U32, "262144", 4096,
	    1048576, "bytes",
	    "Largest upstream WRITE that write-back sends, as the Linux "
	    "client's wsize; also capped by the upstream's wtmax and "
	    "max_transfer."),
	NUM("writeback_commit_delay", GLOBAL(writeback_commit_delay), K_DOUBLE,
	    "0", 0, 3600, "seconds",
	    "Pause between a file's last write-back WRITE and its upstream "
	    "COMMIT (lets more writes join one COMMIT; tests use it to "
	    "restart the upstream in between)."),
	NUM("shutdown_flush_timeout", GLOBAL(shutdown_flush_timeout), K_DOUBLE,
	    "30", 0, 86400, "seconds",
	    "Longest time SIGTERM waits for dirty data to reach the upstream; "
	    "what is left was never acknowledged as committed."),
	NUM("meta_cache_size", GLOBAL(meta_cache_size), K_U32, "64", 0, 65536,
	    "MiB",
	    "Budget for cached names and directory listings (LOOKUP, READDIR, "
	    "READDIRPLUS), least recently used first out; 0 caches none."),

	NUM("id", EXPORT(id), K_UINT, NULL, 1, 63, NULL,
	    "Export number stored in every file handle: keep it stable."),
	STR("upstream", EXPORT(upstream), K_URL, NULL, check_url,
	    "Upstream NFSv3 export, "
	    "nfs://HOST/PATH?nfsport=N&mountport=M&nlmport=L (a port left "
	    "out or 0 is asked of the upstream's portmapper; nlmport is its "
	    "lock manager, NLM v4)."),
	STR("clients", EXPORT(clients), K_NETS, "{}", check_net,
	    "Clients that may mount, as in exports(5): \"SPEC\" or "
	    "\"SPEC(OPT,...)\", SPEC an address, ADDR/PREFIX, a host name, "
	    "a wildcard (*.lab.example) or a netgroup (@group), OPT rw, ro, "
	    "root_squash, "
	    "no_root_squash, all_squash, no_all_squash, secure, insecure, "
	    "anonuid=N, anongid=N; {} lets everyone."),
	BOOL("read_only", EXPORT(read_only), "false",
	     "Refuse every call that changes a file (NFS3ERR_ROFS), for "
	     "clients whose entry does not say rw."),
	BOOL("root_squash", EXPORT(root_squash), "true",
	     "Map uid 0 and gid 0 of callers to anonuid and anongid."),
	BOOL("all_squash", EXPORT(all_squash), "false",
	     "Map every caller's uid and gids to anonuid and anongid."),
	NUM("anonuid", EXPORT(anonuid), K_U32, "65534", 0, 4294967295.0, "uid",
	    "User id a squashed root becomes."),
	NUM("anongid", EXPORT(anongid), K_U32, "65534", 0, 4294967295.0, "gid",
	    "Group id a squashed root becomes."),
	BOOL("secure", EXPORT(secure), "false",
	     "Require client source ports below 1024 (privileged)."),
	NUM("acregmin", EXPORT(acregmin), K_DOUBLE, "3", 0, 86400, "seconds",
	    "Shortest time file attributes are trusted (the Linux client's "
	    "acregmin); 0 with acregmax 0 revalidates on every use."),
	NUM("acregmax", EXPORT(acregmax), K_DOUBLE, "60", 0, 86400, "seconds",
	    "Longest time unchanged file attributes are trusted."),
	NUM("acdirmin", EXPORT(acdirmin), K_DOUBLE, "30", 0, 86400, "seconds",
	    "Shortest time directory attributes are trusted."),
	NUM("acdirmax", EXPORT(acdirmax), K_DOUBLE, "60", 0, 86400, "seconds",
	    "Longest time unchanged directory attributes are trusted."),
	NUM("negative_timeout", EXPORT(negative_timeout), K_DOUBLE, "3", 0,
	    3600, "seconds",
	    "How long a LOOKUP that found no such name is answered from the "
	    "cache (while the directory is unchanged); 0 turns negative "
	    "caching off."),
	BOOL("strict", EXPORT(strict), "false",
	     "Forward every GETATTR and revalidate a directory before each "
	     "listing, for close-to-open consistency with other writers."),
	STR("commit", EXPORT(commit), K_STR, "upstream", check_commit,
	    "When a COMMIT or a FILE_SYNC WRITE is answered: \"upstream\" "
	    "once the data is on the upstream's stable storage, \"local\" "
	    "once it is durable in cache_dir (written back later)."),
};

#define NDIR (sizeof(directives) / sizeof(directives[0]))

static const char *const log_levels[] = { "error", "warn", "info", "debug" };

/* Where an export section begins, which id it claimed, where each of its
 * directives was set and which had a bad value. */
struct export_rec {
	const cfg_t *sec;
	int line;		/* line of the section's opening brace */
	int id_line;		/* 0 until id is set */
	unsigned id;
	int dline[NDIR];	/* line an export directive was set on, or 0 */
	bool defaulted[NDIR];	/* libconfuse has set its default */
	bool bad[NDIR];		/* its value was refused */
};

/* One error of a load: its line (0: none) and reason. */
struct load_err {
	int line;
	unsigned seq;		/* order found */
	char *why;		/* owned */
};

/* State of one conf_load_file call, for the libconfuse callbacks. */
struct parse_ctx {
	const char *path;
	cfg_t *root;
	struct load_err *errs;	/* owned, in the order found */
	size_t nerrs;
	bool oom;		/* an error could not be recorded */
	bool parsing;		/* the file, not cfg_init's defaults */
	int gline[NDIR];	/* line a global directive was set on, or 0 */
	bool gbad[NDIR];	/* a global directive's value was refused */
	struct export_rec *recs;
	size_t nrecs;
};

static _Thread_local struct parse_ctx *pctx;

/* Find a directive by scope and name. */
static const struct directive *
directive_find(enum dir_scope scope, const char *name)
{
	for (size_t i = 0; i < NDIR; i++)
		if (directives[i].scope == scope &&
		    strcmp(directives[i].name, name) == 0)
			return &directives[i];
	return NULL;
}

/* Find the directive an option of cfg stands for. */
static const struct directive *directive_of(cfg_t *cfg, cfg_opt_t *opt)
{
	bool exp = cfg->name && strcmp(cfg->name, "export") == 0;

	return directive_find(exp ? S_EXPORT : S_GLOBAL, opt->name);
}

/* True for the kinds that hold a number with a range. */
static bool is_numeric(const struct directive *d)
{
	return d->kind == K_INT || d->kind == K_UINT || d->kind == K_U32 ||
	       d->kind == K_DOUBLE;
}

/* Point at the field d names inside base (a conf or a conf_export). */
static void *field(const void *base, const struct directive *d)
{
	return (char *)(uintptr_t)base + d->off;
}

/* Format a number the way it would be written in a file. */
static void fmt_number(const struct directive *d, double x, char *buf,
		       size_t len)
{
	/* Plain decimals only: libconfuse ends a bare word at '+'. */
	if (d->kind != K_DOUBLE ||
	    (x > -1e15 && x < 1e15 && x == (double)(long long)x)) {
		snprintf(buf, len, "%.0f", x);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*f", prec, x);
		if (strtod(buf, NULL) == x)
			return;
	}
}

/* ---- parsing values from text ---- */

/* Parse a whole decimal number. */
static int parse_long(const char *s, long *out)
{
	char *end;

	if (!*s || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	*out = strtol(s, &end, 10);
	return (*end || errno) ? -1 : 0;
}

/* Parse a finite decimal number. */
static int parse_double(const char *s, double *out)
{
	char *end;

	if (!*s || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	*out = strtod(s, &end);
	return (*end || errno || !isfinite(*out)) ? -1 : 0;
}

/* What a bare number of d counts: bytes (1), MiB (1 << 20), seconds
 * (-1, for durations), or 0 when d takes no suffix. */
static double unit_scale(const struct directive *d)
{
	if (!d->unit)
		return 0;
	if (strcmp(d->unit, "bytes") == 0)
		return 1;
	if (strcmp(d->unit, "MiB") == 0)
		return 1 << 20;
	return strcmp(d->unit, "seconds") == 0 ? -1 : 0;
}

/*
 * Parse a size: a whole number in d's unit, or a number (a fraction too)
 * with K, M, G or T (KiB, MiB, GiB, TiB also: powers of 1024) that makes
 * a whole number of the unit. scale: bytes per unit.
 */
static int parse_size(const char *s, double scale, long *out)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	double x;

	if (parse_long(s, out) == 0)
		return 0;
	if (!*s || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	x = strtod(s, &end);
	if (errno || end == s || !*end || !isfinite(x) ||
	    !(u = strchr(units, *end)) ||
	    (end[1] && strcmp(end + 1, "iB") != 0))
		return -1;
	x = x * (double)(1ULL << (10 * (u - units + 1))) / scale;
	if (x > (double)LONG_MAX / 2 || x < -(double)LONG_MAX / 2 ||
	    x != (double)(long)x)
		return -1;
	*out = (long)x;
	return 0;
}

/* Parse a duration: seconds, or a number with ms, s, m, h or d. */
static int parse_duration(const char *s, double *out)
{
	static const struct { const char *sfx; double secs; } units[] = {
		{ "ms", 0 }, { "s", 1 }, { "m", 60 }, { "h", 3600 },
		{ "d", 86400 },
	};
	char *end;

	if (parse_double(s, out) == 0)
		return 0;
	if (!*s || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || !isfinite(*out))
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].sfx) != 0)
			continue;
		/* x / 1000 rounds as strtod("0.00x") does: dumps load back. */
		*out = units[i].secs ? *out * units[i].secs : *out / 1000;
		return isfinite(*out) ? 0 : -1;
	}
	return -1;
}

/* Parse true/false (also yes/no, on/off, as libconfuse does). */
static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on" };
	static const char *const no[] = { "false", "no", "off" };

	for (size_t i = 0; i < 3; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *out = true, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *out = false, 0;
	}
	return -1;
}

/* Parse the text of a scalar value of d into v. */
static int value_parse(const struct directive *d, const char *s,
		       union dval *v, char *why, size_t len)
{
	switch (d->kind) {
	case K_BOOL:
		if (parse_bool(s, &v->b) == 0)
			return 0;
		snprintf(why, len, "%s: \"%s\" is not true or false", d->name,
			 s);
		return -1;
	case K_INT:
	case K_UINT:
	case K_U32:
		if (unit_scale(d) > 0) {
			if (parse_size(s, unit_scale(d), &v->l) == 0)
				return 0;
			snprintf(why, len, "%s: \"%s\" is not a size: a whole "
				 "number of %s, or a number with K, M, G or T "
				 "(powers of 1024)%s", d->name, s, d->unit,
				 unit_scale(d) > 1 ? " making whole MiB" : "");
			return -1;
		}
		if (parse_long(s, &v->l) == 0)
			return 0;
		snprintf(why, len, "%s: \"%s\" is not a whole number", d->name,
			 s);
		return -1;
	case K_DOUBLE:
		if (unit_scale(d) < 0) {
			if (parse_duration(s, &v->d) == 0)
				return 0;
			snprintf(why, len, "%s: \"%s\" is not a duration: "
				 "seconds, or a number with ms, s, m, h or d",
				 d->name, s);
			return -1;
		}
		if (parse_double(s, &v->d) == 0)
			return 0;
		snprintf(why, len, "%s: \"%s\" is not a number", d->name, s);
		return -1;
	default:
		v->s = s;
		return 0;
	}
}

/* Check v against d's range or string check. */
static int value_check(const struct directive *d, const union dval *v,
		       char *why, size_t len)
{
	char val[32], lo[32], hi[32];
	double x;

	switch (d->kind) {
	case K_BOOL:
		return 0;
	case K_INT:
	case K_UINT:
	case K_U32:
	case K_DOUBLE:
		x = d->kind == K_DOUBLE ? v->d : (double)v->l;
		if (x >= d->min && x <= d->max)
			return 0;
		if (d->kind == K_DOUBLE)
			fmt_number(d, v->d, val, sizeof(val));
		else
			snprintf(val, sizeof(val), "%ld", v->l);
		fmt_number(d, d->min, lo, sizeof(lo));
		fmt_number(d, d->max, hi, sizeof(hi));
		snprintf(why, len, "%s %s out of range %s..%s", d->name, val, lo,
			 hi);
		return -1;
	default:
		if (!d->check) {
			return 0;
		} else {
			char sub[WHY_MAX - 64];

			if (d->check(v->s, sub, sizeof(sub)) == 0)
				return 0;
			snprintf(why, len, "%s: %s", d->name, sub);
			return -1;
		}
	}
}

/* Read value idx of a libconfuse option of d into v. */
static void value_from_opt(const struct directive *d, cfg_opt_t *opt,
			   unsigned idx, union dval *v)
{
	switch (d->kind) {
	case K_BOOL:
		v->b = cfg_opt_getnbool(opt, idx) == cfg_true;
		break;
	case K_INT:
	case K_UINT:
	case K_U32:
		v->l = cfg_opt_getnint(opt, idx);
		break;
	case K_DOUBLE:
		v->d = cfg_opt_getnfloat(opt, idx);
		break;
	default:
		v->s = cfg_opt_getnstr(opt, idx);
		break;
	}
}

/* Replace an owned string with a copy of s. */
static int str_replace(char **dst, const char *s)
{
	char *copy = strdup(s);

	if (!copy)
		return -1;
	free(*dst);
	*dst = copy;
	return 0;
}

/* Append the clients entry s (already checked) to e's clients. */
static int nets_append(struct conf_export *e, const char *s)
{
	struct conf_client *n;
	char why[WHY_MAX];

	n = realloc(e->clients, (e->nclients + 1) * sizeof(*n));
	if (!n)
		return -1;
	e->clients = n;
	if (conf_parse_client(s, &n[e->nclients], why, sizeof(why)) != 0)
		return -1;
	e->nclients++;
	return 0;
}

/* Store a checked value v of d into base (a conf or a conf_export). */
static int value_store(void *base, const struct directive *d,
		       const union dval *v)
{
	void *p = field(base, d);
	struct conf_export *e = base;
	struct conf_upstream_url url;
	char why[WHY_MAX];

	switch (d->kind) {
	case K_BOOL:
		*(bool *)p = v->b;
		return 0;
	case K_INT:
		*(int *)p = (int)v->l;
		return 0;
	case K_UINT:
		*(unsigned *)p = (unsigned)v->l;
		return 0;
	case K_U32:
		*(uint32_t *)p = (uint32_t)v->l;
		return 0;
	case K_DOUBLE:
		*(double *)p = v->d;
		return 0;
	case K_STR:
		return str_replace(p, v->s);
	case K_URL:
		if (conf_parse_upstream_url(v->s, &url, why, sizeof(why)) != 0)
			return -1;
		if (str_replace(p, v->s) != 0) {
			conf_upstream_url_clear(&url);
			return -1;
		}
		conf_upstream_url_clear(&e->url);
		e->url = url;
		return 0;
	case K_NETS:
		return nets_append(e, v->s);
	}
	return -1;
}

/* Free the memory the field of d owns inside base. */
static void field_free(void *base, const struct directive *d)
{
	struct conf_export *e = base;

	switch (d->kind) {
	case K_STR:
	case K_URL:
		free(*(char **)field(base, d));
		*(char **)field(base, d) = NULL;
		if (d->kind == K_URL)
			conf_upstream_url_clear(&e->url);
		break;
	case K_NETS:
		for (size_t i = 0; i < e->nclients; i++)
			conf_client_clear(&e->clients[i]);
		free(e->clients);
		e->clients = NULL;
		e->nclients = 0;
		break;
	default:
		break;
	}
}

/* Compare the field of d in two conf or two conf_export structures. */
static bool field_equal(const void *a, const void *b,
			const struct directive *d)
{
	const void *pa = field(a, d), *pb = field(b, d);
	const struct conf_export *ea = a, *eb = b;

	switch (d->kind) {
	case K_BOOL:
		return *(const bool *)pa == *(const bool *)pb;
	case K_INT:
		return *(const int *)pa == *(const int *)pb;
	case K_UINT:
		return *(const unsigned *)pa == *(const unsigned *)pb;
	case K_U32:
		return *(const uint32_t *)pa == *(const uint32_t *)pb;
	case K_DOUBLE:
		return *(const double *)pa == *(const double *)pb;
	case K_STR:
	case K_URL: {
		const char *sa = *(char *const *)pa, *sb = *(char *const *)pb;

		return sa == sb || (sa && sb && strcmp(sa, sb) == 0);
	}
	case K_NETS:
		if (ea->nclients != eb->nclients)
			return false;
		for (size_t i = 0; i < ea->nclients; i++)
			if (!conf_client_equal(&ea->clients[i], &eb->clients[i]))
				return false;
		return true;
	}
	return false;
}

/* ---- string checks named in the table ---- */

/* Check an IPv4 or IPv6 literal. */
static int check_ip(const char *s, char *why, size_t len)
{
	uint8_t addr[16];

	if (conf_parse_ip(s, addr) >= 0)
		return 0;
	snprintf(why, len, "\"%s\" is not an IPv4 or IPv6 address", s);
	return -1;
}

/* Check "" or ADDR:PORT. */
static int check_metrics(const char *s, char *why, size_t len)
{
	char addr[INET6_ADDRSTRLEN];
	int port;

	if (!*s)
		return 0;
	return conf_parse_hostport(s, addr, sizeof(addr), &port, why, len);
}

/* Check a non-empty string. */
static int check_nonempty(const char *s, char *why, size_t len)
{
	if (*s)
		return 0;
	snprintf(why, len, "must not be empty");
	return -1;
}

/* Check "" or an absolute path that fits a Unix socket address. */
static int check_admin_socket(const char *s, char *why, size_t len)
{
	if (!*s)
		return 0;
	if (s[0] != '/') {
		snprintf(why, len, "\"%s\" is not an absolute path", s);
		return -1;
	}
	if (strlen(s) >= 108) {	/* sizeof(sockaddr_un.sun_path) on Linux */
		snprintf(why, len, "longer than 107 bytes");
		return -1;
	}
	return 0;
}

/* Check "" or an absolute path. */
static int check_cache_dir(const char *s, char *why, size_t len)
{
	if (!*s || *s == '/')
		return 0;
	snprintf(why, len, "\"%s\" is not an absolute path", s);
	return -1;
}

/* Check a log level name. */
static int check_log_level(const char *s, char *why, size_t len)
{
	for (size_t i = 0; i < sizeof(log_levels) / sizeof(log_levels[0]); i++)
		if (strcmp(s, log_levels[i]) == 0)
			return 0;
	snprintf(why, len, "\"%s\" is not one of error, warn, info, debug", s);
	return -1;
}

/* Check a commit mode. */
/* Check an rpcbind_conflict value. */
static int check_rpcbind_conflict(const char *s, char *why, size_t len)
{
	if (strcmp(s, "skip") == 0 || strcmp(s, "refuse") == 0 ||
	    strcmp(s, "replace") == 0)
		return 0;
	snprintf(why, len, "\"%s\" is not one of skip, refuse, replace", s);
	return -1;
}

static int check_commit(const char *s, char *why, size_t len)
{
	if (strcmp(s, "upstream") == 0 || strcmp(s, "local") == 0)
		return 0;
	snprintf(why, len, "\"%s\" is not one of upstream, local", s);
	return -1;
}

/* Check an upstream URL. */
static int check_url(const char *s, char *why, size_t len)
{
	struct conf_upstream_url u;

	if (conf_parse_upstream_url(s, &u, why, len) != 0)
		return -1;
	conf_upstream_url_clear(&u);
	return 0;
}

/* Check one clients entry. */
static int check_net(const char *s, char *why, size_t len)
{
	struct conf_client cl;

	if (conf_parse_client(s, &cl, why, len) != 0)
		return -1;
	conf_client_clear(&cl);
	return 0;
}

/* Check a client-visible export path: absolute and normalised. */
static int check_export_path(const char *p, char *why, size_t len)
{
	size_t n = strlen(p);

	if (p[0] != '/')
		snprintf(why, len, "path must start with '/'");
	else if (n > EXPORT_PATH_MAX)
		snprintf(why, len, "path longer than %d bytes", EXPORT_PATH_MAX);
	else if (n > 1 && p[n - 1] == '/')
		snprintf(why, len, "path must not end with '/'");
	else if (strstr(p, "//"))
		snprintf(why, len, "path must not contain '//'");
	else if (strstr(p, "/./") || strstr(p, "/../") ||
		 (n >= 2 && strcmp(p + n - 2, "/.") == 0) ||
		 (n >= 3 && strcmp(p + n - 3, "/..") == 0))
		snprintf(why, len, "path must not contain '.' or '..'");
	else
		return 0;
	return -1;
}

/* ---- rules over several directives ---- */

/* Where check_rules sends what it finds: the first error into why (the
 * quick start, conf_set_global), or every one to the load's report(). */
struct rules_out {
	struct parse_ctx *ctx;	/* NULL: first error only */
	int line;		/* of the first error */
	char *why;
	size_t len;
	int n;			/* errors found */
};

static int report(int line, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void rule_fail(struct rules_out *o, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void rule_fail(struct rules_out *o, int line, const char *fmt, ...)
{
	char why[WHY_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (o->ctx)
		report(line, "%s", why);
	else if (o->n == 0)
		snprintf(o->why, o->len, "%s", why), o->line = line;
	o->n++;
}

/* Index of the global directive name in directives[]. */
static size_t gidx(const char *name)
{
	return (size_t)(directive_find(S_GLOBAL, name) - directives);
}

/* Line global directive i was set on while parsing, or 0. */
static int gline_at(const struct rules_out *o, size_t i)
{
	return o->ctx ? o->ctx->gline[i] : 0;
}

/* True when a rule between global directives a and b can be checked:
 * neither had its value refused. */
static bool rule_applies(const struct rules_out *o, size_t a, size_t b)
{
	return !o->ctx || (!o->ctx->gbad[a] && !o->ctx->gbad[b]);
}

/*
 * Of two directives a rule ties together, the one to blame: the one set
 * in the file when the other kept its default, the later one when both
 * were set (the file read top down was fine until then). Returns true for
 * b, false for a.
 */
static bool blame_second(int line_a, int line_b)
{
	return line_b && (!line_a || line_b > line_a);
}

/* " (default)" when directive i was not set in the file. */
static const char *dflt(const struct rules_out *o, size_t i)
{
	return o->ctx && !o->ctx->gline[i] ? " (its default)" : "";
}

/* Check the rules that tie global directives together; each error points
 * at the directive to blame (blame_second) and is worded from its side. */
static int check_rules(const struct conf *c, struct rules_out *o)
{
	size_t rb = gidx("max_reply_buffer"), rs = gidx("max_record_size");
	size_t hg = gidx("hole_granularity"), ps = gidx("page_size");
	size_t ra = gidx("readahead_max"), mp = gidx("mount_port");
	size_t np = gidx("nfs_port"), cd = gidx("cache_dir");
	char why[WHY_MAX];

	if (rule_applies(o, rb, rs) && c->max_reply_buffer < c->max_record_size) {
		if (blame_second(gline_at(o, rb), gline_at(o, rs)))
			rule_fail(o, gline_at(o, rs), "max_record_size %" PRIu32
				  " is larger than max_reply_buffer %" PRIu32 "%s",
				  c->max_record_size, c->max_reply_buffer,
				  dflt(o, rb));
		else
			rule_fail(o, gline_at(o, rb), "max_reply_buffer %" PRIu32
				  " is smaller than max_record_size %" PRIu32 "%s",
				  c->max_reply_buffer, c->max_record_size,
				  dflt(o, rs));
	}
	if (rule_applies(o, hg, hg) &&
	    (c->hole_granularity & (c->hole_granularity - 1)))
		rule_fail(o, gline_at(o, hg), "hole_granularity %" PRIu32 " is "
			  "not a power of two (or 0)", c->hole_granularity);
	if (rule_applies(o, ps, ps) && (c->page_size & (c->page_size - 1)))
		rule_fail(o, gline_at(o, ps), "page_size %" PRIu32 " is not a "
			  "power of two", c->page_size);
	else if (rule_applies(o, ra, ps) && c->page_size &&
		 c->readahead_max % c->page_size) {
		if (blame_second(gline_at(o, ra), gline_at(o, ps)))
			rule_fail(o, gline_at(o, ps), "page_size %" PRIu32 " does "
				  "not divide readahead_max %" PRIu32 "%s",
				  c->page_size, c->readahead_max, dflt(o, ra));
		else
			rule_fail(o, gline_at(o, ra), "readahead_max %" PRIu32
				  " is not a multiple of page_size %" PRIu32 "%s",
				  c->readahead_max, c->page_size, dflt(o, ps));
	}
	if (rule_applies(o, mp, np) && c->mount_port != 0 &&
	    c->mount_port == c->nfs_port) {
		bool nfs = blame_second(gline_at(o, mp), gline_at(o, np));

		rule_fail(o, gline_at(o, nfs ? np : mp), "%s equals %s %d%s; set "
			  "mount_port = 0 to serve MOUNT on nfs_port only",
			  nfs ? "nfs_port" : "mount_port",
			  nfs ? "mount_port" : "nfs_port", c->nfs_port,
			  dflt(o, nfs ? mp : np));
	}
	for (size_t i = 0; i < c->nexports; i++)
		if (conf_commit_local(&c->exports[i]) && rule_applies(o, cd, cd) &&
		    (!c->cache_dir || !*c->cache_dir))
			rule_fail(o, c->exports[i].commit_line,
				  "export \"%s\": commit \"local\" needs "
				  "cache_dir (the data is made durable there)",
				  c->exports[i].path);
	if (rule_applies(o, cd, cd) && c->cache_dir && *c->cache_dir &&
	    disk_dir_check(c->cache_dir, why, sizeof(why)) != 0)
		rule_fail(o, gline_at(o, cd), "%s", why);
	return o->n ? -1 : 0;
}

/* ---- libconfuse callbacks ---- */

int conf_verror(char *err, size_t errlen, const char *file, int line,
		const char *fmt, va_list ap)
{
	char why[WHY_MAX + EXPORT_PATH_MAX], at[24];
	const char *cut = "";
	size_t plen, need;

	if (!err || !errlen)
		return -1;
	vsnprintf(why, sizeof(why), fmt, ap);
	if (line > 0)
		snprintf(at, sizeof(at), ":%d: ", line);
	else
		snprintf(at, sizeof(at), ": ");
	plen = strlen(file);
	need = strlen(at) + strlen(why) + 1;
	if (plen + need > errlen) {
		size_t keep = errlen > need + 3 ? errlen - need - 3 : 0;

		cut = "...";
		file += plen - (keep < plen ? keep : plen);
	}
	snprintf(err, errlen, "%s%s%s%s", cut, file, at, why);
	return -1;
}

int conf_error(char *err, size_t errlen, const char *file, int line,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_verror(err, errlen, file, line, fmt, ap);
	va_end(ap);
	return -1;
}

/* Record one more error of this load, at line (0: none). */
static int report(int line, const char *fmt, ...)
{
	char why[WHY_MAX + EXPORT_PATH_MAX];
	struct load_err *grown;
	va_list ap;

	if (!pctx)
		return -1;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	grown = realloc(pctx->errs, (pctx->nerrs + 1) * sizeof(*grown));
	if (!grown || !(grown[pctx->nerrs].why = strdup(why))) {
		if (grown)
			pctx->errs = grown;
		pctx->oom = true;
		return -1;
	}
	pctx->errs = grown;
	grown[pctx->nerrs].line = line;
	grown[pctx->nerrs].seq = (unsigned)pctx->nerrs;
	pctx->nerrs++;
	return -1;
}

/* Order of errors: by line, those without a line last, else as found. */
static int load_err_cmp(const void *pa, const void *pb)
{
	const struct load_err *a = pa, *b = pb;
	unsigned la = a->line > 0 ? (unsigned)a->line : UINT_MAX;
	unsigned lb = b->line > 0 ? (unsigned)b->line : UINT_MAX;

	if (la != lb)
		return la < lb ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/*
 * Write the errors of ctx into err[0..errlen), one "FILE:LINE: reason" a
 * line, in line order, and free them. The first always fits (conf_error
 * shortens the path); the ones past the buffer are counted in a last line.
 */
static void errors_write(struct parse_ctx *ctx, char *err, size_t errlen)
{
	enum { MORE = 40 };	/* room for the "more errors" line */
	size_t used = 0, i;
	char *line = malloc(errlen);

	if (ctx->oom && (ctx->nerrs == 0 || !line))
		conf_error(err, errlen, ctx->path, 0, "out of memory");
	if (ctx->nerrs)
		qsort(ctx->errs, ctx->nerrs, sizeof(*ctx->errs), load_err_cmp);
	for (i = 0; line && i < ctx->nerrs; i++) {
		size_t n;

		/* conf_scan and libconfuse may both see one unknown name. */
		if (i && ctx->errs[i].line == ctx->errs[i - 1].line &&
		    strcmp(ctx->errs[i].why, ctx->errs[i - 1].why) == 0)
			continue;

		conf_error(line, i ? errlen - used - 1 : errlen, ctx->path,
			   ctx->errs[i].line, "%s", ctx->errs[i].why);
		n = strlen(line);
		if (i && used + 1 + n + MORE >= errlen)
			break;
		snprintf(err + used, errlen - used, "%s%s", i ? "\n" : "", line);
		used += n + (i ? 1 : 0);
	}
	if (line && i < ctx->nerrs)
		snprintf(err + used, errlen - used, "\n(%zu more errors not "
			 "shown)", ctx->nerrs - i);
	free(line);
	for (i = 0; i < ctx->nerrs; i++)
		free(ctx->errs[i].why);
	free(ctx->errs);
	ctx->errs = NULL;
	ctx->nerrs = 0;
}

/* Name the export section cfg is, as a message prefix, or "". */
static const char *where(cfg_t *cfg, char *buf, size_t len)
{
	buf[0] = '\0';
	if (cfg && cfg->name && strcmp(cfg->name, "export") == 0 && cfg->title)
		snprintf(buf, len, "export \"%s\": ", cfg->title);
	return buf;
}

/* Record an error at cfg's current line, prefixed with its export. */
static int report_cfg(cfg_t *cfg, const char *why)
{
	char w[EXPORT_PATH_MAX + 32];

	return report(cfg->line, "%s%s", where(cfg, w, sizeof(w)), why);
}

/* Find the record of an export section. */
static struct export_rec *export_rec_find(const cfg_t *sec)
{
	for (size_t i = 0; pctx && i < pctx->nrecs; i++)
		if (pctx->recs[i].sec == sec)
			return &pctx->recs[i];
	return NULL;
}

/* Find or start the record of the export section being parsed. */
static struct export_rec *export_rec_get(cfg_t *sec)
{
	struct export_rec *r = export_rec_find(sec);

	if (r || !pctx)
		return r;
	r = realloc(pctx->recs, (pctx->nrecs + 1) * sizeof(*r));
	if (!r)
		return NULL;
	pctx->recs = r;
	r += pctx->nrecs++;
	memset(r, 0, sizeof(*r));
	r->sec = sec;
	/* The root's line stays at this section's opening brace. */
	r->line = pctx->root ? pctx->root->line : sec->line;
	return r;
}

/* Note the id of an export and refuse one another export holds. */
static void export_note_id(cfg_t *sec, struct export_rec *r, unsigned id)
{
	r->id = id;
	r->id_line = sec->line;
	for (size_t i = 0; i < pctx->nrecs; i++) {
		struct export_rec *o = &pctx->recs[i];
		char why[EXPORT_PATH_MAX + 64];

		if (o == r || !o->id_line || o->id != id)
			continue;
		snprintf(why, sizeof(why), "id %u already used by export \"%s\" "
			 "(line %d)", id, o->sec->title ? o->sec->title : "",
			 o->id_line);
		report_cfg(sec, why);
		return;
	}
}

/*
 * Where the value of d that libconfuse just set came from: the file (its
 * line is noted, true) or the table's default (false). libconfuse parses
 * the defaults before the file, an export section's as the section opens,
 * each once and in table order; an export's callbacks run at the line of
 * the section's brace then, so the first call per directive with a
 * default is the default one.
 */
static bool value_from_file(cfg_t *cfg, const struct directive *d,
			    struct export_rec *r, bool validating)
{
	size_t i = (size_t)(d - directives);

	if (!pctx || !pctx->parsing)
		return false;
	if (!r) {
		if (validating)
			pctx->gline[i] = cfg->line;
		return true;
	}
	if (d->def && d->kind != K_NETS && !r->defaulted[i]) {
		if (validating)
			r->defaulted[i] = true;
		return false;
	}
	if (validating)
		r->dline[i] = cfg->line;
	return true;
}

/* Mark d's value refused in cfg's scope: rules tied to it are skipped. */
static void mark_bad(struct export_rec *r, const struct directive *d)
{
	if (r)
		r->bad[d - directives] = true;
	else if (pctx)
		pctx->gbad[d - directives] = true;
}

/* libconfuse parse callback: numbers and booleans, in our words. A value
 * refused is reported and replaced by the default (or the range's low
 * end), so that libconfuse reads on and finds the file's other errors. */
static int opt_parse(cfg_t *cfg, cfg_opt_t *opt, const char *value,
		     void *result)
{
	const struct directive *d = directive_of(cfg, opt);
	char why[WHY_MAX];
	union dval v;

	if (!d || !value)
		return -1;
	if (value_parse(d, value, &v, why, sizeof(why)) != 0) {
		report_cfg(cfg, why);
		mark_bad(d->scope == S_EXPORT ? export_rec_get(cfg) : NULL, d);
		if (!d->def || value_parse(d, d->def, &v, why, sizeof(why)))
			v.l = (long)d->min, v.d = d->min, v.b = false;
	}
	if (d->kind == K_BOOL)
		*(int *)result = v.b;	/* libconfuse passes an int here */
	else if (d->kind == K_DOUBLE)
		*(double *)result = v.d;
	else
		*(long *)result = v.l;
	return 0;
}

/*
 * True, with a reason in why, if the newest clients entry of opt names
 * the same clients as an earlier one with other options: exports(5) would
 * silently use one of them, so which one the operator meant is asked.
 * Entries that do not parse are reported by the check of their own.
 */
static bool nets_conflict(cfg_opt_t *opt, char *why, size_t len)
{
	unsigned last = opt->nvalues - 1;
	struct conf_client n, o;
	bool clash = false;

	if (conf_parse_client(cfg_opt_getnstr(opt, last), &n, why, len) != 0)
		return false;
	for (unsigned i = 0; i < last && !clash; i++) {
		const char *s = cfg_opt_getnstr(opt, i);

		if (conf_parse_client(s, &o, why, len) != 0)
			continue;
		clash = conf_client_same_spec(&n, &o) &&
			!conf_client_equal(&n, &o);
		if (clash)
			snprintf(why, len, "clients: \"%s\" names the same "
				 "clients as \"%s\" with other options; keep "
				 "one", cfg_opt_getnstr(opt, last), s);
		conf_client_clear(&o);
	}
	conf_client_clear(&n);
	return clash;
}

/* libconfuse validate callback: the newest value of any directive.
 * Errors are reported and parsing goes on. */
static int opt_validate(cfg_t *cfg, cfg_opt_t *opt)
{
	const struct directive *d = directive_of(cfg, opt);
	struct export_rec *r = NULL;
	const bool *bad;
	char why[WHY_MAX];
	union dval v;

	if (!d || opt->nvalues == 0)
		return 0;
	if (d->scope == S_EXPORT && !(r = export_rec_get(cfg)))
		return 0;
	value_from_file(cfg, d, r, true);
	bad = r ? r->bad : pctx ? pctx->gbad : NULL;
	/* A list's entries are checked one by one, each reported. */
	if (bad && bad[d - directives] && d->kind != K_NETS)
		return 0;	/* reported when parsed */
	value_from_opt(d, opt, opt->nvalues - 1, &v);
	if (value_check(d, &v, why, sizeof(why)) != 0 ||
	    (d->kind == K_NETS && nets_conflict(opt, why, sizeof(why)))) {
		report_cfg(cfg, why);
		mark_bad(r, d);
	} else if (r && strcmp(d->name, "id") == 0) {
		export_note_id(cfg, r, (unsigned)v.l);
	}
	return 0;
}

/* Check that attribute timeout lo <= hi in an export that just closed;
 * the error is at the one of the two to blame (blame_second). */
static void export_check_ac(cfg_t *sec, const struct export_rec *r,
			    const char *lo, const char *hi)
{
	const struct directive *dl = directive_find(S_EXPORT, lo);
	const struct directive *dh = directive_find(S_EXPORT, hi);
	size_t il = (size_t)(dl - directives), ih = (size_t)(dh - directives);
	double l = cfg_getfloat(sec, lo), h = cfg_getfloat(sec, hi);
	int ll = r ? r->dline[il] : 0, lh = r ? r->dline[ih] : 0;

	if (l <= h || (r && (r->bad[il] || r->bad[ih])))
		return;
	if (blame_second(ll, lh))
		report(lh, "export \"%s\": %s %g is below %s %g%s", sec->title,
		       hi, h, lo, l, ll ? "" : " (its default)");
	else
		report(ll ? ll : r ? r->line : 0, "export \"%s\": %s %g "
		       "exceeds %s %g%s", sec->title, lo, l, hi, h,
		       lh ? "" : " (its default)");
}

/* libconfuse validate callback for an export section that just closed:
 * path rules, required directives, the attribute timeout pairs. */
static int export_validate(cfg_t *cfg, cfg_opt_t *opt)
{
	cfg_t *sec = cfg_opt_getnsec(opt, cfg_opt_size(opt) - 1);
	struct export_rec *r = export_rec_find(sec);
	int line = r ? r->line : cfg->line;
	char why[WHY_MAX];

	if (!sec || !sec->title) {
		report(line, "export section without a path");
		return 0;
	}
	if (check_export_path(sec->title, why, sizeof(why)) != 0)
		report(line, "export \"%s\": %s", sec->title, why);
	for (size_t i = 0; i < NDIR; i++) {
		const struct directive *d = &directives[i];

		if (d->scope == S_EXPORT && !d->def &&
		    cfg_size(sec, d->name) == 0)
			report(line, "export \"%s\": missing required directive "
			       "'%s'", sec->title, d->name);
	}
	export_check_ac(sec, r, "acregmin", "acregmax");
	export_check_ac(sec, r, "acdirmin", "acdirmax");
	return 0;
}

/* Word libconfuse's message about a duplicate export path. */
static void dup_path_msg(const char *title, char *msg, size_t len)
{
	for (size_t i = 0; pctx && i < pctx->nrecs; i++) {
		const cfg_t *s = pctx->recs[i].sec;

		if (s->title && strcmp(s->title, title) == 0) {
			snprintf(msg, len, "export \"%s\": path already used by "
				 "the export at line %d", title,
				 pctx->recs[i].line);
			return;
		}
	}
	snprintf(msg, len, "export \"%s\": path already used by another "
		 "export", title);
}

/* libconfuse error function: record the message, with its line. */
static void on_error(cfg_t *cfg, const char *fmt, va_list ap)
{
	char msg[WHY_MAX + EXPORT_PATH_MAX];

	if (!pctx)
		return;
	if (strcmp(fmt, "no such option '%s'") == 0)
		snprintf(msg, sizeof(msg), "unknown directive '%s'",
			 va_arg(ap, const char *));
	else if (strcmp(fmt, "found duplicate title '%s'") == 0)
		dup_path_msg(va_arg(ap, const char *), msg, sizeof(msg));
	else
		vsnprintf(msg, sizeof(msg), fmt, ap);
	report_cfg(cfg, msg);
}

/* ---- building libconfuse options from the table ---- */

/* Write s as a double-quoted libconfuse string. */
static void fput_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\' || *p == '$')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* The default of d as libconfuse should parse it, malloc'd; NULL when
 * there is none. */
static char *default_text(const struct directive *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!d->def || d->kind == K_NETS)
		return NULL;	/* required, or an empty list */
	if (d->kind != K_STR && d->kind != K_URL)
		return strdup(d->def);
	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	fput_quoted(f, d->def);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Fill a libconfuse option for d; its default text is malloc'd. */
static int opt_fill(cfg_opt_t *o, const struct directive *d)
{
	static const cfg_type_t type[] = {
		[K_BOOL] = CFGT_BOOL, [K_INT] = CFGT_INT, [K_UINT] = CFGT_INT,
		[K_U32] = CFGT_INT, [K_DOUBLE] = CFGT_FLOAT,
		[K_STR] = CFGT_STR, [K_URL] = CFGT_STR, [K_NETS] = CFGT_STR,
	};

	memset(o, 0, sizeof(*o));
	o->name = d->name;
	o->type = type[d->kind];
	o->flags = d->kind == K_NETS ? CFGF_LIST : CFGF_NONE;
	if (!d->def)
		o->flags |= CFGF_NODEFAULT;
	o->def.parsed = default_text(d);
	if (d->def && d->kind != K_NETS && !o->def.parsed)
		return -1;
	if (o->type != CFGT_STR)
		o->parsecb = opt_parse;
	o->validcb = opt_validate;
	return 0;
}

/* Free the default texts of an option array. */
static void opts_free_defaults(cfg_opt_t *opts)
{
	for (size_t i = 0; opts[i].name; i++) {
		free(opts[i].def.parsed);
		opts[i].def.parsed = NULL;
	}
}

/* Build a libconfuse tree for the table (pctx must be set: the
 * callbacks check the table's defaults). ignore_unknown: libconfuse
 * skips unknown names (conf_scan has reported them all). */
static cfg_t *cfg_build(bool ignore_unknown)
{
	cfg_opt_t gopts[NDIR + 2], eopts[NDIR + 1];
	size_t ng = 0, ne = 0;
	cfg_t *cfg = NULL;

	memset(gopts, 0, sizeof(gopts));
	memset(eopts, 0, sizeof(eopts));
	for (size_t i = 0; i < NDIR; i++) {
		const struct directive *d = &directives[i];
		cfg_opt_t *o = d->scope == S_GLOBAL ? &gopts[ng++] : &eopts[ne++];

		if (opt_fill(o, d) != 0)
			goto out;
	}
	gopts[ng].name = "export";
	gopts[ng].type = CFGT_SEC;
	gopts[ng].flags = CFGF_MULTI | CFGF_TITLE | CFGF_NO_TITLE_DUPES;
	gopts[ng].subopts = eopts;
	gopts[ng].validcb = export_validate;
	cfg = cfg_init(gopts, ignore_unknown ? CFGF_IGNORE_UNKNOWN : CFGF_NONE);
	if (cfg)
		cfg_set_error_function(cfg, on_error);
out:
	opts_free_defaults(gopts);
	opts_free_defaults(eopts);
	return cfg;
}

/* ---- from a cfg tree to struct conf ---- */

/* Store every value libconfuse holds for the directives of scope, but
 * those bad[] (NULL: none) marks refused. */
static int store_scope(void *base, cfg_t *cfg, enum dir_scope scope,
		       const bool *bad)
{
	for (size_t i = 0; i < NDIR; i++) {
		const struct directive *d = &directives[i];
		cfg_opt_t *opt;
		unsigned n;
		union dval v;

		if (d->scope != scope || (bad && bad[i]))
			continue;
		opt = cfg_getopt(cfg, d->name);
		n = cfg_opt_size(opt);
		if (d->kind != K_NETS && n > 1)
			n = 1;
		for (unsigned k = 0; k < n; k++) {
			value_from_opt(d, opt, k, &v);
			if (value_store(base, d, &v) != 0)
				return -1;
		}
	}
	return 0;
}

/* Convert a parsed and validated tree into a new struct conf. */
static struct conf *conf_from_cfg(cfg_t *cfg, const char *source)
{
	struct conf *c = calloc(1, sizeof(*c));
	unsigned n = cfg_size(cfg, "export");

	if (!c || !(c->source = strdup(source)))
		goto fail;
	if (store_scope(c, cfg, S_GLOBAL, pctx ? pctx->gbad : NULL) != 0)
		goto fail;
	c->exports = calloc(n ? n : 1, sizeof(*c->exports));
	if (!c->exports)
		goto fail;
	c->nexports = n;
	for (unsigned i = 0; i < n; i++) {
		cfg_t *sec = cfg_getnsec(cfg, "export", i);
		struct conf_export *e = &c->exports[i];
		const struct export_rec *r = export_rec_find(sec);

		e->path = strdup(cfg_title(sec));
		if (!e->path ||
		    store_scope(e, sec, S_EXPORT, r ? r->bad : NULL) != 0)
			goto fail;
		e->line = r ? r->line : 0;
		e->commit_line = r ? r->dline[directive_find(S_EXPORT,
					      "commit") - directives] : 0;
		e->clients_line = r ? r->dline[directive_find(S_EXPORT,
					       "clients") - directives] : 0;
	}
	return c;
fail:
	conf_free(&c);
	return NULL;
}

/* conf_scan's reports, into the load's errors. */
static void on_scan(void *arg, int line, const char *why)
{
	(void)arg;
	report(line, "%s", why);
}

/* conf_scan's question: is name a directive of the section (NULL: the
 * top, where the export section is known too)? */
static bool scan_known(const char *section, const char *name)
{
	if (!section)
		return strcmp(name, "export") == 0 ||
		       directive_find(S_GLOBAL, name);
	return strcmp(section, "export") == 0 &&
	       directive_find(S_EXPORT, name);
}

/* Parse the file text buf into a checked struct conf; errors via pctx.
 * Every error is reported; libconfuse stops at a syntax error, and then
 * the rules over the whole file (an export, directives that must agree)
 * are not checked. */
static struct conf *load_text(char *buf, size_t len, struct parse_ctx *ctx)
{
	struct rules_out rules = { .ctx = ctx };
	struct conf *c = NULL;
	cfg_t *cfg = NULL;
	FILE *fp = NULL;
	const char *unclosed;
	int line;

	if ((line = conf_strip_comments(buf, len))) {
		report(line, "'/*' is never closed");
		goto out;
	}
	if ((unclosed = conf_find_unclosed(buf, len, &line))) {
		report(line, "%s", unclosed);
		goto out;
	}
	cfg = cfg_build(conf_scan(buf, len, on_scan, scan_known, NULL) == 0);
	/* An empty file leaves the defaults, and no export. */
	fp = len ? fmemopen(buf, len, "r") : NULL;
	if ((len && !fp) || !cfg ||
	    str_replace(&cfg->filename, ctx->path) != 0) {
		ctx->oom = true;
		goto out;
	}
	ctx->root = cfg;
	ctx->parsing = true;
	if (fp && cfg_parse_fp(cfg, fp) != CFG_SUCCESS) {
		if (ctx->nerrs == 0)
			report(0, "cannot parse the file");
		goto out;
	}
	c = conf_from_cfg(cfg, ctx->path);
	if (c)
		c->cache_dir_line = ctx->gline[gidx("cache_dir")];
	if (!c)
		ctx->oom = true;
	else if (c->nexports == 0)
		report(0, "no export: at least one export \"/PATH\" { ... } "
		       "section is required");
	else
		check_rules(c, &rules);
out:
	if (ctx->nerrs || ctx->oom)
		conf_free(&c);
	if (fp)
		fclose(fp);
	if (cfg)
		cfg_free(cfg);
	return c;
}

int conf_load_file(const char *path, struct conf **out, char *err,
		   size_t errlen)
{
	struct parse_ctx ctx = { .path = path };
	struct conf *c = NULL;
	size_t len = 0;
	char *buf;

	pctx = &ctx;
	buf = conf_read_text(path, &len);
	if (!buf)
		report(0, "cannot read: %s", strerror(errno));
	else
		c = load_text(buf, len, &ctx);
	free(buf);
	free(ctx.recs);
	pctx = NULL;
	if (!c) {
		if (err && errlen)
			errors_write(&ctx, err, errlen);
		for (size_t i = 0; i < ctx.nerrs; i++)
			free(ctx.errs[i].why);
		free(ctx.errs);
		return -1;
	}
	*out = c;
	return 0;
}

/* ---- building a configuration without a file ---- */

/* Apply the table's defaults of scope to base. */
static int apply_defaults(void *base, enum dir_scope scope)
{
	for (size_t i = 0; i < NDIR; i++) {
		const struct directive *d = &directives[i];
		char why[WHY_MAX];
		union dval v;

		if (d->scope != scope || !d->def || d->kind == K_NETS)
			continue;
		if (value_parse(d, d->def, &v, why, sizeof(why)) != 0 ||
		    value_store(base, d, &v) != 0)
			return -1;
	}
	return 0;
}

/* Fill the single export of a quick-start configuration. */
static int flags_export(struct conf_export *e, const char *url, char *err,
			size_t errlen)
{
	char why[WHY_MAX];

	if (apply_defaults(e, S_EXPORT) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (conf_parse_upstream_url(url, &e->url, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "upstream: %s", why);
		return -1;
	}
	e->id = 1;
	e->upstream = strdup(url);
	e->path = strdup(e->url.path);
	if (!e->upstream || !e->path) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (check_export_path(e->path, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "upstream \"%s\": export %s", url, why);
		return -1;
	}
	return 0;
}

/* Apply the quick-start listen "ADDR:PORT" and mount port to c. */
static int flags_listen(struct conf *c, const char *listen, int mount_port,
			char *err, size_t errlen)
{
	char addr[INET6_ADDRSTRLEN], why[WHY_MAX];

	if (listen) {
		if (conf_parse_hostport(listen, addr, sizeof(addr),
					&c->nfs_port, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "listen: %s", why);
			return -1;
		}
		if (str_replace(&c->listen, addr) != 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	if (mount_port < 0 || mount_port > 65535) {
		snprintf(err, errlen, "mount port %d out of range 0..65535",
			 mount_port);
		return -1;
	}
	if (mount_port)
		c->mount_port = mount_port;
	return 0;
}

int conf_from_flags(const char *upstream_url, const char *listen,
		    int mount_port, struct conf **out, char *err,
		    size_t errlen)
{
	struct conf *c = calloc(1, sizeof(*c));
	char why[WHY_MAX];
	struct rules_out rules = { .why = why, .len = sizeof(why) };

	if (!c || !(c->source = strdup("command line")) ||
	    apply_defaults(c, S_GLOBAL) != 0 ||
	    !(c->exports = calloc(1, sizeof(*c->exports)))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	c->nexports = 1;
	if (!upstream_url) {
		snprintf(err, errlen, "upstream: no URL given");
		goto fail;
	}
	if (flags_export(&c->exports[0], upstream_url, err, errlen) != 0 ||
	    flags_listen(c, listen, mount_port, err, errlen) != 0)
		goto fail;
	if (check_rules(c, &rules) != 0) {
		snprintf(err, errlen, "%s", why);
		goto fail;
	}
	*out = c;
	return 0;
fail:
	conf_free(&c);
	return -1;
}

int conf_set_global(struct conf *c, const char *name, const char *value,
		    char *err, size_t errlen)
{
	const struct directive *d = directive_find(S_GLOBAL, name);
	struct conf tmp;
	char why[WHY_MAX];
	struct rules_out rules = { .why = why, .len = sizeof(why) };
	union dval v;

	if (!d) {
		snprintf(err, errlen, "unknown directive '%s'", name);
		return -1;
	}
	if (value_parse(d, value, &v, why, sizeof(why)) != 0 ||
	    value_check(d, &v, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	if (d->kind == K_STR) {
		/* No rule ties strings to other directives. */
		if (value_store(c, d, &v) == 0)
			return 0;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	tmp = *c;
	value_store(&tmp, d, &v);
	if (check_rules(&tmp, &rules) != 0) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	*c = tmp;
	return 0;
}

/* ---- lookups ---- */

const struct conf_export *conf_export_by_id(const struct conf *c,
					    unsigned id)
{
	for (size_t i = 0; i < c->nexports; i++)
		if (c->exports[i].id == id)
			return &c->exports[i];
	return NULL;
}

const struct conf_export *conf_export_by_path(const struct conf *c,
					      const char *path)
{
	for (size_t i = 0; i < c->nexports; i++)
		if (strcmp(c->exports[i].path, path) == 0)
			return &c->exports[i];
	return NULL;
}

bool conf_equal(const struct conf *a, const struct conf *b)
{
	if (a->nexports != b->nexports)
		return false;
	for (size_t i = 0; i < NDIR; i++)
		if (directives[i].scope == S_GLOBAL &&
		    !field_equal(a, b, &directives[i]))
			return false;
	for (size_t k = 0; k < a->nexports; k++) {
		const struct conf_export *ea = &a->exports[k];
		const struct conf_export *eb = &b->exports[k];

		if (strcmp(ea->path, eb->path) != 0)
			return false;
		for (size_t i = 0; i < NDIR; i++)
			if (directives[i].scope == S_EXPORT &&
			    !field_equal(ea, eb, &directives[i]))
				return false;
	}
	return true;
}

/* ---- writing ---- */

/* Write the value of d held in base as file text. */
static void dump_value(FILE *f, const void *base, const struct directive *d)
{
	const void *p = field(base, d);
	const struct conf_export *e = base;
	char buf[512];

	switch (d->kind) {
	case K_BOOL:
		fputs(*(const bool *)p ? "true" : "false", f);
		break;
	case K_INT:
		fprintf(f, "%d", *(const int *)p);
		break;
	case K_UINT:
		fprintf(f, "%u", *(const unsigned *)p);
		break;
	case K_U32:
		fprintf(f, "%" PRIu32, *(const uint32_t *)p);
		break;
	case K_DOUBLE:
		fmt_number(d, *(const double *)p, buf, sizeof(buf));
		fputs(buf, f);
		break;
	case K_STR:
	case K_URL:
		fput_quoted(f, *(char *const *)p ? *(char *const *)p : "");
		break;
	case K_NETS:
		fputc('{', f);
		for (size_t i = 0; i < e->nclients; i++) {
			conf_format_client(&e->clients[i], buf, sizeof(buf));
			fputs(i ? ", " : "", f);
			fput_quoted(f, buf);
		}
		fputc('}', f);
		break;
	}
}

/* Write text as comment lines of at most about 72 columns. */
static void fput_comment(FILE *f, const char *indent, const char *text)
{
	const char *p = text;

	while (*p) {
		size_t n = strlen(p), cut = n;

		if (n > 70) {
			for (cut = 70; cut > 0 && p[cut] != ' '; cut--)
				;
			if (cut == 0)
				cut = strcspn(p, " ");
		}
		fprintf(f, "%s# %.*s\n", indent, (int)cut, p);
		p += cut;
		p += strspn(p, " ");
	}
}

/* Write d's unit, range and default: " Unit: U. Range: A..B. Default: V."
 * (each part only when d has it) and a newline. */
static void dump_facts(FILE *f, const struct directive *d)
{
	char lo[32], hi[32];

	if (d->unit && unit_scale(d) > 0)
		fprintf(f, " Unit: %s (or K, M, G, T).", d->unit);
	else if (d->unit && unit_scale(d) < 0)
		fprintf(f, " Unit: %s (or ms, s, m, h, d).", d->unit);
	else if (d->unit)
		fprintf(f, " Unit: %s.", d->unit);
	if (is_numeric(d)) {
		fmt_number(d, d->min, lo, sizeof(lo));
		fmt_number(d, d->max, hi, sizeof(hi));
		fprintf(f, " Range: %s..%s.", lo, hi);
	}
	if (!d->def) {
		fputs(" Required.\n", f);
	} else if (d->kind == K_STR || d->kind == K_URL) {
		fputs(" Default: ", f);
		fput_quoted(f, d->def);
		fputs(".\n", f);
	} else {
		fprintf(f, " Default: %s.\n", d->def);
	}
}

/* Write the help comment of d: its help, then unit, range and default. */
static void dump_help(FILE *f, const struct directive *d, const char *indent)
{
	fput_comment(f, indent, d->help);
	fprintf(f, "%s#", indent);
	dump_facts(f, d);
}

/* Write every directive of scope held in base, with its help. */
static void dump_scope(FILE *f, const void *base, enum dir_scope scope,
		       const char *indent)
{
	bool first = true;

	for (size_t i = 0; i < NDIR; i++) {
		const struct directive *d = &directives[i];

		if (d->scope != scope)
			continue;
		fputs(first ? "" : "\n", f);
		first = false;
		dump_help(f, d, indent);
		fprintf(f, "%s%s = ", indent, d->name);
		dump_value(f, base, d);
		fputc('\n', f);
	}
}

/* Write c after the comment lines of header. */
static void dump(const struct conf *c, FILE *f, const char *header)
{
	fputs(header, f);
	fputs("\n# ---- global directives ----\n\n", f);
	dump_scope(f, c, S_GLOBAL, "");
	fputs("\n# ---- exports ----\n"
	      "#\n"
	      "# Each export \"PATH\" { ... } section serves one upstream NFSv3\n"
	      "# export to clients under PATH, the path they MOUNT. At least\n"
	      "# one is required; paths and ids must be unique.\n", f);
	for (size_t i = 0; i < c->nexports; i++) {
		fputs("\nexport ", f);
		fput_quoted(f, c->exports[i].path);
		fputs(" {\n", f);
		dump_scope(f, &c->exports[i], S_EXPORT, "\t");
		fputs("}\n", f);
	}
}

void conf_dump(const struct conf *c, FILE *f)
{
	char *header = NULL;
	size_t len = 0;
	FILE *h = open_memstream(&header, &len);

	if (!h)
		return;
	fputs("# nfscached configuration (libconfuse syntax) as loaded from\n"
	      "# ", h);
	fput_quoted(h, c->source ? c->source : "");
	fputs(", with every directive; see docs/configuration.md.\n", h);
	if (fclose(h) == 0)
		dump(c, f, header);
	free(header);
}

static const char example_header[] =
	"# nfscached example configuration: every directive at its default\n"
	"# and one example export. Copy it to the file given to\n"
	"# `nfscached --config FILE`, edit it, and check it with\n"
	"# `nfscached --check-config FILE`. See docs/configuration.md.\n"
	"#\n"
	"# Syntax (libconfuse): name = value; strings in double quotes,\n"
	"# lists in braces, '#' starts a comment. Inside double quotes\n"
	"# ${VAR} is replaced by the environment variable VAR. A directive\n"
	"# given twice in one scope is an error. Sizes take K, M, G or T\n"
	"# (powers of 1024: cache_size = 4G), durations ms, s, m, h or d\n"
	"# (writeback_delay = 5m); a bare number is in the unit shown.\n"
	"#\n"
	"# Generated from the directive table in conf/conf.c by\n"
	"# conf_write_example(); the unit test test_conf fails when this\n"
	"# file is out of date and writes the current text beside itself.\n";

void conf_write_example(FILE *f)
{
	static const char *const nets[] = { "192.0.2.0/24",
					    "2001:db8::/32(ro,all_squash)" };
	struct conf *c = NULL;
	struct conf_export *e;
	char err[WHY_MAX];

	if (conf_from_flags("nfs://192.0.2.10/srv/data"
			    "?nfsport=2049&mountport=20048", NULL, 0, &c, err,
			    sizeof(err)) != 0)
		return;
	e = &c->exports[0];
	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++)
		if (nets_append(e, nets[i]) != 0)
			goto out;
	/* The systemd unit's CacheDirectory=: the disk tier's usual place. */
	if (str_replace(&e->path, "/data") == 0 &&
	    str_replace(&c->cache_dir, "/var/cache/nfscached") == 0)
		dump(c, f, example_header);
out:
	conf_free(&c);
}

size_t conf_directive_count(void)
{
	return NDIR;
}

int conf_directive_doc(size_t i, struct conf_directive_doc *doc)
{
	const struct directive *d = i < NDIR ? &directives[i] : NULL;
	FILE *f;
	size_t n;

	if (!d)
		return -1;
	f = fmemopen(doc->facts, sizeof(doc->facts), "w");
	if (!f)
		return -1;
	dump_facts(f, d);
	if (fclose(f) != 0)
		return -1;
	n = strlen(doc->facts);
	if (n == 0 || doc->facts[n - 1] != '\n')
		return -1;	/* cut short: facts[] is too small */
	doc->facts[n - 1] = '\0';
	memmove(doc->facts, doc->facts + 1, n - 1);	/* the leading space */
	doc->name = d->name;
	doc->in_export = d->scope == S_EXPORT;
	doc->help = d->help;
	return 0;
}

void conf_free(struct conf **cp)
{
	struct conf *c = cp ? *cp : NULL;

	if (!c)
		return;
	for (size_t k = 0; c->exports && k < c->nexports; k++) {
		free(c->exports[k].path);
		for (size_t i = 0; i < NDIR; i++)
			if (directives[i].scope == S_EXPORT)
				field_free(&c->exports[k], &directives[i]);
	}
	for (size_t i = 0; i < NDIR; i++)
		if (directives[i].scope == S_GLOBAL)
			field_free(c, &directives[i]);
	free(c->exports);
	free(c->source);
	free(c);
	*cp = NULL;
}

bool conf_commit_local(const struct conf_export *e)
{
	return e->commit && strcmp(e->commit, "local") == 0;
}
