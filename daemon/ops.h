/* SPDX-License-Identifier: MIT */
/*
 * ops: the op handlers the dispatch table points at. Each takes a request
 * whose arguments are decoded and returns enum op_status (dispatch.h).
 */
#ifndef NFSCACHED_DAEMON_OPS_H
#define NFSCACHED_DAEMON_OPS_H

#include "dispatch.h"

struct req;
struct daemon;

/* NFSv3 (nfs3_ops.c). */
enum op_status nfs3_op_null(struct req *r);
enum op_status nfs3_op_forward(struct req *r);
enum op_status nfs3_op_read(struct req *r);
enum op_status nfs3_op_write(struct req *r);
enum op_status nfs3_op_commit(struct req *r);

/* MOUNT v3 (mount_ops.c), RFC 1813 section 5. */
enum op_status mount_op_null(struct req *r);
enum op_status mount_op_mnt(struct req *r);
enum op_status mount_op_dump(struct req *r);
enum op_status mount_op_umnt(struct req *r);
enum op_status mount_op_umntall(struct req *r);
enum op_status mount_op_export(struct req *r);

/* Forget every recorded mount (shutdown). */
void mount_list_clear(void);

#endif
