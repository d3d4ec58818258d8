/* SPDX-License-Identifier: MIT */
/*
 * main: nfscached's start, signals and stop.
 *
 * Start: parse flags, load and validate the configuration (a bad one is
 * refused with FILE:LINE: reason), load or create the handle key in the
 * state directory, start one upstream client per export (it connects and
 * keeps reconnecting in the background), listen for NFS and MOUNT, serve
 * metrics, register with rpcbind if asked (the order is lifecycle.c's,
 * shared with the unit-test harness). The listeners open whether or
 * not the upstream is reachable yet: until it is, NFS calls get
 * NFS3ERR_JUKEBOX (clients retry) and MNT waits up to upstream_timeout.
 *
 * Under systemd (Type=notify) it sends READY=1 once the listeners are up
 * and the upstreams have answered (service.c).
 *
 * Reload (SIGHUP): re-read the --config file; an invalid one, or one that
 * changes what needs a restart, is refused with a log line and the old
 * configuration stays (reload.c says what a reload applies).
 *
 * Stop (SIGTERM, SIGINT): STOPPING=1, stop accepting, unregister from
 * rpcbind, let calls in flight finish (at most upstream_timeout), close
 * connections, exit 0.
 *
 * `nfscached stats` is a separate subcommand (stats_cmd.c): it asks a
 * running daemon's /metrics and prints a summary.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <event2/event.h>

#include "daemon.h"
#include "fh.h"
#include "lcommit.h"
#include "log.h"
#include "loops.h"
#include "invariant.h"
#include "lifecycle.h"
#include "nfs3_prot.h"
#include "peername.h"
#include "registrar.h"
#include "reload.h"
#include "server.h"
#include "service.h"
#include "stats_cmd.h"
#include "cache_cmd.h"
#include "conf_reader.h"
#include "checkconf.h"
#include "upstream.h"
#include "writeback.h"

#define NFSCACHED_MMAP_THRESHOLD (4 * 1024 * 1024)	/* bytes, see main() */
#define NFSCACHED_TRIM_THRESHOLD (8 * 1024 * 1024)	/* bytes, see main() */
#define NFSCACHED_TOP_PAD (1024 * 1024)		/* bytes, see main() */
#define NFSCACHED_TRIM_PERIOD 10	/* seconds between malloc_trim(3) */

static struct event *stop_timer;
static struct event *trim_timer;	/* trim_cb's */
static double flush_deadline;	/* no new write-back after this */
static double stop_deadline;	/* nor waiting for calls in flight */

/* Print usage to f. */
static void usage(FILE *f)
{
	fprintf(f,
		"usage: nfscached --config FILE\n"
		"       nfscached --upstream 'nfs://HOST/PATH?nfsport=N&mountport=M'\n"
		"                 [--listen ADDR:PORT] [--mount-port PORT]\n"
		"       nfscached --check-config FILE [--user USER] [--no-probe]\n"
		"       nfscached --dump-config [--config FILE]\n"
		"       nfscached --dump-config --upstream URL [--listen ADDR:PORT] [--mount-port PORT]\n"
		"       nfscached stats [--metrics ADDR:PORT | --config FILE]\n"
		"                       [--watch [SECS]] [--interval SECS] [--count N] [--json]\n"
		"       nfscached cache [--socket PATH | --config FILE] [--timeout SECS]\n"
		"                       status | warm PATH... | forget PATH | flush [PATH] | drop\n"
		"options: --state-dir DIR  --metrics ADDR:PORT  --log-level LEVEL\n"
		"         --no-rpcbind  --version  --help\n");
}

struct opts {
	const char *config;
	const char *check;
	const char *upstream;
	const char *listen;
	const char *state_dir;
	const char *metrics;
	const char *log_level;
	const char *register_rpcbind;	/* "false" after --no-rpcbind */
	const char *user;		/* --check-config as this user */
	int no_probe;			/* --check-config probes no upstream */
	int mount_port;
	int dump;
};

/* The TCP port (0..65535) in s, the value of flag; exits 2 if it is not
 * one. */
static int port_arg(const char *flag, const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 65535) {
		fprintf(stderr, "nfscached: %s: \"%s\" is not a port number "
			"0..65535\n", flag, s);
		exit(2);
	}
	return (int)v;
}

/* Parse the command line into o; exits on --help, --version, bad flags. */
static void parse_flags(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", required_argument, NULL, 'C' },
		{ "upstream", required_argument, NULL, 'u' },
		{ "listen", required_argument, NULL, 'l' },
		{ "mount-port", required_argument, NULL, 'm' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "metrics", required_argument, NULL, 'M' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "no-rpcbind", no_argument, NULL, 'R' },
		{ "user", required_argument, NULL, 'U' },
		{ "no-probe", no_argument, NULL, 'P' },
		{ "dump-config", no_argument, NULL, 'D' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	memset(o, 0, sizeof(*o));
	o->mount_port = -1;
	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': o->config = optarg; break;
		case 'C': o->check = optarg; break;
		case 'u': o->upstream = optarg; break;
		case 'l': o->listen = optarg; break;
		case 'm': o->mount_port = port_arg("--mount-port", optarg); break;
		case 's': o->state_dir = optarg; break;
		case 'M': o->metrics = optarg; break;
		case 'L': o->log_level = optarg; break;
		case 'R': o->register_rpcbind = "false"; break;
		case 'U': o->user = optarg; break;
		case 'P': o->no_probe = 1; break;
		case 'D': o->dump = 1; break;
		case 'V': printf("nfscached %s\n", NFSCACHED_VERSION); exit(0);
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc) {
		usage(stderr);
		exit(2);
	}
}

/*
 * Apply the command-line overrides of o to c, each checked as the same
 * directive in a file would be. Returns 0, or -1 with "--FLAG: reason" in
 * err (c may then hold the overrides before the bad one).
 */
static int apply_overrides(struct conf *c, const struct opts *o, char *err,
			   size_t errlen)
{
	static const struct {
		const char *flag;
		const char *directive;
		size_t off;
	} over[] = {
		{ "--state-dir", "state_dir", offsetof(struct opts, state_dir) },
		{ "--metrics", "metrics_listen", offsetof(struct opts, metrics) },
		{ "--log-level", "log_level", offsetof(struct opts, log_level) },
		{ "--no-rpcbind", "register_rpcbind",
		  offsetof(struct opts, register_rpcbind) },
	};
	char why[CONF_ERR_MAX - 64];	/* room for the flag's name */

	for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
		const char *v = *(const char *const *)((const char *)o +
						       over[i].off);

		if (v && conf_set_global(c, over[i].directive, v, why,
					 sizeof(why)) != 0) {
			snprintf(err, errlen, "%s: %s", over[i].flag, why);
			return -1;
		}
	}
	return 0;
}

/*
 * Log the errors of a refused file (conf_load_file: one a line) at error
 * level, each line its own log line after prefix. When summary is not
 * NULL, write the first line there, with how many more followed, for the
 * one-line sd_notify STATUS.
 */
static void log_conf_errors(const char *prefix, const char *err,
			    char *summary, size_t len)
{
	size_t n = 0;

	for (const char *p = err; *p;) {
		size_t l = strcspn(p, "\n");

		log_error("%s%.*s", prefix, (int)l, p);
		if (summary && n == 0)
			snprintf(summary, len, "%.*s", (int)l, p);
		n++;
		p += l + (p[l] == '\n');
	}
	if (summary && n > 1) {
		size_t used = strlen(summary);

		snprintf(summary + used, len - used, " (and %zu more errors)",
			 n - 1);
	}
}

/*
 * Warn, once per export, about each export every host may mount: an empty
 * clients list, which the quick start (--upstream) always has. At start
 * and after each reload.
 */
static void warn_open_exports(const struct conf *c)
{
	bool quick = c->source && strcmp(c->source, "command line") == 0;

	for (size_t i = 0; i < c->nexports; i++) {
		const struct conf_export *e = &c->exports[i];

		if (e->nclients)
			continue;
		if (quick)
			log_warn("export \"%s\": any host may mount it (the "
				 "quick start has no clients list); use "
				 "--config with clients = {\"ADDR/PREFIX\"} "
				 "to limit it", e->path);
		else
			log_warn("export \"%s\": clients = {} lets any host "
				 "mount it; list the networks that may, "
				 "clients = {\"ADDR/PREFIX\"}", e->path);
	}
}

/* Print a warning of --check-config (a host name that does not resolve). */
static void warn_check_line(const char *msg)
{
	fprintf(stderr, "warning: %s\n", msg);
}

/* Log a warning line of the configuration in force. */
static void warn_conf_line(const char *msg)
{
	log_warn("%s", msg);
}

/* The same, as conf_clients_resolve calls it (arg unused: NULL). */
static void warn_conf_name(void *arg, const char *msg)
{
	(void)arg;
	warn_conf_line(msg);
}

/* warn_check_line, as conf_clients_resolve calls it (arg: NULL). */
static void warn_check_name(void *arg, const char *msg)
{
	(void)arg;
	warn_check_line(msg);
}

/* --check-config's look at state_dir and its key, as the start checks
 * them (fh_state_dir_check, fh_key_check); exits 1 with the reason. */
/* Build the configuration from the flags; exits with the reason if bad. */
static struct conf *load_conf(const struct opts *o)
{
	struct conf *c = NULL;
	char err[CONF_ERR_MAX];

	if (o->check) {
		if (o->user && checkconf_as_user(o->user, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		if (conf_load_file(o->check, &c, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		conf_clients_resolve(c, warn_check_name, NULL);
		conf_clients_warn_ignored(c, warn_check_line);
		if (checkconf_state_dir(c, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			conf_free(&c);
			exit(1);
		}
		if (!o->no_probe)
			checkconf_probe_upstreams(c, warn_check_line);
		printf("%s: ok (%zu export%s)\n", o->check, c->nexports,
		       c->nexports == 1 ? "" : "s");
		conf_free(&c);
		exit(0);
	}
	if (o->config && o->upstream)
		fatal("--config and --upstream exclude each other");
	if (o->config) {
		if (conf_load_file(o->config, &c, err, sizeof(err)) != 0) {
			log_conf_errors("", err, NULL, 0);
			exit(1);
		}
	} else if (o->upstream) {
		if (conf_from_flags(o->upstream, o->listen,
				    o->mount_port > 0 ? o->mount_port : 0, &c,
				    err, sizeof(err)) != 0)
			fatal("%s", err);
		if (o->mount_port == 0)
			c->mount_port = 0;
	} else if (!o->dump) {
		usage(stderr);
		exit(2);
	}
	if (!c && o->dump && conf_from_flags("nfs://server/export", NULL, 0, &c,
					     err, sizeof(err)) != 0)
		fatal("%s", err);
	if (apply_overrides(c, o, err, sizeof(err)) != 0)
		fatal("%s", err);
	return c;
}

/* Create the state directory if needed and load the handle key. */
static void load_key(struct daemon *d)
{
	char path[PATH_MAX], err[PATH_MAX * 2 + 512];

	if (mkdir(d->conf->state_dir, 0700) != 0 && errno != EEXIST)
		fatal("cannot create state_dir %s: %s", d->conf->state_dir,
		      strerror(errno));
	if (fh_state_dir_check(d->conf->state_dir, err, sizeof(err)) != 0)
		fatal("%s", err);
	snprintf(path, sizeof(path), "%s/handle.key", d->conf->state_dir);
	if (fh_key_load(path, d->fh_key.bytes, err, sizeof(err)) != 0)
		fatal("%s", err);
}

/* True while a call sent to some export's upstream awaits its answer. */
static bool upstream_calls_out(const struct daemon *d)
{
	return reload_exports_busy(d);
}

/*
 * Finish the stop: write back and commit until everything is clean or
 * shutdown_flush_timeout has passed; then wait only for calls already in
 * flight (client calls being served, upstream calls sent) to answer or
 * time out, at most upstream_timeout more.
 */
static void stop_poll_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	struct timeval tv = { 0, 50000 };
	double now = daemon_now();

	(void)fd;
	(void)what;
	if (!writeback_clean(d) && now < flush_deadline) {
		writeback_flush_all(d);
		mclock_timer_add(stop_timer, &tv);
		return;
	}
	if ((!server_drained(d->server) || server_inflight(d->server) > 0 ||
	     upstream_calls_out(d)) && now < stop_deadline) {
		mclock_timer_add(stop_timer, &tv);
		return;
	}
	if (server_inflight(d->server) > 0)
		log_warn("stopping with %u calls still in flight",
			 server_inflight(d->server));
	if (!writeback_clean(d))
		log_warn("stopping with %llu bytes not committed upstream; they "
			 "were never acknowledged as committed, and clients will "
			 "resend them after the restart (new write verifier)",
			 (unsigned long long)(cache_wb_bytes(d->cache, WB_DIRTY) +
					      cache_wb_bytes(d->cache, WB_WRITING) +
					      cache_wb_bytes(d->cache, WB_UNSTABLE)));
	lcommit_stop(d);
	loops_stop_threads(d->loops);	/* this thread runs every loop now */
	server_close_all(d->server);
	event_base_loopexit(d->base, NULL);
}

/* SIGTERM/SIGINT: begin an orderly stop. */
static void signal_stop_cb(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;

	(void)what;
	if (d->stopping)
		return;
	d->stopping = true;
	log_info("signal %d: stopping", (int)sig);
	service_stopping(d);
	server_stop_accepting(d->server);
	server_drain(d->server);
	if (d->conf->register_rpcbind && d->rpcb)
		registrar_unregister(d->rpcb);
	flush_deadline = daemon_now() + d->conf->shutdown_flush_timeout;
	stop_deadline = flush_deadline + d->conf->upstream_timeout;
	stop_timer = evtimer_new(d->base, stop_poll_cb, d);
	stop_poll_cb(-1, 0, d);
}

static struct opts the_opts;

static void reload(struct daemon *d, const struct opts *o);

/* A reload's file came back from the worker (conf_reader.h): swap it
 * in, or say why not; then read again if another SIGHUP came meanwhile. */
static void reload_read(struct daemon *d, struct conf *next, const char *err,
			char *const *warns, size_t nwarn, bool again)
{
	const struct opts *o = &the_opts;
	char why[CONF_ERR_MAX];
	unsigned kept;

	if (d->stopping) {
		/* SIGTERM came while the file was read: nothing new now. */
		log_info("reload: dropped, the daemon is stopping");
		conf_free(&next);
		return;
	}
	if (!next) {
		char summary[CONF_ERR_MAX];

		log_conf_errors("reload refused: ", err, summary,
				sizeof(summary));
		service_reload_done(d, false, summary);
		goto again;
	}
	for (size_t i = 0; i < nwarn; i++)
		warn_conf_line(warns[i]);
	if (apply_overrides(next, o, why, sizeof(why)) != 0 ||
	    reload_check(d->conf, next, why, sizeof(why)) != 0 ||
	    reload_apply(d, &next, &kept, why, sizeof(why)) != 0) {
		log_error("reload refused: %s", why);
		conf_free(&next);
		service_reload_done(d, false, why);
		goto again;
	}
	if (peername_netgroups(d->names, d->conf) != 0)
		log_error("out of memory: netgroup entries match no client");
	warn_open_exports(d->conf);
	conf_clients_warn_ignored(d->conf, warn_conf_line);
	log_info("reloaded %s (%zu export%s%s)", o->config, d->nexports,
		 d->nexports == 1 ? "" : "s",
		 kept ? "; some settings wait for a restart" : "");
	service_reload_done(d, true, NULL);
again:
	if (again && !d->stopping)
		reload(d, o);
}

/* Re-read the configuration file on a worker (its clients' host names
 * may take the resolver long) and swap it in from reload_read. A SIGHUP
 * while a read is out reads once more after it. */
static void reload(struct daemon *d, const struct opts *o)
{
	int rc;

	if (!o->config) {
		log_warn("reload: ignored: there is no --config file to re-read");
		return;
	}
	rc = conf_reader_start(d, o->config, reload_read);
	if (rc == 1) {
		log_info("reload: the previous read of %s is still out; "
			 "reading again after it", o->config);
		return;
	}
	if (rc != 0) {
		log_error("reload refused: cannot start reading %s (out of "
			  "memory or threads)", o->config);
		return;
	}
	service_reload_begin(d);
}


/* SIGHUP: reload the configuration. */
static void signal_reload_cb(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;

	(void)sig;
	(void)what;
	if (d->stopping)
		return;
	log_info("signal %d: reloading the configuration", (int)sig);
	reload(d, &the_opts);
}

/*
 * Page buffers come from the cache's page pool (cache/pagepool.h),
 * not from malloc. What malloc serves in bulk is transfer buffers
 * (up to 1 MiB and headers: libnfs's reply and call buffers, write-
 * back runs), which come and go. Below the mmap threshold a freed
 * one is reused by the next from the heap; above it each is a new
 * mapping faulted in 4 KiB at a time (256 faults per MiB: with the
 * threshold at 256 KiB, W3 ran at 61 MB/s and W4 at 121, at 4 MiB
 * 82 and 128, bench/run.sh on a 2-CPU VM). The threshold is fixed
 * (mallopt(3)) so glibc does not move it, above the largest
 * transfer. The trim threshold keeps up to 8 MiB free at the heap's
 * top and it grows 1 MiB at a time: the reply buffer of every 64 KiB
 * READ otherwise grew the top and gave it back (brk), faulting its
 * pages in again each time (W6 read holes: 224 -> 2,294 MB/s).
 */
static void malloc_tune(void)
{
	mallopt(M_MMAP_THRESHOLD, NFSCACHED_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, NFSCACHED_TRIM_THRESHOLD);
	mallopt(M_TOP_PAD, NFSCACHED_TOP_PAD);
}

/*
 * Every NFSCACHED_TRIM_PERIOD seconds, give the heap's free pages back
 * (malloc_trim(3), which releases free pages inside the heap, not only at
 * its top): with transfer buffers reused from the heap, those freed after
 * a burst of large calls kept RSS at the burst's peak while idle (81 MB
 * for a 32 MiB cache after 16 parallel 16 MiB writers, 46.6 MB with the
 * 256 KiB mmap threshold). A burst after a trim faults them in once more.
 */
static void trim_cb(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { NFSCACHED_TRIM_PERIOD, 0 };

	(void)fd;
	(void)what;
	(void)arg;
	malloc_trim(0);
	mclock_timer_add(trim_timer, &tv);
}

/* Start trim_cb's timer on base (none on ENOMEM: RSS stays higher). */
static void trim_start(struct event_base *base)
{
	struct timeval tv = { NFSCACHED_TRIM_PERIOD, 0 };

	trim_timer = evtimer_new(base, trim_cb, NULL);
	if (trim_timer)
		mclock_timer_add(trim_timer, &tv);
}

int main(int argc, char **argv)
{
	struct daemon d;
	struct opts *o = &the_opts;
	struct event *sigs[3];
	char err[2048];

	if (argc > 1 && strcmp(argv[1], "stats") == 0)
		return stats_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "cache") == 0)
		return cache_cmd_main(argc - 1, argv + 1);
	malloc_tune();
	memset(&d, 0, sizeof(d));
	parse_flags(argc, argv, o);
	d.conf = load_conf(o);
	if (o->dump) {
		conf_dump(d.conf, stdout);
		conf_free(&d.conf);
		return 0;
	}
	if (log_set_level_name(d.conf->log_level) != 0)
		fatal("unknown log level %s", d.conf->log_level);
	warn_open_exports(d.conf);
	conf_clients_warn_ignored(d.conf, warn_conf_line);
	conf_clients_resolve(d.conf, warn_conf_name, NULL);
	signal(SIGPIPE, SIG_IGN);
	load_key(&d);
	/* No EVENT_BASE_FLAG_PRECISE_TIMER: its timerfd was re-armed at
	 * nearly every upstream call (each has a timeout timer), 6% of W3's
	 * CPU (bench/run.sh); milliseconds (epoll_wait's) are enough. */
	d.base = event_base_new();
	if (!d.base)
		fatal("cannot create the event loop");
	trim_start(d.base);
	if (daemon_start(&d, DAEMON_ALL, err, sizeof(err)) != 0)
		fatal("%s", err);
	sigs[0] = evsignal_new(d.base, SIGTERM, signal_stop_cb, &d);
	sigs[1] = evsignal_new(d.base, SIGINT, signal_stop_cb, &d);
	sigs[2] = evsignal_new(d.base, SIGHUP, signal_reload_cb, &d);
	for (int i = 0; i < 3; i++)
		evsignal_add(sigs[i], NULL);
	if (daemon_announce(&d, err, sizeof(err)) != 0)
		fatal("%s", err);
	invariant_loop(&d);
	/* Ignored, not defaulted, while the rest stops: freeing a signal
	 * event puts back the action it found (the default), and a late
	 * SIGHUP or SIGTERM then killed the process before its stop was
	 * done. So after the events are gone. */
	for (int i = 0; i < 3; i++)
		event_free(sigs[i]);
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	daemon_stop(&d);
	if (stop_timer)
		event_free(stop_timer);
	if (trim_timer)
		event_free(trim_timer);
	event_base_free(d.base);
	log_info("stopped");
	return 0;
}
