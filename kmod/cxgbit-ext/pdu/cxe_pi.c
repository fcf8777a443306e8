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

static void cxe_pi_put(const struct cxe_pi_gen *g, u32 idx, cxe_pi_put_t put,
		       void *ctx)
{
	u32 ref = g->ref + idx;
	u8 t[CXE_PI_TUPLE_LEN] = {
		g->crc >> 8, g->crc & 0xff,
		0, 0,
		ref >> 24, ref >> 16 & 0xff, ref >> 8 & 0xff, ref & 0xff,
	};

	put(ctx, idx, t, g->set_ref ? CXE_PI_TUPLE_LEN : 4);
}

u32 cxe_pi_gen_feed(struct cxe_pi_gen *g, u32 pos, const u8 *buf, u32 len,
		    cxe_pi_put_t put, void *ctx)
{
	u32 done = 0, in, n;

	if (g->broken || pos != g->next) {
		g->broken = true;
		return 0;
	}
	if (len > g->len - pos)
		len = g->len - pos;
	while (len) {
		in = g->next & (g->block - 1);
		n = g->block - in < len ? g->block - in : len;
		g->crc = cxe_crc_t10dif(in ? g->crc : 0, buf, n);
		g->next += n;
		buf += n;
		len -= n;
		if (in + n == g->block) {
			cxe_pi_put(g, g->next / g->block - 1, put, ctx);
			done++;
		}
	}
	return done;
}

CXE_EXPORT(cxe_pi_gen_feed);
