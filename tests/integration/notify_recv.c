/* SPDX-License-Identifier: MIT */
/*
 * notify_recv: the receiving end of sd_notify(3) for tests, standing in for
 * systemd. It binds an AF_UNIX datagram socket at PATH (removing a stale
 * file first) and appends every datagram it receives to OUT as one line,
 * the datagram's own newlines shown as '|' ("READY=1|STATUS=..."), flushed
 * at once. OUT is opened O_APPEND, so a test may truncate it between
 * phases. Runs until SIGTERM/SIGINT or SECONDS (default 600) pass.
 *
 * Usage: notify_recv PATH OUT [SECONDS]
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

/* Signal handler: end the loop. */
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Bind the datagram socket at path; the fd, or -1 after printing why. */
static int bind_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "notify_recv: %s: path too long\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "notify_recv: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return fd;
}

/* Append one datagram to out as a line. */
static void write_line(int out, char *msg, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (msg[i] == '\n')
			msg[i] = '|';
	msg[n] = '\n';
	if (write(out, msg, n + 1) != (ssize_t)(n + 1))
		fprintf(stderr, "notify_recv: write: %s\n", strerror(errno));
}

int main(int argc, char **argv)
{
	char buf[4097];
	int fd, out;
	time_t end;
	struct sigaction sa = { .sa_handler = on_signal };

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: notify_recv PATH OUT [SECONDS]\n");
		return 2;
	}
	end = time(NULL) + (argc == 4 ? atoi(argv[3]) : 600);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	out = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (out < 0) {
		fprintf(stderr, "notify_recv: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	if ((fd = bind_socket(argv[1])) < 0)
		return 1;
	while (!stop && time(NULL) < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 200) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n > 0)
			write_line(out, buf, (size_t)n);
	}
	unlink(argv[1]);
	return 0;
}
