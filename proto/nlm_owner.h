/* SPDX-License-Identifier: MIT */
/*
 * nlm_owner: the lock owners the proxy shows its upstream's lock manager.
 *
 * Every lock the proxy forwards is the proxy's own towards the upstream
 * (one host, nlm_caller_name), so the owner handle (nlm4_lock.oh, RFC
 * 1813 section 6.1.4) a client sent is wrapped into one that also names
 * the client: two clients whose lock managers chose the same oh and svid
 * (each lockd numbers its own processes) never share an owner upstream,
 * and the owner a reply or a GRANTED callback carries maps back to the
 * client's without a table, across proxy restarts too.
 *
 * The wrapped handle: "NCO1", the export id (1 byte), the client
 * address's family (1 byte: 4 or 6) and bytes (4 or 16), the client's
 * caller_name length (2 bytes, big-endian) and bytes, then the client's
 * own oh. svid is passed unchanged (the wrapped oh already tells the
 * clients apart).
 *
 * Pure functions: no state, any thread.
 */
#ifndef NFSCACHED_PROTO_NLM_OWNER_H
#define NFSCACHED_PROTO_NLM_OWNER_H

#include <stddef.h>
#include <stdint.h>

struct sockaddr;

#define NLM_OWNER_MAX 1024	/* MAXNETOBJ_SZ: the longest oh on the wire */

/* A client's owner as a wrapped handle names it (nlm_owner_unwrap). */
struct nlm_owner {
	unsigned export_id;		/* 1..255 */
	int family;			/* AF_INET or AF_INET6 */
	uint8_t addr[16];		/* 4 or 16 bytes, network order */
	const char *caller;		/* borrowed from the handle, not NUL
					 * terminated: caller_len bytes */
	size_t caller_len;
	const uint8_t *oh;		/* borrowed: the client's oh */
	size_t oh_len;
};

/*
 * Wrap client owner handle oh[0..oh_len) of caller caller[0..caller_len)
 * at client address peer (AF_INET or AF_INET6; an IPv4-mapped IPv6
 * address counts as IPv4) for export export_id (1..255) into
 * out[0..NLM_OWNER_MAX). Returns the wrapped length, or 0 when it would
 * exceed NLM_OWNER_MAX, the family is another or an argument is out of
 * range (the caller answers NLM4_FAILED).
 */
size_t nlm_owner_wrap(unsigned export_id, const struct sockaddr *peer,
		      const char *caller, size_t caller_len,
		      const uint8_t *oh, size_t oh_len,
		      uint8_t out[NLM_OWNER_MAX]);

/*
 * Parse wrapped handle w[0..len) into *o (its pointers borrow w).
 * Returns 0, or -1 when w is not one nlm_owner_wrap made (another host's
 * owner, as a TEST reply's holder may be).
 */
int nlm_owner_unwrap(const uint8_t *w, size_t len, struct nlm_owner *o);

#endif
