// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4sim (sim.h says what it is): the chip's TCP engine, from the SYN
 * it reported to the TID's release, and its iSCSI ULP.
 *
 * The chip's TCP is the host's own. The SYN the chip took off the wire
 * waits for the ULD's accept reply; then it is handed to a transparent
 * listening socket of the connection's own in the port's namespace (as
 * xt_TPROXY hands one: skb->sk), the host's TCP answers it and the
 * connection it completes is the TID's: CPL_PASS_ESTABLISH carries its
 * sequence numbers. A SYN refused (the TID released without a reply) is
 * dropped, as a chip drops it. From then on the chip model of
 * tests/chipmodel (pure C, its README says what it models and what
 * not) does the rest: ulp_conn.c takes the ULD's messages on the TID in
 * order and says which connection messages the chip sends; ulp_rx.c
 * turns the socket's bytes into the chip's iSCSI messages within the
 * receive window of the accept reply, which CPL_RX_DATA_ACK reopens
 * (unless the reply turned receive flow control off: c4sim_rx_window);
 * ulp_tx.c turns the work requests, split as cxgb4's SGE splits them
 * (sim_chip.c), into the bytes the socket sends; ppod.c is the adapter's
 * page pod memory, which FW_ULPTX_WRs write and Data-Outs are placed
 * through, at the bus addresses the pods hold. Each request's credits
 * come back in CPL_FW4_ACK once it went to the socket.
 *
 * What the model refuses is traced as an error (the tests fail on it)
 * and the connection reset, as the firmware would end it.
 *
 * Per connection, one work sends and one receives, each in order; a
 * mutex keeps their messages to the ULD in order.
 */
#include <linux/highmem.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/tcp.h>
#include "cxgb4.h"
#include "t4_msg.h"
#include "sim.h"
#include "ppod.h"
#include "ulp_conn.h"
#include "ulp_rx.h"
#include "ulp_tx.h"

/* bytes one receive reads from the socket, at most */
#define C4SIM_RBUF		(64 * 1024)
/* the wire bytes of one work request, at most (a runaway guard) */
#define C4SIM_OUT_MAX		(64 * 1024 * 1024)
/* the data segment the chip handles: its iSCSI I/O length less BHS, AHS, digests */
#define C4SIM_PDU_OVERHEAD	312

struct c4sim_conn {
	unsigned int		tid;
	unsigned int		port;
	__be32			saddr, daddr;	/* the SYN's: the peer's, ours */
	__be16			sport, dport;
	struct sk_buff		*syn;		/* until the accept reply */
	struct socket		*lsock;		/* its listener, until accepted */
	struct socket		*sock;		/* the connection, once accepted */
	void			(*orig_data_ready)(struct sock *sk);
	void			(*orig_state_change)(struct sock *sk);

	spinlock_t		lock;		/* what follows, to mu */
	struct cxe_model_conn	mc;
	struct sk_buff_head	txq;
	unsigned int		queue;		/* the ULD's, from the accept reply */
	u8			mss_idx;	/* the accept reply's */
	u32			rcv_max;	/* the window, from the accept reply */
	u64			rx_owed;	/* charged, not yet given back */
	bool			rx_fc_off;	/* opt2 RX_FC_DISABLE */
	bool			rx_on;		/* CPL_PASS_ESTABLISH went */
	bool			fin_sent;
	bool			eof;
	bool			released;
	bool			release_pending;
	bool			reset_at_end;
	bool			dead;
	bool			early_rst;	/* the peer reset before the handshake */

	struct mutex		mu;		/* the works' own, below */
	struct cxe_model_rx	rx;
	struct cxe_model_tx	tx;
	struct cxe_model_txcred	cred;
	u8			*data_msg;
	u8			*rbuf;
	u8			*gbuf;
	u8			*out;
	u8			*req;		/* a request not linear in its skb */
	u32			gcap, ocap, rcap;

	struct work_struct	accept_work;
	struct work_struct	tx_work;
	struct work_struct	rx_work;
	struct work_struct	release_work;
	struct work_struct	abort_work;	/* our abort, ahead of the queue */
};

static struct workqueue_struct *c4sim_wq;

static u8 *c4sim_grow(u8 **buf, u32 *cap, u32 len)
{
	u8 *n;

	if (len <= *cap)
		return *buf;
	n = kvmalloc(len, GFP_KERNEL);
	if (!n)
		return NULL;
	kvfree(*buf);
	*buf = n;
	*cap = len;
	return n;
}

/* the data segment the chip takes and sends, at most */
static u32 c4sim_max_dlen(void)
{
	return (c4sim->t5 ? C4SIM_T5_IOLEN : C4SIM_T6_IOLEN) - C4SIM_PDU_OVERHEAD;
}

/* ---- messages to the ULD ------------------------------------------------- */

static bool c4sim_may_tell(struct c4sim_conn *c)
{
	return !READ_ONCE(c->released);
}

/*
 * What TCP agreed, as the chip reports it in CPL_PASS_ESTABLISH: the MTU
 * index it sends by (the accept reply's, or a smaller one the peer's MSS
 * needs), window scaling, SACK and timestamps.
 */
static u16 c4sim_tcp_opt(struct c4sim_conn *c)
{
	const struct tcp_sock *tp = tcp_sk(c->sock->sk);
	unsigned int idx = c->mss_idx;

	while (idx && c4sim->mtus[idx] - 40 > tp->rx_opt.mss_clamp)
		idx--;
	/* t4_msg.h has only the getters of these */
	return idx << TCPOPT_MSS_S |
	       (tp->rx_opt.wscale_ok ? 1U << TCPOPT_WSCALE_OK_S |
				       tp->rx_opt.snd_wscale << TCPOPT_SND_WSCALE_S : 0) |
	       (tp->rx_opt.sack_ok ? 1U << TCPOPT_SACK_S : 0) |
	       (tp->rx_opt.tstamp_ok ? 1U << TCPOPT_TSTAMP_S : 0);
}

/*
 * c->mu held: the firmware scales every window the peer advertises by
 * FW_FLOWC_WR's RCV_SCALE, so it must be the shift TCP agreed, the one
 * CPL_PASS_ESTABLISH reported, and absent where scaling was not agreed
 * (mainline cxgbit sends TCPOPT_SND_WSCALE_G of that message's tcp_opt,
 * and leaves the parameter out when it is 0).
 */
static void c4sim_flowc_check(struct c4sim_conn *c, const u8 *req, u32 len)
{
	const struct fw_flowc_wr *f = (const void *)req;
	const struct tcp_sock *tp;
	unsigned int n, i, agreed, sent = 0;

	if (!c->sock || len < sizeof(*f))
		return;
	n = (be32_to_cpu(f->op_to_nparams) >> FW_FLOWC_WR_NPARAMS_S) & 0xff;
	if (sizeof(*f) + n * sizeof(f->mnemval[0]) > len)
		return;		/* traced as an error by the queue's check */
	for (i = 0; i < n; i++)
		if (f->mnemval[i].mnemonic == FW_FLOWC_MNEM_RCV_SCALE)
			sent = be32_to_cpu(f->mnemval[i].val);
	tp = tcp_sk(c->sock->sk);
	agreed = tp->rx_opt.wscale_ok ? tp->rx_opt.snd_wscale : 0;
	if (sent != agreed)
		c4sim_trace("error: tid %u: FW_FLOWC_WR RCV_SCALE %u, TCP agreed %u%s",
			    c->tid, sent, agreed,
			    tp->rx_opt.wscale_ok ? "" : " (no window scaling)");
}

/* c->mu held: one message of the chip's to the ULD's queue */
static void c4sim_tell(struct c4sim_conn *c, u8 *msg, u32 len)
{
	if (!c4sim_may_tell(c))
		return;
	if (msg[0] == CPL_PASS_ESTABLISH && len >= sizeof(struct cpl_pass_establish))
		((struct cpl_pass_establish *)msg)->tcp_opt = htons(c4sim_tcp_opt(c));
	c4sim_deliver_any(c->queue, msg, len);
}

/* c->mu held: the connection messages the chip owes, in order */
static void c4sim_conn_msgs(struct c4sim_conn *c)
{
	u8 msg[CXE_MODEL_CONN_MSG];
	u32 len;

	for (;;) {
		spin_lock_bh(&c->lock);
		len = c->released ? 0 : cxe_model_conn_next(&c->mc, msg);
		spin_unlock_bh(&c->lock);
		if (!len)
			return;
		c4sim_tell(c, msg, len);
	}
}

static void c4sim_kick(struct c4sim_conn *c, struct work_struct *w)
{
	spin_lock_bh(&c->lock);
	if (!c->dead)
		queue_work(c4sim_wq, w);
	spin_unlock_bh(&c->lock);
}

static void c4sim_rst(struct socket *sock)
{
	if (sock)
		tcp_abort(sock->sk, ECONNABORTED);
}

/*
 * c->mu held: the chip ends the connection: a RST to the peer, and
 * CPL_ABORT_REQ_RSS to the ULD if the connection model lets one go
 */
static void c4sim_reset(struct c4sim_conn *c)
{
	c4sim_rst(c->sock);
	spin_lock_bh(&c->lock);
	cxe_model_conn_reset(&c->mc, CXE_CPL_ERR_CONN_RESET);
	spin_unlock_bh(&c->lock);
}

/* What the ULD sent, the chip refuses: an error; the connection is reset */
static void c4sim_kill(struct c4sim_conn *c, const char *why, long err)
{
	c4sim_trace("error: tid %u: %s (%ld): the chip resets the connection", c->tid, why, err);
	c4sim_reset(c);
}

/* ---- receive ------------------------------------------------------------- */

/*
 * c->lock held: the bytes it may still receive, the accept reply's window
 * less what was charged and not given back. With RX_FC_DISABLE in the
 * reply (mainline and ours set it on a T6) the chip does not close the
 * window by them: mainline's T6 code gives the window back only once a
 * whole window's worth of PDUs has completed, which on a closed window
 * ends with a PDU cut at its edge and never completed. What is owed is
 * still counted, so that a ULD returning more than it was given is seen.
 */
static u32 c4sim_rx_window(const struct c4sim_conn *c)
{
	if (c->rx_fc_off)
		return c->rcv_max;
	return c->rcv_max - min_t(u64, c->rx_owed, c->rcv_max);
}

static int c4sim_rx_deliver(void *ctx, const u8 *msg, u32 len)
{
	struct c4sim_conn *c = ctx;
	/* the window it takes (the model says what a T5 and a T6 charge) */
	u32 charge = cxe_model_rx_charge(c4sim->t5 ? CXE_CHIP_T5 : CXE_CHIP_T6, msg, len);

	if (!c4sim_may_tell(c))
		return -ESHUTDOWN;
	if (charge) {
		spin_lock_bh(&c->lock);
		c->rx_owed += charge;
		spin_unlock_bh(&c->lock);
	}
	c4sim_deliver_any(c->queue, msg, len);
	return 0;
}

/*
 * The pod a tag names, as libcxgb lays tags out for the adapter's
 * ULP_RX_ISCSI_TAGMASK: the index above a 6-bit colour; a tag with the
 * bit above the index set names none.
 */
static bool c4sim_tag_idx(u32 ttt, u32 *idx)
{
	unsigned int bits = fls(C4SIM_TAGMASK);

	if (ttt & (1U << (bits - 1)))
		return false;
	*idx = (ttt >> 6) & ((1U << (bits - 1 - 6)) - 1);
	return true;
}

static bool c4sim_rx_ppod(void *ctx, u32 ttt, u32 itt, u32 off, u32 len)
{
	struct c4sim_conn *c = ctx;
	u64 addr;
	u32 idx;
	bool ok;

	if (!c4sim_tag_idx(ttt, &idx) || !len)
		return false;
	spin_lock_bh(&c4sim->ppm_lock);
	ok = !cxe_model_ppm_locate(&c4sim->ppm, idx, c->tid, ttt, off, &addr) &&
	     !cxe_model_ppm_locate(&c4sim->ppm, idx, c->tid, ttt, off + len - 1, &addr);
	spin_unlock_bh(&c4sim->ppm_lock);
	return ok;
}

/*
 * Placed data written where the pods say, page by page, under the lock a
 * pod write takes. The pods hold bus addresses: the adapter's function
 * has no IOMMU, so they are the pages' physical ones.
 */
static int c4sim_rx_place(void *ctx, u32 ttt, u32 itt, u32 off, const u8 *buf, u32 len)
{
	struct c4sim_conn *c = ctx;
	int ret = 0;
	u32 idx;

	if (!c4sim_tag_idx(ttt, &idx))
		return -EPROTO;
	spin_lock_bh(&c4sim->ppm_lock);
	while (len) {
		u64 addr;
		u32 n;

		ret = cxe_model_ppm_locate(&c4sim->ppm, idx, c->tid, ttt, off, &addr);
		if (ret)
			break;
		n = min_t(u32, len, PAGE_SIZE - offset_in_page(addr));
		memcpy_to_page(pfn_to_page(PHYS_PFN(addr)), offset_in_page(addr), buf, n);
		c4sim_count(C4SIM_RX_PLACED, n);
		off += n;
		buf += n;
		len -= n;
	}
	spin_unlock_bh(&c4sim->ppm_lock);
	return ret ? -EPROTO : 0;
}

static const struct cxe_model_rx_ops c4sim_rx_ops = {
	.deliver	= c4sim_rx_deliver,
	.ppod		= c4sim_rx_ppod,
	.place		= c4sim_rx_place,
};

/*
 * The peer's stream is not one the chip takes (a PDU past its limit, a
 * Data-Out its pods do not take): the chip resets the connection. The
 * peer's doing, or the ULD's where it declared more than the chip takes:
 * counted (rx_refused) for the tests whose initiator sends nothing the
 * chip may refuse, not an error of the ULD's by itself.
 */
static void c4sim_rx_err(struct c4sim_conn *c, int err)
{
	if (err == -ESHUTDOWN)
		return;
	c4sim_count(C4SIM_RX_REFUSED, 1);
	c4sim_trace("chip: tid %u: the receive model refused the stream (%d): reset", c->tid, err);
	c4sim_reset(c);
}

/* c->mu held: the socket's bytes through the receive model, in the window */
static void c4sim_rx(struct c4sim_conn *c)
{
	struct sock *sk = c->sock->sk;
	u32 win, n;
	int ret;
	bool go;

	for (;;) {
		spin_lock_bh(&c->lock);
		go = c->rx_on && !c->released && !c->mc.peer_reset && !c->mc.abort_in;
		win = c4sim_rx_window(c);
		spin_unlock_bh(&c->lock);
		if (!go)
			return;
		n = min3(win, cxe_model_rx_want(&c->rx), (u32)C4SIM_RBUF);
		if (!n) {
			/* the window is shut: a receive batch ends */
			ret = cxe_model_rx_flush(&c->rx, &c4sim_rx_ops, c);
			if (ret)
				c4sim_rx_err(c, ret);
			else if (READ_ONCE(sk->sk_err))
				break;
			return;
		}
		{
			struct kvec kv = { .iov_base = c->rbuf, .iov_len = n };
			struct msghdr msg = { .msg_flags = MSG_DONTWAIT };

			ret = kernel_recvmsg(c->sock, &msg, &kv, 1, n, MSG_DONTWAIT);
		}
		if (ret > 0) {
			spin_lock_bh(&c->lock);
			if (c4sim->t5)
				c->rx_owed += ret;
			spin_unlock_bh(&c->lock);
			c4sim_count(C4SIM_RX_BYTES, ret);
			ret = cxe_model_rx_feed(&c->rx, c->rbuf, ret, &c4sim_rx_ops, c);
			if (ret) {
				c4sim_rx_err(c, ret);
				return;
			}
			continue;
		}
		if (ret == -EAGAIN || ret == 0) {
			int err = cxe_model_rx_flush(&c->rx, &c4sim_rx_ops, c);

			if (err) {
				c4sim_rx_err(c, err);
				return;
			}
		}
		if (ret == -EAGAIN)
			return;
		if (ret == 0) {
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
	/* a reset or a timeout: the chip's TCP gave the connection up */
	if (ret >= 0)
		ret = sock_error(sk);
	spin_lock_bh(&c->lock);
	cxe_model_conn_reset(&c->mc, ret == -ETIMEDOUT ? CXE_CPL_ERR_XMIT_TIMEDOUT :
			     CXE_CPL_ERR_CONN_RESET);
	spin_unlock_bh(&c->lock);
}

/* c->mu held: the peer acked our FIN */
static void c4sim_fin_check(struct c4sim_conn *c)
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

static void c4sim_rx_work(struct work_struct *work)
{
	struct c4sim_conn *c = container_of(work, struct c4sim_conn, rx_work);

	mutex_lock(&c->mu);
	if (c->sock) {
		c4sim_rx(c);
		c4sim_fin_check(c);
	} else if (READ_ONCE(c->early_rst)) {
		/* the chip's TCP saw it; the host's drops its half-open connection too */
		spin_lock_bh(&c->lock);
		cxe_model_conn_reset(&c->mc, CXE_CPL_ERR_CONN_RESET);
		spin_unlock_bh(&c->lock);
	}
	c4sim_conn_msgs(c);
	mutex_unlock(&c->mu);
}

static void c4sim_data_ready(struct sock *sk)
{
	struct c4sim_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c)
		c4sim_kick(c, &c->rx_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void c4sim_state_change(struct sock *sk)
{
	void (*orig)(struct sock *sk) = NULL;
	struct c4sim_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c) {
		orig = c->orig_state_change;
		c4sim_kick(c, &c->rx_work);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (orig)
		orig(sk);
}

/* ---- the handshake ------------------------------------------------------- */

static void c4sim_lsn_ready(struct sock *sk)
{
	struct c4sim_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c)
		c4sim_kick(c, &c->accept_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void c4sim_sock_detach(struct socket *sock)
{
	struct sock *sk = sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	write_unlock_bh(&sk->sk_callback_lock);
}

/*
 * c->mu held, the accept reply taken: the SYN goes to the host's TCP in
 * the port's namespace, to a transparent listener of this connection's
 * (transparent as nf_tproxy's are, so that NAT in the namespace leaves
 * the assignment alone)
 */
static int c4sim_syn_inject(struct c4sim_conn *c)
{
	struct net_device *dev = c4sim->ports[c->port];
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sk_buff *skb = c->syn;
	struct socket *sock;
	int one = 1, ret;

	ret = sock_create_kern(dev_net(dev), AF_INET, SOCK_STREAM, IPPROTO_TCP, &sock);
	if (ret)
		return ret;
	/*
	 * the connection takes the SYN's address and port (LIO's portal's)
	 * and keeps them in TIME_WAIT: marked reusable, as the portal's own
	 * socket is, so that it never keeps LIO from binding that port again
	 * (a chip's connections hold no port of the host's)
	 */
	sock_set_reuseaddr(sock->sk);
	ret = sock->ops->setsockopt(sock, SOL_IP, IP_TRANSPARENT, KERNEL_SOCKPTR(&one),
				    sizeof(one));
	if (!ret)
		ret = kernel_bind(sock, (struct sockaddr *)&a, sizeof(a));
	if (!ret) {
		write_lock_bh(&sock->sk->sk_callback_lock);
		sock->sk->sk_user_data = c;
		sock->sk->sk_data_ready = c4sim_lsn_ready;
		write_unlock_bh(&sock->sk->sk_callback_lock);
		ret = kernel_listen(sock, 1);
	}
	if (ret) {
		c4sim_sock_detach(sock);
		sock_release(sock);
		return ret;
	}
	c->lsock = sock;
	c->syn = NULL;
	skb_scrub_packet(skb, true);
	skb->protocol = eth_type_trans(skb, dev);
	/*
	 * Assigned as bpf_sk_assign() assigns: sock_pfree() drops no
	 * reference of an RCU-freed socket (a listener), so one is taken only
	 * for a socket it does drop. The SYN is received here and now (BH off,
	 * under RCU, as tun hands its frames up), not queued for later, so the
	 * listener, which this connection holds, outlives the assignment.
	 */
	skb->sk = sock->sk;
	skb->destructor = sock_pfree;
	if (sk_is_refcounted(sock->sk))
		sock_hold(sock->sk);
	local_bh_disable();
	rcu_read_lock();
	netif_receive_skb(skb);
	rcu_read_unlock();
	local_bh_enable();
	return 0;
}

/* The host's TCP completed the handshake: the TID's connection is up */
static void c4sim_accept_work(struct work_struct *work)
{
	struct c4sim_conn *c = container_of(work, struct c4sim_conn, accept_work);
	struct socket *sock;
	struct sock *sk;
	u32 max = c4sim_max_dlen();

	mutex_lock(&c->mu);
	if (!c->lsock || kernel_accept(c->lsock, &sock, O_NONBLOCK)) {
		mutex_unlock(&c->mu);
		return;
	}
	c->data_msg = kvmalloc(CXE_MODEL_DATA_MSG_LEN(max), GFP_KERNEL);
	c->rbuf = kvmalloc(C4SIM_RBUF, GFP_KERNEL);
	if (!c->data_msg || !c->rbuf) {
		c4sim_rst(sock);
		sock_release(sock);
		c4sim_kill(c, "no memory for the connection", -ENOMEM);
		c4sim_conn_msgs(c);
		mutex_unlock(&c->mu);
		return;
	}
	c4sim_sock_detach(c->lsock);
	sock_release(c->lsock);
	c->lsock = NULL;
	sk = sock->sk;
	tcp_sock_set_nodelay(sk);
	WRITE_ONCE(c->sock, sock);
	lock_sock(sk);
	spin_lock_bh(&c->lock);
	/* snd_isn + 1 is the first byte to send, rcv_isn + 1 the first to read */
	c->mc.snd_isn = tcp_sk(sk)->write_seq - 1;
	c->mc.rcv_isn = tcp_sk(sk)->copied_seq - 1;
	cxe_model_conn_ack(&c->mc);
	c->rx_on = true;
	spin_unlock_bh(&c->lock);
	cxe_model_rx_init(&c->rx, c4sim->t5 ? CXE_CHIP_T5 : CXE_CHIP_T6, c->tid,
			  tcp_sk(sk)->copied_seq, max, c->data_msg);
	cxe_model_txcred_init(&c->cred, c->tid, tcp_sk(sk)->write_seq);
	release_sock(sk);
	c->tx.chip = c4sim->t5 ? CXE_CHIP_T5 : CXE_CHIP_T6;
	c->tx.tid = c->tid;
	c->tx.max_dlen = max;
	write_lock_bh(&sk->sk_callback_lock);
	c->orig_data_ready = sk->sk_data_ready;
	c->orig_state_change = sk->sk_state_change;
	sk->sk_user_data = c;
	WRITE_ONCE(sk->sk_data_ready, c4sim_data_ready);
	WRITE_ONCE(sk->sk_state_change, c4sim_state_change);
	write_unlock_bh(&sk->sk_callback_lock);
	c4sim_trace("chip: tid=%u established", c->tid);
	c4sim_count(C4SIM_ESTABLISHED, 1);
	c4sim_conn_msgs(c);
	mutex_unlock(&c->mu);
	c4sim_kick(c, &c->rx_work);
}

/* ---- transmit ------------------------------------------------------------ */

/* the bytes to the host's TCP, all of them unless it fails */
static int c4sim_send_bytes(struct sock *sk, const u8 *buf, size_t len)
{
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

/*
 * c->mu held, dropped while the socket takes the bytes: a chip's
 * transmit never holds up its receive. (An initiator whose one work
 * both sends and receives, as iscsi_tcp's, blocked sending to us while
 * we wait to send to it, would otherwise never be read from again.)
 */
static int c4sim_send_wire(struct c4sim_conn *c, const u8 *buf, size_t len)
{
	struct sock *sk = c->sock->sk;
	int ret;

	mutex_unlock(&c->mu);
	ret = c4sim_send_bytes(sk, buf, len);
	mutex_lock(&c->mu);
	return ret;
}

/* c->mu held: credits back, those asked for at least; all when eager */
static void c4sim_acks(struct c4sim_conn *c, bool eager)
{
	u8 ack[CXE_CPL_FW4_ACK_LEN];
	int len;

	while ((len = cxe_model_txcred_ack(&c->cred, ack, eager ? U32_MAX : 0,
					   c->cred.owed)) > 0) {
		c4sim_tell(c, ack, len);
		c4sim_count(C4SIM_FW4_ACKS, 1);
	}
}

/*
 * c->mu held: a data work request through the transmit model: the part
 * cxgb4 writes into the queue (c4sim_skb_imm()), and what it gathers
 */
static void c4sim_tx_data(struct c4sim_conn *c, struct sk_buff *skb, const u8 *req, u32 hlen)
{
	u32 glen = skb->len - hlen, cap;
	u8 *g = NULL, *out;
	long n = -ENOMEM;

	if (glen) {
		g = c4sim_grow(&c->gbuf, &c->gcap, glen);
		if (!g || skb_copy_bits(skb, hlen, g, glen))
			goto refused;
	}
	cap = max(c->ocap, 2 * (hlen + glen) + 4096);
	for (;;) {
		out = c4sim_grow(&c->out, &c->ocap, cap);
		if (!out) {
			n = -ENOMEM;
			break;
		}
		n = cxe_model_tx_wr(&c->tx, req, hlen, g, glen, out, c->ocap);
		if (n != -ENOSPC || c->ocap >= C4SIM_OUT_MAX)
			break;
		cap = min_t(u32, 2 * c->ocap, C4SIM_OUT_MAX);
	}
	if (n < 0)
		goto refused;
	/* a send that fails is the socket's reset, which receive reports */
	c4sim_send_wire(c, out, n);
	cxe_model_txcred_took(&c->cred, req, n);
	c4sim_count(C4SIM_TX_DATA_WRS, 1);
	c4sim_count(C4SIM_TX_GATHERED, !!glen);
	c4sim_count(C4SIM_TX_ISO, req[0] == CXE_FW_ISCSI_TX_DATA_WR);
	c4sim_count(C4SIM_TX_BYTES, n);
	return;
refused:
	c4sim_kill(c, "the transmit model refused a work request", n);
}

static void c4sim_set_tcb(struct c4sim_conn *c, const u8 *p, u32 len)
{
	struct cxe_cpl_tcb_field f;
	u8 rpl[CXE_CPL_SET_TCB_RPL_LEN], mask, val;

	if (cxe_cpl_parse_set_tcb_field(p, len, &f) < 0) {
		c4sim_kill(c, "a CPL_SET_TCB_FIELD the chip cannot read", len);
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
	c4sim_conn_msgs(c);
	c4sim_tell(c, rpl, cxe_model_set_tcb_rpl(rpl, c->tid, f.cookie, 0));
}

/* c->mu held: page pods into the pod memory, before the credits' return */
static void c4sim_pods(struct c4sim_conn *c, const u8 *req, u32 len, bool charged)
{
	int ret;

	spin_lock_bh(&c4sim->ppm_lock);
	ret = cxe_model_ppm_write(&c4sim->ppm, req, len);
	spin_unlock_bh(&c4sim->ppm_lock);
	if (ret < 0) {
		c4sim_kill(c, "a page pod write the chip refuses", ret);
		return;
	}
	if (charged)
		cxe_model_txcred_took(&c->cred, req, 0);
	c4sim_count(C4SIM_POD_WRITES, 1);
}

static void c4sim_rx_data_ack(struct c4sim_conn *c, const u8 *p, u32 len)
{
	struct cxe_cpl_rx_ack ra;
	const char *why = NULL;

	spin_lock_bh(&c->lock);
	if (cxe_cpl_parse_rx_data_ack(p, len, &ra) < 0) {
		why = "a CPL_RX_DATA_ACK the chip cannot read";
	} else if (ra.credits > c->rx_owed) {
		why = "CPL_RX_DATA_ACK returns more than was received";
		c->rx_owed = 0;
	} else {
		c->rx_owed -= ra.credits;
	}
	spin_unlock_bh(&c->lock);
	if (why)
		c4sim_trace("error: tid %u: %s", c->tid, why);
	c4sim_kick(c, &c->rx_work);
}

/* page pods are written from the whole request (immediate, as cxgbit sends them) */
static bool op_is_ulptx(const struct sk_buff *skb)
{
	return skb->data[0] == CXE_FW_ULPTX_WR;
}

/*
 * The bytes of a request cxgb4 writes into the queue: the skb's own when
 * linear there, else a copy (the ULD may still hold the skb: it is only
 * read, as cxgb4 reads it)
 */
static const u8 *c4sim_req(struct c4sim_conn *c, const struct sk_buff *skb, u32 len)
{
	u8 *p;

	if (len <= skb_headlen(skb))
		return skb->data;
	p = c4sim_grow(&c->req, &c->rcap, len);
	if (p && skb_copy_bits(skb, 0, p, len))
		p = NULL;
	return p;
}

/* c->mu held: one message or work request from the ULD, in order */
static void c4sim_tx_one(struct c4sim_conn *c, struct sk_buff *skb)
{
	u32 hlen = c4sim_skb_imm(skb), dropped;
	const char *why = NULL;
	const u8 *req;
	bool live;
	int ret;
	u8 op;

	req = c4sim_req(c, skb, op_is_ulptx(skb) ? skb->len : hlen);
	if (!req) {
		c4sim_kill(c, "no memory for a message", -ENOMEM);
		return;
	}
	spin_lock_bh(&c->lock);
	dropped = c->mc.dropped;
	ret = cxe_model_conn_take(&c->mc, req, hlen);
	if (ret)
		why = c->mc.why;
	dropped = c->mc.dropped - dropped;
	live = cxe_model_conn_flow_live(&c->mc);
	spin_unlock_bh(&c->lock);
	if (ret) {
		c4sim_trace("error: tid %u: message %#x refused: %s", c->tid, req[0], why);
		c4sim_kill(c, "a message the firmware refuses", ret);
		return;
	}
	if (dropped)
		return;		/* after the peer's reset, before the ULD heard of it */
	op = req[0];
	if (op == CXE_FW_ULPTX_WR) {
		c4sim_pods(c, req, skb->len, live);
		return;
	}
	if (op == CXE_FW_OFLD_TX_DATA_WR || op == CXE_FW_ISCSI_TX_DATA_WR) {
		c4sim_tx_data(c, skb, req, hlen);
		return;
	}
	if (op == CXE_FW_FLOWC_WR) {
		c4sim_flowc_check(c, req, hlen);
		cxe_model_txcred_took(&c->cred, req, 0);
	}
	if (op != CXE_FW_TP_WR)
		return;
	switch (req[16]) {
	case CPL_PASS_ACCEPT_RPL:
		ret = c4sim_syn_inject(c);
		if (ret)
			c4sim_kill(c, "no listener for the SYN", ret);
		break;
	case CPL_SET_TCB_FIELD:
		c4sim_set_tcb(c, req, hlen);
		break;
	case CPL_RX_DATA_ACK:
		c4sim_rx_data_ack(c, req, hlen);
		break;
	case CPL_CLOSE_CON_REQ:
		if (c->sock) {
			kernel_sock_shutdown(c->sock, SHUT_WR);
			c->fin_sent = true;
		}
		cxe_model_txcred_took(&c->cred, req, 0);
		c4sim_acks(c, false);
		if (c->sock)
			c4sim_fin_check(c);
		break;
	case CPL_ABORT_REQ:
		/* the connection model queued the CPL_ABORT_RPL_RSS */
		c4sim_rst(c->sock);
		break;
	default:
		break;
	}
}

/* c->mu held: whether the chip was done with the TID the ULD released */
static void c4sim_released(struct c4sim_conn *c)
{
	const char *why = NULL;

	spin_lock_bh(&c->lock);
	if (!c->release_pending || c->dead) {
		spin_unlock_bh(&c->lock);
		return;
	}
	c->release_pending = false;
	if (!c->mc.accepted)
		c->reset_at_end = true;	/* a SYN refused: dropped */
	else if (cxe_model_conn_release(&c->mc))
		why = c->mc.why;
	if (why)
		c->reset_at_end = true;
	queue_work(c4sim_wq, &c->release_work);
	spin_unlock_bh(&c->lock);
	if (why)
		c4sim_trace("error: tid %u released: %s", c->tid, why);
}

static void c4sim_tx_work(struct work_struct *work)
{
	struct c4sim_conn *c = container_of(work, struct c4sim_conn, tx_work);
	struct sk_buff *skb;
	bool sent = false;

	mutex_lock(&c->mu);
	for (;;) {
		spin_lock_bh(&c->lock);
		skb = c->dead ? NULL : __skb_dequeue(&c->txq);
		spin_unlock_bh(&c->lock);
		if (!skb)
			break;
		c4sim_tx_one(c, skb);
		consume_skb(skb);
		sent = true;
		c4sim_conn_msgs(c);
	}
	/* the requests went: their credits come back, as the peer's ACKs free them */
	if (sent)
		c4sim_acks(c, true);
	c4sim_released(c);
	mutex_unlock(&c->mu);
}

/* ---- start and end ------------------------------------------------------- */

static void c4sim_conn_free(struct c4sim_conn *c)
{
	kfree_skb(c->syn);
	kvfree(c->data_msg);
	kvfree(c->rbuf);
	kvfree(c->gbuf);
	kvfree(c->out);
	kvfree(c->req);
	kfree(c);
}

/*
 * The connection ends (process context; out of c4sim->conns already):
 * its works stop (a reset first also ends a send its transmit work waits
 * in), its sockets go.
 */
static void c4sim_conn_end(struct c4sim_conn *c, bool reset)
{
	spin_lock_bh(&c->lock);
	c->dead = true;
	c->released = true;
	spin_unlock_bh(&c->lock);
	if (c->lsock)
		c4sim_sock_detach(c->lsock);
	if (c->sock) {
		struct sock *sk = c->sock->sk;

		write_lock_bh(&sk->sk_callback_lock);
		sk->sk_user_data = NULL;
		sk->sk_data_ready = c->orig_data_ready;
		sk->sk_state_change = c->orig_state_change;
		write_unlock_bh(&sk->sk_callback_lock);
		if (reset)
			c4sim_rst(c->sock);
	}
	cancel_work_sync(&c->accept_work);
	cancel_work_sync(&c->tx_work);
	cancel_work_sync(&c->rx_work);
	cancel_work_sync(&c->abort_work);
	skb_queue_purge(&c->txq);
	if (c->lsock)
		sock_release(c->lsock);
	if (c->sock)
		sock_release(c->sock);
	c4sim_trace("chip: tid=%u free%s", c->tid, reset ? " (reset)" : "");
	c4sim_conn_free(c);
}

/* whether c is still the TID's; if so, taken out: the caller's to end */
static bool c4sim_claim(struct c4sim_conn *c)
{
	bool mine;

	spin_lock_bh(&c4sim->chip_lock);
	mine = c4sim->conns[c->tid] == c;
	if (mine)
		c4sim->conns[c->tid] = NULL;
	spin_unlock_bh(&c4sim->chip_lock);
	return mine;
}

/* the transmit work then takes the abort in order, as every request */
static void c4sim_abort_work(struct work_struct *work)
{
	struct c4sim_conn *c = container_of(work, struct c4sim_conn, abort_work);

	c4sim_rst(READ_ONCE(c->sock));
}

static void c4sim_release_work(struct work_struct *work)
{
	struct c4sim_conn *c = container_of(work, struct c4sim_conn, release_work);

	if (c4sim_claim(c))
		c4sim_conn_end(c, c->reset_at_end);
}

/* A SYN for a server, off the wire (softirq): the TID's connection */
struct c4sim_conn *c4sim_conn_new(unsigned int tid, unsigned int port, struct sk_buff *syn,
				  __be32 saddr, __be16 sport, __be32 daddr, __be16 dport)
{
	struct c4sim_conn *c = kzalloc(sizeof(*c), GFP_ATOMIC);

	if (!c)
		return NULL;
	c->tid = tid;
	c->port = port;
	c->syn = syn;
	c->saddr = saddr;
	c->sport = sport;
	c->daddr = daddr;
	c->dport = dport;
	spin_lock_init(&c->lock);
	skb_queue_head_init(&c->txq);
	mutex_init(&c->mu);
	INIT_WORK(&c->accept_work, c4sim_accept_work);
	INIT_WORK(&c->tx_work, c4sim_tx_work);
	INIT_WORK(&c->rx_work, c4sim_rx_work);
	INIT_WORK(&c->release_work, c4sim_release_work);
	INIT_WORK(&c->abort_work, c4sim_abort_work);
	cxe_model_conn_init(&c->mc, tid, 0, ntohl(tcp_hdr(syn)->seq));
	return c;
}

bool c4sim_conn_match(const struct c4sim_conn *c, __be32 saddr, __be16 sport,
		      __be32 daddr, __be16 dport)
{
	return c->saddr == saddr && c->sport == sport && c->daddr == daddr &&
	       c->dport == dport;
}

/*
 * What the accept reply set that the chip keeps (chip_lock held): the
 * queue its messages go to, the MTU index, the receive window and
 * whether received bytes close it
 */
void c4sim_conn_accepted(struct c4sim_conn *c, unsigned int queue, unsigned int mss_idx,
			 u32 rcv_win, bool rx_fc_off)
{
	spin_lock(&c->lock);
	if (!c->mc.accepted) {
		c->queue = queue;
		c->mss_idx = mss_idx;
		c->rcv_max = rcv_win;
		c->rx_fc_off = rx_fc_off;
	}
	spin_unlock(&c->lock);
}

/*
 * The peer's RST for the TID off the wire (chip_lock held): before the
 * host's TCP gave the connection to the chip, the chip learns of it here
 */
void c4sim_conn_peer_rst(struct c4sim_conn *c)
{
	spin_lock(&c->lock);
	if (!c->sock && !c->early_rst) {
		c->early_rst = true;
		if (!c->dead)
			queue_work(c4sim_wq, &c->rx_work);
	}
	spin_unlock(&c->lock);
}

/* A message for the TID (chip_lock held): the connection's, in order */
void c4sim_conn_tx(struct c4sim_conn *c, struct sk_buff *skb)
{
	spin_lock(&c->lock);
	if (c->dead) {
		spin_unlock(&c->lock);
		kfree_skb(skb);
		return;
	}
	/* the chip resets at once on an abort: a send waiting on the peer holds nothing up */
	if (skb_headlen(skb) >= 24 && skb->data[0] == CXE_FW_TP_WR &&
	    skb->data[16] == CPL_ABORT_REQ)
		queue_work(c4sim_wq, &c->abort_work);
	__skb_queue_tail(&c->txq, skb);
	queue_work(c4sim_wq, &c->tx_work);
	spin_unlock(&c->lock);
}

/* The ULD released the TID (chip_lock held): judged after what it sent before */
void c4sim_conn_release(struct c4sim_conn *c)
{
	bool twice;

	spin_lock(&c->lock);
	twice = c->released;
	if (!twice) {
		c->released = true;
		c->release_pending = true;
		queue_work(c4sim_wq, &c->tx_work);
	}
	spin_unlock(&c->lock);
	if (twice)
		c4sim_trace("error: tid %u released twice", c->tid);
}

/*
 * A connection taken out of c4sim->conns by the caller ends, reset. Dead
 * first, so that its transmit work queues no release work after the one
 * queued is cancelled: that finds it gone, and it ends here once it ran.
 */
static void c4sim_conn_end_taken(struct c4sim_conn *c)
{
	spin_lock_bh(&c->lock);
	c->dead = true;
	spin_unlock_bh(&c->lock);
	cancel_work_sync(&c->release_work);
	c4sim_conn_end(c, true);
}

/* Every connection still there ends, reset (the adapter goes) */
void c4sim_conns_halt(void)
{
	unsigned int tid;

	for (tid = 0; tid < C4SIM_NTIDS; tid++) {
		struct c4sim_conn *c;

		spin_lock_bh(&c4sim->chip_lock);
		c = c4sim->conns[tid];
		c4sim->conns[tid] = NULL;
		spin_unlock_bh(&c4sim->chip_lock);
		if (!c)
			continue;
		c4sim_trace("error: tid %u still in use as the adapter goes", tid);
		c4sim_conn_end_taken(c);
	}
	flush_workqueue(c4sim_wq);
}

/*
 * The adapter is reset (sim_chip.c, the chip taking no request any more):
 * each connection vanishes as the chip forgets its TID, with no message
 * to the ULD; its peer is reset, its works stop before its memory goes.
 * The TID is remembered as lost until a new connection takes it.
 */
unsigned int c4sim_conns_reset(void)
{
	unsigned int tid, n = 0;

	for (tid = 0; tid < C4SIM_NTIDS; tid++) {
		struct c4sim_conn *c;

		spin_lock_bh(&c4sim->chip_lock);
		c = c4sim->conns[tid];
		c4sim->conns[tid] = NULL;
		if (c)
			__set_bit(tid, c4sim->lost_tids);
		spin_unlock_bh(&c4sim->chip_lock);
		if (!c)
			continue;
		c4sim_conn_end_taken(c);
		n++;
	}
	flush_workqueue(c4sim_wq);
	c4sim_count(C4SIM_RESET_CONNS, n);
	return n;
}

int c4sim_tcp_init(void)
{
	c4sim_wq = alloc_workqueue("cxgb4sim", 0, 0);
	return c4sim_wq ? 0 : -ENOMEM;
}

void c4sim_tcp_exit(void)
{
	destroy_workqueue(c4sim_wq);
}
