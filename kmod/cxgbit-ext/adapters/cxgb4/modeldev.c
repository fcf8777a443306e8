// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: modelled adapters. Each stands in for a Chelsio T5/T6
 * below the device glue (dev.h), its one port a netdev of the host, so
 * that the glue's code runs where no Chelsio adapter exists.
 *
 * Made and removed by writing the control interface's cxgb4_models file:
 *   add NAME chip=t5|t6 netdev=IF [answer_ms=N] [table=N]
 *   del NAME
 * and read back from it, one model a line. A model with servers or
 * connections is not removed (-EBUSY). Its port is a netdev by name, as a
 * software adapter's (the writer's namespace first); when that netdev
 * goes the model has no port left and serves nothing new.
 *
 * The server table is the chip model's (model/ulp_lsn.c): its answers
 * come back to the glue's receive entry from a work item, after
 * answer_ms, as a chip's come on its receive queue.
 *
 * The TCP engine: the model's TCP is the host's own. Each server has a
 * kernel listening socket in the port's namespace, bound to the portal's
 * address on an ephemeral port; the glue steers the SYNs of the port to
 * it (syn_listener). Each connection the host's TCP completes there
 * becomes a TID of the model, reported as CPL_PASS_ACCEPT_REQ (after the
 * handshake: model/README.md says what that changes). From then on the
 * connection model (model/ulp_conn.c) takes the glue's messages on the
 * TID and says which connection messages the chip sends; the receive
 * model (model/ulp_rx.c) turns the socket's bytes into the chip's iSCSI
 * messages, within a receive window the glue reopens with
 * CPL_RX_DATA_ACK; the transmit model (model/ulp_tx.c) turns the glue's
 * work requests into the bytes the socket sends, and returns their
 * credits in CPL_FW4_ACK. The model's page pod memory (model/ppod.c) is
 * the adapter's: the glue writes it with FW_ULPTX_WRs on a connection's
 * flow, which the transmit work carries out in order, and the receive
 * model places a Data-Out's data into the pages the pods its TTT names
 * give (by their physical addresses, the model's stand-in for bus
 * addresses), under the lock a write takes, so that a clear written is a
 * fence. Per connection, one work item sends and one receives, each in
 * order; a mutex keeps their messages to the glue in order.
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
#include "../../model/ppod.h"
#include "../../model/ulp_conn.h"
#include "../../model/ulp_lsn.h"
#include "../../model/ulp_rx.h"
#include "../../model/ulp_tx.h"

#define CXE_C4MODEL_NAME	16

/* TIDs of a model's connections, 1.. (0 is never one) */
#define CXE_C4MODEL_TIDS	1024
/* bytes a connection receives before the glue returns them: the chip's window */
#define CXE_C4MODEL_RCV_WIN	(256 * 1024)
/* a connection's transmit credits, as cxgb4_lld_info reports a T5/T6's */
#define CXE_C4MODEL_WR_CRED	128
#define CXE_C4MODEL_BACKLOG	128
/* bytes one receive reads from the socket, at most */
#define CXE_C4MODEL_RBUF	(64 * 1024)
/* the wire bytes of one work request, at most (a runaway guard) */
#define CXE_C4MODEL_OUT_MAX	(64 * 1024 * 1024)
/* its page pod memory: 16384 pods (1 MiB) name 256 MiB of buffers */
#define CXE_C4MODEL_PODS	16384
#define CXE_C4MODEL_POD_BASE	0x100000	/* its address in adapter memory */

struct cxe_c4model;

/* A server's listening socket */
struct cxe_c4model_srv {
	struct cxe_c4model	*m;
	u32			stid;
	struct sockaddr_storage	addr;		/* the portal's */
	struct socket		*sock;
	bool			listening;	/* opened, not being removed
						 * (m->lock)
						 */
	struct work_struct	accept;
};

/* A connection: a TID of the model over a socket of the host's TCP */
struct cxe_c4model_conn {
	struct cxe_c4model	*m;
	u32			tid;
	struct socket		*sock;
	struct sockaddr_storage	peer;		/* for the log */
	void			(*orig_data_ready)(struct sock *sk);
	void			(*orig_state_change)(struct sock *sk);

	spinlock_t		lock;		/* what follows, to mu */
	struct cxe_model_conn	mc;
	struct sk_buff_head	txq;
	u32			rcv_win;	/* bytes it may still receive */
	bool			rx_on;		/* CPL_PASS_ESTABLISH went */
	bool			fin_sent;	/* our FIN went to the socket */
	bool			eof;		/* the peer's FIN read */
	bool			released;	/* release_tid: nothing more to the glue */
	bool			reset_at_end;	/* released before it was over */
	bool			dead;		/* ending: no work queued */
	bool			release_pending; /* released, not judged yet */

	/* the works' own; their messages to the glue go in its order */
	struct mutex		mu;
	struct cxe_model_rx	rx;
	struct cxe_model_tx	tx;
	struct cxe_model_txcred	cred;
	u8			*data_msg;
	u8			*rbuf;
	u8			*gbuf;		/* a request's gathered payload */
	u8			*out;		/* its wire bytes */
	u32			gcap;
	u32			ocap;

	/* CPL_PASS_ACCEPT_REQ, for the receive work to tell first */
	u8			syn[CXE_MODEL_ACCEPT_REQ_MAX];
	u32			syn_len;

	struct work_struct	tx_work;
	struct work_struct	rx_work;
	struct work_struct	release_work;
	struct work_struct	abort_work;	/* our abort, ahead of the queue */
	struct list_head	halt_node;
};

struct cxe_c4model {
	struct cxe_c4dev	d;
	struct list_head	node;		/* cxe_c4models */
	char			name[CXE_C4MODEL_NAME];
	char			netdev[IFNAMSIZ];
	possible_net_t		net;		/* of its port, */
	int			ifindex;	/* 0: it has none */
	u32			answer_ms;
	/* the table, stids, servers, TIDs, conns, nconns, refused, stopped */
	spinlock_t		lock;
	struct cxe_model_lsn	table;
	unsigned long		stids[BITS_TO_LONGS(CXE_MODEL_LSN_STIDS)];
	struct cxe_c4model_srv	*srv[CXE_MODEL_LSN_STIDS];
	unsigned long		tids[BITS_TO_LONGS(CXE_C4MODEL_TIDS)];
	struct xarray		conns;		/* TID -> cxe_c4model_conn */
	u32			nconns;		/* TIDs taken */
	wait_queue_head_t	gone;		/* nconns fell */
	u32			refused;	/* requests the chip refused */
	atomic_t		refused_msgs;	/* connection messages refused */
	atomic_t		bad_releases;	/* TIDs released too early */
	/* pod writes carried out holding credits, and after the flow ended */
	atomic_t		pod_writes;
	atomic_t		pod_writes_late;
	bool			stopped;	/* no more answers: unloading */
	struct delayed_work	answer;
	/* the pod memory; writes and placement under ppm_lock */
	spinlock_t		ppm_lock;
	struct cxe_model_ppm	ppm;
};

/* the models' connection and listener works (made with the first model) */
static struct workqueue_struct *cxe_c4model_wq;

/* TCP's own data_ready, as every new TCP socket has it */
static void (*cxe_c4model_tcp_ready)(struct sock *sk);

static LIST_HEAD(cxe_c4models);
static DEFINE_MUTEX(cxe_c4models_lock);	/* adds and removals */
/* the list too, for the netdev notifier (under rtnl: no mutex it may wait on) */
static DEFINE_SPINLOCK(cxe_c4models_list_lock);

static struct cxe_c4model *to_model(struct cxe_c4dev *d)
{
	return container_of(d, struct cxe_c4model, d);
}

static int cxe_c4model_alloc_stid(struct cxe_c4dev *d, int family)
{
	struct cxe_c4model *m = to_model(d);
	int stid;

	spin_lock_bh(&m->lock);
	stid = find_first_zero_bit(m->stids, CXE_MODEL_LSN_STIDS);
	if (stid < CXE_MODEL_LSN_STIDS)
		__set_bit(stid, m->stids);
	else
		stid = -ENOSPC;
	spin_unlock_bh(&m->lock);
	return stid;
}

static void cxe_c4model_free_stid(struct cxe_c4dev *d, u32 stid, int family)
{
	struct cxe_c4model *m = to_model(d);

	spin_lock_bh(&m->lock);
	__clear_bit(stid, m->stids);
	spin_unlock_bh(&m->lock);
}

/* ---- servers ---------------------------------------------------------------- */

static void cxe_c4model_accept_work(struct work_struct *work);

/*
 * A listener's data_ready: a connection joined its accept queue. The
 * connections it makes inherit this callback (and its user data) until
 * they are taken: for them it is TCP's own.
 */
static void cxe_c4model_listener_ready(struct sock *sk)
{
	struct cxe_c4model_srv *s;

	read_lock_bh(&sk->sk_callback_lock);
	s = sk->sk_state == TCP_LISTEN ? sk->sk_user_data : NULL;
	if (s)
		queue_work(cxe_c4model_wq, &s->accept);
	read_unlock_bh(&sk->sk_callback_lock);
	READ_ONCE(cxe_c4model_tcp_ready)(sk);
}

/* a socket gets TCP's own data_ready back, and no user data of ours */
static void cxe_c4model_tcp_callbacks(struct socket *sock)
{
	struct sock *sk = sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	WRITE_ONCE(sk->sk_data_ready, cxe_c4model_tcp_ready);
	write_unlock_bh(&sk->sk_callback_lock);
}

/* the peer sees a RST (tcp_abort() sends one from any synchronized state) */
static void cxe_c4model_rst(struct socket *sock)
{
	tcp_abort(sock->sk, ECONNABORTED);
}

/*
 * The server's listening socket: in the port's namespace, on the portal's
 * address (a wildcard stays one; [::] takes IPv4 too, as LIO's own and
 * the software adapter's do) with an ephemeral port, since the glue
 * steers the SYNs to it whatever their port.
 */
static int cxe_c4model_listen(struct cxe_c4model *m, struct cxe_c4model_srv *s)
{
	sa_family_t family = s->addr.ss_family;
	struct sockaddr_storage ss = s->addr;
	struct net *net = NULL;
	struct socket *sock;
	struct sock *sk;
	int ret, len;

	if (family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_port = 0;
		len = sizeof(struct sockaddr_in);
	} else if (family == AF_INET6) {
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
		len = sizeof(struct sockaddr_in6);
	} else {
		return -EAFNOSUPPORT;
	}
	/* the namespace lives while the port does (its netdevs go first) */
	rcu_read_lock();
	if (READ_ONCE(m->ifindex))
		net = maybe_get_net(read_pnet(&m->net));
	rcu_read_unlock();
	if (!net)
		return -ENETDOWN;
	/*
	 * A user-style socket, as the software adapter's: it and the
	 * connections it makes pin the namespace, which cannot then go
	 * while a server or connection uses it.
	 */
	ret = __sock_create(net, family, SOCK_STREAM, IPPROTO_TCP, &sock, 0);
	put_net(net);
	if (ret)
		return ret;
	sk = sock->sk;
	sock_set_reuseaddr(sk);
	ret = kernel_bind(sock, (struct sockaddr *)&ss, len);
	if (!ret)
		ret = kernel_listen(sock, CXE_C4MODEL_BACKLOG);
	if (ret) {
		sock_release(sock);
		return ret;
	}
	s->sock = sock;
	write_lock_bh(&sk->sk_callback_lock);
	WRITE_ONCE(cxe_c4model_tcp_ready, sk->sk_data_ready);
	sk->sk_user_data = s;
	WRITE_ONCE(sk->sk_data_ready, cxe_c4model_listener_ready);
	write_unlock_bh(&sk->sk_callback_lock);
	return 0;
}

/*
 * The server is gone (process context): its listener closes, and the
 * connections it made that were never taken are reset.
 */
static void cxe_c4model_srv_free(struct cxe_c4model_srv *s)
{
	struct socket *child;

	if (s->sock) {
		cxe_c4model_tcp_callbacks(s->sock);
		cancel_work_sync(&s->accept);
		while (!kernel_accept(s->sock, &child, O_NONBLOCK)) {
			cxe_c4model_tcp_callbacks(child);
			cxe_c4model_rst(child);
			sock_release(child);
		}
		sock_release(s->sock);
	}
	kfree(s);
}

/*
 * A request the chip took is answered at most answer_ms after it (all owed
 * answers go when the first one's time comes); one it refused, never. An
 * open that goes to the table keeps its server's listener in srv.
 */
static int cxe_c4model_request(struct cxe_c4model *m, u32 stid, bool open,
			       struct cxe_c4model_srv *s)
{
	int ret;

	spin_lock_bh(&m->lock);
	if (m->stopped) {
		ret = -ENODEV;
		m->table.why = "the model is stopped";
	} else if (open && m->srv[stid]) {
		/* the table refuses it too: an answer is still on its way */
		ret = -EBUSY;
		m->table.why = "the STID's last server is not gone yet";
	} else {
		ret = open ? cxe_model_lsn_open(&m->table, stid) :
			     cxe_model_lsn_remove(&m->table, stid);
	}
	if (ret) {
		m->refused++;
		pr_warn("cxgb4 model %s: server %u: %s refused: %s\n", m->name,
			stid, open ? "open" : "removal", m->table.why);
	} else {
		if (open)
			m->srv[stid] = s;
		else if (m->srv[stid])
			/* the chip takes no more SYNs for it */
			m->srv[stid]->listening = false;
		queue_delayed_work(system_wq, &m->answer,
				   msecs_to_jiffies(m->answer_ms));
	}
	spin_unlock_bh(&m->lock);
	return ret ? -EIO : 0;
}

static int cxe_c4model_create_server(struct cxe_c4dev *d, u32 stid,
				     const struct sockaddr_storage *addr)
{
	struct cxe_c4model *m = to_model(d);
	struct cxe_c4model_srv *s;
	int ret;

	if (stid >= CXE_MODEL_LSN_STIDS)
		return -EINVAL;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->m = m;
	s->stid = stid;
	s->addr = *addr;
	INIT_WORK(&s->accept, cxe_c4model_accept_work);
	ret = cxe_c4model_listen(m, s);
	if (ret) {
		pr_err("cxgb4 model %s: server %u: no listening socket on %pISc (%d)\n",
		       m->name, stid, addr, ret);
		kfree(s);
		return ret;
	}
	ret = cxe_c4model_request(m, stid, true, s);
	if (ret)
		cxe_c4model_srv_free(s);
	return ret;
}

static int cxe_c4model_remove_server(struct cxe_c4dev *d, u32 stid, bool ipv6)
{
	if (stid >= CXE_MODEL_LSN_STIDS)
		return -EINVAL;
	return cxe_c4model_request(to_model(d), stid, false, NULL);
}

/*
 * An answer on its way to the glue (m->lock held): a server opened now
 * listens; one refused or removed is taken out, for its listener to go
 * (returned) before the glue hears that it went.
 */
static struct cxe_c4model_srv *cxe_c4model_answered(struct cxe_c4model *m,
						    const u8 *msg, int len)
{
	struct cxe_cpl_listen_rpl r;
	struct cxe_c4model_srv *s;
	bool open = cxe_cpl_opcode(msg, len) == CXE_CPL_PASS_OPEN_RPL;

	if ((open ? cxe_cpl_parse_pass_open_rpl(msg, len, &r) :
		    cxe_cpl_parse_close_listsrv_rpl(msg, len, &r)) < 0 ||
	    r.stid >= CXE_MODEL_LSN_STIDS)
		return NULL;
	s = m->srv[r.stid];
	if (!s)
		return NULL;
	if (open && !r.status) {
		s->listening = true;
		return NULL;
	}
	s->listening = false;
	m->srv[r.stid] = NULL;
	return s;
}

/* The answers the chip owes, to the glue, in order */
static void cxe_c4model_answer(struct work_struct *work)
{
	struct cxe_c4model *m = container_of(to_delayed_work(work),
					     struct cxe_c4model, answer);
	u8 msg[CXE_CPL_PASS_OPEN_RPL_LEN];
	struct cxe_c4model_srv *gone;
	int len;

	for (;;) {
		gone = NULL;
		spin_lock_bh(&m->lock);
		len = m->stopped ? 0 : cxe_model_lsn_next(&m->table, msg, sizeof(msg));
		if (len)
			gone = cxe_c4model_answered(m, msg, len);
		spin_unlock_bh(&m->lock);
		if (!len)
			return;
		if (gone)
			cxe_c4model_srv_free(gone);
		cxe_c4dev_rx(&m->d, msg, len);
	}
}

/*
 * The listener of a server the chip listens for (opened, not being
 * removed), with a reference; softirq, RCU held. The listener goes in
 * process context after it is taken out of srv under the lock.
 */
static struct sock *cxe_c4model_syn_listener(struct cxe_c4dev *d, u32 stid)
{
	struct cxe_c4model *m = to_model(d);
	struct cxe_c4model_srv *s;
	struct sock *sk = NULL;

	if (stid >= CXE_MODEL_LSN_STIDS)
		return NULL;
	spin_lock_bh(&m->lock);
	s = m->srv[stid];
	if (s && s->listening && !m->stopped) {
		sk = s->sock->sk;
		sock_hold(sk);
	}
	spin_unlock_bh(&m->lock);
	return sk;
}

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

	if (!cxe_c4model_may_tell(c))
		return -ESHUTDOWN;
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
	u64 addr;
	bool ok;

	if (!cxe_ppod_tag_ddp(ttt) || !len)
		return false;
	spin_lock_bh(&m->ppm_lock);
	ok = !cxe_model_ppm_locate(&m->ppm, cxe_ppod_tag_idx(ttt), c->tid, ttt,
				   off, &addr) &&
	     !cxe_model_ppm_locate(&m->ppm, cxe_ppod_tag_idx(ttt), c->tid, ttt,
				   off + len - 1, &addr);
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

		ret = cxe_model_ppm_locate(&m->ppm, cxe_ppod_tag_idx(ttt),
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
			spin_lock_bh(&c->lock);
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
static int cxe_c4model_send(struct cxe_c4dev *d, u32 tid, struct sk_buff *skb)
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
static void cxe_c4model_conn_end(struct cxe_c4model_conn *c, bool reset)
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
static void cxe_c4model_release_tid(struct cxe_c4dev *d, u32 tid, bool ipv6)
{
	struct cxe_c4model *m = to_model(d);
	struct cxe_c4model_conn *c;
	const char *why = NULL;
	bool found;

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
	cxe_model_txcred_init(&c->cred, tid, snd_isn);
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

static void cxe_c4model_accept_work(struct work_struct *work)
{
	struct cxe_c4model_srv *s = container_of(work, struct cxe_c4model_srv,
						 accept);
	struct socket *sock;

	while (!kernel_accept(s->sock, &sock, O_NONBLOCK))
		cxe_c4model_take(s, sock);
}

/*
 * cxgb4's default MTU table (cxgb3's init_mtus(), which cxgb4 reads back
 * from the chip, with 1492 made 1488 as cxgb4's adap_init0() does)
 */
static const u16 cxe_c4model_mtus[CXE_C4_NMTUS] = {
	88, 88, 256, 512, 576, 1024, 1280, 1488,
	1500, 2002, 2048, 4096, 4352, 8192, 9000, 9600,
};

/* The path of an accept: the port's MTU, a 10 Gb/s port, all indexes 0 */
static int cxe_c4model_accept_path(struct cxe_c4dev *d,
				   const struct cxe_cpl_accept_req *r,
				   struct cxe_c4_path *p, struct cxe_cpl_accept *a)
{
	struct cxe_c4model *m = to_model(d);
	struct net_device *nd = NULL;
	u32 mtu = 0;
	int ifindex;

	rcu_read_lock();
	ifindex = READ_ONCE(m->ifindex);
	if (ifindex)
		nd = dev_get_by_index_rcu(read_pnet(&m->net), ifindex);
	if (nd)
		mtu = READ_ONCE(nd->mtu);
	rcu_read_unlock();
	if (!nd)
		return -ENETUNREACH;
	p->mtus = cxe_c4model_mtus;
	p->mtu = mtu;
	p->speed_mbps = 10000;
	a->l2t_idx = 0;
	a->rss_qid = 0;
	a->tx_chan = 0;
	a->smac_idx = 0;
	return 0;
}

static bool cxe_c4model_has_port(struct cxe_c4dev *d,
				 const struct net_device *nd)
{
	struct cxe_c4model *m = to_model(d);

	return READ_ONCE(m->ifindex) && nd->ifindex == READ_ONCE(m->ifindex) &&
	       net_eq(dev_net(nd), read_pnet(&m->net));
}

/* the page's physical address stands for the bus address it maps to */
static int cxe_c4model_map_page(struct cxe_c4dev *d, struct page *pg,
				u64 *addr)
{
	*addr = page_to_phys(pg);
	return 0;
}

static void cxe_c4model_unmap_page(struct cxe_c4dev *d, u64 addr)
{
}

static void cxe_c4model_release(struct cxe_c4dev *d)
{
	struct cxe_c4model *m = to_model(d);

	xa_destroy(&m->conns);
	kvfree(m->ppm.mem);
	kfree(m);
}

static const struct cxe_c4dev_ops cxe_c4model_ops = {
	.alloc_stid	= cxe_c4model_alloc_stid,
	.free_stid	= cxe_c4model_free_stid,
	.create_server	= cxe_c4model_create_server,
	.remove_server	= cxe_c4model_remove_server,
	.has_port	= cxe_c4model_has_port,
	.accept_path	= cxe_c4model_accept_path,
	.send		= cxe_c4model_send,
	.release_tid	= cxe_c4model_release_tid,
	.syn_listener	= cxe_c4model_syn_listener,
	.map_page	= cxe_c4model_map_page,
	.unmap_page	= cxe_c4model_unmap_page,
	.release	= cxe_c4model_release,
};

/* ---- the control interface ----------------------------------------------- */

static struct cxe_c4model *cxe_c4model_find(const char *name)
{
	struct cxe_c4model *m;

	list_for_each_entry(m, &cxe_c4models, node)
		if (!strcmp(m->name, name))
			return m;
	return NULL;
}

/* its port: a netdev by name, as a software adapter's */
static int cxe_c4model_port(struct cxe_c4model *m, const char *name)
{
	struct net *net;
	int ifindex, ret;

	ret = cxe_netdev_resolve(name, &net, &ifindex);
	if (ret)
		return ret;
	write_pnet(&m->net, net);
	m->ifindex = ifindex;
	strscpy(m->netdev, name, sizeof(m->netdev));
	return 0;
}

/* a model that never was listed */
static void cxe_c4model_unmade(struct cxe_c4model *m)
{
	bitmap_free(m->d.pod_map);
	kvfree(m->ppm.mem);
	kfree(m);
}

static int cxe_c4model_add(char *args)
{
	struct cxe_cxgb4_hw hw = {
		.page_size	= PAGE_SIZE,
		.max_frags	= MAX_SKB_FRAGS,
		.fw_vers	= CXE_CXGB4_ISO_FW,
		.ddp		= true,
	};
	char *name = strsep(&args, " "), *arg, *netdev = NULL;
	u32 table = CXE_MODEL_LSN_STIDS, answer_ms = 0;
	struct cxe_c4model *m;
	int ret = 0;

	if (!name || !*name || strlen(name) >= CXE_C4MODEL_NAME) {
		pr_err("cxgb4_models: a name of 1 to %d characters\n",
		       CXE_C4MODEL_NAME - 1);
		return -EINVAL;
	}
	while ((arg = strsep(&args, " "))) {
		if (!*arg)
			continue;
		if (!strcmp(arg, "chip=t5"))
			hw.chip = CXE_CHIP_T5;
		else if (!strcmp(arg, "chip=t6"))
			hw.chip = CXE_CHIP_T6;
		else if (!strncmp(arg, "netdev=", 7))
			netdev = arg + 7;
		else if (!strncmp(arg, "answer_ms=", 10))
			ret = kstrtou32(arg + 10, 0, &answer_ms);
		else if (!strncmp(arg, "table=", 6))
			ret = kstrtou32(arg + 6, 0, &table);
		else
			ret = -EINVAL;
		if (ret) {
			pr_err("cxgb4_models: %s: '%s' is not chip=t5|t6, netdev=IF, answer_ms=N or table=N\n",
			       name, arg);
			return -EINVAL;
		}
	}
	if (!hw.chip || !netdev || !dev_valid_name(netdev)) {
		pr_err("cxgb4_models: %s: chip=t5|t6 and netdev=IF are needed\n",
		       name);
		return -EINVAL;
	}
	if (table > CXE_MODEL_LSN_STIDS || answer_ms > 60000) {
		pr_err("cxgb4_models: %s: table is at most %d, answer_ms at most 60000\n",
		       name, CXE_MODEL_LSN_STIDS);
		return -EINVAL;
	}
	hw.iscsi_iolen = hw.chip == CXE_CHIP_T5 ? CXE_CXGB4_T5_MAX_PDU :
			 CXE_CXGB4_T6_MAX_DLEN + CXE_CXGB4_PDU_OVERHEAD;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->ppm.mem = kvzalloc(CXE_C4MODEL_PODS << CXE_PPOD_SHIFT, GFP_KERNEL);
	if (!m->ppm.mem) {
		kfree(m);
		return -ENOMEM;
	}
	m->ppm.base = CXE_C4MODEL_POD_BASE;
	m->ppm.size = CXE_C4MODEL_PODS << CXE_PPOD_SHIFT;
	spin_lock_init(&m->ppm_lock);
	ret = cxe_cxgb4_limits(&hw, &m->d.limits);
	if (!ret) {
		ret = cxe_c4model_port(m, netdev);
		if (ret)
			pr_err("cxgb4_models: %s: %s netdev %s\n", name,
			       ret == -EEXIST ? "several network namespaces have a" :
			       "no network namespace has a", netdev);
	}
	if (ret) {
		cxe_c4model_unmade(m);
		return ret;
	}
	strscpy(m->name, name, sizeof(m->name));
	m->answer_ms = answer_ms;
	spin_lock_init(&m->lock);
	cxe_model_lsn_init(&m->table, table);
	INIT_DELAYED_WORK(&m->answer, cxe_c4model_answer);
	xa_init_flags(&m->conns, XA_FLAGS_LOCK_BH);
	init_waitqueue_head(&m->gone);
	atomic_set(&m->refused_msgs, 0);
	atomic_set(&m->bad_releases, 0);
	cxe_c4dev_init(&m->d, &cxe_c4model_ops);
	m->d.name = m->name;
	m->d.kind = hw.chip == CXE_CHIP_T5 ? "T5model" : "T6model";
	m->d.chip = hw.chip;
	m->d.wr_cred = CXE_C4MODEL_WR_CRED;
	m->d.nports = 1;
	m->d.serves = true;
	m->d.up = true;
	if (cxe_c4dev_pods_init(&m->d, CXE_C4MODEL_POD_BASE, CXE_C4MODEL_PODS)) {
		cxe_c4model_unmade(m);
		return -ENOMEM;
	}

	mutex_lock(&cxe_c4models_lock);
	if (cxe_c4model_find(name)) {
		mutex_unlock(&cxe_c4models_lock);
		pr_err("cxgb4_models: %s exists\n", name);
		cxe_c4model_unmade(m);
		return -EEXIST;
	}
	/* the works of every model's connections; goes at unload */
	if (!cxe_c4model_wq)
		cxe_c4model_wq = alloc_workqueue("cxe_c4model", 0, 0);
	if (!cxe_c4model_wq) {
		mutex_unlock(&cxe_c4models_lock);
		cxe_c4model_unmade(m);
		return -ENOMEM;
	}
	spin_lock_bh(&cxe_c4models_list_lock);
	list_add_tail(&m->node, &cxe_c4models);
	spin_unlock_bh(&cxe_c4models_list_lock);
	cxe_c4dev_add(&m->d);
	mutex_unlock(&cxe_c4models_lock);
	pr_info("cxgb4 model %s: %s on %s, answers after %u ms, %u servers\n",
		m->name, m->d.kind, m->netdev, answer_ms, table);
	return 0;
}

static bool cxe_c4model_no_conns(struct cxe_c4model *m)
{
	bool none;

	spin_lock_bh(&m->lock);
	none = !m->nconns;
	spin_unlock_bh(&m->lock);
	return none;
}

/*
 * No more answers: whatever is owed stays unsent. The listeners close and
 * every connection is reset and ends; nothing goes to the glue from here
 * on (it has let go of them all before an unload). Process context.
 */
static void cxe_c4model_halt(struct cxe_c4model *m)
{
	struct cxe_c4model_srv *srv[CXE_MODEL_LSN_STIDS];
	struct cxe_c4model_conn *c, *tmp;
	unsigned long tid;
	LIST_HEAD(conns);
	int i;

	spin_lock_bh(&m->lock);
	m->stopped = true;
	memcpy(srv, m->srv, sizeof(srv));
	memset(m->srv, 0, sizeof(m->srv));
	spin_unlock_bh(&m->lock);
	cancel_delayed_work_sync(&m->answer);
	/* no accept work runs after this: no connection comes */
	for (i = 0; i < CXE_MODEL_LSN_STIDS; i++)
		if (srv[i])
			cxe_c4model_srv_free(srv[i]);
	spin_lock_bh(&m->lock);
	xa_for_each(&m->conns, tid, c) {
		xa_erase(&m->conns, tid);
		list_add_tail(&c->halt_node, &conns);
	}
	spin_unlock_bh(&m->lock);
	list_for_each_entry_safe(c, tmp, &conns, halt_node) {
		/*
		 * Dead first: the transmit work queues no release work after
		 * this (a RST ends a send it waits in); a release work queued
		 * before finds the map without it, and must not run after.
		 */
		spin_lock_bh(&c->lock);
		c->dead = true;
		spin_unlock_bh(&c->lock);
		cxe_c4model_rst(c->sock);
		cancel_work_sync(&c->tx_work);
		cancel_work_sync(&c->release_work);
		cxe_c4model_conn_end(c, true);
	}
	/* and those a release work took out of the map end first */
	wait_event(m->gone, cxe_c4model_no_conns(m));
}

static int cxe_c4model_del(const char *name)
{
	struct cxe_c4model *m;
	u32 conns;
	int ret;

	mutex_lock(&cxe_c4models_lock);
	m = cxe_c4model_find(name);
	if (!m) {
		mutex_unlock(&cxe_c4models_lock);
		pr_err("cxgb4_models: no model %s\n", name);
		return -ENOENT;
	}
	spin_lock_bh(&m->lock);
	conns = m->nconns;
	spin_unlock_bh(&m->lock);
	if (conns) {
		mutex_unlock(&cxe_c4models_lock);
		pr_err("cxgb4_models: %s carries connections (%u): end them first\n",
		       name, conns);
		return -EBUSY;
	}
	/*
	 * with no server left, no answer is owed and no connection comes
	 * (a server's listener goes before the glue hears it went)
	 */
	ret = cxe_c4dev_del(&m->d);
	if (ret) {
		mutex_unlock(&cxe_c4models_lock);
		pr_err("cxgb4_models: %s has servers: remove their portals first\n",
		       name);
		return ret;
	}
	spin_lock_bh(&cxe_c4models_list_lock);
	list_del(&m->node);
	spin_unlock_bh(&cxe_c4models_list_lock);
	mutex_unlock(&cxe_c4models_lock);
	cxe_c4model_halt(m);
	pr_info("cxgb4 model %s: removed\n", name);
	cxe_c4dev_put(&m->d);
	return 0;
}

ssize_t cxe_c4model_store(const char *page, size_t count)
{
	char *buf, *args, *verb;
	int ret;

	buf = kstrndup(page, count, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	args = strim(buf);
	verb = strsep(&args, " ");
	if (!strcmp(verb, "add") && args)
		ret = cxe_c4model_add(args);
	else if (!strcmp(verb, "del") && args)
		ret = cxe_c4model_del(strim(args));
	else
		ret = -EINVAL;
	if (ret == -EINVAL && strcmp(verb, "add"))
		pr_err("cxgb4_models: write 'add NAME chip=t5|t6 netdev=IF [answer_ms=N] [table=N]' or 'del NAME'\n");
	kfree(buf);
	return ret ? ret : count;
}

ssize_t cxe_c4model_show(char *page)
{
	struct cxe_c4model *m;
	ssize_t len = 0;

	mutex_lock(&cxe_c4models_lock);
	list_for_each_entry(m, &cxe_c4models, node) {
		spin_lock_bh(&m->lock);
		len += sysfs_emit_at(page, len, "%s chip=%s netdev=%s%s",
				     m->name, m->d.kind, m->netdev,
				     READ_ONCE(m->ifindex) ? "" : "(gone)");
		len += sysfs_emit_at(page, len, " answer_ms=%u table=%u servers=%u refused=%u",
				     m->answer_ms, m->table.cap,
				     m->table.servers, m->refused);
		len += sysfs_emit_at(page, len, " conns=%u refused_msgs=%d bad_releases=%d",
				     m->nconns, atomic_read(&m->refused_msgs),
				     atomic_read(&m->bad_releases));
		len += sysfs_emit_at(page, len, " pod_writes=%d pod_writes_late=%d\n",
				     atomic_read(&m->pod_writes),
				     atomic_read(&m->pod_writes_late));
		spin_unlock_bh(&m->lock);
	}
	mutex_unlock(&cxe_c4models_lock);
	return len;
}

/* A model's port unregisters: it has no port, and serves nothing now */
void cxe_c4model_netdev_gone(const struct net_device *nd)
{
	struct cxe_c4model *m;

	spin_lock_bh(&cxe_c4models_list_lock);
	list_for_each_entry(m, &cxe_c4models, node)
		if (cxe_c4model_has_port(&m->d, nd))
			WRITE_ONCE(m->ifindex, 0);
	spin_unlock_bh(&cxe_c4models_list_lock);
}

void cxe_c4model_stop(void)
{
	struct cxe_c4model *m;

	mutex_lock(&cxe_c4models_lock);
	list_for_each_entry(m, &cxe_c4models, node)
		cxe_c4model_halt(m);
	mutex_unlock(&cxe_c4models_lock);
}

/* after cxe_c4model_stop(): the models go, then their workqueue */
void cxe_c4model_exit(void)
{
	struct cxe_c4model *m, *tmp;

	mutex_lock(&cxe_c4models_lock);
	list_for_each_entry(m, &cxe_c4models, node)
		cxe_c4model_halt(m);	/* done by stop already: a no-op */
	spin_lock_bh(&cxe_c4models_list_lock);
	list_for_each_entry_safe(m, tmp, &cxe_c4models, node)
		list_del(&m->node);
	spin_unlock_bh(&cxe_c4models_list_lock);
	mutex_unlock(&cxe_c4models_lock);
	cxe_c4dev_drop_all(&cxe_c4model_ops);
	/* a callback of ours that a socket called before it got TCP's back ends */
	synchronize_net();
	if (cxe_c4model_wq) {
		destroy_workqueue(cxe_c4model_wq);
		cxe_c4model_wq = NULL;
	}
}
