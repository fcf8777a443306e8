// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext software adapter: the connection's stream. What hardware does
 * on the wire, done on a kernel TCP socket: digests checked and made, the
 * receive stream parsed into PDUs with each data segment copied once from
 * the socket's buffers to where it belongs (ddp.c places write data),
 * Data-In bursts cut into PDUs, and pages sent without a copy. The pure
 * parts (parser, digest framing, segmentation plan) are in pdu/.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/net.h>
#include <linux/tcp.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <linux/bvec.h>
#include <linux/uio.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <target/iscsi/iscsi_target_core.h>

#include "soft.h"
#include "pdu/cxe_bhs.h"
#include "pdu/cxe_seg.h"

/* ---- socket I/O -------------------------------------------------------------- */

static int cxe_send(struct cxe_conn *c, const void *buf, size_t len, bool more)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0) };
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
	int ret;

	while (iov.iov_len) {
		ret = kernel_sendmsg(cxe_soft(c)->sock, &msg, &iov, 1, iov.iov_len);
		if (ret <= 0)
			return ret ? ret : -ECONNRESET;
		iov.iov_base += ret;
		iov.iov_len -= ret;
	}
	return 0;
}

/*
 * Send n bytes of a page without copying them: the socket takes a reference
 * on the page (as stock LIO's sendpage path does), the command keeps its
 * pages until it is freed. A page the network stack may not hold (slab,
 * no reference count) is copied instead.
 */
static int cxe_send_page(struct cxe_conn *c, struct page *pg, u32 off, u32 n,
			 u8 *mapped, bool more)
{
	int flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0);
	int ret;

	if (!sendpage_ok(pg))
		return cxe_send(c, mapped, n, more);
	while (n) {
#ifdef CXE_HAVE_KERNEL_SENDPAGE	/* see the Makefile */
		ret = kernel_sendpage(cxe_soft(c)->sock, pg, off, n, flags);
#else
		struct msghdr msg = { .msg_flags = flags | MSG_SPLICE_PAGES };
		struct bio_vec bv;

		bvec_set_page(&bv, pg, n, off);
		iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, &bv, 1, n);
		ret = sock_sendmsg(cxe_soft(c)->sock, &msg);
#endif
		if (ret <= 0)
			return ret ? ret : -ECONNRESET;
		off += ret;
		n -= ret;
	}
	return 0;
}

/*
 * Walk [off, off + len) of a scatterlist one page piece at a time: receive
 * and transmit both go straight to the command's pages.
 */
typedef int (*cxe_sg_fn)(struct cxe_conn *c, struct page *pg, u32 pg_off,
			 u8 *p, u32 n, u32 *crc, bool more);

static int cxe_sg_walk(struct cxe_conn *c, struct scatterlist *sgl, u32 nents,
		       u32 off, u32 len, u32 *crc, bool more, cxe_sg_fn fn)
{
	struct scatterlist *sg;
	int i, ret = 0;

	for_each_sg(sgl, sg, nents, i) {
		u32 sg_off = sg->offset, sg_len = sg->length;

		if (!len)
			break;
		if (off >= sg_len) {
			off -= sg_len;
			continue;
		}
		sg_off += off;
		sg_len -= off;
		off = 0;
		while (sg_len && len && !ret) {
			struct page *pg = nth_page(sg_page(sg), sg_off >> PAGE_SHIFT);
			u32 pg_off = offset_in_page(sg_off);
			u32 n = min3(sg_len, len, (u32)PAGE_SIZE - pg_off);
			u8 *p = kmap_local_page(pg);

			ret = fn(c, pg, pg_off, p + pg_off, n, crc, more || len > n);
			kunmap_local(p);
			sg_off += n;
			sg_len -= n;
			len -= n;
		}
		if (ret)
			return ret;
	}
	return len ? -EINVAL : 0;
}

static int cxe_sg_send_fn(struct cxe_conn *c, struct page *pg, u32 pg_off,
			  u8 *p, u32 n, u32 *crc, bool more)
{
	if (crc)
		*crc = cxe_crc32c(*crc, p, n);
	return cxe_send_page(c, pg, pg_off, n, p, more);
}

/* ---- receive ----------------------------------------------------------------- */

/*
 * Every byte of the stream goes through the pure parser (pdu/cxe_rx.c),
 * fed straight from the socket's receive queue by tcp_read_sock(): it
 * checks lengths and digests and hands the data segment to the callbacks
 * below, which copy it from the skbs into its destination (the command's
 * pages: placement) with no buffer in between. The parser pauses after
 * each header, so the PDU layer says where the data goes before any of it
 * is consumed, and after each PDU. Receive aggregation: while PDUs are
 * queued the thread goes from one to the next without sleeping;
 * pdus_rx / rx_waits is the number handled per wake-up.
 */
static int cxe_rx_header_cb(void *ctx, const u8 *hdr, u32 hdr_len, int status)
{
	struct cxe_soft_conn *sc = cxe_soft(ctx);

	memcpy(sc->hdr, hdr, hdr_len);
	sc->got_hdr = true;
	sc->place_sg = NULL;
	/* a header digest error at ERL 0: its lengths cannot be trusted */
	return status & CXE_RX_HDIGEST_ERR ? -EBADMSG : 1;
}

/* A piece of the data segment, at off within it (may run in atomic context) */
static int cxe_rx_data_cb(void *ctx, u32 off, const u8 *buf, u32 len)
{
	struct cxe_conn *c = ctx;
	struct cxe_soft_conn *sc = cxe_soft(c);
	const struct cxe_data *dst = sc->dst;

	/* bytes past dst->len nobody wants (overflow, refused PDUs) */
	if (!dst || off >= dst->len)
		return 0;
	len = min(len, dst->len - off);
	if (!dst->sgl) {
		memcpy((u8 *)dst->buf + off, buf, len);
		return 0;
	}
	if (!c->ddp)
		return cxe_soft_bounce(sc, dst, off, buf, len);
	return cxe_soft_place(sc, dst, dst->offset + off, buf, len);
}

static int cxe_rx_done_cb(void *ctx, int status)
{
	struct cxe_soft_conn *sc = cxe_soft(ctx);

	sc->dstatus = status;
	sc->pdu_done = true;
	return 1;
}

static const struct cxe_rx_ops cxe_soft_rx_ops = {
	.header	= cxe_rx_header_cb,
	.data	= cxe_rx_data_cb,
	.done	= cxe_rx_done_cb,
};

/* tcp_read_sock() actor: feed the parser until it pauses or fails */
static int cxe_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			unsigned int offset, size_t len)
{
	struct cxe_conn *c = desc->arg.data;
	struct skb_seq_state st;
	unsigned int used = 0, n;
	const u8 *p;
	long fed;

	if (!desc->count)
		return 0;
	skb_prepare_seq_read(skb, offset, offset + len, &st);
	while ((n = skb_seq_read(used, &p, &st))) {
		fed = cxe_rx_feed(&cxe_soft(c)->rx, p, n, &cxe_soft_rx_ops, c);
		if (fed < 0) {
			desc->error = fed;
			desc->count = 0;
			break;
		}
		used += fed;
		if (cxe_soft(c)->rx.paused) {
			desc->count = 0;
			break;
		}
	}
	skb_abort_seq_read(&st);
	return used;
}

/*
 * iSCSI has no use for TCP urgent data, and tcp_read_sock() stops short of
 * the urgent byte for good: the stream cannot go on (waiting would spin),
 * so the connection ends.
 */
static bool cxe_urgent(struct cxe_conn *c, struct sock *sk)
{
	if (!READ_ONCE(tcp_sk(sk)->urg_data))
		return false;
	pr_warn_ratelimited("%pISpc: TCP urgent data: dropping the connection\n",
			    &c->peer);
	return true;
}

/*
 * Why a reader waiting for more of the stream must stop: a socket error,
 * the peer's close, or a signal (LIO stopping the thread, or its login
 * timer). 0: it may wait.
 */
static int cxe_wait_stop(struct sock *sk)
{
	if (sk->sk_err)
		return sock_error(sk);
	if (sk->sk_shutdown & RCV_SHUTDOWN || sock_flag(sk, SOCK_DONE))
		return -ECONNRESET;
	if (signal_pending(current))
		return -EINTR;
	return 0;
}

/*
 * Sleep until more data is queued after last, for at most what is left of
 * *timeo: the socket's receive timeout, as sock_recvmsg() honours it. LIO
 * sets it to its login timeout for the login phase and lifts it after.
 */
static int cxe_wait_data(struct sock *sk, long *timeo,
			 const struct sk_buff *last)
{
	if (!*timeo)
		return -EAGAIN;
	sk_wait_data(sk, timeo, last);
	return 0;
}

/*
 * Peek len bytes of the stream from its start into buf, once they are all
 * queued; returns early on urgent data, an error, the peer's close or a
 * signal (LIO's login timer).
 */
static int cxe_peek(struct cxe_conn *c, void *buf, u32 len)
{
	struct msghdr msg = { .msg_flags = MSG_PEEK | MSG_DONTWAIT };
	struct kvec iov = { .iov_base = buf, .iov_len = len };
	struct sock *sk = cxe_soft(c)->sock->sk;
	long timeo = sock_rcvtimeo(sk, false);
	int ret;

	lock_sock(sk);
	for (;;) {
		if (cxe_urgent(c, sk)) {
			ret = -ECONNABORTED;
			break;
		}
		if (tcp_inq(sk) >= len) {
			ret = 0;
			break;
		}
		ret = cxe_wait_stop(sk) ?:
		      cxe_wait_data(sk, &timeo,
				    skb_peek_tail(&sk->sk_receive_queue));
		if (ret)
			break;
	}
	release_sock(sk);
	if (ret)
		return ret;
	ret = kernel_recvmsg(cxe_soft(c)->sock, &msg, &iov, 1, len, msg.msg_flags);
	if (ret < 0)
		return ret;
	return ret == len ? 0 : -ECONNRESET;
}

/*
 * The first Login request, from the socket without consuming it. One that
 * LIO would refuse anyway (an AHS, more text than a login PDU may carry)
 * is not held: it is read from the socket as any PDU.
 */
static int cxe_held_pull(struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u8 bhs[CXE_BHS_LEN];
	long fed;
	u64 len;
	int ret;

	if (!sc->held_buf) {
		ret = cxe_peek(c, bhs, sizeof(bhs));
		if (ret)
			return ret;
		if (cxe_bhs_ahs_len(bhs) || cxe_bhs_dlen(bhs) > MAX_KEY_VALUE_PAIRS) {
			sc->held = false;
			return 0;
		}
		len = cxe_pdu_wire_len(0, cxe_bhs_dlen(bhs), false, false);
		sc->held_buf = kmalloc(len, GFP_KERNEL);
		if (!sc->held_buf)
			return -ENOMEM;
		ret = cxe_peek(c, sc->held_buf, len);
		if (ret)
			return ret;
		sc->held_len = len;
	}
	fed = cxe_rx_feed(&sc->rx, sc->held_buf + sc->held_off,
			  sc->held_len - sc->held_off, &cxe_soft_rx_ops, c);
	if (fed < 0)
		return fed;
	sc->held_off += fed;
	/* the parser pauses after the header and at the PDU's end */
	return sc->rx.paused ? 0 : -EPROTO;
}

/* The first send: the held Login request is LIO's now, consume it. */
static int cxe_skip_actor(read_descriptor_t *desc, struct sk_buff *skb,
			  unsigned int offset, size_t len)
{
	size_t n = min_t(size_t, len, desc->count);

	desc->count -= n;
	return n;
}

static int cxe_held_release(struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	read_descriptor_t desc = { .count = sc->held_len };
	struct sock *sk = cxe_soft(c)->sock->sk;

	sc->held = false;
	if (!sc->held_buf)
		return 0;
	if (sc->held_off != sc->held_len)
		return -EPROTO;	/* answered before it was read whole */
	lock_sock(sk);
	tcp_read_sock(sk, &desc, cxe_skip_actor);
	release_sock(sk);
	kfree(sc->held_buf);
	sc->held_buf = NULL;
	return desc.count ? -EPROTO : 0;
}

/*
 * Feed the parser from the socket until it pauses: after a header, or
 * after a PDU. Sleeps while the receive queue is empty (counted in
 * rx_waits); returns early on an error, the peer's close or a signal (LIO
 * stopping the thread).
 */
static int cxe_rx_pull(struct cxe_conn *c)
{
	struct sock *sk = cxe_soft(c)->sock->sk;
	long timeo = sock_rcvtimeo(sk, false);
	int ret = 0;

	if (cxe_soft(c)->held) {
		ret = cxe_held_pull(c);
		if (ret || cxe_soft(c)->held)
			return ret;
	}

	lock_sock(sk);
	for (;;) {
		read_descriptor_t desc = { .arg.data = c, .count = 1 };

		if (cxe_urgent(c, sk)) {
			ret = -ECONNABORTED;
			break;
		}
		tcp_read_sock(sk, &desc, cxe_rx_actor);
		if (desc.error) {
			ret = desc.error;
			break;
		}
		if (!desc.count)
			break;
		ret = cxe_wait_stop(sk);
		if (ret)
			break;
		cxe_cstat(c, CXE_STAT_RX_WAITS, 1);
		ret = cxe_wait_data(sk, &timeo, NULL);
		if (ret)
			break;
	}
	/* where the data segment starts, when paused after a header */
	cxe_soft(c)->hdr_seq = tcp_sk(sk)->copied_seq;
	release_sock(sk);
	return ret;
}

int cxe_soft_recv_hdr(struct cxe_conn *c, u8 *hdr)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	int ret;

	sc->hdr = hdr;
	sc->got_hdr = false;
	/*
	 * A data segment the PDU layer did not ask for (a TMF, Logout or
	 * SNACK with data, which LIO never reads) goes through the parser,
	 * its digest checked, and nowhere else: the stream stays in step.
	 */
	do {
		ret = cxe_rx_pull(c);
	} while (!ret && !sc->got_hdr);
	if (ret == -EBADMSG) {
		cxe_cstat(c, CXE_STAT_HDIGEST_ERR, 1);
		return ret;
	}
	if (ret == -CXE_RX_EBADOP || ret == -CXE_RX_E2BIG) {
		/*
		 * The parser refused the header (an opcode no initiator sends,
		 * data above the limit): hand it up all the same, so that the
		 * PDU layer answers with a Reject; the stream is dead after it.
		 */
		memcpy(hdr, sc->rx.hdr, sc->rx.hdr_len);
		ret = 0;
	}
	if (!ret)
		cxe_cstat(c, CXE_STAT_PDUS_RX, 1);
	return ret;
}

int cxe_soft_recv_data(struct cxe_conn *c, const struct cxe_data *dst,
		       u32 dlen, bool *bad)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 have = min(dst->len, dlen);
	int ret;

	*bad = false;
	if (!dlen)
		return 0;
	if (sc->rx.state != CXE_RX_DATA || sc->rx.dlen != dlen || sc->rx.have)
		return -EPROTO;	/* not paused before this PDU's data */
	sc->dst = dst;
	sc->pdu_done = false;
	ret = cxe_rx_pull(c);
	sc->dst = NULL;
	if (ret)
		return ret;
	if (!sc->pdu_done)
		return -EPROTO;
	if (sc->dstatus & CXE_RX_DDIGEST_ERR) {
		*bad = true;
		cxe_cstat(c, CXE_STAT_DDIGEST_ERR, 1);
	}
	if (have && dst->sgl)
		cxe_cstat(c, c->ddp ? CXE_STAT_BYTES_PLACED : CXE_STAT_BYTES_COPIED,
			  have);
	return 0;
}

/*
 * LIO refused a Data-Out and read its data segment (with pad and digest)
 * from the socket itself (iscsit_dump_data_payload). The parser, paused
 * after the header, skips it, once the socket shows exactly that many
 * bytes were taken.
 */
int cxe_soft_data_taken(struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 taken = READ_ONCE(tcp_sk(cxe_soft(c)->sock->sk)->copied_seq) - sc->hdr_seq;
	u32 wire = cxe_rx_data_wire_len(&sc->rx);

	if (taken != wire || !cxe_rx_skip_data(&sc->rx)) {
		pr_err("%pISpc: %u bytes of a %u-byte data segment were read past the adapter: stream lost\n",
		       &c->peer, taken, wire);
		return -EPROTO;
	}
	return 0;
}

/* ---- transmit ---------------------------------------------------------------- */

static int cxe_soft_send(struct cxe_conn *c, const u8 *bhs,
			 const struct cxe_data *src, bool more)
{
	u8 hdr[CXE_BHS_LEN + CXE_DIGEST_LEN];
	u32 hlen = CXE_BHS_LEN, crc = ~0u, dlen = src ? src->len : 0;
	u32 padlen = cxe_pad_len(dlen);
	bool tail = padlen || c->ddigest;
	static const u8 zeros[4];
	u8 dig[CXE_DIGEST_LEN];
	int ret;

	if (cxe_soft(c)->held) {
		ret = cxe_held_release(c);
		if (ret)
			return ret;
	}
	memcpy(hdr, bhs, CXE_BHS_LEN);
	if (c->hdigest) {
		cxe_put_le32(hdr + CXE_BHS_LEN, cxe_digest(hdr, CXE_BHS_LEN));
		hlen += CXE_DIGEST_LEN;
	}
	ret = cxe_send(c, hdr, hlen, dlen || more);
	if (ret || !dlen)
		goto out;
	if (src->sgl) {
		ret = cxe_sg_walk(c, src->sgl, src->nents, src->offset, dlen,
				  c->ddigest ? &crc : NULL, tail || more,
				  cxe_sg_send_fn);
	} else {
		/* a buffer of the PDU layer (sense data, text): copied */
		if (c->ddigest)
			crc = cxe_crc32c(crc, src->buf, dlen);
		ret = cxe_send(c, src->buf, dlen, tail || more);
	}
	if (!ret && padlen) {
		crc = cxe_crc32c(crc, zeros, padlen);
		ret = cxe_send(c, zeros, padlen, c->ddigest || more);
	}
	if (!ret && c->ddigest) {
		cxe_put_le32(dig, ~crc);
		ret = cxe_send(c, dig, sizeof(dig), more);
	}
out:
	if (!ret)
		cxe_cstat(c, CXE_STAT_PDUS_TX, 1);
	return ret;
}

int cxe_soft_send_pdu(struct cxe_conn *c, const u8 *bhs,
		      const struct cxe_data *src)
{
	return cxe_soft_send(c, bhs, src, false);
}

/* Segmentation: the burst becomes PDUs by the pure planner. */
int cxe_soft_send_burst(struct cxe_conn *c, const struct cxe_burst *b)
{
	struct cxe_seg_burst plan = {
		.offset = b->offset,
		.len = b->len,
		.max_pdu = b->max_pdu,
		.datasn = b->datasn,
		.status = b->status,
	};
	u32 i, n = cxe_seg_count(&plan);
	struct cxe_seg_pdu pdu;
	u8 bhs[CXE_BHS_LEN];
	int ret;

	if (!n)
		return -EINVAL;
	for (i = 0; cxe_seg_pdu(&plan, i, &pdu); i++) {
		struct cxe_data src = {
			.sgl = b->sgl,
			.nents = b->nents,
			.offset = pdu.offset,
			.len = pdu.len,
		};

		cxe_seg_datain_hdr(bhs, b->tmpl, &pdu);
		ret = cxe_soft_send(c, bhs, &src, i + 1 < n);
		if (ret)
			return ret;
	}
	cxe_cstat(c, CXE_STAT_BURSTS, 1);
	cxe_cstat(c, CXE_STAT_BURST_PDUS, n);
	return n;
}
