/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Direct data placement tag maths. A DDP tag is the Target Transfer Tag of
 * an R2T: an index into the connection's tag table plus a generation that
 * changes every time the slot is reused, so a stale or forged TTT is caught
 * before any byte is placed. Pure code: see cxe_env.h.
 */
#ifndef CXE_DDP_H
#define CXE_DDP_H

#include "cxe_env.h"

#define CXE_DDP_IDX_BITS	12	/* up to 4096 live tags per connection */
#define CXE_DDP_MAX_TAGS	BIT(CXE_DDP_IDX_BITS)
#define CXE_DDP_GEN_MASK	((1u << (32 - CXE_DDP_IDX_BITS)) - 1)

/* Tag for slot idx at generation gen; never the reserved 0xffffffff. */
u32 cxe_ddp_tag(u32 idx, u32 gen);
static inline u32 cxe_ddp_tag_idx(u32 tag)
{
	return tag & (CXE_DDP_MAX_TAGS - 1);
}

static inline u32 cxe_ddp_tag_gen(u32 tag)
{
	return tag >> CXE_DDP_IDX_BITS;
}

/* Next generation of a slot, skipping the one that would make 0xffffffff. */
u32 cxe_ddp_next_gen(u32 gen, u32 idx);

/*
 * Is a Data-Out of len bytes at Buffer Offset off inside the R2T window
 * [r2t_off, r2t_off + r2t_len)? Placement happens only when it is.
 */
bool cxe_ddp_in_window(u32 r2t_off, u32 r2t_len, u32 off, u32 len);

#endif /* CXE_DDP_H */
