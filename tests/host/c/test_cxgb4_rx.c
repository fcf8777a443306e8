// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cxgb4 backend's receive assembler (adapters/cxgb4/rx.c) under the
 * chip model's receive side (tests/chipmodel/ulp_rx.c), against the
 * software adapter's stream parser (pdu/cxe_rx.c) on the same bytes.
 *
 * A random stream of PDUs (R2T windows of four tasks cut into Data-Outs,
 * some with a TTT whose page pod is valid, some not; commands, pings and
 * other PDUs between them; digests on or off, some data digests broken)
 * goes to the parser in one piece and to the model in random chunks (or
 * chunks that end where a PDU does at the latest, as the kernel feeds it). The
 * target must end up with the same thing either way: the same PDUs handed
 * up (less, on a T6, the placed Data-Outs a later completion stands for),
 * the same data, the same digest verdicts, and the same bytes in every
 * task's buffer, placed by the chip or copied by the target.
 */
#include <assert.h>
#include "check.h"
#include "pdugen.h"
#include "cxe_ddp.h"
#include "rx.h"
#include "ulp_rx.h"

#define NTASK		4
#define BUFLEN		(48 * 1024)
#define MAX_DLEN	8192
#define MAX_WIN		64
#define TTT_BASE	0x1000
#define STREAM_MAX	(4 << 20)

struct window {
	u32 itt, ttt, off, len;
	bool pod;		/* a page pod the chip knows */
};

struct event {
	u8 hdr[CXE_BHS_LEN + CXE_MAX_AHS_LEN];
	u32 hdr_len;
	bool placed, data, hcrc, dcrc, pad;
	u8 *bytes;
	u32 dlen;
};

/* what the streams covered, over the whole run */
static struct {
	u32 pdus, placed, stood_for, copied_data_outs, dcrc, hcrc;
} seen;

struct world {
	enum cxe_chip chip;
	struct window win[MAX_WIN];
	u32 nwin;
	u8 buf[NTASK][BUFLEN];		/* the target's, model path */
	u8 ref[NTASK][BUFLEN];		/* the target's, parser path */
	struct cxe_c4rx rx;
	u8 pending[CXE_MODEL_DATA_MSG_LEN(MAX_DLEN)];
	u32 pending_len;
	struct event *ev;
	u32 nev, cap;
	int rx_err;
	u32 msgs;
	u32 placed_pieces;
};

static const struct window *find_win(const struct world *w, u32 ttt)
{
	for (u32 i = 0; i < w->nwin; i++)
		if (w->win[i].ttt == ttt)
			return &w->win[i];
	return NULL;
}

/* the chip's page pod table: a valid pod of this ITT covering the bytes */
static bool ppod(void *ctx, u32 ttt, u32 itt, u32 off, u32 len)
{
	struct world *w = ctx;
	const struct window *win = find_win(w, ttt);

	return win && win->pod && win->itt == itt &&
	       cxe_ddp_in_window(win->off, win->len, off, len);
}

/* the chip writing placed data into the pod's buffer, piece by piece */
static int place(void *ctx, u32 ttt, u32 itt, u32 off, const u8 *buf,
		 u32 len)
{
	struct world *w = ctx;
	const struct window *win = find_win(w, ttt);

	CHECK(win && win->itt == itt && off >= win->off &&
	      off + len <= win->off + win->len);
	w->placed_pieces++;
	memcpy(w->buf[itt] + off, buf, len);
	return 0;
}

static bool placeable(const struct world *w, const u8 *hdr, int hstatus)
{
	const struct window *win;

	if (cxe_bhs_opcode(hdr) != CXE_OP_DATA_OUT || !cxe_bhs_dlen(hdr) ||
	    hstatus)
		return false;
	win = find_win(w, cxe_get_be32(hdr + 20));
	return win && win->pod && win->itt == cxe_get_be32(hdr + 16) &&
	       cxe_ddp_in_window(win->off, win->len, cxe_get_be32(hdr + 40),
				 cxe_bhs_dlen(hdr));
}

/* what the PDU layer does with a Data-Out's data the chip handed up */
static void target_copy(u8 (*bufs)[BUFLEN], const u8 *hdr, const u8 *data)
{
	u32 itt = cxe_get_be32(hdr + 16), off = cxe_get_be32(hdr + 40);
	u32 dlen = cxe_bhs_dlen(hdr);

	if (cxe_bhs_opcode(hdr) == CXE_OP_DATA_OUT && itt < NTASK &&
	    off <= BUFLEN && dlen <= BUFLEN - off)
		memcpy(bufs[itt] + off, data, dlen);
}

/* the backend's receive handler: each message to the assembler */
static int deliver(void *ctx, const u8 *msg, u32 len)
{
	struct world *w = ctx;
	struct cxe_c4rx_pdu pdu;
	struct event *e;
	int ret;

	w->msgs++;
	ret = cxe_c4rx_msg(&w->rx, msg, len, &pdu);
	if (ret < 0) {
		w->rx_err = ret;
		return ret;
	}
	if (msg[0] == CXE_CPL_ISCSI_DATA) {
		w->pending_len = len - CXE_CPL_ISCSI_DATA_LEN;
		memcpy(w->pending, msg + CXE_CPL_ISCSI_DATA_LEN, w->pending_len);
	}
	if (ret != CXE_C4RX_PDU)
		return 0;
	if (w->nev == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		w->ev = realloc(w->ev, w->cap * sizeof(*w->ev));
	}
	e = &w->ev[w->nev++];
	memset(e, 0, sizeof(*e));
	memcpy(e->hdr, pdu.hdr, pdu.hdr_len);
	e->hdr_len = pdu.hdr_len;
	e->placed = pdu.placed;
	e->data = pdu.data;
	e->hcrc = pdu.hcrc_err;
	e->dcrc = pdu.dcrc_err;
	e->pad = pdu.pad_err;
	e->dlen = pdu.dlen;
	if (pdu.data) {
		CHECK(w->pending_len == pdu.dlen);
		e->bytes = malloc(pdu.dlen);
		memcpy(e->bytes, w->pending, pdu.dlen);
		target_copy(w->buf, pdu.hdr, e->bytes);
	}
	return 0;
}

static const struct cxe_model_rx_ops model_ops = {
	.deliver = deliver,
	.ppod = ppod,
	.place = place,
};

struct stream {
	u8 *wire;
	u32 len;
	u32 npdu;
	u32 hdig_broken;	/* PDU whose header digest is broken, or ~0 */
};

static void put_pdu(struct stream *s, struct gen_pdu *g, bool hd, bool dd,
		    bool break_ddig, bool break_hdig)
{
	u32 n = gen_wire(g, hd, dd, s->wire + s->len);

	if (break_ddig && dd && g->dlen)
		s->wire[s->len + n - 1] ^= 0x5a;
	if (break_hdig && hd) {
		s->wire[s->len + g->hdr_len] ^= 0xa5;
		s->hdig_broken = s->npdu;
	}
	s->len += n;
	s->npdu++;
	free(g->data);
}

/*
 * Four tasks' buffers cut into R2T windows, each with a TTT: three in four
 * name a page pod, the rest none (a stale tag, or the reserved one).
 * Then the windows' Data-Outs, windows interleaved, with other PDUs
 * between; one header digest broken when hdig_at is not ~0.
 */
static void gen_stream(struct world *w, struct stream *s, bool hd, bool dd,
		       u32 hdig_at)
{
	u32 cursor[MAX_WIN] = { 0 }, datasn[MAX_WIN] = { 0 }, left, i = 0;

	w->nwin = 0;
	for (u32 t = 0; t < NTASK; t++)
		for (u32 off = 0; off < BUFLEN && w->nwin < MAX_WIN;) {
			struct window *win = &w->win[w->nwin];
			u32 len = 1 + rnd(3 * MAX_DLEN);

			win->itt = t;
			win->off = off;
			win->len = len < BUFLEN - off ? len : BUFLEN - off;
			win->pod = rnd(4) != 0;
			win->ttt = win->pod || rnd(2) ? TTT_BASE + w->nwin :
							CXE_RSVD_TAG;
			off += win->len;
			w->nwin++;
		}
	/* a reserved TTT names one window only: the others get stale tags */
	for (u32 i = 0, seen = 0; i < w->nwin; i++)
		if (w->win[i].ttt == CXE_RSVD_TAG && seen++)
			w->win[i].ttt = TTT_BASE + 0x800 + i;

	s->len = s->npdu = 0;
	s->hdig_broken = ~0u;
	for (left = w->nwin; left;) {
		struct gen_pdu g;
		bool bd = rnd(16) == 0, bh = s->npdu == hdig_at;

		if (rnd(6) == 0) {
			gen_random(&g, MAX_DLEN);
			if (cxe_bhs_opcode(g.hdr) == CXE_OP_DATA_OUT)
				g.hdr[0] = CXE_OP_NOOP_OUT;
			put_pdu(s, &g, hd, dd, bd, bh);
			continue;
		}
		/*
		 * The next Data-Out of the window of the last one, mostly (an
		 * initiator sends an R2T's Data-Outs back to back), else of
		 * a random window not yet done.
		 */
		if (rnd(4) == 0 || cursor[i] == w->win[i].len)
			i = rnd(w->nwin);
		while (cursor[i] == w->win[i].len)
			i = (i + 1) % w->nwin;
		struct window *win = &w->win[i];
		u32 n = 1 + rnd(MAX_DLEN);

		if (n > win->len - cursor[i])
			n = win->len - cursor[i];
		memset(g.hdr, 0, sizeof(g.hdr));
		g.hdr[0] = CXE_OP_DATA_OUT;
		cxe_put_be32(g.hdr + 16, win->itt);
		cxe_put_be32(g.hdr + 20, win->ttt);
		cxe_put_be32(g.hdr + 36, datasn[i]++);
		cxe_put_be32(g.hdr + 40, win->off + cursor[i]);
		cxe_bhs_set_dlen(g.hdr, n);
		g.hdr_len = CXE_BHS_LEN;
		g.dlen = n;
		g.data = malloc(n);
		for (u32 k = 0; k < n; k++)
			g.data[k] = (u8)rnd(256);
		cursor[i] += n;
		if (cursor[i] == win->len) {
			g.hdr[1] |= CXE_FLAG_FINAL;
			left--;
		}
		put_pdu(s, &g, hd, dd, bd, bh);
	}
}

/*
 * The PDUs the chip hands up, from what the parser found: on a T6 with no
 * flush before the end, a placed Data-Out without F or error is not handed
 * up when the next PDU is a placed one of the same TTT and ITT without
 * error (ulp_rx.h).
 */
static bool elided(const struct world *w, const struct rec *r, u32 i)
{
	const struct rec_pdu *a = &r->pdus[i], *b;

	if (w->chip != CXE_CHIP_T6 || i + 1 >= r->n ||
	    !placeable(w, a->hdr, a->hstatus) || a->dstatus ||
	    a->hdr[1] & CXE_FLAG_FINAL)
		return false;
	b = &r->pdus[i + 1];
	return placeable(w, b->hdr, b->hstatus) && !b->dstatus &&
	       !memcmp(a->hdr + 16, b->hdr + 16, 8) &&
	       cxe_get_be32(b->hdr + 40) == cxe_get_be32(a->hdr + 40) +
					     cxe_bhs_dlen(a->hdr) &&
	       cxe_get_be32(b->hdr + 36) == cxe_get_be32(a->hdr + 36) + 1;
}

static bool same_event(const struct world *w, const struct event *e,
		       const struct rec_pdu *p)
{
	bool placed = placeable(w, p->hdr, p->hstatus);

	if (e->hdr_len != p->hdr_len || memcmp(e->hdr, p->hdr, p->hdr_len) ||
	    e->placed != placed || e->hcrc != !!p->hstatus ||
	    e->dcrc != !!(p->dstatus & CXE_RX_DDIGEST_ERR) || e->pad)
		return false;
	if (p->hstatus)
		return true;
	return e->data == (!placed && e->dlen) &&
	       (!e->data || !memcmp(e->bytes, p->data, e->dlen));
}

static void free_events(struct world *w)
{
	for (u32 i = 0; i < w->nev; i++)
		free(w->ev[i].bytes);
	w->nev = 0;
	w->rx_err = 0;
	w->msgs = 0;
}

/*
 * One stream through both paths. flushes: the model's batch ends at
 * random points too (more completions on a T6, never fewer or others).
 */
static void run_one(struct world *w, enum cxe_chip chip, bool hd, bool dd,
		    bool flushes, bool break_hdig, bool bounded, u8 *wire)
{
	struct stream s = { .wire = wire };
	struct rec r = { 0 };
	struct cxe_rx prx;
	struct cxe_model_rx m;
	static u8 data_msg[CXE_MODEL_DATA_MSG_LEN(MAX_DLEN)];
	u32 j = 0, off;
	int ret = 0;

	w->chip = chip;
	gen_stream(w, &s, hd, dd, break_hdig ? 1 + rnd(40) : ~0u);
	assert(s.len <= STREAM_MAX);

	/* the software adapter's parser, and what its target copies */
	cxe_rx_init(&prx, MAX_DLEN);
	prx.hdigest = hd;
	prx.ddigest = dd;
	CHECK(cxe_rx_feed(&prx, wire, s.len, &rec_ops, &r) == (long)s.len);
	CHECK(!r.order_error);
	memset(w->ref, 0, sizeof(w->ref));
	for (u32 i = 0; i < r.n; i++)
		if (!r.pdus[i].hstatus)
			target_copy(w->ref, r.pdus[i].hdr, r.pdus[i].data);

	/* the chip model under the assembler, in random chunks */
	memset(w->buf, 0, sizeof(w->buf));
	cxe_c4rx_init(&w->rx, chip, MAX_DLEN);
	cxe_model_rx_init(&m, chip, 7, 1000 + rnd(1u << 31), MAX_DLEN, data_msg);
	m.hdigest = hd;
	m.ddigest = dd;
	for (off = 0; off < s.len && !ret;) {
		u32 n = rnd(4) == 0 ? 1 + rnd(8) : 1 + rnd(20000), before = w->nev;

		/* as the kernel feeds it: never past the current PDU */
		if (bounded && n > cxe_model_rx_want(&m))
			n = cxe_model_rx_want(&m);
		if (n > s.len - off)
			n = s.len - off;
		ret = cxe_model_rx_feed(&m, wire + off, n, &model_ops, w);
		off += n;
		if (bounded)
			CHECK(w->nev - before <= (chip == CXE_CHIP_T6 ? 2u : 1u));
		if (!ret && flushes && rnd(3) == 0)
			ret = cxe_model_rx_flush(&m, &model_ops, w);
	}
	if (!ret)
		ret = cxe_model_rx_flush(&m, &model_ops, w);

	if (s.hdig_broken != ~0u) {
		/* handed up flagged, and the stream ends there */
		CHECK(r.pdus[s.hdig_broken].hstatus);
		CHECK(w->nev && w->ev[w->nev - 1].hcrc);
		CHECK(w->nev && !memcmp(w->ev[w->nev - 1].hdr,
					r.pdus[s.hdig_broken].hdr, CXE_BHS_LEN));
		CHECK(off == s.len || w->rx_err == -EPROTO);
		seen.hcrc++;
		goto out;
	}
	CHECK(ret == 0 && w->rx_err == 0);
	/* every PDU the chip must hand up, in order, and only those */
	for (u32 i = 0; i < r.n; i++) {
		bool must = !elided(w, &r, i);
		const struct rec_pdu *p = &r.pdus[i];

		seen.pdus++;
		seen.stood_for += !must && !flushes;
		seen.dcrc += !!p->dstatus;
		if (cxe_bhs_opcode(p->hdr) == CXE_OP_DATA_OUT) {
			if (placeable(w, p->hdr, p->hstatus))
				seen.placed++;
			else
				seen.copied_data_outs++;
		}

		/* without flushes, one a later completion stands for is not */
		if (!must && !flushes)
			continue;
		if (j < w->nev && same_event(w, &w->ev[j], &r.pdus[i])) {
			j++;
			continue;
		}
		if (must) {
			CHECK(!"a PDU the chip must hand up is missing or differs");
			fprintf(stderr, "  chip T%d hd %d dd %d: PDU %u of %u, event %u of %u\n",
				chip, hd, dd, i, r.n, j, w->nev);
			break;
		}
	}
	CHECK(j == w->nev);
	CHECK(!memcmp(w->buf, w->ref, sizeof(w->buf)));
out:
	for (u32 i = 0; i < r.n; i++)
		free(r.pdus[i].data);
	free(r.pdus);
	free_events(w);
}

/* ---- the assembler alone: sequences the chip must not send ---- */

static u8 msg[CXE_MODEL_CPL_MAX + CXE_MODEL_HDR_MAX + 64];

static u32 bhs(u8 *b, u8 op, u32 dlen, u8 ahs_words)
{
	memset(b, 0, CXE_BHS_LEN + ahs_words * 4);
	b[0] = op;
	b[1] = CXE_FLAG_FINAL;
	b[4] = ahs_words;
	cxe_bhs_set_dlen(b, dlen);
	return CXE_BHS_LEN + ahs_words * 4;
}

static int t5_hdr(struct cxe_c4rx *rx, u32 seq, u8 op, u32 dlen)
{
	u32 n = cxe_model_cpl_iscsi_hdr(msg, 1, seq, 0, false, CXE_BHS_LEN);

	n += bhs(msg + n, op, dlen, 0);
	return cxe_c4rx_msg(rx, msg, n, NULL);
}

static int data_msg(struct cxe_c4rx *rx, u16 len)
{
	u32 n = cxe_model_cpl_iscsi_data(msg, 1, 0, len);

	return cxe_c4rx_msg(rx, msg, n + len, NULL);
}

static int t5_status(struct cxe_c4rx *rx, u32 seq, u16 pdu_len, u32 ddpvld,
		     struct cxe_c4rx_pdu *pdu)
{
	u32 n = cxe_model_cpl_rx_iscsi_ddp(msg, 1, seq, pdu_len, 0, ddpvld);

	return cxe_c4rx_msg(rx, msg, n, pdu);
}

static int t6_cmp(struct cxe_c4rx *rx, u8 op, u32 dlen, u32 ddpvld,
		  u32 hdr_len, u32 give, struct cxe_c4rx_pdu *pdu)
{
	u32 n = cxe_model_cpl_rx_iscsi_cmp(msg, 1, 0, 0, false, hdr_len, 0,
					   ddpvld);

	bhs(msg + n, op, dlen, 0);
	return cxe_c4rx_msg(rx, msg, n + give, pdu);
}

static void test_refusals(void)
{
	struct cxe_c4rx rx;
	struct cxe_c4rx_pdu pdu;

	/* T5, in order: header, data, status; the next header where it ends */
	cxe_c4rx_init(&rx, CXE_CHIP_T5, 8192);
	CHECK(t5_hdr(&rx, 100, CXE_OP_NOOP_OUT, 5) == CXE_C4RX_MORE);
	CHECK(data_msg(&rx, 5) == CXE_C4RX_MORE);
	CHECK(t5_status(&rx, 100, 48 + 8, 0, &pdu) == CXE_C4RX_PDU);
	CHECK(pdu.data && !pdu.placed && pdu.dlen == 5 && pdu.seq == 100);
	CHECK(t5_hdr(&rx, 156, CXE_OP_NOOP_OUT, 0) == CXE_C4RX_MORE);
	CHECK(t5_status(&rx, 156, 48, 0, &pdu) == CXE_C4RX_PDU);
	/* a header not where the last PDU ended */
	CHECK(t5_hdr(&rx, 205, CXE_OP_NOOP_OUT, 0) == -EPROTO);
	/* dead: nothing more is taken, not even a good message */
	CHECK(t5_hdr(&rx, 204, CXE_OP_NOOP_OUT, 0) == -EPROTO);

	/* a status whose length is not the PDU's */
	cxe_c4rx_init(&rx, CXE_CHIP_T5, 8192);
	CHECK(t5_hdr(&rx, 0, CXE_OP_NOOP_OUT, 0) == CXE_C4RX_MORE);
	CHECK(t5_status(&rx, 0, 48 + 9, 0, &pdu) == -EPROTO);
	/* data of another length than the header says */
	cxe_c4rx_init(&rx, CXE_CHIP_T5, 8192);
	CHECK(t5_hdr(&rx, 0, CXE_OP_SCSI_CMD, 512) == CXE_C4RX_MORE);
	CHECK(data_msg(&rx, 511) == -EPROTO);
	/* data with no header before it, twice, or empty */
	cxe_c4rx_init(&rx, CXE_CHIP_T5, 8192);
	CHECK(data_msg(&rx, 4) == -EPROTO);
	cxe_c4rx_init(&rx, CXE_CHIP_T5, 8192);
	CHECK(t5_hdr(&rx, 0, CXE_OP_SCSI_CMD, 4) == CXE_C4RX_MORE);
	CHECK(data_msg(&rx, 4) == CXE_C4RX_MORE);
	CHECK(data_msg(&rx, 4) == -EPROTO);
	cxe_c4rx_init(&rx, CXE_CHIP_T6, 8192);
	CHECK(data_msg(&rx, 0) == -EPROTO);
	/* a status for no header */
	cxe_c4rx_init(&rx, CXE_CHIP_T5, 8192);
	CHECK(t5_status(&rx, 0, 48, 0, &pdu) == -EPROTO);
	/* two headers in a row */
	cxe_c4rx_init(&rx, CXE_CHIP_T5, 8192);
	CHECK(t5_hdr(&rx, 0, CXE_OP_NOOP_OUT, 0) == CXE_C4RX_MORE);
	CHECK(t5_hdr(&rx, 0, CXE_OP_NOOP_OUT, 0) == -EPROTO);
	/* a data segment above our limit, an opcode no initiator sends */
	cxe_c4rx_init(&rx, CXE_CHIP_T5, 8192);
	CHECK(t5_hdr(&rx, 0, CXE_OP_SCSI_CMD, 8193) == -EPROTO);
	cxe_c4rx_init(&rx, CXE_CHIP_T5, 8192);
	CHECK(t5_hdr(&rx, 0, CXE_OP_DATA_IN, 0) == -EPROTO);
	/* each chip's messages only */
	cxe_c4rx_init(&rx, CXE_CHIP_T6, 8192);
	CHECK(t5_hdr(&rx, 0, CXE_OP_NOOP_OUT, 0) == -EPROTO);
	cxe_c4rx_init(&rx, CXE_CHIP_T5, 8192);
	CHECK(t6_cmp(&rx, CXE_OP_NOOP_OUT, 0, 0, 48, 48, &pdu) == -EPROTO);
	/* a message the assembler does not take */
	cxe_c4rx_init(&rx, CXE_CHIP_T6, 8192);
	msg[0] = CXE_CPL_FW4_ACK;
	CHECK(cxe_c4rx_msg(&rx, msg, 24, &pdu) == -EPROTO);

	/* T6: data, then the completion with the header */
	cxe_c4rx_init(&rx, CXE_CHIP_T6, 8192);
	CHECK(data_msg(&rx, 100) == CXE_C4RX_MORE);
	CHECK(t6_cmp(&rx, CXE_OP_SCSI_CMD, 100, 0, 48, 48, &pdu) == CXE_C4RX_PDU);
	CHECK(pdu.data && !pdu.placed && pdu.dlen == 100);
	/* placed: a Data-Out whose completion has the DDP bit, no data */
	CHECK(t6_cmp(&rx, CXE_OP_DATA_OUT, 4096, CXE_MODEL_DDPVLD_DDP, 48, 48,
		     &pdu) == CXE_C4RX_PDU);
	CHECK(pdu.placed && !pdu.data && pdu.dlen == 4096);
	/* data missing without the DDP bit, or for what DDP never places */
	CHECK(t6_cmp(&rx, CXE_OP_DATA_OUT, 4096, 0, 48, 48, &pdu) == -EPROTO);
	cxe_c4rx_init(&rx, CXE_CHIP_T6, 8192);
	CHECK(t6_cmp(&rx, CXE_OP_SCSI_CMD, 512, CXE_MODEL_DDPVLD_DDP, 48, 48,
		     &pdu) == -EPROTO);
	/* a header cut short, or longer than its AHS says */
	cxe_c4rx_init(&rx, CXE_CHIP_T6, 8192);
	CHECK(t6_cmp(&rx, CXE_OP_NOOP_OUT, 0, 0, 48, 47, &pdu) == -EPROTO);
	cxe_c4rx_init(&rx, CXE_CHIP_T6, 8192);
	CHECK(t6_cmp(&rx, CXE_OP_NOOP_OUT, 0, 0, 52, 52, &pdu) == -EPROTO);
	/* a header digest error: handed up flagged, then nothing more */
	cxe_c4rx_init(&rx, CXE_CHIP_T6, 8192);
	CHECK(t6_cmp(&rx, CXE_OP_DATA_IN, 0xffffff, CXE_MODEL_DDPVLD_HCRC, 48,
		     48, &pdu) == CXE_C4RX_PDU);
	CHECK(pdu.hcrc_err);
	CHECK(t6_cmp(&rx, CXE_OP_NOOP_OUT, 0, 0, 48, 48, &pdu) == -EPROTO);
	/* data and pad digest errors are the caller's to act on */
	cxe_c4rx_init(&rx, CXE_CHIP_T6, 8192);
	CHECK(data_msg(&rx, 3) == CXE_C4RX_MORE);
	CHECK(t6_cmp(&rx, CXE_OP_SCSI_CMD, 3, CXE_MODEL_DDPVLD_DCRC |
		     CXE_MODEL_DDPVLD_PAD, 48, 48, &pdu) == CXE_C4RX_PDU);
	CHECK(pdu.dcrc_err && pdu.pad_err && !pdu.hcrc_err);
}

/*
 * The model: padding that is not zero is reported, and the data digest
 * covers it as sent, as the software parser's does
 */
static void test_model_pad(void)
{
	static u8 wire[256], data_msg[CXE_MODEL_DATA_MSG_LEN(64)];
	struct world *w = calloc(1, sizeof(*w));
	struct cxe_model_rx m;
	struct gen_pdu g = { 0 };
	u32 n;

	g.hdr_len = bhs(g.hdr, CXE_OP_SCSI_CMD, 5, 0);
	g.dlen = 5;
	g.data = (u8 *)"abcde";
	for (int chip = CXE_CHIP_T5; chip <= CXE_CHIP_T6; chip++) {
		n = gen_wire(&g, true, true, wire);
		wire[48 + 4 + 5 + 1] = 1;	/* second pad byte */
		cxe_c4rx_init(&w->rx, chip, 64);
		cxe_model_rx_init(&m, chip, 1, 0, 64, data_msg);
		m.hdigest = m.ddigest = true;
		CHECK(cxe_model_rx_feed(&m, wire, n, &model_ops, w) == 0);
		CHECK(w->nev == 1 && w->ev[0].pad && w->ev[0].dcrc &&
		      w->ev[0].data && !memcmp(w->ev[0].bytes, "abcde", 5));
		free_events(w);
	}
	free(w->ev);
	free(w);
}

/*
 * The model merges only a Data-Out that follows the one held back: its
 * offset where that one's data ended, the next DataSN. A gap, or a DataSN
 * out of step, and both are handed up.
 */
static void test_model_merges_only_what_follows(void)
{
	static u8 wire[64 * 1024], data_msg[CXE_MODEL_DATA_MSG_LEN(8192)];
	static const struct { u32 off2, sn2; u32 nev; } cases[] = {
		{ 4096, 1, 1 },		/* follows on: one completion */
		{ 8192, 1, 2 },		/* a gap of 4 KiB */
		{ 4096, 2, 2 },		/* a DataSN skipped */
	};
	struct world *w = calloc(1, sizeof(*w));

	w->nwin = 1;
	w->win[0] = (struct window){ .itt = 0, .ttt = TTT_BASE, .off = 0,
				     .len = 12288, .pod = true };
	for (u32 k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct cxe_model_rx m;
		struct gen_pdu g = { 0 };
		u32 n = 0;

		for (int i = 0; i < 2; i++) {
			bhs(g.hdr, CXE_OP_DATA_OUT, 4096, 0);
			g.hdr[1] = i ? CXE_FLAG_FINAL : 0;
			cxe_put_be32(g.hdr + 16, 0);
			cxe_put_be32(g.hdr + 20, TTT_BASE);
			cxe_put_be32(g.hdr + 36, i ? cases[k].sn2 : 0);
			cxe_put_be32(g.hdr + 40, i ? cases[k].off2 : 0);
			g.hdr_len = CXE_BHS_LEN;
			g.dlen = 4096;
			g.data = wire + 32 * 1024;
			n += gen_wire(&g, false, false, wire + n);
		}
		cxe_c4rx_init(&w->rx, CXE_CHIP_T6, 8192);
		cxe_model_rx_init(&m, CXE_CHIP_T6, 1, 0, 8192, data_msg);
		CHECK(cxe_model_rx_feed(&m, wire, n, &model_ops, w) == 0);
		CHECK(cxe_model_rx_flush(&m, &model_ops, w) == 0);
		CHECK(w->nev == cases[k].nev);
		CHECK(w->nev && w->ev[w->nev - 1].placed);
		free_events(w);
	}
	free(w->ev);
	free(w);
}

int main(int argc, char **argv)
{
	unsigned int seed = argc > 1 ? (unsigned int)atoi(argv[1]) : 1;
	struct world *w = calloc(1, sizeof(*w));
	u8 *wire = malloc(STREAM_MAX);
	u32 runs = 0;

	srandom(seed);
	test_refusals();
	test_model_pad();
	test_model_merges_only_what_follows();
	for (int round = 0; round < 6; round++)
		for (int chip = CXE_CHIP_T5; chip <= CXE_CHIP_T6; chip++)
			for (int dig = 0; dig < 4; dig++) {
				run_one(w, chip, dig & 1, dig & 2, false, false,
					round & 1, wire);
				run_one(w, chip, dig & 1, dig & 2, true, false,
					!(round & 1), wire);
				if (dig & 1)
					run_one(w, chip, true, dig & 2, false, true,
						round & 1, wire);
				runs += 2 + (dig & 1);
			}
	/* each case the comparison is about came up */
	CHECK(seen.placed && seen.stood_for && seen.copied_data_outs &&
	      seen.dcrc && seen.hcrc);
	printf("test_cxgb4_rx: seed %u, %u streams, %u PDUs: %u Data-Outs placed (%u of them stood for by a later T6 completion), %u copied; %u data and %u header digest errors\n",
	       seed, runs, seen.pdus, seen.placed, seen.stood_for,
	       seen.copied_data_outs, seen.dcrc, seen.hcrc);
	printf("test_cxgb4_rx: %d checks, %d failures\n", checks, failures);
	free(w->ev);
	free(w);
	free(wire);
	return failures != 0;
}
