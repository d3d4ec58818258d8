/* SPDX-License-Identifier: MIT */
/*
 * mount_ops: the MOUNT v3 handlers (RFC 1813 section 5) the dispatch
 * table points at. Each takes a request whose arguments are decoded and
 * returns enum op_status (dispatch.h). The NFSv3 handlers are declared in
 * their own modules' headers (nfs3_fwd.h, nfs3_meta.h, nfs3_read.h,
 * nfs3_write.h).
 */
#ifndef NFSCACHED_DAEMON_MOUNT_OPS_H
#define NFSCACHED_DAEMON_MOUNT_OPS_H

#include "proc_table.h"

struct daemon;
struct req;

enum op_status mount_op_null(struct req *r);
enum op_status mount_op_mnt(struct req *r);
enum op_status mount_op_dump(struct req *r);
enum op_status mount_op_umnt(struct req *r);
enum op_status mount_op_umntall(struct req *r);
enum op_status mount_op_export(struct req *r);

/* Forget every mount recorded in d->mounts and free the list (shutdown;
 * event loop, or after it stopped). */
void mount_list_clear(struct daemon *d);

#endif
