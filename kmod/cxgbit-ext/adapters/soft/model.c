// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext software adapter: the chip model engine. A software adapter
 * whose model setting is t5 or t6 (configfs) runs the full feature phase of its
 * connections through the cxgb4 backend's own receive assembler and work
 * requests (adapters/cxgb4/rx.c, tx.c), with the model of that chip's
 * iSCSI ULP (model/) between them and the kernel's TCP socket: the model frames
 * the received stream, checks the digests, places Data-Out data through
 * the connection's DDP tags (its page pods) before the header is handed
 * up, and hands up the chip's messages (a T6's one completion for a run
 * of placed Data-Outs: CXE_RX_RANGE), which the assembler turns back
 * into PDUs; PDUs and Data-In bursts go out as the backend's work
 * requests, which the model turns into the bytes on the wire (digests,
 * ISO). Login stays on the software path (the chip model has no
 * connection set-up). This is a test engine: it copies where the
 * software path does not, and nothing here has run on Chelsio hardware.
 *
 * Once the model runs, the stream is its own: the socket is no longer
 * lent to LIO (conn->sock), which could otherwise read bytes the model
 * already took (a refused Data-Out's payload dump, which then fails as it
 * does under mainline cxgbit), and the adapter releases it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/highmem.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <target/iscsi/iscsi_target_core.h>

#include "soft.h"
#include "pdu/cxe_seg.h"
#include "adapters/cxgb4/rx.h"
#include "adapters/cxgb4/tx.h"
#include "model/ulp_rx.h"
#include "model/ulp_tx.h"
#include "model/ppod.h"

#define CXE_MODEL_TID		1	/* the model's connection, for the messages */
/*
 * The modelled chip's page pod memory, per connection: 4096 pods (256 KiB)
 * hold windows of 64 MiB in all; a window that finds no room is not
 * placed (its data comes in data messages), as on a chip whose pods run
 * out.
 */
#define CXE_MODEL_PODS		4096
#define CXE_MODEL_POD_BASE	0x100000	/* its address in adapter memory */

/*
 * A PDU the assembler completed, waiting for the PDU layer: its report,
 * with the header copied out of the assembler (pdu.hdr points at hdr);
 * data not placed is in data_msg, after its CPL.
 */
struct cxe_model_pdu {
	struct cxe_c4rx_pdu	pdu;
	u8			hdr[CXE_BHS_LEN + CXE_MAX_AHS_LEN];
};

struct cxe_soft_model {
	struct cxe_model_rx	rx;
	struct cxe_c4rx		as;
	struct cxe_model_tx	tx;
	struct cxe_c4tx_conn	txc;
	u8			*data_msg;
	/*
	 * Receive is fed no further than the end of the PDU in progress, so
	 * one feed completes at most one PDU (ulp_rx.h); q[head] is the one
	 * handed up (cur) until the next recv_hdr.
	 */
	struct cxe_model_pdu	q[2];
	u32			head;
	u32			nq;
	bool			cur;
	/* page pods (under the connection's ddp_lock) */
	struct cxe_model_ppm	ppm;
	unsigned long		*pod_map;
	/* a work request and the wire bytes it makes (the TX thread's only) */
	u8			*wr_req;
	u8			*wr_out;
	u32			wr_req_cap;
	u32			wr_out_cap;
};

/* ---- receive: the model's callbacks ----------------------------------------- */

/* The slot of a live tag of this ITT whose window covers the bytes */
static struct cxe_ddp_slot *cxe_model_slot(struct cxe_soft_conn *sc, u32 ttt,
					   u32 itt, u32 off, u32 len)
{
	u32 i = cxe_ddp_tag_idx(ttt);
	struct cxe_ddp_slot *s;

	lockdep_assert_held(&sc->ddp_lock);
	if (!sc->c.ddp || i == CXE_NODDP_IDX || i >= CXE_DDP_SLOTS)
		return NULL;
	s = &sc->ddp[i];
	if (!s->owner || s->itt != itt || s->gen != cxe_ddp_tag_gen(ttt) ||
	    !cxe_ddp_in_window(s->offset, s->len, off, len))
		return NULL;
	return s;
}

/* ---- page pods ------------------------------------------------------------------ */

/* Write pods [first, first + n) of a window from pages[0..np) */
static int cxe_model_pods_put(struct cxe_soft_model *mm,
			      const struct cxe_ppod_hdr *h, u32 pod,
			      const u64 *pages, u32 np, u32 n)
{
	u8 wr[CXE_ULP_MEM_WRITE_MAX_LEN];
	int len;

	len = cxe_ulp_ppod_write(wr, sizeof(wr),
				 CXE_MODEL_POD_BASE + (pod << CXE_PPOD_SHIFT),
				 h, pages, np, 0, n);
	if (len < 0)
		return len;
	return cxe_model_ppm_write(&mm->ppm, wr, len) == (int)n ? 0 : -EINVAL;
}

/* n pods from idx no longer valid: a pod written in part is cleared too */
static void cxe_model_pods_clear(struct cxe_soft_model *mm, u32 idx, u32 n)
{
	memset(mm->ppm.mem + (idx << CXE_PPOD_SHIFT), 0, n << CXE_PPOD_SHIFT);
}

/*
 * A DDP tag's window gets its page pods, written into the modelled pod
 * memory with the backend's ULP_TX_MEM_WRITE requests (three pods each),
 * each page by its physical address: the model's stand-in for the bus
 * address the chip would get from the DMA mapping. Pages must follow each
 * other whole in the window (the PDU layer's alignment, ddp_align, makes
 * it so); a window whose pages do not, or that finds no room, gets none
 * and is not placed.
 */
void cxe_soft_model_pods_write(struct cxe_soft_conn *sc, u32 tag,
			       struct cxe_ddp_slot *s)
{
	struct cxe_soft_model *mm = sc->model;
	u64 pages[CXE_PPOD_IMM_MAX * CXE_PPOD_PAGES + 1];
	u32 pos = s->offset, end = s->offset + s->len;
	u32 idx, n, np = 0, done = 0, off, avail;
	struct cxe_ppod_hdr h;
	struct cxe_sg_pos p;

	lockdep_assert_held(&sc->ddp_lock);
	s->pods = 0;
	if (!mm || !s->len)
		return;
	cxe_sg_pos_init(&p, s->sgl, s->nents);
	if (!cxe_sg_seek(&p, pos))
		return;
	cxe_sg_page(&p, pos, &off, &avail);
	h = (struct cxe_ppod_hdr) {
		.tid = CXE_MODEL_TID,
		.tag = tag & 0x3fffffff,
		.max_offset = s->len,
		.page_offset = off,
	};
	n = cxe_ppod_count(h.page_offset, s->len);
	idx = bitmap_find_next_zero_area(mm->pod_map, CXE_MODEL_PODS, 0, n, 0);
	if (idx >= CXE_MODEL_PODS)
		return;
	while (pos < end) {
		struct page *pg;

		if (!cxe_sg_seek(&p, pos))
			goto fail;
		pg = cxe_sg_page(&p, pos, &off, &avail);
		/* after the first, each page is one the window starts at its top */
		if (pos != s->offset && off)
			goto fail;
		pages[np++] = page_to_phys(pg);
		pos += PAGE_SIZE - off;
		if (np == ARRAY_SIZE(pages)) {
			/* three pods; the last page starts the next three */
			if (cxe_model_pods_put(mm, &h, idx + done, pages, np,
					       CXE_PPOD_IMM_MAX))
				goto fail;
			done += CXE_PPOD_IMM_MAX;
			pages[0] = pages[np - 1];
			np = 1;
		}
	}
	if (done < n && (n - done > CXE_PPOD_IMM_MAX ||
			 cxe_model_pods_put(mm, &h, idx + done, pages, np, n - done)))
		goto fail;
	bitmap_set(mm->pod_map, idx, n);
	s->pod_idx = idx;
	s->pods = n;
	return;
fail:
	cxe_model_pods_clear(mm, idx, n);
}

/* The window's tag is done with: its pods are cleared, their room free */
void cxe_soft_model_pods_free(struct cxe_soft_conn *sc, struct cxe_ddp_slot *s)
{
	struct cxe_soft_model *mm = sc->model;

	lockdep_assert_held(&sc->ddp_lock);
	if (!mm || !s->pods)
		return;
	cxe_model_pods_clear(mm, s->pod_idx, s->pods);
	bitmap_clear(mm->pod_map, s->pod_idx, s->pods);
	s->pods = 0;
}

/*
 * The chip's page pod lookup: a live DDP tag of this ITT whose window
 * has pods (the pods themselves are read as the data is placed)
 */
static bool cxe_model_ppod(void *ctx, u32 ttt, u32 itt, u32 off, u32 len)
{
	struct cxe_soft_conn *sc = cxe_soft(ctx);
	struct cxe_ddp_slot *s;
	bool ok;

	spin_lock_bh(&sc->ddp_lock);
	s = cxe_model_slot(sc, ttt, itt, off, len);
	ok = s && s->pods;
	spin_unlock_bh(&sc->ddp_lock);
	/* a new PDU's data: the placement walk starts over (ddp.c) */
	sc->place_sgl = NULL;
	return ok;
}

/* Each byte where the window's pods say, page by page */
static int cxe_model_place_pods(struct cxe_soft_conn *sc,
				const struct cxe_ddp_slot *s, u32 ttt, u32 off,
				const u8 *buf, u32 len)
{
	const struct cxe_model_ppm *ppm = &sc->model->ppm;

	while (len) {
		u64 addr;
		u32 n;

		if (cxe_model_ppm_locate(ppm, s->pod_idx, CXE_MODEL_TID,
					 ttt & 0x3fffffff, off, &addr))
			return -EPROTO;
		n = min_t(u32, len, PAGE_SIZE - offset_in_page(addr));
		memcpy_to_page(pfn_to_page(PHYS_PFN(addr)), offset_in_page(addr),
			       buf, n);
		off += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * The chip writing placed data into the task's pages. Under the lock
 * ddp_release takes, the tag checked again: a released task's pages get
 * nothing more (the fence, adapter.h). A tag gone by now is the stream's
 * end: the PDU layer would refuse the Data-Out all the same.
 */
static int cxe_model_place(void *ctx, u32 ttt, u32 itt, u32 off,
			   const u8 *buf, u32 len)
{
	struct cxe_soft_conn *sc = cxe_soft(ctx);
	struct cxe_ddp_slot *s;
	int ret = -EPROTO;

	spin_lock_bh(&sc->ddp_lock);
	s = cxe_model_slot(sc, ttt, itt, off, len);
	if (s && s->pods) {
		ret = cxe_model_place_pods(sc, s, ttt, off - s->offset, buf, len);
		if (!ret && off == s->placed_to)
			s->placed_to += len;
	}
	spin_unlock_bh(&sc->ddp_lock);
	if (!ret)
		cxe_cstat(ctx, CXE_STAT_BYTES_PLACED, len);
	return ret;
}

/* The backend's receive handler: each message to the assembler */
static int cxe_model_deliver(void *ctx, const u8 *msg, u32 len)
{
	struct cxe_conn *c = ctx;
	struct cxe_soft_model *mm = cxe_soft(c)->model;
	struct cxe_c4rx_pdu pdu;
	struct cxe_model_pdu *e;
	int ret;

	cxe_cstat(c, CXE_STAT_MODEL_CPLS, 1);
	ret = cxe_c4rx_msg(&mm->as, msg, len, &pdu);
	if (ret != CXE_C4RX_PDU)
		return ret;
	if (mm->nq == ARRAY_SIZE(mm->q))
		return -EOVERFLOW;	/* fed past a PDU's end: a bug here */
	e = &mm->q[(mm->head + mm->nq++) % ARRAY_SIZE(mm->q)];
	memcpy(e->hdr, pdu.hdr, pdu.hdr_len);
	e->pdu = pdu;
	e->pdu.hdr = e->hdr;
	return 0;
}

static const struct cxe_model_rx_ops cxe_model_rx_ops = {
	.deliver	= cxe_model_deliver,
	.ppod		= cxe_model_ppod,
	.place		= cxe_model_place,
};

/* The model's side of cxe_stream_pull(): a PDU complete ends the pull */
static long cxe_model_take(struct cxe_conn *c, const u8 *p, unsigned int n)
{
	struct cxe_soft_model *mm = cxe_soft(c)->model;
	int ret;

	n = min(n, cxe_model_rx_want(&mm->rx));
	if (!n)
		return -EPROTO;
	ret = cxe_model_rx_feed(&mm->rx, p, n, &cxe_model_rx_ops, c);
	return ret ?: n;
}

static bool cxe_model_have_pdu(struct cxe_conn *c)
{
	return cxe_soft(c)->model->nq;
}

/* the socket's queue is empty: the end of a receive batch, as the chip sees it */
static int cxe_model_idle(struct cxe_conn *c)
{
	return cxe_model_rx_flush(&cxe_soft(c)->model->rx, &cxe_model_rx_ops, c);
}

static const struct cxe_stream_reader cxe_model_reader = {
	.take	= cxe_model_take,
	.done	= cxe_model_have_pdu,
	.idle	= cxe_model_idle,
};

/*
 * A placed Data-Out handed up: it completes its window's data from where
 * the last one handed up ended. When it begins further on (a T6 stood
 * for the Data-Outs between, which were never handed up), say so
 * (CXE_RX_RANGE) only if the window was placed without a gap up to its
 * end: no byte the initiator never sent is vouched for.
 */
static void cxe_model_range(struct cxe_conn *c, const struct cxe_model_pdu *e,
			    u32 *flags)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 itt = cxe_get_be32(e->hdr + 16), ttt = cxe_get_be32(e->hdr + 20);
	u32 off = cxe_get_be32(e->hdr + 40), end = off + e->pdu.dlen;
	struct cxe_ddp_slot *s;

	spin_lock_bh(&sc->ddp_lock);
	s = cxe_model_slot(sc, ttt, itt, off, e->pdu.dlen);
	if (s && off > s->done_to && s->placed_to >= end) {
		*flags |= CXE_RX_RANGE;
		c->rx_range_start = s->done_to;
	}
	if (s && end > s->done_to)
		s->done_to = end;
	spin_unlock_bh(&sc->ddp_lock);
}

int cxe_soft_model_recv_hdr(struct cxe_conn *c, u8 *hdr, u32 *flags)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	struct cxe_soft_model *mm = sc->model;
	struct cxe_model_pdu *e;
	int ret;

	if (sc->model_err)
		return sc->model_err;
	/*
	 * The stream is the model's now (see the top of this file). LIO
	 * may still use the socket it read here (a logout of another of the
	 * session's connections shuts its reading side): it stays valid
	 * until conn_release, which runs after all of that.
	 */
	if (c->conn->sock)
		WRITE_ONCE(c->conn->sock, NULL);
	if (mm->cur) {
		mm->head = (mm->head + 1) % ARRAY_SIZE(mm->q);
		mm->nq--;
		mm->cur = false;
	}
	if (!mm->nq) {
		ret = cxe_stream_pull(c, &cxe_model_reader, NULL);
		if (ret == -EPROTO || ret == -EMSGSIZE || ret == -EOVERFLOW) {
			pr_err("%pISpc: the chip model refused the stream (%d): dropping the connection\n",
			       &c->peer, ret);
			return -ECONNABORTED;
		}
		if (ret)
			return ret;
	}
	e = &mm->q[mm->head];
	mm->cur = true;
	if (e->pdu.hcrc_err) {
		cxe_cstat(c, CXE_STAT_HDIGEST_ERR, 1);
		return -EBADMSG;
	}
	memcpy(hdr, e->hdr, e->pdu.hdr_len);
	if (e->pdu.placed)
		cxe_model_range(c, e, flags);
	cxe_cstat(c, CXE_STAT_PDUS_RX, 1);
	return 0;
}

/*
 * The data of the PDU handed up: placed by the chip already, or in the
 * model's data message, copied to where the PDU layer wants it.
 */
int cxe_soft_model_recv_data(struct cxe_conn *c, const struct cxe_data *dst,
			     u32 dlen, bool *bad)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	struct cxe_soft_model *mm = sc->model;
	struct cxe_model_pdu *e = &mm->q[mm->head];
	const u8 *src = mm->data_msg + CXE_CPL_ISCSI_DATA_LEN;
	u32 have = min(dst->len, dlen);
	int ret = 0;

	*bad = false;
	if (!dlen)
		return 0;
	if (!mm->cur || e->pdu.dlen != dlen)
		return -EPROTO;
	if (e->pdu.dcrc_err) {
		*bad = true;
		cxe_cstat(c, CXE_STAT_DDIGEST_ERR, 1);
	}
	/* the chip placed it by the Data-Out's tag, in the task's pages */
	if (e->pdu.placed)
		return dst->sgl ? 0 : -EPROTO;
	if (!have)
		return 0;
	if (!dst->sgl) {
		memcpy(dst->buf, src, have);
		return 0;
	}
	sc->place_sgl = NULL;
	ret = cxe_soft_place(sc, dst, dst->offset, src, have);
	if (!ret)
		cxe_cstat(c, CXE_STAT_BYTES_COPIED, have);
	return ret;
}

/* The model took the data segment with the PDU: nothing is left to skip */
int cxe_soft_model_data_taken(struct cxe_conn *c)
{
	return cxe_soft(c)->model->cur ? 0 : -EPROTO;
}

/* ---- transmit ------------------------------------------------------------------ */

/*
 * One work request through the model: its head, and the payload (header,
 * data from src, zero padding) cxgb4 would put in it or gather; the wire
 * bytes the model makes go to TCP as the software path sends a copy.
 */
static int cxe_model_wr(struct cxe_soft_conn *sc, const u8 *head,
			const struct cxe_c4tx_wr *wr, const u8 *hdr,
			const struct cxe_data *src)
{
	struct cxe_soft_model *mm = sc->model;
	u32 dlen = src ? src->len : 0;
	u8 *req, *out;
	long n;

	req = cxe_buf_grow(&mm->wr_req, &mm->wr_req_cap,
			   wr->head_len + wr->payload);
	out = cxe_buf_grow(&mm->wr_out, &mm->wr_out_cap, wr->wire);
	if (!req || !out)
		return -ENOMEM;
	memcpy(req, head, wr->head_len);
	memcpy(req + wr->head_len, hdr, CXE_BHS_LEN);
	if (src && src->sgl) {
		if (sg_pcopy_to_buffer(src->sgl, src->nents,
				       req + wr->head_len + CXE_BHS_LEN, dlen,
				       src->offset) != dlen)
			return -EINVAL;
	} else if (dlen) {
		memcpy(req + wr->head_len + CXE_BHS_LEN, src->buf, dlen);
	}
	memset(req + wr->head_len + CXE_BHS_LEN + dlen, 0,
	       wr->payload - CXE_BHS_LEN - dlen);
	if (wr->imm)
		n = cxe_model_tx_wr(&mm->tx, req, wr->head_len + wr->payload,
				    NULL, 0, out, wr->wire);
	else
		n = cxe_model_tx_wr(&mm->tx, req, wr->head_len,
				    req + wr->head_len, wr->payload, out,
				    wr->wire);
	if (n != wr->wire) {
		pr_err("%pISpc: the chip model refused a work request (%ld)\n",
		       &sc->c.peer, n);
		return -EINVAL;
	}
	cxe_cstat(&sc->c, CXE_STAT_MODEL_WRS, 1);
	return cxe_soft_send_copy(sc, out, wr->wire);
}

/*
 * Gather list entries cxgb4 would write, at most: the header, each page
 * of the data (one more for data that starts inside a page), the pad
 */
static u32 cxe_model_sgl_entries(u32 dlen)
{
	return 1 + DIV_ROUND_UP(dlen, PAGE_SIZE) + 1 + 1;
}

int cxe_soft_model_send_pdu(struct cxe_conn *c, const u8 *bhs,
			    const struct cxe_data *src)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 dlen = src ? src->len : 0;
	u8 head[CXE_C4TX_HEAD_MAX];
	struct cxe_c4tx_wr wr;
	int ret;

	ret = cxe_c4tx_pdu(head, sizeof(head), &sc->model->txc, CXE_BHS_LEN,
			   dlen, cxe_model_sgl_entries(dlen), false, &wr);
	if (ret < 0)
		return ret;
	ret = cxe_model_wr(sc, head, &wr, bhs, src);
	if (!ret)
		cxe_cstat(c, CXE_STAT_PDUS_TX, 1);
	return ret;
}

/* A burst in the backend's slices: ISO requests, or PDU by PDU */
int cxe_soft_model_send_burst(struct cxe_conn *c, const struct cxe_burst *b)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	struct cxe_seg_burst plan = cxe_burst_plan(b);
	u32 i, n = cxe_seg_count(&plan);
	u8 head[CXE_C4TX_HEAD_MAX];
	struct cxe_c4tx_slice s;
	struct cxe_c4tx_wr wr;
	int ret = 0;

	if (!n)
		return -EINVAL;
	for (i = 0; !ret && cxe_c4tx_slice(&plan, b->tmpl, &sc->model_c4,
					   i, &s); i++) {
		struct cxe_data src = {
			.sgl = b->sgl,
			.nents = b->nents,
			.offset = s.offset,
			.len = s.len,
		};
		u32 entries = cxe_model_sgl_entries(s.len);

		if (s.iso)
			ret = cxe_c4tx_iso(head, sizeof(head), &sc->model->txc,
					   &plan, &s, entries, false, &wr);
		else
			ret = cxe_c4tx_pdu(head, sizeof(head), &sc->model->txc,
					   CXE_BHS_LEN, s.len, entries, false,
					   &wr);
		if (ret >= 0)
			ret = cxe_model_wr(sc, head, &wr, s.tmpl, &src);
	}
	if (ret)
		return ret;
	if (!i)
		return -EINVAL;
	cxe_cstat(c, CXE_STAT_PDUS_TX, n);
	cxe_cstat(c, CXE_STAT_BURSTS, 1);
	cxe_cstat(c, CXE_STAT_BURST_PDUS, n);
	return n;
}

/* ---- start and end ------------------------------------------------------------- */

/*
 * The connection is the modelled chip's from login on: the negotiation
 * keeps to what the chip with its largest I/O length and ISO firmware takes
 * (adapters/cxgb4/limits.c), and placement to page-aligned windows of at
 * least the chip's minimum, as its page pods need. Called at accept,
 * before the negotiation.
 */
int cxe_soft_model_accept(struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	const struct cxe_cxgb4_hw hw = {
		.chip		= sc->model_chip,
		.iscsi_iolen	= sc->model_chip == CXE_CHIP_T5 ? CXE_CXGB4_T5_MAX_PDU :
				  CXE_CXGB4_T6_MAX_DLEN + CXE_CXGB4_PDU_OVERHEAD,
		.fw_vers	= CXE_CXGB4_ISO_FW,
		.page_size	= PAGE_SIZE,
		.max_frags	= MAX_SKB_FRAGS,
		.ddp		= true,
	};
	struct cxe_cxgb4_limits *l = &sc->model_c4;
	int ret;

	ret = cxe_cxgb4_limits(&hw, l);
	if (ret)
		return ret;
	sc->model_limits = (struct cxe_limits) {
		.max_recv_dlen	= l->max_recv_dlen,
		.max_send_dlen	= l->max_send_dlen,
		/* send_burst cuts any burst into requests (tx.c) */
		.max_iso_burst	= CXE_NO_LIMIT,
		.ddp_min_len	= l->ddp_min_len,
		.ddp_align	= l->ddp_align,
	};
	c->limits = &sc->model_limits;
	return 0;
}

/*
 * The full feature phase begins (set_params, between PDUs): the model
 * takes over the stream with the negotiated digests. A failure here is
 * kept (model_err) and returned by the first receive, which ends the
 * connection.
 */
int cxe_soft_model_start(struct cxe_conn *c, u32 max_recv_dlen)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	struct cxe_soft_model *mm;

	mm = kzalloc(sizeof(*mm), GFP_KERNEL);
	if (!mm)
		goto fail;
	mm->data_msg = kvmalloc(CXE_MODEL_DATA_MSG_LEN(max_recv_dlen),
				GFP_KERNEL);
	mm->ppm.mem = kvzalloc(CXE_MODEL_PODS << CXE_PPOD_SHIFT, GFP_KERNEL);
	mm->pod_map = bitmap_zalloc(CXE_MODEL_PODS, GFP_KERNEL);
	if (!mm->data_msg || !mm->ppm.mem || !mm->pod_map) {
		kvfree(mm->data_msg);
		kvfree(mm->ppm.mem);
		bitmap_free(mm->pod_map);
		kfree(mm);
		goto fail;
	}
	mm->ppm.base = CXE_MODEL_POD_BASE;
	mm->ppm.size = CXE_MODEL_PODS << CXE_PPOD_SHIFT;
	cxe_model_rx_init(&mm->rx, sc->model_chip, CXE_MODEL_TID,
			  tcp_sk(sc->sock->sk)->copied_seq, max_recv_dlen,
			  mm->data_msg);
	mm->rx.hdigest = c->hdigest;
	mm->rx.ddigest = c->ddigest;
	cxe_c4rx_init(&mm->as, sc->model_chip, max_recv_dlen);
	mm->tx.chip = sc->model_chip;
	mm->tx.tid = CXE_MODEL_TID;
	mm->tx.max_dlen = sc->model_c4.max_send_dlen;
	mm->txc.chip = sc->model_chip;
	mm->txc.tid = CXE_MODEL_TID;
	mm->txc.hcrc = c->hdigest;
	mm->txc.dcrc = c->ddigest;
	if (!c->iso)
		sc->model_c4.max_iso_burst = 0;
	sc->model = mm;
	return 0;
fail:
	pr_err("%pISpc: no memory for the chip model: the connection ends\n",
	       &c->peer);
	sc->model_err = -ENOMEM;
	return -ENOMEM;
}

/* The socket is ours once the model ran: LIO no longer releases it */
void cxe_soft_model_release(struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);

	if (!sc->model)
		return;
	kvfree(sc->model->wr_req);
	kvfree(sc->model->wr_out);
	kvfree(sc->model->data_msg);
	/* after the tag table (conn_release): no tag reaches the pods now */
	kvfree(sc->model->ppm.mem);
	bitmap_free(sc->model->pod_map);
	kfree(sc->model);
	sc->model = NULL;
	if (sc->sock && !c->conn->sock) {
		sock_release(sc->sock);
		sc->sock = NULL;
	}
}
