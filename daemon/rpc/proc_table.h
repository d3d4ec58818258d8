/* SPDX-License-Identifier: MIT */
/*
 * proc_table: the shape of one row of a procedure table (ONC RPC, RFC 5531):
 * the XDR routines for arguments and results, the handler, flags, and for
 * NFSv3 the procedure's descriptor (nfs3_proc.h). The rows themselves are
 * daemon/dispatch.c's; this header lets the server and the handlers name
 * the row type without including the table's owner.
 */
#ifndef NFSCACHED_DAEMON_PROC_TABLE_H
#define NFSCACHED_DAEMON_PROC_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rpc/rpc.h>

struct req;
struct nfs3_proc;

/* What a handler did with the request. */
enum op_status {
	OP_DONE = 0,	/* the reply is queued and the request released */
	OP_PENDING,	/* a callback will reply later */
	OP_CLOSE,	/* close the connection; the server frees the request */
};

enum dispatch_flags {
	DISPATCH_MUTATING = 1 << 0,	/* changes upstream state */
	DISPATCH_NONIDEMPOTENT = 1 << 1,	/* duplicate request cache */
};

struct dispatch_entry {
	uint32_t prog;
	uint32_t vers;
	uint32_t proc;
	const char *program;		/* metric label: "nfs3", "mount3" */
	const char *name;		/* metric label: "read", "mnt" */
	xdrproc_t xdr_args;
	xdrproc_t xdr_res;
	size_t args_size;
	size_t res_size;
	enum op_status (*handler)(struct req *r);
	unsigned flags;
	const struct nfs3_proc *nfs3;	/* NFSv3: the rest of what the
					 * procedure does (nfs3_proc.h);
					 * NULL for MOUNT */
	bool reply_by_arg;		/* the reply's data is bounded by the
					 * uint32 argument at reply_arg in the
					 * decoded arguments (READ's count):
					 * what a call handed to loop 0 holds
					 * of the client buffer budget until
					 * its reply is back (server.c) */
	size_t reply_arg;
};

enum dispatch_miss {
	DISPATCH_PROG_UNAVAIL = 1,
	DISPATCH_PROG_MISMATCH,		/* *low..*high is the supported range */
	DISPATCH_PROC_UNAVAIL,
};

/* One program version a table serves: its rows are
 * rows[first .. first + nprocs), procedure number i at first + i. */
struct proc_program {
	uint32_t prog, vers;
	size_t first, nprocs;
};

/*
 * A procedure table: count rows and the programs they belong to. The one
 * table is daemon/dispatch.c's dispatch_table, handed down through
 * struct daemon (d->procs) by the lifecycle; static storage, read only,
 * any thread.
 */
struct proc_table {
	const struct dispatch_entry *rows;
	size_t count;
	const struct proc_program *programs;
	size_t nprograms;
};

/*
 * The row of t for prog/vers/proc. Returns it, or NULL with *miss set
 * (and *low and *high for PROG_MISMATCH) as RFC 5531 section 9 asks.
 * Any thread.
 */
const struct dispatch_entry *proc_table_find(const struct proc_table *t,
					     uint32_t prog, uint32_t vers,
					     uint32_t proc,
					     enum dispatch_miss *miss,
					     uint32_t *low, uint32_t *high);

/* The row of t for prog/vers/proc, or NULL when t has none. */
static inline const struct dispatch_entry *
proc_table_row(const struct proc_table *t, uint32_t prog, uint32_t vers,
	       uint32_t proc)
{
	enum dispatch_miss miss;
	uint32_t lo, hi;

	return proc_table_find(t, prog, vers, proc, &miss, &lo, &hi);
}

/* e's position in t->rows (e must be one of them): the index of per-row
 * counters. */
static inline size_t proc_table_index(const struct proc_table *t,
				      const struct dispatch_entry *e)
{
	return (size_t)(e - t->rows);
}

#endif
