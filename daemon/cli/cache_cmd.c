/* SPDX-License-Identifier: MIT */
/*
 * cache_cmd: `nfscached cache`, the client of the admin socket
 * (admin_proto.h): it builds one request line from its arguments, sends
 * it, prints the daemon's lines and exits with the status the last one
 * gives. It links conf/ (to find admin_socket in a config file) and
 * nothing of the daemon's handlers.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "admin_proto.h"
#include "cache_cmd.h"
#include "conf.h"

/* Print the client's usage to f. */
static void cache_usage(FILE *f)
{
	fprintf(f, "usage: nfscached cache [--socket PATH | --config FILE] [--timeout SECS] COMMAND\n"
		   "commands: status | warm PATH... | forget PATH | flush [PATH] | drop\n"
		   "  (the socket is --socket, else FILE's (or %s's)\n"
		   "  admin_socket, else %s; --timeout is flush's and forget's\n"
		   "  wait for write-back, default %d s)\n",
		   CONF_DEFAULT_PATH, ADMIN_DEFAULT_SOCKET, ADMIN_FLUSH_TIMEOUT);
}

/* Append word w to buf (of cap bytes, used *len) %XX-escaped, after a
 * space unless first; -1 when it does not fit. */
static int add_word(char *buf, size_t cap, size_t *len, const char *w, bool first)
{
	if (!first) {
		if (*len + 1 >= cap)
			return -1;
		buf[(*len)++] = ' ';
	}
	for (const unsigned char *p = (const unsigned char *)w; *p; p++) {
		if (*len + 4 >= cap)
			return -1;
		if (*p <= ' ' || *p > '~' || *p == '%')
			*len += (size_t)snprintf(buf + *len, cap - *len, "%%%02X", *p);
		else
			buf[(*len)++] = (char)*p;
	}
	buf[*len] = 0;
	return 0;
}

/* Build the request line from the command words; -1 if bad usage. */
static int cache_request(int argc, char **argv, double timeout, char *buf,
			 size_t cap)
{
	const char *cmd = argv[0];
	size_t len = 0;
	char t[32];
	bool ok = (!strcmp(cmd, "status") && argc == 1) ||
		  (!strcmp(cmd, "drop") && argc == 1) ||
		  (!strcmp(cmd, "flush") && argc <= 2) ||
		  (!strcmp(cmd, "forget") && argc == 2) ||
		  (!strcmp(cmd, "warm") && argc >= 2);

	if (!ok || add_word(buf, cap, &len, cmd, true) != 0)
		return -1;
	if (!strcmp(cmd, "flush") || !strcmp(cmd, "forget")) {
		snprintf(t, sizeof(t), "%g", timeout);
		if (add_word(buf, cap, &len, t, false) != 0)
			return -1;
	}
	for (int i = 1; i < argc; i++)
		if (add_word(buf, cap, &len, argv[i], false) != 0)
			return -1;
	if (len + 2 > cap)
		return -1;
	buf[len++] = '\n';
	buf[len] = 0;
	return 0;
}

/* Connect to the admin socket path; the fd or -1 (said on stderr). */
static int cache_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "nfscached cache: %s: path too long\n", path);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		fprintf(stderr, "nfscached cache: cannot connect to %s: %s\n", path,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Print the daemon's lines; the exit status its last line gives. */
static int cache_replies(FILE *in)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int status = -1;

	while ((n = getline(&line, &cap, in)) > 0) {
		if (line[n - 1] == '\n')
			line[n - 1] = 0;
		if (strcmp(line, "ok") == 0) {
			status = 0;
			break;
		}
		if (strncmp(line, "error ", 6) == 0) {
			status = atoi(line + 6);
			fprintf(stderr, "nfscached cache: %s\n",
				strchr(line + 6, ' ') ? strchr(line + 6, ' ') + 1 : line);
			if (status <= 0)
				status = 1;
			break;
		}
		printf("%s\n", line);
		fflush(stdout);
	}
	free(line);
	if (status < 0) {
		fprintf(stderr, "nfscached cache: the daemon closed the connection\n");
		status = 1;
	}
	return status;
}

/*
 * The admin socket named by config file cfile's admin_socket (NULL:
 * CONF_DEFAULT_PATH if it exists, else ADMIN_DEFAULT_SOCKET) into
 * buf[0..len). 0, or 1 with the reason on stderr.
 */
static int cache_socket_of(const char *cfile, char *buf, size_t len)
{
	struct conf *c = NULL;
	char err[CONF_ERR_MAX];
	struct stat st;

	if (!cfile && stat(CONF_DEFAULT_PATH, &st) == 0)
		cfile = CONF_DEFAULT_PATH;
	if (!cfile) {
		snprintf(buf, len, "%s", ADMIN_DEFAULT_SOCKET);
		return 0;
	}
	if (conf_load_file(cfile, &c, err, sizeof(err)) != 0) {
		fprintf(stderr, "nfscached cache: %s\n", err);
		return 1;
	}
	if (!c->admin_socket[0]) {
		fprintf(stderr, "nfscached cache: %s: admin_socket is \"\": "
			"cache control is off\n", cfile);
		conf_free(&c);
		return 1;
	}
	snprintf(buf, len, "%s", c->admin_socket);
	conf_free(&c);
	return 0;
}

int cache_cmd_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *cfile = NULL;
	double timeout = ADMIN_FLUSH_TIMEOUT;
	char req[ADMIN_MAX_LINE], *end, sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	FILE *in;
	int ch, fd;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+s:c:t:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': path = optarg; break;
		case 'c': cfile = optarg; break;
		case 't':
			timeout = strtod(optarg, &end);
			if (end == optarg || *end || !(timeout >= 0) || timeout > 86400) {
				cache_usage(stderr);
				return 2;
			}
			break;
		case 'h': cache_usage(stdout); return 0;
		default: cache_usage(stderr); return 2;
		}
	}
	if (optind >= argc ||
	    cache_request(argc - optind, argv + optind, timeout, req, sizeof(req)) != 0) {
		cache_usage(stderr);
		return 2;
	}
	if (!path && cache_socket_of(cfile, sock, sizeof(sock)) != 0)
		return 1;
	if ((fd = cache_connect(path ? path : sock)) < 0)
		return 1;
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req) || !(in = fdopen(fd, "r"))) {
		fprintf(stderr, "nfscached cache: sending the request: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	fd = cache_replies(in);
	fclose(in);
	return fd;
}
