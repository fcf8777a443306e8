// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: PDUs through the device. Received PDUs come as the
 * chip's messages (cm.c queues them on the connection), which the receive
 * assembler (rx.c) turns back into PDUs; PDUs and Data-In bursts go out as
 * work requests (tx.c) within the connection's transmit credits
 * (credits.c), each behind the connection's FW_FLOWC_WR (conn.c).
 *
 * What the chip receives holds its receive window: what each PDU handed
 * up took of it (cxe_c4_pdu_wire()) goes back with CPL_RX_DATA_ACK, at
 * least every CXE_C4_RX_ACK bytes and whenever the receive side waits,
 * so the window is never closed while nothing is queued.
 *
 * Data-Outs the chip placed through a DDP tag's page pods (ddp.c) come
 * without their data; the others' data is copied from its data message.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/scatterlist.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/wait.h>

#include "../../cxgbit_ext.h"
#include "../../pdu/cxe_seg.h"
#include "dev.h"

#define CXE_C4_RX_ACK		(64 * 1024)
/* the most one PDU handed up may stand for: a T6's run of placed Data-Outs */
#define CXE_C4_RX_MAX_SPAN	(16 * 1024 * 1024)

static struct cxe_c4c *cxe_c4c(struct cxe_conn *c)
{
	return container_of(c, struct cxe_c4c, c);
}

/* ---- receive -------------------------------------------------------------- */

/* The receive window the chip used for the PDU handed up, returned */
static void cxe_c4_rx_ack(struct cxe_c4c *cc, bool all)
{
	struct cxe_c4tid *t = cc->t;
	struct cxe_cpl_rx_ack a = { .tid = t->tid };
	u8 buf[32];
	int len;

	if (!cc->unacked || (!all && cc->unacked < CXE_C4_RX_ACK))
		return;
	a.credits = cc->unacked;
	len = cxe_cpl_rx_data_ack(buf, sizeof(buf), &a);
	if (len < 0)
		return;
	spin_lock_bh(&t->lock);
	/* none after our abort or for a TID the chip is done with */
	if (!cxe_c4tid_live(t) || cxe_c4tid_send(t, buf, len) == 0)
		cc->unacked = 0;
	spin_unlock_bh(&t->lock);
}

/* The PDU handed up is done with: the window it took is the chip's again */
static void cxe_c4_pdu_done(struct cxe_c4c *cc)
{
	cc->unacked += cc->pdu_wire;
	cc->cur = false;
	kfree_skb(cc->data);
	cc->data = NULL;
	cxe_c4_rx_ack(cc, false);
}

/*
 * The receive window the PDU handed up took, which goes back when it is
 * done with. On a T5, its bytes on the wire: from the end of the last one
 * to its own end, by their sequence numbers, or its own length with the
 * digests it was received with (set_params may change them) when there is
 * no last one or the numbers do not make sense (a chip would not send
 * those). True when it stands for PDUs before it (a T6's placed
 * Data-Outs it never hands up, rx.h).
 */
static bool cxe_c4_pdu_wire(struct cxe_c4c *cc, const struct cxe_c4rx_pdu *pdu)
{
	struct cxe_conn *c = &cc->c;
	u32 wire = pdu->hdr_len + (c->hdigest ? CXE_DIGEST_LEN : 0) +
		   ALIGN(pdu->dlen, 4) +
		   (pdu->dlen && c->ddigest ? CXE_DIGEST_LEN : 0);
	u32 end = pdu->seq + wire;

	bool before;

	cc->pdu_wire = wire;
	if (cc->seq_known && end - cc->rcv_nxt >= wire &&
	    end - cc->rcv_nxt <= CXE_C4_RX_MAX_SPAN)
		cc->pdu_wire = end - cc->rcv_nxt;
	cc->rcv_nxt = end;
	cc->seq_known = true;
	before = cc->pdu_wire > wire;
	/*
	 * A T6 charges its window with what it hands up alone, the header
	 * and the data of a data message (mainline cxgbit gives back those):
	 * placed data, digests and padding are not the driver's to return.
	 */
	if (cc->t->dev->chip == CXE_CHIP_T6)
		cc->pdu_wire = pdu->hdr_len + (pdu->data ? pdu->dlen : 0);
	return before;
}

static bool cxe_c4_rx_ready(struct cxe_c4tid *t)
{
	return !skb_queue_empty_lockless(&t->rxq) || READ_ONCE(t->st.ended) ||
	       READ_ONCE(t->st.state) == CXE_C4CONN_DONE;
}

int cxe_c4_recv_hdr(struct cxe_conn *c, u8 *hdr, u32 *flags)
{
	struct cxe_c4c *cc = cxe_c4c(c);
	struct cxe_c4tid *t = cc->t;
	struct cxe_c4rx_pdu pdu;
	struct sk_buff *skb;
	bool stands_for;
	int ret;

	*flags = 0;
	if (cc->cur)
		cxe_c4_pdu_done(cc);
	for (;;) {
		skb = skb_dequeue(&t->rxq);
		if (!skb) {
			if (READ_ONCE(t->st.ended) ||
			    READ_ONCE(t->st.state) == CXE_C4CONN_DONE)
				return -ECONNRESET;
			cxe_c4_rx_ack(cc, true);
			cxe_cstat(c, CXE_STAT_RX_WAITS, 1);
			ret = wait_event_interruptible(t->wq, cxe_c4_rx_ready(t));
			if (ret)
				return ret;
			continue;
		}
		cxe_cstat(c, CXE_STAT_MODEL_CPLS, 1);
		ret = cxe_c4rx_msg(&cc->as, skb->data, skb->len, &pdu);
		if (ret < 0) {
			kfree_skb(skb);
			pr_err("%pISpc: the chip's messages make no PDU (%d): dropping the connection\n",
			       &c->peer, ret);
			return -ECONNABORTED;
		}
		/* the data message stays until the PDU is done with */
		if (skb->data[0] == CXE_CPL_ISCSI_DATA) {
			kfree_skb(cc->data);
			cc->data = skb;
		} else {
			kfree_skb(skb);
		}
		if (ret == CXE_C4RX_PDU)
			break;
	}
	cc->pdu = pdu;
	cc->cur = true;
	stands_for = cxe_c4_pdu_wire(cc, &pdu);
	if (pdu.hcrc_err) {
		cxe_cstat(c, CXE_STAT_HDIGEST_ERR, 1);
		return -EBADMSG;
	}
	if (pdu.placed)
		cxe_c4_ddp_placed(cc, &pdu, stands_for, flags);
	memcpy(hdr, pdu.hdr, pdu.hdr_len);
	cxe_cstat(c, CXE_STAT_PDUS_RX, 1);
	return 0;
}

/* The data of the PDU handed up, from its data message to where it belongs */
int cxe_c4_recv_data(struct cxe_conn *c, const struct cxe_data *dst,
		     u32 dlen, bool *bad)
{
	struct cxe_c4c *cc = cxe_c4c(c);
	u32 have = min(dst->len, dlen);
	const u8 *src;

	*bad = false;
	if (!dlen)
		return 0;
	if (!cc->cur || cc->pdu.dlen != dlen)
		return -EPROTO;
	if (cc->pdu.dcrc_err) {
		*bad = true;
		cxe_cstat(c, CXE_STAT_DDIGEST_ERR, 1);
	}
	/* the chip placed it by the Data-Out's tag, in the task's pages */
	if (cc->pdu.placed)
		return dst->sgl ? 0 : -EPROTO;
	if (!cc->data || cc->data->len < CXE_CPL_ISCSI_DATA_LEN + dlen)
		return -EPROTO;
	if (!have)
		return 0;
	src = cc->data->data + CXE_CPL_ISCSI_DATA_LEN;
	if (!dst->sgl) {
		memcpy(dst->buf, src, have);
		return 0;
	}
	if (sg_pcopy_from_buffer(dst->sgl, dst->nents, src, have,
				 dst->offset) != have)
		return -EINVAL;
	cxe_cstat(c, CXE_STAT_BYTES_COPIED, have);
	return 0;
}

/* The data segment came in its message with the PDU: nothing is left to skip */
int cxe_c4_data_taken(struct cxe_conn *c)
{
	return cxe_c4c(c)->cur ? 0 : -EPROTO;
}

/* ---- transmit ------------------------------------------------------------- */

/* One request: a PDU, or an ISO slice of a burst */
struct cxe_c4_req {
	const struct cxe_seg_burst	*plan;	/* ISO: the burst */
	const struct cxe_c4tx_slice	*slice;	/* ISO: the slice */
	u32				dlen;
};

static int cxe_c4_build_n(struct cxe_c4c *cc, const struct cxe_c4_req *r,
			  u32 entries, bool compl, u8 *head,
			  struct cxe_c4tx_wr *wr)
{
	if (r->slice && r->slice->iso)
		return cxe_c4tx_iso(head, CXE_C4TX_HEAD_MAX, &cc->txc, r->plan,
				    r->slice, entries, compl, wr);
	return cxe_c4tx_pdu(head, CXE_C4TX_HEAD_MAX, &cc->txc, CXE_BHS_LEN,
			    r->dlen, entries, compl, wr);
}

/*
 * The request's head. The firmware reads as many 16-byte units of the
 * queue as the request says, so its length must be what cxgb4 writes: the
 * head, then a gather list of one entry per page of the payload as
 * cxe_c4_req_skb() lays it out, which the payload's length (the first
 * build's) gives.
 */
static int cxe_c4_build(struct cxe_c4c *cc, const struct cxe_c4_req *r,
			bool compl, u8 *head, struct cxe_c4tx_wr *wr)
{
	int ret = cxe_c4_build_n(cc, r, 1, compl, head, wr);

	if (ret < 0 || wr->imm)
		return ret;
	return cxe_c4_build_n(cc, r, DIV_ROUND_UP(wr->payload, PAGE_SIZE),
			      compl, head, wr);
}

/*
 * The request's skb: its head, then its payload (header, data, zero
 * padding), immediate in the head or as the fragments cxgb4 gathers.
 */
static struct sk_buff *cxe_c4_req_skb(struct cxe_c4c *cc, const u8 *head,
				      const struct cxe_c4tx_wr *wr,
				      const u8 *hdr, const struct cxe_data *src)
{
	u32 dlen = src ? src->len : 0;
	struct sk_buff *skb;
	int err;
	u8 *p;

	p = cxe_buf_grow(&cc->req, &cc->req_cap, wr->payload);
	if (!p)
		return NULL;
	memcpy(p, hdr, CXE_BHS_LEN);
	if (src && src->sgl) {
		if (sg_pcopy_to_buffer(src->sgl, src->nents, p + CXE_BHS_LEN,
				       dlen, src->offset) != dlen)
			return NULL;
	} else if (dlen) {
		memcpy(p + CXE_BHS_LEN, src->buf, dlen);
	}
	memset(p + CXE_BHS_LEN + dlen, 0, wr->payload - CXE_BHS_LEN - dlen);

	if (wr->imm) {
		skb = alloc_skb(wr->head_len + wr->payload, GFP_KERNEL);
		if (!skb)
			return NULL;
		skb_put_data(skb, head, wr->head_len);
		skb_put_data(skb, p, wr->payload);
		return skb;
	}
	skb = alloc_skb_with_frags(wr->head_len, wr->payload, 0, &err,
				   GFP_KERNEL);
	if (!skb)
		return NULL;
	skb_put_data(skb, head, wr->head_len);
	/*
	 * cxgb4 writes the bytes before the transport header into the queue
	 * and gathers the rest; unset, it takes a wild offset for the
	 * request's length (and BUGs in flits_to_desc())
	 */
	skb_set_transport_header(skb, wr->head_len);
	skb->data_len = wr->payload;
	skb->len += wr->payload;
	if (skb_store_bits(skb, wr->head_len, p, wr->payload)) {
		kfree_skb(skb);
		return NULL;
	}
	return skb;
}

/*
 * A request to the chip: its credits taken (waiting for an ack that
 * returns them), the connection's FW_FLOWC_WR first, in one go under the
 * connection's lock so that its requests reach the chip in order.
 */
static int cxe_c4_send_skb(struct cxe_c4c *cc, const struct cxe_c4_req *r,
			   struct cxe_c4tx_wr *wr, struct sk_buff *skb)
{
	struct cxe_c4tid *t = cc->t;
	u8 head[CXE_C4TX_HEAD_MAX];
	bool compl = false;
	int ret;

	ret = cxe_c4tid_charge(t, wr->len16, false, &compl);
	if (ret) {
		spin_unlock_bh(&t->lock);
		kfree_skb(skb);
		return ret;
	}
	/* the same request asking for an ack: the same length */
	if (compl && cxe_c4_build(cc, r, true, head, wr) >= 0)
		memcpy(skb->data, head, wr->head_len);
	ret = t->dev->ops->send(t->dev, t->tid, skb);
	spin_unlock_bh(&t->lock);
	if (!ret)
		cxe_cstat(&cc->c, CXE_STAT_MODEL_WRS, 1);
	return ret;
}

static int cxe_c4_send_req(struct cxe_c4c *cc, const struct cxe_c4_req *r,
			   const u8 *hdr, const struct cxe_data *src)
{
	u8 head[CXE_C4TX_HEAD_MAX];
	struct cxe_c4tx_wr wr;
	struct sk_buff *skb;
	int ret;

	ret = cxe_c4_build(cc, r, false, head, &wr);
	if (ret < 0)
		return ret;
	skb = cxe_c4_req_skb(cc, head, &wr, hdr, src);
	if (!skb)
		return -ENOMEM;
	return cxe_c4_send_skb(cc, r, &wr, skb);
}

/* The Login response that ends a successful login (T, NSG full feature) */
static bool cxe_c4_last_login_rsp(const u8 *bhs)
{
	return (bhs[0] & 0x3f) == 0x23 && (bhs[1] & 0x80) &&
	       (bhs[1] & 0x03) == 0x03 && !bhs[36];
}

/*
 * The chip checks the negotiated digests from the PDU after the last
 * Login request on, so the TCB change must be made before the initiator
 * can send that PDU: the last Login response is held here until
 * set_params made it (mainline cxgbit also sets them before it sends
 * that response).
 */
int cxe_c4_send_held(struct cxe_conn *c)
{
	struct cxe_c4c *cc = cxe_c4c(c);
	struct cxe_c4_req r = { .dlen = cc->held_dlen };
	struct sk_buff *skb = cc->held;
	int ret;

	if (!skb)
		return 0;
	cc->held = NULL;
	ret = cxe_c4_send_skb(cc, &r, &cc->held_wr, skb);
	if (!ret)
		cxe_cstat(c, CXE_STAT_PDUS_TX, 1);
	return ret;
}

int cxe_c4_send_pdu(struct cxe_conn *c, const u8 *bhs,
		    const struct cxe_data *src)
{
	struct cxe_c4_req r = { .dlen = src ? src->len : 0 };
	struct cxe_c4c *cc = cxe_c4c(c);
	u8 head[CXE_C4TX_HEAD_MAX];
	int ret;

	if (!c->logged_in && cxe_c4_last_login_rsp(bhs)) {
		ret = cxe_c4_build(cc, &r, false, head, &cc->held_wr);
		if (ret < 0)
			return ret;
		kfree_skb(cc->held);
		cc->held = cxe_c4_req_skb(cc, head, &cc->held_wr, bhs, src);
		cc->held_dlen = r.dlen;
		return cc->held ? 0 : -ENOMEM;
	}
	ret = cxe_c4_send_req(cc, &r, bhs, src);
	if (!ret)
		cxe_cstat(c, CXE_STAT_PDUS_TX, 1);
	return ret;
}

/* A burst in the chip's slices: ISO requests, or PDU by PDU */
int cxe_c4_send_burst(struct cxe_conn *c, const struct cxe_burst *b)
{
	struct cxe_c4c *cc = cxe_c4c(c);
	struct cxe_seg_burst plan = cxe_burst_plan(b);
	u32 i, n = cxe_seg_count(&plan);
	struct cxe_c4tx_slice s;
	int ret = 0;

	if (!n)
		return -EINVAL;
	for (i = 0; !ret && cxe_c4tx_slice(&plan, b->tmpl, &cc->hw, i, &s);
	     i++) {
		struct cxe_data src = {
			.sgl = b->sgl,
			.nents = b->nents,
			.offset = s.offset,
			.len = s.len,
		};
		struct cxe_c4_req r = {
			.plan = &plan,
			.slice = &s,
			.dlen = s.len,
		};

		ret = cxe_c4_send_req(cc, &r, s.tmpl, &src);
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
