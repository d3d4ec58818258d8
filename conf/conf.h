/* SPDX-License-Identifier: MIT */
/*
 * conf: nfscached's configuration. One table of directives (conf.c) drives
 * parsing (libconfuse), defaults, validation, the example file and
 * --dump-config. A configuration is immutable once loaded; a reload builds
 * a new one and swaps it in whole.
 *
 * File format (libconfuse syntax), see systemd/nfscached.conf.example:
 *
 *   listen = "0.0.0.0"
 *   nfs_port = 2049
 *   mount_port = 20048
 *   export "/data" {
 *     id = 1
 *     upstream = "nfs://server/export?nfsport=2049&mountport=20048"
 *     clients = {"10.0.0.0/8", "192.168.1.7"}
 *     root_squash = true
 *     secure = false
 *   }
 */
#ifndef NFSCACHED_CONF_CONF_H
#define NFSCACHED_CONF_CONF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

/* One allowed client network: address and prefix length. */
struct conf_net {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t addr[16];	/* network byte order; IPv4 uses 4 bytes */
	unsigned prefix;	/* 0..32 or 0..128 */
};

/*
 * What a client may do in an export: the options of exports(5) that
 * nfscached honours. The export's own directives give the defaults; a
 * clients entry's options in parentheses override them for the clients
 * that entry matches.
 */
struct conf_access {
	bool read_only;		/* ro: every mutating call is NFS3ERR_ROFS */
	bool root_squash;	/* map uid/gid 0 to anonuid/anongid */
	bool all_squash;	/* map every uid/gid to anonuid/anongid */
	bool secure;		/* require a source port < 1024 */
	uint32_t anonuid;
	uint32_t anongid;
};

/* Bits of struct conf_client.set: the options an entry gave. */
enum {
	CONF_OPT_READ_ONLY = 1u << 0,
	CONF_OPT_ROOT_SQUASH = 1u << 1,
	CONF_OPT_ALL_SQUASH = 1u << 2,
	CONF_OPT_SECURE = 1u << 3,
	CONF_OPT_ANONUID = 1u << 4,
	CONF_OPT_ANONGID = 1u << 5,
};

/* Which kind of client an entry names, in exports(5)'s order of
 * precedence: a single host first, then a network, then a wildcard, then
 * a netgroup (and "*" alone, a WILDCARD, last of all). */
enum conf_client_kind {
	CONF_CLIENT_HOST,	/* an address, or a host name (addrs) */
	CONF_CLIENT_NET,	/* ADDR/PREFIX shorter than the address */
	CONF_CLIENT_WILDCARD,	/* a pattern of the client's host name */
	CONF_CLIENT_NETGROUP,	/* "@NAME": the hosts of netgroup NAME */
};

/*
 * One entry of an export's clients list, "SPEC" or "SPEC(OPT,...)" as in
 * exports(5): SPEC an address, ADDR/PREFIX, a host name (resolved to
 * addresses by conf_clients_resolve at start and at each reload) or a
 * wildcard ('*' and '?', matched against the client's host name from its
 * address; "*" alone matches every client) or a netgroup ("@NAME", name
 * kept with its '@'; membership is evaluated by the caller, innetgr(3)).
 */
struct conf_client {
	enum conf_client_kind kind;
	int family;		/* AF_INET or AF_INET6 for an address or a
				 * network; 0 for a name or a wildcard */
	uint8_t addr[16];	/* network byte order; IPv4 uses 4 bytes */
	unsigned prefix;	/* 0..32 or 0..128 */
	char *name;		/* host name, pattern or "@NAME", owned;
				 * NULL for an address or a network */
	struct conf_net *addrs;	/* a host name's addresses, owned; set by
				 * conf_clients_resolve */
	size_t naddrs;
	unsigned set;		/* CONF_OPT_* given in parentheses */
	struct conf_access opt;	/* their values */
	unsigned ignored;	/* exports(5) words given that nfscached
				 * accepts without effect (a bit per word of
				 * conf_client.c's ignored_words) */
};

/* A parsed nfs:// URL (libnfs URL syntax, RFC 2224 style). */
struct conf_upstream_url {
	char *server;		/* owned */
	char *path;		/* owned, starts with '/' */
	int nfs_port;		/* 0 = portmapper */
	int mount_port;		/* 0 = portmapper */
	int nlm_port;		/* NLM v4 (locks); 0 = portmapper */
};

struct conf_export {
	unsigned id;			/* 1..63, stable across restarts */
	char *path;			/* client-visible MOUNT path, owned */
	char *upstream;			/* the URL as written, owned */
	struct conf_upstream_url url;	/* parsed from upstream */
	struct conf_client *clients;	/* owned array; empty = everyone */
	size_t nclients;
	bool read_only;			/* every client read-only unless its
					 * entry says rw */
	bool root_squash;		/* map uid/gid 0 to anonuid/anongid */
	bool all_squash;		/* map every uid/gid to anonuid/anongid */
	uint32_t anonuid;
	uint32_t anongid;
	bool secure;			/* require a source port < 1024 */
	double acregmin, acregmax;	/* file attribute timeouts, seconds */
	double acdirmin, acdirmax;	/* directory attribute timeouts, s */
	double negative_timeout;	/* seconds NOENT is cached; 0 off */
	bool strict;			/* forward every GETATTR, revalidate
					 * directories before listings */
	char *commit;			/* "upstream" or "local", owned */
	int commit_line;		/* line of commit in conf.source, 0 */
	int clients_line;		/* line of clients in conf.source, 0
					 * if not set there */
	int line;			/* line of the section in
					 * conf.source; 0 if none */
};

/*
 * True when e's COMMITs and FILE_SYNC WRITEs are answered once the data is
 * durable in cache_dir (commit = "local", issue 18), false for "upstream".
 */
bool conf_commit_local(const struct conf_export *e);

struct conf {
	char *source;			/* file name, or "command line" */
	char *listen;			/* address to bind, owned */
	int nfs_port;
	int mount_port;			/* 0 = serve MOUNT on nfs_port only */
	char *metrics_listen;		/* "ADDR:PORT", "" disables, owned */
	char *state_dir;		/* holds the handle key, owned */
	char *admin_socket;		/* Unix socket path, "" = off, owned */
	uint32_t max_record_size;	/* bytes, client RPC record cap */
	uint32_t max_transfer;		/* bytes, cap on rsize/wsize */
	uint32_t upstream_connections;	/* TCP connections per export's
					 * upstream (nconnect), 1..16 */
	uint32_t threads;		/* event loops, 1..64 */
	bool register_rpcbind;
	bool nlm;			/* serve NLM v4, forwarded upstream */
	char *nlm_caller_name;		/* the proxy's name towards upstream
					 * lock managers; "" = host name,
					 * owned */
	char *rpcbind_conflict;		/* "skip", "refuse" or "replace",
					 * owned */
	double upstream_timeout;	/* seconds */
	double stale_on_error;		/* seconds past expiry served while
					 * the upstream is unreachable */
	bool start_without_upstream;	/* serve (JUKEBOX) before upstream */
	uint32_t max_requests_per_conn;	/* in flight before reads pause */
	uint32_t max_reply_buffer;	/* bytes queued to a client before
					 * reads pause */
	uint32_t client_buffer_limit;	/* MiB of reply and request bytes
					 * held for all clients before the
					 * biggest holders pause; 0: auto */
	double record_timeout;		/* seconds to deliver a started
					 * record */
	double idle_timeout;		/* seconds an idle connection stays */
	uint32_t max_connections;	/* client connections open at once */
	uint32_t max_connections_per_client; /* per source address */
	uint32_t drc_entries;		/* duplicate request cache size */
	double drc_timeout;		/* seconds a DRC entry is kept */
	char *log_level;		/* "error".."debug", owned */
	uint32_t page_size;		/* cache page size, bytes */
	uint32_t cache_size;		/* cache data budget, MiB */
	bool cache_preallocate;		/* fault the budget in at start */
	char *cache_dir;		/* disk tier directory, "" none; owned */
	int cache_dir_line;		/* line of cache_dir in source, for
					 * the disk tier's errors at start;
					 * 0 if it was not set there */
	uint32_t disk_cache_size;	/* disk tier budget, MiB */
	uint32_t disk_dirty_limit;	/* locally committed MiB on disk */
	uint32_t max_files;		/* file records kept, files */
	uint32_t hole_granularity;	/* bytes; zero blocks become holes */
	uint32_t readahead_max;		/* bytes, cap of the window; 0 off */
	uint32_t readahead_streams;	/* streams tracked per file */
	double writeback_delay;		/* seconds before write-behind */
	uint32_t dirty_limit;		/* MiB of dirty data before write-back;
					 * 0: min(256, cache_size / 4) */
	uint32_t writeback_wsize;	/* bytes, largest write-back WRITE */
	double shutdown_flush_timeout;	/* seconds SIGTERM flushes at most */
	double writeback_commit_delay;	/* seconds from last WRITE to COMMIT */
	uint32_t meta_cache_size;	/* names and listings budget, MiB */
	struct conf_export *exports;	/* owned array */
	size_t nexports;
};

/*
 * A size for the err buffers of the functions below that holds any of
 * their messages whole, whatever the file's path (up to PATH_MAX bytes).
 * With a smaller buffer, conf_error shortens the path, not the reason.
 */
#define CONF_ERR_MAX 6144

/* Where the client commands (`nfscached stats`, `nfscached cache`) look
 * for the daemon's configuration when given neither an address nor a
 * file, as the systemd unit runs it. */
#define CONF_DEFAULT_PATH "/etc/nfscached/nfscached.conf"

/*
 * Write the configuration error "FILE:LINE: reason" ("FILE: reason" for
 * line 0) into err[0..errlen), the reason from fmt. The reason is what
 * matters: when the whole does not fit, FILE loses its head ("..." then
 * its tail) first. Returns -1, for `return conf_error(...)`. Used for
 * every such message (conf_load_file's, the reload check's).
 */
int conf_error(char *err, size_t errlen, const char *file, int line,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* conf_error with a va_list. */
int conf_verror(char *err, size_t errlen, const char *file, int line,
		const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

/*
 * Load and validate the file at path. On success returns 0 and *out (owned
 * by the caller, free with conf_free). On failure returns -1 and writes
 * every error of the file into err[0..errlen), one "FILE:LINE: reason" (or
 * "FILE: reason" when no line applies) a line, '\n'-separated, in line
 * order (those without a line last); the first always fits, and when the
 * rest do not, a last line "(N more errors not shown)" counts them. *out is
 * untouched. Numbers of sizes and durations take suffixes (K, M, G, T;
 * ms, s, m, h, d; docs/configuration.md). Not thread-safe (libconfuse's
 * lexer is global): load from one thread at a time.
 */
int conf_load_file(const char *path, struct conf **out, char *err,
		   size_t errlen);

/*
 * Build a one-export configuration from the quick-start flags: upstream URL
 * "nfs://HOST/PATH?nfsport=N&mountport=M", listen "ADDR:PORT" (NULL =
 * defaults) and mount_port (0 = default). The export is id 1, its client
 * path is the upstream path, everyone may mount it, root is squashed.
 * Returns 0 and *out, or -1 with a reason in err.
 */
int conf_from_flags(const char *upstream_url, const char *listen,
		    int mount_port, struct conf **out, char *err,
		    size_t errlen);

/*
 * Parse "nfs://HOST/PATH?nfsport=N&mountport=M" (other query keys, such as
 * version=3, are accepted and ignored) into *u (caller frees with
 * conf_upstream_url_clear). Returns 0, or -1 with a reason in err.
 */
int conf_parse_upstream_url(const char *url, struct conf_upstream_url *u,
			    char *err, size_t errlen);
void conf_upstream_url_clear(struct conf_upstream_url *u);

/*
 * Parse an IPv4 or IPv6 literal (inet_pton) into addr (4 or 16 bytes
 * used). Returns AF_INET or AF_INET6, or -1 if s is neither.
 */
int conf_parse_ip(const char *s, uint8_t addr[16]);

/* Write n into buf[0..len) as "ADDR", or "ADDR/PREFIX" when the prefix is
 * shorter than the address (truncated to len, always terminated). */
void conf_format_net(const struct conf_net *n, char *buf, size_t len);

/*
 * Parse "ADDR/PREFIX" or a bare address (full-length prefix), IPv4 or IPv6,
 * or exports(5)'s "ADDR/NETMASK" for IPv4 (255.255.0.0 is /16; a netmask
 * whose ones are not contiguous is refused).
 * Returns 0, or -1 with a reason in err.
 */
int conf_parse_net(const char *s, struct conf_net *n, char *err,
		   size_t errlen);

/*
 * Parse one clients entry, "SPEC" or "SPEC(OPT,...)" (see struct
 * conf_client; OPT is rw, ro, root_squash, no_root_squash, all_squash,
 * no_all_squash, secure, insecure, anonuid=N or anongid=N, N 0..2^32-1;
 * SPEC may be a netgroup, "@NAME";
 * also sync, async, subtree_check, no_subtree_check, wdelay, no_wdelay,
 * hide, nohide, crossmnt and fsid=ID, recorded in ignored and without
 * effect). SPEC's network may be ADDR/PREFIX or, IPv4, ADDR/NETMASK.
 * On success *cl owns its strings (free with conf_client_clear). Returns
 * 0, or -1 with a reason in err (*cl then owns nothing).
 */
int conf_parse_client(const char *s, struct conf_client *cl, char *err,
		      size_t errlen);

/* Write cl as its entry would be written, "SPEC" or "SPEC(OPT,...)" with
 * the options it gave (truncated to len, always terminated). */
void conf_format_client(const struct conf_client *cl, char *buf, size_t len);

/* True if a and b name the same clients: the same address, network
 * (ADDR/PREFIX), host name or wildcard (names compared without case),
 * whatever their options. */
bool conf_client_same_spec(const struct conf_client *a,
			   const struct conf_client *b);

/*
 * Call warn once per exports(5) option word that an export's clients
 * entry gave and nfscached accepts without effect (sync, async,
 * subtree_check, no_subtree_check, wdelay, no_wdelay, hide, nohide,
 * crossmnt, fsid=), with a line "export "PATH": clients "SPEC": option
 * WORD has no effect: what nfscached does instead". Any thread; c is
 * only read.
 */
void conf_clients_warn_ignored(const struct conf *c,
			       void (*warn)(const char *msg));

/* True if a and b are the same entry (spec and options; a host name's
 * resolved addresses are not compared, nor ignored option words). */
bool conf_client_equal(const struct conf_client *a,
		       const struct conf_client *b);

/* Free what cl owns and zero it. */
void conf_client_clear(struct conf_client *cl);

/* The result of matching a client against an export's clients list. */
enum conf_match {
	CONF_MATCH_NO,		/* refused: no entry matches */
	CONF_MATCH_YES,		/* *acc says what the client may do */
	CONF_MATCH_NEED_NAME,	/* a wildcard or netgroup entry decides,
				 * and the client's host name (and netgroup
				 * membership) is not known yet */
};

/*
 * Match the client at sa (AF_INET or AF_INET6; v4-mapped v6 counts as v4)
 * with host name name ("" when its address has none, NULL when not known
 * yet) and netgroups groups (the names, without '@', of the netgroups the
 * client is a member of, NULL-terminated; NULL for none; read only when
 * name is not NULL) against e's clients, in exports(5)'s precedence:
 * entries naming a single host (an address, or a host name's resolved
 * addresses), then networks, then wildcards (fnmatch, case-insensitive),
 * then netgroups ("@NAME" matches when groups holds NAME), then "*" alone;
 * inside a class the first entry written wins. While name is NULL, an
 * entry that needs it and comes first in that order makes the answer
 * CONF_MATCH_NEED_NAME even when a later entry matches. On
 * CONF_MATCH_YES, *acc is e's defaults with the matching entry's options
 * applied (e's defaults alone when e lists no clients, which lets
 * everyone). sa NULL never matches a list. Never blocks (no lookups).
 */
enum conf_match conf_client_match(const struct conf_export *e,
				  const struct sockaddr *sa, const char *name,
				  const char *const *groups,
				  struct conf_access *acc);

/*
 * The netgroup names (without '@') that c's exports' clients entries name,
 * each once, as a NULL-terminated vector of owned strings (free with
 * conf_strv_free); NULL when out of memory. Empty when none.
 */
char **conf_netgroups(const struct conf *c);

/* Free a NULL-terminated vector of owned strings (v may be NULL). */
void conf_strv_free(char **v);

/* The family of sa, AF_INET (also for a v4-mapped IPv6 address) or
 * AF_INET6, with *addr pointing at its 4 or 16 address bytes inside sa;
 * 0 for another family or NULL. */
int conf_sockaddr_ip(const struct sockaddr *sa, const uint8_t **addr);

/* True if some entry of some export of c is a wildcard that needs the
 * client's host name ("*" alone does not) or a netgroup. */
bool conf_needs_client_names(const struct conf *c);

/*
 * Resolve the host names of every export's clients entries to their
 * addresses (getaddrinfo, blocking: call at start and at reload, before
 * the configuration serves). A name that does not resolve matches no
 * client; warn (may be NULL) is called once for it with arg and a line
 * "FILE:LINE: clients entry "NAME": reason; it matches no client" (the
 * line borrowed for the call). Returns the number of names that did not
 * resolve. Any thread that owns c: the daemon reads a reloaded file on a
 * worker thread (ctl/conf_reader.h) so that a slow resolver never holds
 * its event loop.
 */
unsigned conf_clients_resolve(struct conf *c,
			      void (*warn)(void *arg, const char *msg),
			      void *arg);

/* The export with id, or NULL. Borrowed from c. */
const struct conf_export *conf_export_by_id(const struct conf *c,
					    unsigned id);

/* The export whose client path is path, or NULL. Borrowed from c. */
const struct conf_export *conf_export_by_path(const struct conf *c,
					      const char *path);

/* Write c as a valid config file (every directive, with defaults). */
void conf_dump(const struct conf *c, FILE *f);

/*
 * Write the documented example configuration (every directive at its
 * default, one example export): the content of
 * systemd/nfscached.conf.example, which a unit test keeps in step.
 */
void conf_write_example(FILE *f);

/* What the manual says of one directive (conf_directive_doc). */
struct conf_directive_doc {
	const char *name;	/* borrowed from the table, static */
	bool in_export;		/* inside export sections; else global */
	const char *help;	/* one sentence or a few, static */
	char facts[256];	/* "Unit: U. Range: A..B. Default: V." as
				 * --dump-config's comment writes it */
};

/* The number of directives in the table (global and export). */
size_t conf_directive_count(void);

/*
 * Fill doc with directive i (0..conf_directive_count()-1, in the table's
 * order, the order --dump-config writes them). Returns 0, or -1 when i is
 * out of range. Any thread; used by the manual's generator (man/).
 */
int conf_directive_doc(size_t i, struct conf_directive_doc *doc);

/*
 * Set one global directive of c from its text as it would appear in a
 * file, unquoted ("9655", "true", "/var/lib/x"), with the same checks as a
 * file, including the rules that tie directives together. Meant for
 * command-line overrides (--state-dir, --metrics) on a configuration not
 * yet in use. Returns 0, or -1 with a reason in err (c unchanged).
 */
int conf_set_global(struct conf *c, const char *name, const char *value,
		    char *err, size_t errlen);

/*
 * Split "ADDR:PORT" or "[IPV6]:PORT" (ADDR an IPv4 or IPv6 literal, PORT
 * 1..65535) into addr[0..addrlen) without brackets and *port. Returns 0,
 * or -1 with a reason in err.
 */
int conf_parse_hostport(const char *s, char *addr, size_t addrlen,
			int *port, char *err, size_t errlen);

/* True if a and b hold the same values for every directive and the same
 * exports in the same order (source is not compared). */
bool conf_equal(const struct conf *a, const struct conf *b);

/* Free *c and clear the caller's pointer. NULL is ignored. */
void conf_free(struct conf **c);

#endif
