/* SPDX-License-Identifier: MIT */
/*
 * ratest_nodelay: an LD_PRELOAD shim that turns on TCP_NODELAY for every
 * socket a process accepts or connects, for running delayrelay
 * (tests/tools/delayrelay.c) in the readahead tests (ratest_proxy.sh
 * --relay-preload).
 *
 * Why: delayrelay leaves Nagle's algorithm on. An RPC reply that it
 * forwards in more than one write ends with a short segment that Nagle
 * holds until the previous one is acknowledged, and the receiver delays
 * that ACK by up to 40 ms: seen here, a 4 KiB READ through the relay at
 * 0 ms took 43 ms (500 READs in 21.4 s), and 0.5 ms with this shim (500
 * in 0.26 s). Every delay the tests ask for would carry that extra 40 ms
 * now and then, so counts stay right but times and rates do not. Remove
 * the shim once delayrelay sets TCP_NODELAY on both of its sockets.
 *
 * Interposes accept(), accept4() and connect(); each calls the real one
 * (dlsym RTLD_NEXT) and sets the option, ignoring failures (not a TCP
 * socket: nothing to do).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

/* Turn Nagle's algorithm off on fd (a no-op for non-TCP sockets). */
static void nodelay(int fd)
{
	int one = 1;

	if (fd >= 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The next definition of symbol name (the real one). */
static void *real(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

int accept4(int s, struct sockaddr *addr, socklen_t *len, int flags)
{
	int (*fn)(int, struct sockaddr *, socklen_t *, int) = real("accept4");
	int fd = fn ? fn(s, addr, len, flags) : -1;

	nodelay(fd);
	return fd;
}

int accept(int s, struct sockaddr *addr, socklen_t *len)
{
	int (*fn)(int, struct sockaddr *, socklen_t *) = real("accept");
	int fd = fn ? fn(s, addr, len) : -1;

	nodelay(fd);
	return fd;
}

int connect(int s, const struct sockaddr *addr, socklen_t len)
{
	int (*fn)(int, const struct sockaddr *, socklen_t) = real("connect");

	nodelay(s);
	return fn ? fn(s, addr, len) : -1;
}
