/* SPDX-License-Identifier: MIT */
/*
 * proc_table: finding a procedure's row in a table (proc_table.h). No
 * state.
 */
#include "proc_table.h"

const struct dispatch_entry *proc_table_find(const struct proc_table *t,
					     uint32_t prog, uint32_t vers,
					     uint32_t proc,
					     enum dispatch_miss *miss,
					     uint32_t *low, uint32_t *high)
{
	for (size_t i = 0; i < t->nprograms; i++) {
		const struct proc_program *p = &t->programs[i];

		if (p->prog != prog)
			continue;
		if (p->vers != vers) {
			*miss = DISPATCH_PROG_MISMATCH;
			*low = *high = p->vers;
			return NULL;
		}
		if (proc >= p->nprocs) {
			*miss = DISPATCH_PROC_UNAVAIL;
			return NULL;
		}
		return &t->rows[p->first + proc];
	}
	*miss = DISPATCH_PROG_UNAVAIL;
	return NULL;
}
