// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: modelled adapters, their connections: the TCP engine
 * (modeldev.h) from the SYN a server's socket takes to the TID's release,
 * the chip's messages to the glue, receive and transmit.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/highmem.h>
#include <linux/ipv6.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "../../cxgbit_ext.h"
#include "conn.h"
#include "dev.h"
#include "modeldev.h"

/* ---- connections: messages to the glue ---------------------------------- */

/* c->mu held: nothing goes to the glue once the TID is released or the model halts */
static bool cxe_c4model_may_tell(struct cxe_c4model_conn *c)
{
	return !READ_ONCE(c->released) && !READ_ONCE(c->m->stopped);
}

static void cxe_c4model_tell(struct cxe_c4model_conn *c, const u8 *msg,
			     u32 len)
{
	if (cxe_c4model_may_tell(c))
		cxe_c4dev_rx(&c->m->d, msg, len);
}

/* c->mu held: the connection messages the chip owes, in order */
static void cxe_c4model_conn_msgs(struct cxe_c4model_conn *c)
{
	u8 msg[CXE_MODEL_CONN_MSG];
	u32 len;

	for (;;) {
		spin_lock_bh(&c->lock);
		len = c->released ? 0 : cxe_model_conn_next(&c->mc, msg);
		spin_unlock_bh(&c->lock);
		if (!len)
			return;
		cxe_c4model_tell(c, msg, len);
	}
}

/* a work of the connection runs (again), unless it is ending */
static void cxe_c4model_kick(struct cxe_c4model_conn *c, struct work_struct *w)
{
	spin_lock_bh(&c->lock);
	if (!c->dead)
		queue_work(cxe_c4model_wq, w);
	spin_unlock_bh(&c->lock);
}

/*
 * The model ends the connection (c->mu held, process context): a RST to
 * the peer, and a CPL_ABORT_REQ_RSS to the glue if the connection model
 * lets one go now (not after our abort or another reset).
 */
static void cxe_c4model_kill(struct cxe_c4model_conn *c)
{
	cxe_c4model_rst(c->sock);
	spin_lock_bh(&c->lock);
	cxe_model_conn_reset(&c->mc, CXE_CPL_ERR_CONN_RESET);
	spin_unlock_bh(&c->lock);
}

/* ---- connections: receive --------------------------------------------------- */

static int cxe_c4model_rx_deliver(void *ctx, const u8 *msg, u32 len)
{
	struct cxe_c4model_conn *c = ctx;
	u32 charge = cxe_model_rx_charge(c->m->d.chip, msg, len);

	if (!cxe_c4model_may_tell(c))
		return -ESHUTDOWN;
	if (charge) {
		spin_lock_bh(&c->lock);
		c->rcv_win -= min(charge, c->rcv_win);
		spin_unlock_bh(&c->lock);
	}
	cxe_c4dev_rx(&c->m->d, msg, len);
	return 0;
}

/*
 * The chip's pod lookup for a Data-Out: the pods its TTT names (cpl.h's
 * tag format) are valid for the connection and the tag and take the
 * first and the last byte of its data. The pods do not hold the ITT: the
 * chip does not check it (the glue does, before the PDU layer takes it).
 */
static bool cxe_c4model_rx_ppod(void *ctx, u32 ttt, u32 itt, u32 off, u32 len)
{
	struct cxe_c4model_conn *c = ctx;
	struct cxe_c4model *m = c->m;
	u32 idx = cxe_ppod_tag_idx(&m->d.tagfmt, ttt);
	u64 addr;
	bool ok;

	if (!cxe_ppod_tag_ddp(&m->d.tagfmt, ttt) || !len)
		return false;
	spin_lock_bh(&m->ppm_lock);
	ok = !cxe_model_ppm_locate(&m->ppm, idx, c->tid, ttt, off, &addr) &&
	     !cxe_model_ppm_locate(&m->ppm, idx, c->tid, ttt, off + len - 1,
				   &addr);
	spin_unlock_bh(&m->ppm_lock);
	return ok;
}

/*
 * Placed data written where the pods say, page by page, under the lock
 * a pod write takes: pods cleared place nothing more. Pods cleared while
 * a Data-Out is placed break its placement: the connection is reset.
 */
static int cxe_c4model_rx_place(void *ctx, u32 ttt, u32 itt, u32 off,
				const u8 *buf, u32 len)
{
	struct cxe_c4model_conn *c = ctx;
	struct cxe_c4model *m = c->m;
	int ret = 0;

	spin_lock_bh(&m->ppm_lock);
	while (len) {
		u64 addr;
		u32 n;

		ret = cxe_model_ppm_locate(&m->ppm,
					   cxe_ppod_tag_idx(&m->d.tagfmt, ttt),
					   c->tid, ttt, off, &addr);
		if (ret)
			break;
		n = min_t(u32, len, PAGE_SIZE - offset_in_page(addr));
		memcpy_to_page(pfn_to_page(PHYS_PFN(addr)), offset_in_page(addr),
			       buf, n);
		off += n;
		buf += n;
		len -= n;
	}
	spin_unlock_bh(&m->ppm_lock);
	return ret ? -EPROTO : 0;
}

static const struct cxe_model_rx_ops cxe_c4model_rx_ops = {
	.deliver	= cxe_c4model_rx_deliver,
	.ppod		= cxe_c4model_rx_ppod,
	.place		= cxe_c4model_rx_place,
};

/* what a chip reports of a connection its TCP lost */
static u8 cxe_c4model_reset_status(int err)
{
	return err == ETIMEDOUT ? CXE_CPL_ERR_XMIT_TIMEDOUT :
				  CXE_CPL_ERR_CONN_RESET;
}

/* c->mu held: a model's error on the stream ends the connection */
static void cxe_c4model_rx_err(struct cxe_c4model_conn *c, int err)
{
	if (err == -ESHUTDOWN)
		return;
	pr_err("cxgb4 model %s: TID %u (%pISpc): the receive model refused the stream (%d): resetting\n",
	       c->m->name, c->tid, &c->peer, err);
	atomic_inc(&c->m->refused_msgs);
	cxe_c4model_kill(c);
}

/*
 * c->mu held: the socket's bytes through the receive model, no more than
 * the window and no more than it wants at a time; then its FIN or reset
 */
static void cxe_c4model_rx(struct cxe_c4model_conn *c)
{
	struct sock *sk = c->sock->sk;
	u32 win, n;
	int ret;
	bool go;

	for (;;) {
		spin_lock_bh(&c->lock);
		go = c->rx_on && !c->released && !c->mc.peer_reset &&
		     !c->mc.abort_in;
		win = c->rcv_win;
		spin_unlock_bh(&c->lock);
		if (!go || READ_ONCE(c->m->stopped))
			return;
		n = min3(win, cxe_model_rx_want(&c->rx), (u32)CXE_C4MODEL_RBUF);
		if (!n) {
			/* the window is shut (or the model stopped): a batch ends */
			ret = cxe_model_rx_flush(&c->rx, &cxe_c4model_rx_ops, c);
			if (ret)
				cxe_c4model_rx_err(c, ret);
			else if (READ_ONCE(sk->sk_err))
				break;
			return;
		}
		{
			struct kvec kv = { .iov_base = c->rbuf, .iov_len = n };
			struct msghdr msg = { .msg_flags = MSG_DONTWAIT };

			ret = kernel_recvmsg(c->sock, &msg, &kv, 1, n,
					     MSG_DONTWAIT);
		}
		if (ret > 0) {
			/* a T5 charges what it takes, a T6 what it hands up */
			spin_lock_bh(&c->lock);
			if (c->m->d.chip == CXE_CHIP_T5)
				c->rcv_win -= ret;
			spin_unlock_bh(&c->lock);
			ret = cxe_model_rx_feed(&c->rx, c->rbuf, ret,
						&cxe_c4model_rx_ops, c);
			if (ret) {
				cxe_c4model_rx_err(c, ret);
				return;
			}
			continue;
		}
		/* the socket has no more bytes: the end of a receive batch */
		if (ret == -EAGAIN || ret == 0) {
			int err = cxe_model_rx_flush(&c->rx, &cxe_c4model_rx_ops, c);

			if (err) {
				cxe_c4model_rx_err(c, err);
				return;
			}
		}
		if (ret == -EAGAIN)
			return;
		if (ret == 0) {
			/* the peer's FIN; a reset after it shows in sk_err alone */
			if (!c->eof) {
				c->eof = true;
				spin_lock_bh(&c->lock);
				cxe_model_conn_fin(&c->mc);
				spin_unlock_bh(&c->lock);
			}
			if (!READ_ONCE(sk->sk_err))
				return;
		}
		break;
	}
	/*
	 * A reset or a timeout: the chip's TCP gave the connection up. Its
	 * error is what the receive returned, or else still in sk_err.
	 */
	if (ret >= 0)
		ret = sock_error(sk);
	spin_lock_bh(&c->lock);
	cxe_model_conn_reset(&c->mc, cxe_c4model_reset_status(ret < 0 ? -ret :
							      ECONNRESET));
	spin_unlock_bh(&c->lock);
}

/*
 * c->mu held: the peer acked our FIN once the host's TCP leaves FIN_WAIT1,
 * CLOSING or LAST_ACK for FIN_WAIT2, TIME_WAIT or CLOSE without an error
 */
static void cxe_c4model_fin_check(struct cxe_c4model_conn *c)
{
	struct sock *sk = c->sock->sk;
	int state = inet_sk_state_load(sk);

	if (!c->fin_sent)
		return;
	if (state == TCP_FIN_WAIT2 || state == TCP_TIME_WAIT ||
	    (state == TCP_CLOSE && !READ_ONCE(sk->sk_err))) {
		spin_lock_bh(&c->lock);
		cxe_model_conn_ack_fin(&c->mc);
		spin_unlock_bh(&c->lock);
	}
}

static void cxe_c4model_rx_work(struct work_struct *work)
{
	struct cxe_c4model_conn *c = container_of(work, struct cxe_c4model_conn,
						  rx_work);

	mutex_lock(&c->mu);
	if (c->syn_len) {
		cxe_c4model_tell(c, c->syn, c->syn_len);
		c->syn_len = 0;
	}
	cxe_c4model_rx(c);
	cxe_c4model_fin_check(c);
	cxe_c4model_conn_msgs(c);
	mutex_unlock(&c->mu);
}

static void cxe_c4model_conn_data_ready(struct sock *sk)
{
	struct cxe_c4model_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c)
		cxe_c4model_kick(c, &c->rx_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

/* a FIN, an ACK of ours, a reset: the receive work looks */
static void cxe_c4model_conn_state_change(struct sock *sk)
{
	void (*orig)(struct sock *sk) = NULL;
	struct cxe_c4model_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c) {
		orig = c->orig_state_change;
		cxe_c4model_kick(c, &c->rx_work);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (orig)
		orig(sk);
}

/* ---- connections: transmit -------------------------------------------------- */

/* the wire bytes to the host's TCP, as the software adapter sends a copy */
static int cxe_c4model_send_wire(struct cxe_c4model_conn *c, const u8 *buf,
				 size_t len)
{
	struct sock *sk = c->sock->sk;

	while (len) {
		struct kvec kv = { .iov_base = (void *)buf, .iov_len = len };
		struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
		int ret;

		iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &kv, 1, len);
		lock_sock(sk);
		ret = tcp_sendmsg_locked(sk, &msg, len);
		release_sock(sk);
		if (ret <= 0)
			return ret ? ret : -EPIPE;
		buf += ret;
		len -= ret;
	}
	return 0;
}

/* c->mu held: the acks the requests taken asked for, to the glue */
static void cxe_c4model_acks(struct cxe_c4model_conn *c)
{
	u8 ack[CXE_CPL_FW4_ACK_LEN];
	int len;

	while (c->cred.owed &&
	       (len = cxe_model_txcred_ack(&c->cred, ack, 0, true)) > 0)
		cxe_c4model_tell(c, ack, len);
}

/*
 * c->mu held: a data work request through the transmit model. The skb's
 * linear part is the request as cxgb4 writes it into the queue (with the
 * payload when immediate); the rest, the payload cxgb4 would gather.
 */
static void cxe_c4model_tx_data(struct cxe_c4model_conn *c,
				struct sk_buff *skb)
{
	u32 hlen = skb_headlen(skb), glen = skb->len - hlen, cap;
	u8 *g = NULL, *out;
	long n = -ENOMEM;

	if (glen) {
		g = cxe_buf_grow(&c->gbuf, &c->gcap, glen);
		if (!g || skb_copy_bits(skb, hlen, g, glen))
			goto refused;
	}
	cap = max(c->ocap, 2 * (hlen + glen) + 4096);
	for (;;) {
		out = cxe_buf_grow(&c->out, &c->ocap, cap);
		if (!out) {
			n = -ENOMEM;
			break;
		}
		n = cxe_model_tx_wr(&c->tx, skb->data, hlen, g, glen, out,
				    c->ocap);
		if (n != -ENOSPC || c->ocap >= CXE_C4MODEL_OUT_MAX)
			break;
		cap = min_t(u32, 2 * c->ocap, CXE_C4MODEL_OUT_MAX);
	}
	if (n < 0)
		goto refused;
	/* a send that fails is the socket's reset, which receive reports */
	cxe_c4model_send_wire(c, out, n);
	cxe_model_txcred_took(&c->cred, skb->data, n);
	cxe_c4model_acks(c);
	return;
refused:
	pr_err("cxgb4 model %s: TID %u (%pISpc): the transmit model refused a work request (%ld): resetting\n",
	       c->m->name, c->tid, &c->peer, n);
	atomic_inc(&c->m->refused_msgs);
	cxe_c4model_kill(c);
}

/* c->mu held: a CPL_SET_TCB_FIELD: the digests the chip checks, and its reply */
static void cxe_c4model_set_tcb(struct cxe_c4model_conn *c, const u8 *p,
				u32 len)
{
	struct cxe_cpl_tcb_field f;
	u8 rpl[CXE_CPL_SET_TCB_RPL_LEN], mask, val;

	if (cxe_cpl_parse_set_tcb_field(p, len, &f) < 0) {
		pr_err("cxgb4 model %s: TID %u: a CPL_SET_TCB_FIELD it cannot read: resetting\n",
		       c->m->name, c->tid);
		atomic_inc(&c->m->refused_msgs);
		cxe_c4model_kill(c);
		return;
	}
	if (cxe_cpl_tcb_submode(&f, &mask, &val)) {
		if (mask & CXE_ULP_CRC_HEADER)
			c->rx.hdigest = val & CXE_ULP_CRC_HEADER;
		if (mask & CXE_ULP_CRC_DATA)
			c->rx.ddigest = val & CXE_ULP_CRC_DATA;
	}
	if (f.no_reply)
		return;
	/* after what the connection model owes from before it */
	cxe_c4model_conn_msgs(c);
	cxe_c4model_tell(c, rpl, cxe_model_set_tcb_rpl(rpl, c->tid, f.cookie, 0));
}

/* c->mu held: one message or work request from the glue */
/*
 * c->mu held: page pods, into the pod memory under the lock placement
 * takes, before the ack that returns their credits (the glue's fence),
 * when the flow still charges them (cxe_model_conn_flow_live())
 */
static void cxe_c4model_pods(struct cxe_c4model_conn *c, const u8 *p,
			     u32 len, bool charged)
{
	struct cxe_c4model *m = c->m;
	int ret;

	spin_lock_bh(&m->ppm_lock);
	ret = cxe_model_ppm_write(&m->ppm, p, len);
	spin_unlock_bh(&m->ppm_lock);
	if (ret < 0) {
		pr_err("cxgb4 model %s: TID %u: a page pod write the chip refuses (%d): resetting\n",
		       m->name, c->tid, ret);
		atomic_inc(&m->refused_msgs);
		cxe_c4model_kill(c);
		return;
	}
	if (charged) {
		atomic_inc(&m->pod_writes);
		cxe_model_txcred_took(&c->cred, p, 0);
		cxe_c4model_acks(c);
	} else {
		atomic_inc(&m->pod_writes_late);
	}
}

static void cxe_c4model_tx_one(struct cxe_c4model_conn *c, struct sk_buff *skb)
{
	struct cxe_cpl_rx_ack ra;
	const char *why = NULL;
	u32 hlen, dropped;
	bool live;
	const u8 *p;
	int ret;
	u8 op;

	/*
	 * A TP message whose CPL is not in the linear part: linear, all of
	 * it. A data request's linear part may be its 16-byte header alone:
	 * the rest is the payload cxgb4 gathers.
	 */
	if (skb_headlen(skb) < 24 &&
	    (!skb_headlen(skb) || skb->data[0] == CXE_FW_TP_WR) &&
	    skb_is_nonlinear(skb) && skb_linearize(skb)) {
		pr_err("cxgb4 model %s: TID %u: no memory for a message: resetting\n",
		       c->m->name, c->tid);
		atomic_inc(&c->m->refused_msgs);
		cxe_c4model_kill(c);
		return;
	}
	p = skb->data;
	hlen = skb_headlen(skb);
	spin_lock_bh(&c->lock);
	dropped = c->mc.dropped;
	ret = cxe_model_conn_take(&c->mc, p, hlen);
	if (ret)
		why = c->mc.why;
	dropped = c->mc.dropped - dropped;
	live = cxe_model_conn_flow_live(&c->mc);
	spin_unlock_bh(&c->lock);
	if (ret) {
		pr_err("cxgb4 model %s: TID %u (%pISpc): message %#x refused: %s: resetting\n",
		       c->m->name, c->tid, &c->peer, hlen ? p[0] : 0, why);
		atomic_inc(&c->m->refused_msgs);
		cxe_c4model_kill(c);
		return;
	}
	/* after the peer's reset, before the glue heard of it: dropped */
	if (dropped)
		return;
	/* a work request's opcode, or the CPL's in a TP one (same numbers) */
	op = p[0];
	if (op == CXE_FW_ULPTX_WR) {
		cxe_c4model_pods(c, p, hlen, live);
		return;
	}
	if (op == CXE_FW_OFLD_TX_DATA_WR || op == CXE_FW_ISCSI_TX_DATA_WR) {
		cxe_c4model_tx_data(c, skb);
		return;
	}
	/*
	 * FW_FLOWC_WR changes nothing of the host's TCP but holds its
	 * credits, as a chip's does (mainline charges them)
	 */
	if (op == CXE_FW_FLOWC_WR)
		cxe_model_txcred_took(&c->cred, p, 0);
	if (op != CXE_FW_TP_WR)
		return;
	switch (p[16]) {	/* the model took >= 24 bytes of it */
	case CXE_CPL_PASS_ACCEPT_RPL:
		/* the host's TCP completed the handshake already */
		spin_lock_bh(&c->lock);
		cxe_model_conn_ack(&c->mc);
		c->rx_on = true;
		spin_unlock_bh(&c->lock);
		cxe_c4model_kick(c, &c->rx_work);
		break;
	case CXE_CPL_SET_TCB_FIELD:
		cxe_c4model_set_tcb(c, p, hlen);
		break;
	case CXE_CPL_RX_DATA_ACK:
		spin_lock_bh(&c->lock);
		if (cxe_cpl_parse_rx_data_ack(p, hlen, &ra) < 0) {
			why = "a CPL_RX_DATA_ACK it cannot read";
		} else if (ra.credits > CXE_C4MODEL_RCV_WIN - c->rcv_win) {
			why = "CPL_RX_DATA_ACK: more credits than bytes received";
			c->rcv_win = CXE_C4MODEL_RCV_WIN;
		} else {
			c->rcv_win += ra.credits;
		}
		spin_unlock_bh(&c->lock);
		if (why) {
			pr_warn_ratelimited("cxgb4 model %s: TID %u: %s\n",
					    c->m->name, c->tid, why);
			atomic_inc(&c->m->refused_msgs);
		}
		cxe_c4model_kick(c, &c->rx_work);
		break;
	case CXE_CPL_CLOSE_CON_REQ:
		/*
		 * a FIN after the data before it (sent: this work is ordered);
		 * it holds its credits as a data request does, returned with
		 * an ack when it asks for one (mainline charges it)
		 */
		kernel_sock_shutdown(c->sock, SHUT_WR);
		c->fin_sent = true;
		cxe_model_txcred_took(&c->cred, p, 0);
		cxe_c4model_acks(c);
		cxe_c4model_fin_check(c);
		break;
	case CXE_CPL_ABORT_REQ:
		/* the connection model queued the CPL_ABORT_RPL_RSS */
		cxe_c4model_rst(c->sock);
		break;
	default:
		/* CPL_ABORT_RPL: the connection model counted it */
		break;
	}
}

/*
 * c->mu held, the requests sent before the release taken: the connection
 * model says whether the chip was done with the TID (a warning when
 * not); the connection ends in process context. A TID released before
 * the accept reply is a SYN the glue refused: its connection is reset, as
 * a chip drops it.
 */
static void cxe_c4model_released(struct cxe_c4model_conn *c)
{
	const char *why = NULL;

	spin_lock_bh(&c->lock);
	if (!c->release_pending || c->dead) {
		spin_unlock_bh(&c->lock);
		return;
	}
	c->release_pending = false;
	if (!c->mc.accepted) {
		c->reset_at_end = true;
	} else if (cxe_model_conn_release(&c->mc)) {
		why = c->mc.why;
		c->reset_at_end = true;
	}
	queue_work(cxe_c4model_wq, &c->release_work);
	spin_unlock_bh(&c->lock);
	if (why) {
		atomic_inc(&c->m->bad_releases);
		pr_warn("cxgb4 model %s: TID %u released: %s\n", c->m->name,
			c->tid, why);
	}
}

static void cxe_c4model_tx_work(struct work_struct *work)
{
	struct cxe_c4model_conn *c = container_of(work, struct cxe_c4model_conn,
						  tx_work);
	struct sk_buff *skb;

	mutex_lock(&c->mu);
	for (;;) {
		spin_lock_bh(&c->lock);
		skb = c->dead ? NULL : __skb_dequeue(&c->txq);
		spin_unlock_bh(&c->lock);
		if (!skb)
			break;
		cxe_c4model_tx_one(c, skb);
		consume_skb(skb);
		cxe_c4model_conn_msgs(c);
	}
	cxe_c4model_released(c);
	mutex_unlock(&c->mu);
}

/*
 * The glue's CPL_ABORT_REQ resets the host connection at once, as a chip
 * does: a transmit work stuck on a peer that reads nothing (its send
 * waits for window) would otherwise hold it back forever. The transmit
 * work then takes it in order, as every other request.
 */
static void cxe_c4model_abort_work(struct work_struct *work)
{
	struct cxe_c4model_conn *c = container_of(work, struct cxe_c4model_conn,
						  abort_work);

	cxe_c4model_rst(c->sock);
}

static bool cxe_c4model_is_abort(const struct sk_buff *skb)
{
	return skb_headlen(skb) >= 24 && skb->data[0] == CXE_FW_TP_WR &&
	       skb->data[16] == CXE_CPL_ABORT_REQ;
}

/* Any context: queued for the connection's transmit work, in order */
int cxe_c4model_send(struct cxe_c4dev *d, u32 tid, struct sk_buff *skb)
{
	struct cxe_c4model *m = to_model(d);
	struct cxe_c4model_conn *c;
	bool taken = false;

	spin_lock_bh(&m->lock);
	c = m->stopped ? NULL : xa_load(&m->conns, tid);
	if (c) {
		spin_lock(&c->lock);
		if (!c->dead) {
			if (cxe_c4model_is_abort(skb))
				queue_work(cxe_c4model_wq, &c->abort_work);
			__skb_queue_tail(&c->txq, skb);
			queue_work(cxe_c4model_wq, &c->tx_work);
			taken = true;
		}
		spin_unlock(&c->lock);
	}
	spin_unlock_bh(&m->lock);
	if (taken)
		return 0;
	if (READ_ONCE(m->unplugged)) {
		kfree_skb(skb);
		return -ENODEV;	/* a pulled chip takes nothing */
	}
	atomic_inc(&m->refused_msgs);
	pr_warn_ratelimited("cxgb4 model %s: a message for TID %u, which has no connection: dropped\n",
			    m->name, tid);
	kfree_skb(skb);
	return -ENOENT;
}

/* ---- connections: start and end --------------------------------------------- */

static void cxe_c4model_conn_free(struct cxe_c4model_conn *c)
{
	kvfree(c->data_msg);
	kvfree(c->rbuf);
	kvfree(c->gbuf);
	kvfree(c->out);
	kfree(c);
}

/* the TID goes back to the map (after its connection's works stopped) */
static void cxe_c4model_tid_free(struct cxe_c4model *m, u32 tid)
{
	spin_lock_bh(&m->lock);
	__clear_bit(tid, m->tids);
	m->nconns--;
	/* under the lock: a halt waiting for this sees it only after we let go */
	wake_up(&m->gone);
	spin_unlock_bh(&m->lock);
}

/*
 * The connection ends (process context; its caller took it out of the
 * map): its works stop, its socket goes (reset first when it was not
 * over), the TID goes back.
 */
void cxe_c4model_conn_end(struct cxe_c4model_conn *c, bool reset)
{
	struct cxe_c4model *m = c->m;
	struct sock *sk = c->sock->sk;

	spin_lock_bh(&c->lock);
	c->dead = true;
	spin_unlock_bh(&c->lock);
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = c->orig_data_ready;
	sk->sk_state_change = c->orig_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
	/* a RST also ends a send the transmit work waits in */
	if (reset)
		cxe_c4model_rst(c->sock);
	cancel_work_sync(&c->tx_work);
	cancel_work_sync(&c->rx_work);
	cancel_work_sync(&c->abort_work);
	skb_queue_purge(&c->txq);
	sock_release(c->sock);
	cxe_c4model_tid_free(m, c->tid);
	cxe_c4model_conn_free(c);
}

/* whether c is still in the map; if so, it is the caller's to end now */
static bool cxe_c4model_claim(struct cxe_c4model_conn *c)
{
	struct cxe_c4model *m = c->m;
	bool mine;

	spin_lock_bh(&m->lock);
	mine = xa_load(&m->conns, c->tid) == c;
	if (mine)
		xa_erase(&m->conns, c->tid);
	spin_unlock_bh(&m->lock);
	return mine;
}

static void cxe_c4model_release_work(struct work_struct *work)
{
	struct cxe_c4model_conn *c = container_of(work, struct cxe_c4model_conn,
						  release_work);

	/* a halt that took it first ends it, and waits for this work */
	if (cxe_c4model_claim(c))
		cxe_c4model_conn_end(c, c->reset_at_end);
}

/* Any context: the glue is done with the TID (see cxe_c4model_released()) */
void cxe_c4model_release_tid(struct cxe_c4dev *d, u32 tid, bool ipv6)
{
	struct cxe_c4model *m = to_model(d);
	struct cxe_c4model_conn *c;
	const char *why = NULL;
	bool found;

	/* halted with the chip: the glue's release forgets the TID */
	if (READ_ONCE(m->unplugged))
		return;
	spin_lock_bh(&m->lock);
	c = xa_load(&m->conns, tid);
	found = c;
	if (c) {
		spin_lock(&c->lock);
		if (c->released) {
			why = "the TID released twice";
		} else {
			/* judged after the requests sent before it */
			c->released = true;
			c->release_pending = true;
			queue_work(cxe_c4model_wq, &c->tx_work);
		}
		spin_unlock(&c->lock);
	}
	spin_unlock_bh(&m->lock);
	if (!found)
		why = "a TID with no connection";
	if (why) {
		atomic_inc(&m->bad_releases);
		pr_warn("cxgb4 model %s: TID %u released: %s\n", m->name, tid,
			why);
	}
}

/* the SYN as the chip reports it, from the host's TCP state (lock_sock held) */
static void cxe_c4model_syn(struct sock *sk, struct cxe_model_syn *syn)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct inet_sock *inet = inet_sk(sk);

	syn->peer_isn = tp->copied_seq - 1;
	syn->window = min_t(u32, tp->snd_wnd, 65535);
	syn->peer_mss = tp->rx_opt.mss_clamp;
	syn->wscale_ok = tp->rx_opt.wscale_ok;
	syn->peer_wscale = syn->wscale_ok ? tp->rx_opt.snd_wscale : 0;
	syn->sack = tp->rx_opt.sack_ok;
	syn->tstamp = tp->rx_opt.tstamp_ok;
	/* the peer asked for ECN and the host agreed */
	syn->ece = tp->ecn_flags & TCP_ECN_OK;
	syn->cwr = syn->ece;
	syn->local_port = ntohs(inet->inet_sport);
	syn->peer_port = ntohs(inet->inet_dport);
#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6 &&
	    !ipv6_addr_v4mapped(&sk->sk_v6_daddr)) {
		syn->ip_version = 6;
		memcpy(syn->local_ip, &sk->sk_v6_rcv_saddr, 16);
		memcpy(syn->peer_ip, &sk->sk_v6_daddr, 16);
		syn->tos = inet6_sk(sk)->tclass;
		return;
	}
#endif
	/* an IPv4 connection, on a [::] listener too */
	syn->ip_version = 4;
	memcpy(syn->local_ip, &inet->inet_saddr, 4);
	memcpy(syn->peer_ip, &inet->inet_daddr, 4);
	syn->tos = inet->tos;
}

static struct cxe_c4model_conn *cxe_c4model_conn_alloc(struct cxe_c4model *m)
{
	struct cxe_c4model_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (!c)
		return NULL;
	c->data_msg = kvmalloc(CXE_MODEL_DATA_MSG_LEN(m->d.limits.max_recv_dlen),
			       GFP_KERNEL);
	c->rbuf = kvmalloc(CXE_C4MODEL_RBUF, GFP_KERNEL);
	if (!c->data_msg || !c->rbuf) {
		cxe_c4model_conn_free(c);
		return NULL;
	}
	c->m = m;
	spin_lock_init(&c->lock);
	skb_queue_head_init(&c->txq);
	mutex_init(&c->mu);
	INIT_WORK(&c->tx_work, cxe_c4model_tx_work);
	INIT_WORK(&c->rx_work, cxe_c4model_rx_work);
	INIT_WORK(&c->release_work, cxe_c4model_release_work);
	INIT_WORK(&c->abort_work, cxe_c4model_abort_work);
	c->rcv_win = CXE_C4MODEL_RCV_WIN;
	return c;
}

/*
 * A connection the host's TCP completed for server s becomes a TID, and
 * the glue hears of its SYN. One that cannot (no memory, no TID, the
 * server going) is reset.
 */
static void cxe_c4model_take(struct cxe_c4model_srv *s, struct socket *sock)
{
	struct cxe_c4model *m = s->m;
	struct sock *sk = sock->sk;
	struct cxe_model_syn syn = { .stid = s->stid };
	struct cxe_c4model_conn *c;
	const char *why;
	u32 tid, snd_isn;
	int len;

	cxe_c4model_tcp_callbacks(sock);
	c = cxe_c4model_conn_alloc(m);
	why = "no memory";
	if (!c)
		goto reset;
	spin_lock_bh(&m->lock);
	tid = m->stopped || !s->listening ? CXE_C4MODEL_TIDS :
	      find_next_zero_bit(m->tids, CXE_C4MODEL_TIDS, 1);
	if (tid < CXE_C4MODEL_TIDS) {
		__set_bit(tid, m->tids);
		m->nconns++;
	}
	spin_unlock_bh(&m->lock);
	why = "no TID left, or the server is going";
	if (tid >= CXE_C4MODEL_TIDS)
		goto free;

	c->tid = tid;
	c->sock = sock;
	kernel_getpeername(sock, (struct sockaddr *)&c->peer);
	tcp_sock_set_nodelay(sk);
	syn.tid = tid;
	lock_sock(sk);
	cxe_c4model_syn(sk, &syn);
	/* snd_isn + 1 is the first byte to send, rcv_isn + 1 the first to read */
	snd_isn = tcp_sk(sk)->write_seq - 1;
	cxe_model_conn_init(&c->mc, tid, snd_isn, syn.peer_isn);
	cxe_model_rx_init(&c->rx, m->d.chip, tid, tcp_sk(sk)->copied_seq,
			  m->d.limits.max_recv_dlen, c->data_msg);
	release_sock(sk);
	c->tx.chip = m->d.chip;
	c->tx.tid = tid;
	c->tx.max_dlen = m->d.limits.max_send_dlen;
	cxe_model_txcred_init(&c->cred, tid, snd_isn + 1);
	len = cxe_model_accept_req(c->syn, sizeof(c->syn), m->d.chip, &syn);
	why = "no CPL_PASS_ACCEPT_REQ for it";
	if (len < 0)
		goto tid;
	c->syn_len = len;
	why = "no memory";
	if (xa_insert_bh(&m->conns, tid, c, GFP_KERNEL))
		goto tid;

	write_lock_bh(&sk->sk_callback_lock);
	c->orig_data_ready = sk->sk_data_ready;
	c->orig_state_change = sk->sk_state_change;
	sk->sk_user_data = c;
	WRITE_ONCE(sk->sk_data_ready, cxe_c4model_conn_data_ready);
	WRITE_ONCE(sk->sk_state_change, cxe_c4model_conn_state_change);
	write_unlock_bh(&sk->sk_callback_lock);
	/*
	 * Told from the connection's receive work, which its end waits
	 * for: the glue may release the TID while it hears of it
	 */
	cxe_c4model_kick(c, &c->rx_work);
	return;

tid:
	cxe_c4model_tid_free(m, tid);
free:
	c->sock = NULL;
	cxe_c4model_conn_free(c);
reset:
	pr_warn_ratelimited("cxgb4 model %s: server %u: a connection reset: %s\n",
			    m->name, s->stid, why);
	cxe_c4model_rst(sock);
	sock_release(sock);
}

void cxe_c4model_accept_work(struct work_struct *work)
{
	struct cxe_c4model_srv *s = container_of(work, struct cxe_c4model_srv,
						 accept);
	struct socket *sock;

	while (!kernel_accept(s->sock, &sock, O_NONBLOCK)) {
		cxe_steered_child(sock);
		cxe_c4model_take(s, sock);
	}
}

/*
 * cxgb4's default MTU table (cxgb3's init_mtus(), which cxgb4 reads back
 * from the chip, with 1492 made 1488 as cxgb4's adap_init0() does)
 */
