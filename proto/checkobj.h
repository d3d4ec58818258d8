/* SPDX-License-Identifier: MIT */
/*
 * checkobj: CHECK_OBJ(p, MAGIC), the check of an object that crosses a
 * callback (a reply, a timer, a completion from another thread): p is not
 * NULL and p->magic is MAGIC, or the process aborts naming the file, the
 * line, the pointer and what it found. Kept in release builds: one
 * compare, where a freed object reached from a late callback would
 * otherwise be used silently (the classic bug of a callback design).
 * Header only; any thread. Each object sets its magic when made and
 * clears it when freed.
 */
#ifndef NFSCACHED_PROTO_CHECKOBJ_H
#define NFSCACHED_PROTO_CHECKOBJ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Abort: what (an expression's text) at file:line is not a live object
 * of magic want (it holds got, or is NULL when null). */
static inline void __attribute__((noreturn, cold))
checkobj_fail(const char *what, const char *file, int line, uint32_t want,
	      uint32_t got, int null)
{
	if (null)
		fprintf(stderr, "%s:%d: CHECK_OBJ(%s): NULL, want an object "
			"of magic %08x\n", file, line, what, (unsigned)want);
	else
		fprintf(stderr, "%s:%d: CHECK_OBJ(%s): magic %08x, want %08x "
			"(freed or not this kind)\n", file, line, what,
			(unsigned)got, (unsigned)want);
	abort();
}

#define CHECK_OBJ(p, want)						\
	do {								\
		if (__builtin_expect((p) == NULL ||			\
				     (p)->magic != (want), 0))		\
			checkobj_fail(#p, __FILE__, __LINE__, (want),	\
				      (p) ? (p)->magic : 0, (p) == NULL); \
	} while (0)

#endif
