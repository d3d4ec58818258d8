/* SPDX-License-Identifier: MIT */
/*
 * nlm_owner: wrapped lock owner handles (nlm_owner.h). No state.
 */
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "nlm_owner.h"

static const uint8_t magic[4] = { 'N', 'C', 'O', '1' };

size_t nlm_owner_wrap(unsigned export_id, const struct sockaddr *peer,
		      const char *caller, size_t caller_len,
		      const uint8_t *oh, size_t oh_len,
		      uint8_t out[NLM_OWNER_MAX])
{
	const uint8_t *a;
	size_t alen, n;
	uint8_t fam;

	if (export_id < 1 || export_id > 255 || !peer ||
	    caller_len > 0xffff || (caller_len && !caller) ||
	    (oh_len && !oh))
		return 0;
	if (peer->sa_family == AF_INET) {
		a = (const uint8_t *)&((const struct sockaddr_in *)peer)
			    ->sin_addr;
		alen = 4;
		fam = 4;
	} else if (peer->sa_family == AF_INET6) {
		const struct in6_addr *s6 =
			&((const struct sockaddr_in6 *)peer)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(s6)) {
			a = s6->s6_addr + 12;
			alen = 4;
			fam = 4;
		} else {
			a = s6->s6_addr;
			alen = 16;
			fam = 6;
		}
	} else {
		return 0;
	}
	n = sizeof(magic) + 2 + alen + 2 + caller_len + oh_len;
	if (n > NLM_OWNER_MAX)
		return 0;
	memcpy(out, magic, sizeof(magic));
	out[4] = (uint8_t)export_id;
	out[5] = fam;
	memcpy(out + 6, a, alen);
	out[6 + alen] = (uint8_t)(caller_len >> 8);
	out[7 + alen] = (uint8_t)caller_len;
	if (caller_len)
		memcpy(out + 8 + alen, caller, caller_len);
	if (oh_len)
		memcpy(out + 8 + alen + caller_len, oh, oh_len);
	return n;
}

int nlm_owner_unwrap(const uint8_t *w, size_t len, struct nlm_owner *o)
{
	size_t alen, clen;

	if (!w || len < sizeof(magic) + 2 ||
	    memcmp(w, magic, sizeof(magic)) != 0 || w[4] == 0)
		return -1;
	if (w[5] == 4)
		alen = 4;
	else if (w[5] == 6)
		alen = 16;
	else
		return -1;
	if (len < 8 + alen)
		return -1;
	clen = (size_t)w[6 + alen] << 8 | w[7 + alen];
	if (len < 8 + alen + clen)
		return -1;
	memset(o, 0, sizeof(*o));
	o->export_id = w[4];
	o->family = alen == 4 ? AF_INET : AF_INET6;
	memcpy(o->addr, w + 6, alen);
	o->caller = (const char *)w + 8 + alen;
	o->caller_len = clen;
	o->oh = w + 8 + alen + clen;
	o->oh_len = len - (8 + alen + clen);
	return 0;
}
