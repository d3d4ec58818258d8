/* SPDX-License-Identifier: MIT */
/*
 * nlm_granted: an upstream lock manager's GRANTED callback of a blocked
 * lock (RFC 1813 section 6.2, NLM_GRANTED / NLM_GRANTED_MSG) relayed to
 * the lock manager of the client that waits for it.
 *
 * A client's blocking LOCK (block = TRUE) went upstream with its owner
 * wrapped (nlm_owner.h) and the proxy's caller name; the upstream answered
 * NLM4_BLOCKED and, once the lock is free, calls the proxy back (its
 * caller name's rpcbind: the proxy's NLM registration) with the lock as
 * the proxy sent it. The wrapped owner names the export, the client's
 * address, its caller name and its own owner, so no table is needed:
 *
 *   1. the owner is unwrapped (not one the proxy wrapped, its export gone,
 *      or a callback not from the export's upstream address: "foreign",
 *      answered NLM4_DENIED); the upstream handle is wrapped into the
 *      client handle the client knows (nfs3_guard_wrap_fh);
 *   2. what a granted LOCK does before its client hears GRANTED: the
 *      file's attributes are fetched upstream and a changed file's cached
 *      data dropped (nlm_observe_getattr); the lock is recorded in the
 *      held-locks table (nlm_locks.h), the client watched (SM_MON) if it
 *      is its first;
 *   3. NLM v4 GRANTED (procedure 5) is called at the client's address
 *      (port 0: through its rpcbind), with the client's own owner, its
 *      svid, range and exclusive flag, the proxy's caller name, AUTH_UNIX
 *      as the proxy's host (as Linux's nlmsvc_grant_blocked /
 *      nlmsvc_grant_callback do), within upstream_timeout;
 *   4. the upstream hears the client's answer: NLM4_GRANTED, or
 *      NLM4_DENIED when the client answered anything else ("not waiting":
 *      it gave up or cancelled), did not answer or cannot be reached, so
 *      the upstream releases the lock (Linux's nlmsvc_grant_reply on
 *      "not waiting"); the table's record is removed then. Except when
 *      the client holds the lock by then through its own LOCK (its lock
 *      manager polls a blocked lock, Linux's every 30 s, and a poll
 *      granted before or during the relay makes its answer "not
 *      waiting", or it is silent behind a firewall): the table's record
 *      was there before the relay's, or was granted again meanwhile (its
 *      grants count, nlm_locks_grants). Then the upstream hears
 *      NLM4_GRANTED and the record stays ("polled"). GRANTED is
 *      answered in its reply (the request stays pending meanwhile);
 *      GRANTED_MSG gets its empty reply at once and a GRANTED_RES, with
 *      its cookie, to the export's upstream lock manager (the URL's
 *      nlmport, else its rpcbind) once the relay is over.
 *
 * Counted in nfscached_nlm_granted_total{result}: relayed, refused,
 * unreachable, polled, foreign.
 *
 * State: none of its own beyond each relay in flight (struct granted, on
 * its request's r->op for GRANTED; owned by its own calls for
 * GRANTED_MSG); d->nlm's pool, table and counters are borrowed through
 * nlm_shared_get. Loop thread throughout. Invariant: a relay in flight has
 * exactly one of a GETATTR upstream or a call in the pool outstanding, and
 * its magic number is checked in each callback.
 */
#ifndef NFSCACHED_DAEMON_NLM_GRANTED_H
#define NFSCACHED_DAEMON_NLM_GRANTED_H

#include "proc_table.h"

struct req;

/*
 * The dispatch table's NLM v4 GRANTED (5) and GRANTED_MSG (10) rows: the
 * relay above. Without d->nlm, PROG_UNAVAIL. GRANTED returns OP_PENDING
 * (answered once the client answered) or OP_DONE (foreign: NLM4_DENIED);
 * GRANTED_MSG answers its empty reply at once (OP_DONE). Loop thread.
 */
enum op_status nlm_op_granted(struct req *r);
enum op_status nlm_op_granted_msg(struct req *r);

#endif
