// SPDX-License-Identifier: GPL-2.0-only
/*
 * T10 protection information generator and checker. Pure code: see
 * cxe_env.h and cxe_pi.h.
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

bool cxe_pi_chk_init(struct cxe_pi_gen *g, u32 block, u32 data_len,
		     u32 tuples, u32 ref0, u8 checks)
{
	if (!cxe_pi_gen_init(g, block, data_len, tuples, ref0,
			     checks & CXE_PI_CHECK_REF))
		return false;
	g->check = true;
	g->checks = checks;
	return true;
}

static u32 cxe_pi_be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

/*
 * Block g->idx's tuple at t against its data: which check fails, in
 * sbc_dif_verify()'s order (the escape, the guard, the reference tag)
 */
static enum cxe_pi_fail cxe_pi_cmp(const struct cxe_pi_gen *g, const u8 *t)
{
	if (((u16)t[2] << 8 | t[3]) == CXE_PI_APP_ESCAPE)
		return CXE_PI_OK;
	if (g->checks & CXE_PI_CHECK_GUARD &&
	    ((u16)t[0] << 8 | t[1]) != g->crc)
		return CXE_PI_BAD_GUARD;
	if (g->set_ref && cxe_pi_be32(t + 4) != g->ref + g->idx)
		return CXE_PI_BAD_REF;
	return CXE_PI_OK;
}

static bool cxe_pi_win_has(const struct cxe_pi_win *w, u32 idx)
{
	return idx >= w->first && idx < w->end;
}

/* Block g->idx is whole: its tuple into the window that holds it */
static bool cxe_pi_put(struct cxe_pi_gen *g, cxe_pi_map_t map, void *ctx)
{
	struct cxe_pi_win *w = &g->win;
	u8 *t;

	if (!cxe_pi_win_has(w, g->idx) &&
	    (!map(ctx, g->idx, w) || !cxe_pi_win_has(w, g->idx)))
		return false;
	t = w->t + (g->idx - w->first) * CXE_PI_TUPLE_LEN;
	if (!g->check) {
		cxe_pi_tuple(t, g->crc, g->ref + g->idx, g->set_ref);
	} else {
		g->fail = cxe_pi_cmp(g, t);
		if (g->fail)
			return false;
	}
	g->idx++;
	return true;
}

u32 cxe_pi_gen_feed(struct cxe_pi_gen *g, u32 pos, const u8 *buf, u32 len,
		    cxe_pi_map_t map, void *ctx)
{
	u32 done = 0, in, n;

	if (g->fail)
		return 0;
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
			/* a failed check is an answer, not a walk to redo */
			g->broken = !g->fail;
			return done;
		}
		done++;
		in = 0;
	}
	return done;
}

CXE_EXPORT(cxe_pi_gen_feed);
CXE_EXPORT(cxe_pi_chk_init);

u32 cxe_din_pdu_end(const struct cxe_din *d, u32 at)
{
	u64 end = (u64)at + d->mrdsl;
	u64 burst_end = ((u64)at / d->mbl + 1) * d->mbl;

	if (end > burst_end)
		end = burst_end;
	return end < d->len ? (u32)end : d->len;
}

bool cxe_din_crc(struct cxe_din *d, u32 off, u32 len, u32 *crc)
{
	if (d->next >= d->n || off != d->at ||
	    (u64)off + len != cxe_din_pdu_end(d, off))
		return false;
	*crc = d->crc[d->next++];
	d->at += len;
	return true;
}

CXE_EXPORT(cxe_din_crc);
