/* SPDX-License-Identifier: GPL-2.0-only */
/* Test helpers: build iSCSI PDUs on the wire, and a recording RX consumer. */
#ifndef PDUGEN_H
#define PDUGEN_H

#include <stdio.h>
#include <stdlib.h>
#include "cxe_bhs.h"
#include "cxe_rx.h"

struct gen_pdu {
	u8 hdr[CXE_BHS_LEN + CXE_MAX_AHS_LEN];
	u32 hdr_len;
	u8 *data;
	u32 dlen;
};

static inline u32 rnd(u32 n)
{
	return n ? (u32)random() % n : 0;
}

static const u8 initiator_ops[] = {
	CXE_OP_NOOP_OUT, CXE_OP_SCSI_CMD, CXE_OP_TMF_REQ, CXE_OP_LOGIN_REQ,
	CXE_OP_TEXT_REQ, CXE_OP_DATA_OUT, CXE_OP_LOGOUT_REQ, CXE_OP_SNACK,
};

static inline void gen_random(struct gen_pdu *g, u32 max_dlen)
{
	u32 ahs_words = rnd(4) == 0 ? rnd(4) : 0;

	memset(g->hdr, 0, sizeof(g->hdr));
	for (u32 i = 8; i < CXE_BHS_LEN; i++)
		g->hdr[i] = (u8)rnd(256);
	g->hdr[0] = initiator_ops[rnd(sizeof(initiator_ops))];
	g->hdr[4] = (u8)ahs_words;
	for (u32 i = 0; i < ahs_words * 4; i++)
		g->hdr[CXE_BHS_LEN + i] = (u8)rnd(256);
	g->hdr_len = CXE_BHS_LEN + ahs_words * 4;
	g->dlen = rnd(3) == 0 ? 0 : 1 + rnd(max_dlen);
	cxe_bhs_set_dlen(g->hdr, g->dlen);
	g->data = malloc(g->dlen + 1);
	for (u32 i = 0; i < g->dlen; i++)
		g->data[i] = (u8)rnd(256);
}

/* Append the wire form of g to out (which has room); returns bytes written. */
static inline u32 gen_wire(const struct gen_pdu *g, bool hd, bool dd, u8 *out)
{
	u32 n = 0;

	memcpy(out, g->hdr, g->hdr_len);
	n += g->hdr_len;
	if (hd) {
		cxe_put_le32(out + n, cxe_digest(g->hdr, g->hdr_len));
		n += 4;
	}
	if (g->dlen) {
		memcpy(out + n, g->data, g->dlen);
		n += g->dlen;
		memset(out + n, 0, cxe_pad_len(g->dlen));
		n += cxe_pad_len(g->dlen);
		if (dd) {
			cxe_put_le32(out + n, cxe_data_digest_finish(
				cxe_crc32c(~0u, g->data, g->dlen), g->dlen));
			n += 4;
		}
	}
	return n;
}

/* A consumer that records what the parser hands up. */
struct rec_pdu {
	u8 hdr[CXE_BHS_LEN + CXE_MAX_AHS_LEN];
	u32 hdr_len;
	u8 *data;
	u32 got;
	int hstatus;
	int dstatus;
	bool done;
};

struct rec {
	struct rec_pdu *pdus;
	u32 n;
	u32 cap;
	bool order_error;
};

static int rec_header(void *ctx, const u8 *hdr, u32 hdr_len, int status)
{
	struct rec *r = ctx;
	struct rec_pdu *p;

	if (r->n && !r->pdus[r->n - 1].done)
		r->order_error = true;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 16;
		r->pdus = realloc(r->pdus, r->cap * sizeof(*r->pdus));
	}
	p = &r->pdus[r->n++];
	memset(p, 0, sizeof(*p));
	memcpy(p->hdr, hdr, hdr_len);
	p->hdr_len = hdr_len;
	p->hstatus = status;
	p->data = malloc(cxe_bhs_dlen(hdr) + 1);
	return 0;
}

static int rec_data(void *ctx, u32 off, const u8 *buf, u32 len)
{
	struct rec *r = ctx;
	struct rec_pdu *p = &r->pdus[r->n - 1];

	if (off != p->got || off + len > cxe_bhs_dlen(p->hdr))
		r->order_error = true;
	else
		memcpy(p->data + off, buf, len);
	p->got += len;
	return 0;
}

static int rec_done(void *ctx, int status)
{
	struct rec *r = ctx;
	struct rec_pdu *p = &r->pdus[r->n - 1];

	if (p->done || p->got != cxe_bhs_dlen(p->hdr))
		r->order_error = true;
	p->done = true;
	p->dstatus = status;
	return 0;
}

static const struct cxe_rx_ops rec_ops = {
	.header = rec_header,
	.data = rec_data,
	.done = rec_done,
};

/* The recorder, pausing after every header and every PDU, as the kernel's
 * consumer does (cxe_rx_feed then returns early and is fed again). */
static inline int pause_header(void *ctx, const u8 *hdr, u32 hdr_len, int status)
{
	int ret = rec_header(ctx, hdr, hdr_len, status);

	return ret ? ret : 1;
}

static inline int pause_done(void *ctx, int status)
{
	int ret = rec_done(ctx, status);

	return ret ? ret : 1;
}

static const struct cxe_rx_ops pause_ops = {
	.header = pause_header,
	.data = rec_data,
	.done = pause_done,
};

static inline void rec_free(struct rec *r)
{
	for (u32 i = 0; i < r->n; i++)
		free(r->pdus[i].data);
	free(r->pdus);
	memset(r, 0, sizeof(*r));
}

#endif /* PDUGEN_H */
