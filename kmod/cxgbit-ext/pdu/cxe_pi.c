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

static bool cxe_pi_win_has(const struct cxe_pi_win *w, u32 idx)
{
	return idx >= w->first && idx < w->end;
}

/* Block g->idx is whole: its tuple into the window that holds it */
static bool cxe_pi_put(struct cxe_pi_gen *g, cxe_pi_map_t map, void *ctx)
{
	struct cxe_pi_win *w = &g->win;

	if (!cxe_pi_win_has(w, g->idx) &&
	    (!map(ctx, g->idx, w) || !cxe_pi_win_has(w, g->idx)))
		return false;
	cxe_pi_tuple(w->t + (g->idx - w->first) * CXE_PI_TUPLE_LEN, g->crc,
		     g->ref + g->idx, g->set_ref);
	g->idx++;
	return true;
}

u32 cxe_pi_gen_feed(struct cxe_pi_gen *g, u32 pos, const u8 *buf, u32 len,
		    cxe_pi_map_t map, void *ctx)
{
	u32 done = 0, in, n;

	if (g->broken || pos != g->next) {
		g->broken = true;
		return 0;
	}
	if (len > g->len - pos)
		len = g->len - pos;
	in = g->next & (g->block - 1);
	while (len) {
		n = g->block - in < len ? g->block - in : len;
		g->crc = cxe_crc_t10dif(in ? g->crc : 0, buf, n);
		g->next += n;
		buf += n;
		len -= n;
		in += n;
		if (in < g->block)
			break;
		if (!cxe_pi_put(g, map, ctx)) {
			g->broken = true;
			return done;
		}
		done++;
		in = 0;
	}
	return done;
}

CXE_EXPORT(cxe_pi_gen_feed);
