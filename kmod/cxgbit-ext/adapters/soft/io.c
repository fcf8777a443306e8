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
#include <linux/gfp.h>
#include <linux/bitmap.h>
#include <linux/scatterlist.h>
#include <linux/bvec.h>
#include <linux/indirect_call_wrapper.h>
#include <linux/uio.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <target/iscsi/iscsi_target_core.h>

#include "soft.h"
#include "pdu/cxe_bhs.h"
#include "pdu/cxe_seg.h"

/* ---- receive ----------------------------------------------------------------- */

/*
 * Every byte of the stream goes through the pure parser (pdu/cxe_rx.c),
 * fed straight from the socket's receive queue by tcp_read_sock(): it
 * checks lengths and digests and hands the data segment to the callbacks
 * below, which copy it to its destination with no buffer in between;
 * placed write data it only accounts for (cxe_rx_take_skb()). The parser
 * pauses after each header, so the PDU layer says where the data goes
 * before any of it is consumed, and after each PDU. While PDUs are queued
 * the thread goes from one to the next without sleeping (pdus_rx /
 * rx_waits is the number handled per wake-up), as any reader of the
 * socket would: each PDU is still parsed and handed up on its own,
 * nothing is coalesced.
 */
static int cxe_rx_header_cb(void *ctx, const u8 *hdr, u32 hdr_len, int status)
{
	struct cxe_soft_conn *sc = cxe_soft(ctx);

	memcpy(sc->hdr, hdr, hdr_len);
	sc->got_hdr = true;
	sc->place.sgl = NULL;
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

/* The parser's side of cxe_stream_pull(): it stops at each pause */
static long cxe_rx_take(struct cxe_conn *c, const u8 *p, unsigned int n)
{
	return cxe_rx_feed(&cxe_soft(c)->rx, p, n, &cxe_soft_rx_ops, c);
}

/*
 * Write data that is placed (DDP on, the command's pages its destination)
 * skips the parser's byte feed: each skb's share of the data segment goes
 * from the skb's pages to the command's by one skb_copy_datagram_iter(),
 * as stock LIO's receive copies it through tcp_recvmsg(), and the parser is
 * told how many bytes were taken and their CRC. Anything else (headers,
 * pad, digests, data for a buffer or a bounce page, bytes past what the
 * PDU layer wants) is fed.
 */
static long cxe_rx_take_skb(struct cxe_conn *c, const struct sk_buff *skb,
			    unsigned int off, unsigned int len)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	const struct cxe_data *dst = sc->dst;
	u32 have = sc->rx.have, crc = sc->rx.crc, n;
	int ret;

	n = min(len, cxe_rx_data_left(&sc->rx));
	if (!n || !dst || !dst->sgl || !c->ddp || have >= dst->len)
		return 0;
	n = min(n, dst->len - have);
	ret = cxe_soft_place_skb(sc, dst, dst->offset + have, skb, off, n,
				 sc->rx.ddigest ? &crc : NULL);
	if (ret) {
		/* some of the bytes may be in the pages: the stream is lost */
		cxe_rx_kill(&sc->rx);
		return ret;
	}
	return cxe_rx_data_took(&sc->rx, n, crc, &cxe_soft_rx_ops, c);
}

static bool cxe_rx_paused(struct cxe_conn *c)
{
	return cxe_soft(c)->rx.paused;
}

static const struct cxe_stream_reader cxe_rx_reader = {
	.take		= cxe_rx_take,
	.take_skb	= cxe_rx_take_skb,
	.done		= cxe_rx_paused,
};

struct cxe_stream_pull {
	struct cxe_conn *c;
	const struct cxe_stream_reader *r;
};

/*
 * The bytes of [offset + used, offset + len) of skb that take_skb() did
 * not take, to the reader's take() a piece at a time; returns used.
 */
static noinline int cxe_stream_feed(read_descriptor_t *desc,
				    struct cxe_stream_pull *pl,
				    struct sk_buff *skb, unsigned int offset,
				    unsigned int used, unsigned int len)
{
	struct skb_seq_state st __uninitialized;	/* set by prepare */
	unsigned int start = used, n;
	const u8 *p;
	long took;

	skb_prepare_seq_read(skb, offset + used, offset + len, &st);
	while ((n = skb_seq_read(used - start, &p, &st))) {
		took = INDIRECT_CALL_1(pl->r->take, cxe_rx_take, pl->c, p, n);
		if (took < 0) {
			desc->error = took;
			desc->count = 0;
			break;
		}
		used += took;
		if (INDIRECT_CALL_1(pl->r->done, cxe_rx_paused, pl->c)) {
			desc->count = 0;
			break;
		}
	}
	skb_abort_seq_read(&st);
	return used;
}

/*
 * tcp_read_sock() actor: hand the bytes to the reader until it is done.
 * Called per skb piece; the parser's hooks are called directly, as the
 * kernel's protocol handlers are.
 */
static int cxe_stream_actor(read_descriptor_t *desc, struct sk_buff *skb,
			    unsigned int offset, size_t len)
{
	struct cxe_stream_pull *pl = desc->arg.data;
	unsigned int used = 0;
	long took;

	/*
	 * tcp_read_sock() calls again for the rest of an skb the reader
	 * stopped in: stopped is stopped, and this is the common return.
	 */
	if (!desc->count)
		return 0;
	if (pl->r->take_skb) {
		took = INDIRECT_CALL_1(pl->r->take_skb, cxe_rx_take_skb, pl->c,
				       skb, offset, len);
		if (took < 0) {
			desc->error = took;
			desc->count = 0;
			return 0;
		}
		/* done() speaks of the last bytes taken: only when there were some */
		used = took;
		if (used && INDIRECT_CALL_1(pl->r->done, cxe_rx_paused, pl->c)) {
			desc->count = 0;
			return used;
		}
		if (used == len)
			return used;
	}
	return cxe_stream_feed(desc, pl, skb, offset, used, len);
}

/*
 * iSCSI has no use for TCP urgent data, and tcp_read_sock() stops short of
 * the urgent byte for good: the stream cannot go on (waiting would spin),
 * so the connection ends.
 */
bool cxe_urgent(struct cxe_conn *c, struct sock *sk)
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
int cxe_wait_stop(struct sock *sk)
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
int cxe_wait_data(struct sock *sk, long *timeo, const struct sk_buff *last)
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
 * The socket's stream to a reader (the parser) until it is done: after a
 * header or a PDU. When the receive queue is empty the thread sleeps
 * (counted in rx_waits). Returns early on an error,
 * the peer's close or a signal (LIO stopping the thread). *copied, when
 * given, gets the stream's position at the end (tcp copied_seq).
 */
int cxe_stream_pull(struct cxe_conn *c, const struct cxe_stream_reader *r,
		    u32 *copied)
{
	struct cxe_stream_pull pl = { .c = c, .r = r };
	struct sock *sk = cxe_soft(c)->sock->sk;
	long timeo = sock_rcvtimeo(sk, false);
	int ret = 0;

	lock_sock(sk);
	for (;;) {
		read_descriptor_t desc = { .arg.data = &pl, .count = 1 };

		if (cxe_urgent(c, sk)) {
			ret = -ECONNABORTED;
			break;
		}
		tcp_read_sock(sk, &desc, cxe_stream_actor);
		if (desc.error) {
			ret = desc.error;
			break;
		}
		if (!desc.count)
			break;	/* the reader is done */
		ret = cxe_wait_stop(sk);
		if (ret)
			break;
		cxe_cstat(c, CXE_STAT_RX_WAITS, 1);
		ret = cxe_wait_data(sk, &timeo, NULL);
		if (ret)
			break;
	}
	if (copied)
		*copied = tcp_sk(sk)->copied_seq;
	release_sock(sk);
	return ret;
}

/* The parser, first through a held Login request (cm.c) */
static int cxe_rx_pull(struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	int ret;

	if (sc->held) {
		ret = cxe_held_pull(c);
		if (ret || sc->held)
			return ret;
	}
	/* hdr_seq: where the data segment starts, when paused after a header */
	return cxe_stream_pull(c, &cxe_rx_reader, &sc->hdr_seq);
}

int cxe_soft_recv_hdr(struct cxe_conn *c, u8 *hdr, u32 *flags)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	int ret;

	*flags = 0;
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
	u32 taken, wire;

	taken = READ_ONCE(tcp_sk(sc->sock->sk)->copied_seq) - sc->hdr_seq;
	wire = cxe_rx_data_wire_len(&sc->rx);

	if (taken != wire || !cxe_rx_skip_data(&sc->rx)) {
		pr_err("%pISpc: %u bytes of a %u-byte data segment were read past the adapter: stream lost\n",
		       &c->peer, taken, wire);
		return -EPROTO;
	}
	return 0;
}

/* ---- transmit ---------------------------------------------------------------- */

/*
 * A PDU that lends pages, or a whole Data-In burst, goes to TCP as one
 * batch of pieces (any other PDU: cxe_tx_pdu_copied()): each PDU's header
 * (with its digest), its data, then its pad and data digest as one piece.
 * The command's pages go without a copy, as stock LIO sends them; the
 * small pieces and the PDU layer's buffers are copied once, as TCP would
 * copy them. A batch costs one socket lock and one call into TCP,
 * not one of each per piece. How, the kernel's exports tell (the Makefile):
 * - tcp_sendpage_locked() exported (before 6.5): the socket is locked once;
 *   buffers go through tcp_sendmsg_locked(), which copies them, pages
 *   through tcp_sendpage_locked(), which takes a reference on them. TCP
 *   sendmsg there copies the pages it is given, whatever the flags say.
 * - later kernels: the pieces gather in a bio_vec array that one
 *   sock_sendmsg() with MSG_SPLICE_PAGES hands over. TCP takes a reference
 *   on every page it is given and may hold it until the bytes are
 *   acknowledged, so the copied pieces live in page fragments of the
 *   connection's own cache, never on the stack or in slab memory
 *   (sendpage_ok()); the batch drops its own reference to each once the
 *   call has returned.
 * A batch of more than CXE_TX_PIECES pieces is cut into parts, one call
 * into TCP each, the socket lock let go between them: the ACKs queued while
 * it was held are processed then, and a long burst does not keep the
 * socket to itself. MSG_MORE is on all but the batch's last piece (part),
 * as it always was between the PDUs of a burst. A connection has one
 * sender at a time (the login thread, then the holder of the PDU layer's
 * tx_lock), as its byte stream needs: the batch state takes no lock.
 *
 * The stack buffers of the per-PDU paths (headers, tails, kvecs, bio_vecs,
 * here, in the receive feed and in ddp.c) are __uninitialized: each is
 * read only where it was written first, and the kernel's automatic zeroing
 * of stack variables would otherwise clear them for every PDU.
 */
/*
 * All of msg to TCP, the socket locked by the caller; a partial send (a
 * signal, the send timeout) is followed by a call that says why.
 */
static int cxe_tcp_send_locked(struct sock *sk, struct msghdr *msg)
{
	int ret;

	while (msg_data_left(msg)) {
		ret = tcp_sendmsg_locked(sk, msg, msg_data_left(msg));
		if (ret <= 0)
			return ret ? ret : -ECONNRESET;
	}
	return 0;
}

static int cxe_tx_copy(struct cxe_soft_conn *sc, const void *buf, u32 len,
		       bool more);

/* A piece of a page, copied through a mapping (cxe_tx_page() says when) */
static int cxe_tx_copy_page(struct cxe_soft_conn *sc, struct page *pg,
			    u32 off, u32 len, bool more)
{
	u8 *p = kmap_local_page(pg);
	int ret = cxe_tx_copy(sc, p + off, len, more);

	kunmap_local(p);
	return ret;
}

#ifdef CXE_HAVE_TCP_SENDPAGE_LOCKED	/* see the Makefile */

static void cxe_tx_begin(struct cxe_soft_conn *sc)
{
	lock_sock(sc->sock->sk);
}

/* A piece is in TCP; after CXE_TX_PIECES of them, the lock is let go once */
static void cxe_tx_sent(struct cxe_soft_conn *sc, bool more)
{
	struct sock *sk = sc->sock->sk;

	if (++sc->tx.n < CXE_TX_PIECES || !more)
		return;
	release_sock(sk);
	lock_sock(sk);
	sc->tx.n = 0;
}

static int cxe_tx_copy(struct cxe_soft_conn *sc, const void *buf, u32 len,
		       bool more)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0) };
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
	int ret;

	iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &iov, 1, len);
	ret = cxe_tcp_send_locked(sc->sock->sk, &msg);
	if (ret)
		return ret;
	cxe_tx_sent(sc, more);
	return 0;
}

/*
 * A page the network stack may not hold (slab, no reference count) is
 * copied. MSG_SENDPAGE_NOTLAST: TCP pushes at the batch's last piece, not
 * after each page.
 */
static int cxe_tx_page(struct cxe_soft_conn *sc, struct page *pg, u32 off,
		       u32 len, bool more)
{
	int flags = MSG_NOSIGNAL | (more ? MSG_MORE | MSG_SENDPAGE_NOTLAST : 0);
	int ret;

	if (!sendpage_ok(pg))
		return cxe_tx_copy_page(sc, pg, off, len, more);
	while (len) {
		ret = tcp_sendpage_locked(sc->sock->sk, pg, off, len, flags);
		if (ret <= 0)
			return ret ? ret : -ECONNRESET;
		off += ret;
		len -= ret;
	}
	cxe_tx_sent(sc, more);
	return 0;
}

static int cxe_tx_end(struct cxe_soft_conn *sc, int ret)
{
	sc->tx.n = 0;
	release_sock(sc->sock->sk);
	return ret;
}

void cxe_soft_tx_release(struct cxe_soft_conn *sc)
{
}

#else

static void cxe_tx_begin(struct cxe_soft_conn *sc)
{
}

/* Drop the batch's references to its copies: TCP holds its own */
static void cxe_tx_reset(struct cxe_soft_tx *tx)
{
	unsigned int i;

	for_each_set_bit(i, tx->own, tx->n)
		page_frag_free(bvec_virt(&tx->bv[i]));
	bitmap_zero(tx->own, CXE_TX_PIECES);
	tx->n = 0;
	tx->len = 0;
}

/*
 * The batch to TCP in one call; a partial send (a signal, the send timeout)
 * leaves the iterator past what was sent, and the next call says why.
 */
static int cxe_tx_flush(struct cxe_soft_conn *sc, bool more)
{
	struct cxe_soft_tx *tx = &sc->tx;
	struct msghdr msg = {
		.msg_flags = MSG_NOSIGNAL | MSG_SPLICE_PAGES | (more ? MSG_MORE : 0),
	};
	int ret = 0;

	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, tx->bv, tx->n, tx->len);
	while (msg_data_left(&msg)) {
		ret = sock_sendmsg(sc->sock, &msg);
		if (ret <= 0) {
			ret = ret ? ret : -ECONNRESET;
			break;
		}
		ret = 0;
	}
	cxe_tx_reset(tx);
	return ret;
}

/* bv[n] is set: the batch goes at its last piece, or when it is full */
static int cxe_tx_add(struct cxe_soft_conn *sc, u32 len, bool more)
{
	struct cxe_soft_tx *tx = &sc->tx;

	tx->len += len;
	if (++tx->n < CXE_TX_PIECES && more)
		return 0;
	return cxe_tx_flush(sc, more);
}

/*
 * A copy in page fragments of at most a page each: one always fits the
 * order-0 page the cache falls back to when memory is short.
 */
static int cxe_tx_copy(struct cxe_soft_conn *sc, const void *buf, u32 len,
		       bool more)
{
	struct cxe_soft_tx *tx = &sc->tx;
	u32 n;
	void *p;
	int ret;

	while (len) {
		n = min_t(u32, len, PAGE_SIZE);
		p = page_frag_alloc(&tx->frags, n, GFP_KERNEL);
		if (!p)
			return -ENOMEM;
		memcpy(p, buf, n);
		bvec_set_virt(&tx->bv[tx->n], p, n);
		__set_bit(tx->n, tx->own);
		buf += n;
		len -= n;
		ret = cxe_tx_add(sc, n, more || len);
		if (ret)
			return ret;
	}
	return 0;
}

/* A page the network stack may not hold (slab, no reference count) is copied */
static int cxe_tx_page(struct cxe_soft_conn *sc, struct page *pg, u32 off,
		       u32 len, bool more)
{
	if (!sendpage_ok(pg))
		return cxe_tx_copy_page(sc, pg, off, len, more);
	bvec_set_page(&sc->tx.bv[sc->tx.n], pg, len, off);
	return cxe_tx_add(sc, len, more);
}

/* The batch is over: what an error left unsent is dropped */
static int cxe_tx_end(struct cxe_soft_conn *sc, int ret)
{
	if (sc->tx.n && !ret)
		return cxe_tx_flush(sc, false);
	cxe_tx_reset(&sc->tx);
	return ret;
}

/* The connection is gone: the cache's page goes once TCP lets its own go */
void cxe_soft_tx_release(struct cxe_soft_conn *sc)
{
	page_frag_cache_drain(&sc->tx.frags);
}

#endif

/*
 * [offset, offset + len) of a scatterlist into the batch, a page at most
 * per piece, the data digest updated over each piece on the way. walk is
 * the task's (struct cxe_sg_pos), or the burst's when the PDU layer gave
 * none: where its last PDU ended, as a task's Data-In goes in order.
 */
static int cxe_tx_sg(struct cxe_soft_conn *sc, struct cxe_sg_pos *walk,
		     const struct cxe_data *src, u32 *crc, bool more)
{
	u32 pos = src->offset, end = src->offset + src->len, off, n;
	struct page *pg;
	int ret;

	if (cxe_sg_pos_at(walk, src->sgl, src->nents, pos))
		cxe_cstat(&sc->c, CXE_STAT_WALK_STARTS, 1);
	for (; pos < end; pos += n) {
		if (!cxe_sg_seek(walk, pos))
			return -EINVAL;
		pg = cxe_sg_page(walk, pos, &off, &n);
		n = min(n, end - pos);
		if (crc) {
			u8 *p = kmap_local_page(pg);

			*crc = cxe_crc32c(*crc, p + off, n);
			kunmap_local(p);
		}
		ret = cxe_tx_page(sc, pg, off, n, more || pos + n < end);
		if (ret)
			return ret;
	}
	return 0;
}

/* The header with its digest, if on: the length */
static u32 cxe_tx_hdr(const struct cxe_conn *c, const u8 *bhs, u8 *hdr)
{
	memcpy(hdr, bhs, CXE_BHS_LEN);
	if (!c->hdigest)
		return CXE_BHS_LEN;
	cxe_put_le32(hdr + CXE_BHS_LEN, cxe_digest(hdr, CXE_BHS_LEN));
	return CXE_BHS_LEN + CXE_DIGEST_LEN;
}

/* The pad and data digest after dlen bytes whose CRC so far is crc */
static u32 cxe_tx_tail(const struct cxe_conn *c, u32 dlen, u32 crc, u8 *tail)
{
	u32 pad = cxe_pad_len(dlen);

	memset(tail, 0, pad);
	if (!c->ddigest)
		return pad;
	crc = cxe_crc32c(crc, tail, pad);
	cxe_put_le32(tail + pad, ~crc);
	return pad + CXE_DIGEST_LEN;
}

/* One PDU into the batch; more: the batch goes on after it */
static int cxe_tx_pdu(struct cxe_soft_conn *sc, const u8 *bhs,
		      const struct cxe_data *src, struct cxe_sg_pos *walk,
		      bool more)
{
	struct cxe_conn *c = &sc->c;
	u8 hdr[CXE_BHS_LEN + CXE_DIGEST_LEN] __uninitialized;	/* [0, hlen) set */
	/* pad (up to 3 bytes) and data digest: [0, tlen) set */
	u8 tail[4 + CXE_DIGEST_LEN] __uninitialized;
	u32 hlen, crc = ~0u, dlen = src ? src->len : 0;
	u32 tlen = cxe_pad_len(dlen) + (c->ddigest ? CXE_DIGEST_LEN : 0);
	int ret;

	hlen = cxe_tx_hdr(c, bhs, hdr);
	ret = cxe_tx_copy(sc, hdr, hlen, dlen || more);
	if (ret || !dlen)
		return ret;
	if (src->sgl) {
		/* a digest the PDU layer made as it checked the data's PI */
		bool made = c->ddigest && src->din &&
			    cxe_din_crc(src->din, src->offset, dlen, &crc);

		ret = cxe_tx_sg(sc, walk, src, c->ddigest && !made ? &crc : NULL,
				tlen || more);
	} else {
		/* a buffer of the PDU layer (sense data, text): copied */
		if (c->ddigest)
			crc = cxe_crc32c(crc, src->buf, dlen);
		ret = cxe_tx_copy(sc, src->buf, dlen, tlen || more);
	}
	if (ret || !tlen)
		return ret;
	tlen = cxe_tx_tail(c, dlen, crc, tail);
	return cxe_tx_copy(sc, tail, tlen, more);
}

/*
 * A PDU with no pages to lend (a SCSI Response, an R2T, a NOP-In, text)
 * is all small pieces TCP copies anyway: they go from the stack as kvecs
 * in one tcp_sendmsg_locked() under the socket lock, with no page
 * fragments and no batch (as the batch sends its copies before 6.5).
 */
static int cxe_tx_pdu_copied(struct cxe_soft_conn *sc, const u8 *bhs,
			     const struct cxe_data *src)
{
	struct cxe_conn *c = &sc->c;
	u8 hdr[CXE_BHS_LEN + CXE_DIGEST_LEN] __uninitialized;	/* [0, hlen) set */
	u8 tail[4 + CXE_DIGEST_LEN] __uninitialized;
	u32 crc = ~0u, dlen = src ? src->len : 0;
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	struct sock *sk = sc->sock->sk;
	struct kvec iov[3] __uninitialized;	/* [0, n) set */
	size_t len;
	int n = 0, ret;

	len = cxe_tx_hdr(c, bhs, hdr);
	iov[n++] = (struct kvec) { .iov_base = hdr, .iov_len = len };
	if (dlen) {
		if (c->ddigest)
			crc = cxe_crc32c(crc, src->buf, dlen);
		iov[n++] = (struct kvec) { .iov_base = src->buf, .iov_len = dlen };
		iov[n].iov_base = tail;
		iov[n].iov_len = cxe_tx_tail(c, dlen, crc, tail);
		len += dlen + iov[n].iov_len;
		if (iov[n].iov_len)
			n++;
	}
	iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, iov, n, len);
	lock_sock(sk);
	ret = cxe_tcp_send_locked(sk, &msg);
	release_sock(sk);
	return ret;
}

/*
 * TCP takes bytes more without waiting for the peer: room for twice them
 * in the send buffer (what is queued is counted at skb truesize, more than
 * its data) and the stream still open. Read without the socket lock: the
 * caller holds the connection's only right to send.
 */
bool cxe_soft_tx_room(struct cxe_conn *c, u32 bytes)
{
	struct sock *sk = cxe_soft(c)->sock->sk;

	return !READ_ONCE(sk->sk_err) &&
	       !(READ_ONCE(sk->sk_shutdown) & SEND_SHUTDOWN) &&
	       sk_stream_memory_free(sk) &&
	       sk_stream_wspace(sk) >= 2 * (int)bytes;
}

/* The first send: the held Login request is consumed first */
static int cxe_tx_start(struct cxe_soft_conn *sc)
{
	return sc->held ? cxe_held_release(&sc->c) : 0;
}

int cxe_soft_send_pdu(struct cxe_conn *c, const u8 *bhs,
		      const struct cxe_data *src)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	int ret;

	ret = cxe_tx_start(sc);
	if (ret)
		return ret;
	if (!src || !src->sgl) {
		ret = cxe_tx_pdu_copied(sc, bhs, src);
	} else {
		struct cxe_sg_pos own = {};

		cxe_tx_begin(sc);
		ret = cxe_tx_end(sc, cxe_tx_pdu(sc, bhs, src, src->walk ?: &own,
						false));
	}
	if (!ret)
		cxe_cstat(c, CXE_STAT_PDUS_TX, 1);
	return ret;
}

/*
 * Segmentation: the burst becomes PDUs by the pure planner, and goes to
 * TCP as one batch.
 */
int cxe_soft_send_burst(struct cxe_conn *c, const struct cxe_burst *b)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	struct cxe_seg_burst plan = cxe_burst_plan(b);
	u32 i, n = cxe_seg_count(&plan);
	struct cxe_sg_pos own = {}, *walk = b->walk ?: &own;
	struct cxe_seg_pdu pdu;
	u8 bhs[CXE_BHS_LEN];
	int ret;

	if (!n)
		return -EINVAL;
	ret = cxe_tx_start(sc);
	if (ret)
		return ret;
	cxe_tx_begin(sc);
	for (i = 0; !ret && cxe_seg_pdu(&plan, i, &pdu); i++) {
		struct cxe_data src = {
			.sgl = b->sgl,
			.nents = b->nents,
			.offset = pdu.offset,
			.len = pdu.len,
			.din = b->din,
		};

		cxe_seg_datain_hdr(bhs, b->tmpl, &pdu);
		ret = cxe_tx_pdu(sc, bhs, &src, walk, i + 1 < n);
	}
	ret = cxe_tx_end(sc, ret);
	if (ret)
		return ret;
	cxe_cstat(c, CXE_STAT_PDUS_TX, i);
	cxe_cstat(c, CXE_STAT_BURSTS, 1);
	cxe_cstat(c, CXE_STAT_BURST_PDUS, n);
	return n;
}
