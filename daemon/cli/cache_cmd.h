/* SPDX-License-Identifier: MIT */
/*
 * cache_cmd: `nfscached cache`, the command-line client of the daemon's
 * cache-control socket (admin_proto.h has the protocol; ctl/admin.c
 * serves it).
 */
#ifndef NFSCACHED_DAEMON_CACHE_CMD_H
#define NFSCACHED_DAEMON_CACHE_CMD_H

/*
 * `nfscached cache [--socket PATH | --config FILE] [--timeout SECS]
 * COMMAND ARGS...`; argv[0] is "cache" (argc >= 1, argv borrowed). The
 * socket is PATH, else FILE's admin_socket (FILE defaults to
 * CONF_DEFAULT_PATH when it exists), else ADMIN_DEFAULT_SOCKET. Prints
 * the daemon's lines on stdout, errors on stderr. Returns the exit
 * status: 0, 1 when the command failed or the daemon cannot be reached,
 * 2 for bad usage, 3 when flush timed out. The main thread of a process
 * that is not the daemon (it blocks on the socket).
 */
int cache_cmd_main(int argc, char **argv);

#endif
