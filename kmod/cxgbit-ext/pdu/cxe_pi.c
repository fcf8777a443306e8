// SPDX-License-Identifier: GPL-2.0-only
/*
 * T10 protection information generator. Pure code: see cxe_env.h and
 * cxe_pi.h.
 */
#include "cxe_pi.h"

bool cxe_pi_gen_init(struct cxe_pi_gen *g, u32 block, u32 data_len,
		     u32 tuples, u64 lba, bool set_ref)
{
	u64 len;

	*g = (struct cxe_pi_gen) { .broken = true };
	if (block < 512 || block & (block - 1))
		return false;
	len = (u64)tuples * block;
	if (len > data_len)
		len = data_len;
	g->block = block;
	g->len = len & ~(u64)(block - 1);
	g->ref = (u32)lba;
	g->set_ref = set_ref;
	g->broken = false;
	return true;
}

/*
 * The data's pieces through the generator. Its state is kept in locals
 * across the CRC's calls (the compiler could not keep *g in registers
 * across a call) and stored back once.
 */
u32 cxe_pi_gen_feed(struct cxe_pi_gen *g, u32 pos, const u8 *buf, u32 len,
		    cxe_pi_map_t map, void *ctx)
{
	const u32 block = g->block;
	struct cxe_pi_win w = g->win;
	u32 done = 0, in, n, idx = g->idx;
	u16 crc = g->crc;

	if (g->broken || pos != g->next) {
		g->broken = true;
		return 0;
	}
	if (len > g->len - pos)
		len = g->len - pos;
	g->next += len;
	in = pos & (block - 1);
	while (len) {
		n = block - in < len ? block - in : len;
		crc = cxe_crc_t10dif(in ? crc : 0, buf, n);
		buf += n;
		len -= n;
		in += n;
		if (in < block)
			break;
		/* block idx is whole: its tuple, in the window that holds it */
		if ((idx < w.first || idx >= w.end) &&
		    (!map(ctx, idx, &w) || idx < w.first || idx >= w.end)) {
			g->broken = true;
			break;
		}
		cxe_pi_tuple(w.t + (idx - w.first) * CXE_PI_TUPLE_LEN, crc,
			     g->ref + idx, g->set_ref);
		idx++;
		done++;
		in = 0;
	}
	g->crc = crc;
	g->idx = idx;
	g->win = w;
	return done;
}

CXE_EXPORT(cxe_pi_gen_feed);
