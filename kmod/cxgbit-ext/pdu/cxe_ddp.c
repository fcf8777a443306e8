// SPDX-License-Identifier: GPL-2.0-only
/*
 * DDP tag maths. Pure code: see cxe_env.h and cxe_ddp.h.
 */
#include "cxe_ddp.h"

u32 cxe_ddp_tag(u32 idx, u32 gen)
{
	return (gen & CXE_DDP_GEN_MASK) << CXE_DDP_IDX_BITS |
	       (idx & (CXE_DDP_MAX_TAGS - 1));
}

u32 cxe_ddp_next_gen(u32 gen, u32 idx)
{
	gen = (gen + 1) & CXE_DDP_GEN_MASK;
	if (cxe_ddp_tag(idx, gen) == 0xffffffffu)
		gen = 0;
	return gen;
}

bool cxe_ddp_in_window(u32 r2t_off, u32 r2t_len, u32 off, u32 len)
{
	u64 end = (u64)off + len;

	return len && off >= r2t_off && end <= (u64)r2t_off + r2t_len;
}

CXE_EXPORT(cxe_ddp_in_window);
