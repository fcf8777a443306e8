// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext software adapter: the login gate. A connection the portal's
 * listener accepted reaches the portal's accept (and so LIO's login
 * thread) only once its first Login request is whole in the socket; one
 * that has not sent it within LIO's login timeout is closed by the gate's
 * own timer. LIO reads each portal's first Login requests one connection
 * at a time, so without the gate a few connections that never finish
 * theirs would keep every other host from logging in; with it they wait
 * beside each other, as on a chip that hands a connection up with its
 * first PDU. The requests stay unread: the PDU layer reads them, and may
 * still hand the connection, untouched, to the stock portal.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/net.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <target/iscsi/iscsi_target_core.h>

#include "soft.h"
#include "pdu/cxe_bhs.h"

/*
 * LIO's own timeout for a login (TA_LOGIN_TIMEOUT): a first Login request
 * not whole by then would have ended the login on the stock portal too.
 */
#define CXE_GATE_TIMEOUT	(15 * HZ)
/* connections waiting per portal; past it the longest waiting one goes */
#define CXE_GATE_MAX		1024

/* A connection waiting at the gate, its socket's sk_user_data meanwhile */
struct cxe_gated {
	struct list_head	node;		/* waiting or ready */
	struct socket		*sock;
	struct cxe_gate		*gate;
	unsigned long		deadline;	/* jiffies */
};

/* TCP's own callbacks, as every new TCP socket has them */
static void (*cxe_gate_tcp_data_ready)(struct sock *sk);
static void (*cxe_gate_tcp_state_change)(struct sock *sk);

/* Something arrived or changed on a waiting connection: the gate looks */
static void cxe_gate_kick_sk(struct sock *sk)
{
	struct cxe_gated *e;

	read_lock_bh(&sk->sk_callback_lock);
	e = sk->sk_user_data;
	if (e)
		mod_delayed_work(system_wq, &e->gate->work, 0);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void cxe_gate_data_ready(struct sock *sk)
{
	cxe_gate_kick_sk(sk);
	cxe_gate_tcp_data_ready(sk);
}

static void cxe_gate_state_change(struct sock *sk)
{
	cxe_gate_kick_sk(sk);
	cxe_gate_tcp_state_change(sk);
}

static void cxe_gate_hook(struct cxe_gated *e)
{
	struct sock *sk = e->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	WRITE_ONCE(cxe_gate_tcp_data_ready, sk->sk_data_ready);
	WRITE_ONCE(cxe_gate_tcp_state_change, sk->sk_state_change);
	sk->sk_user_data = e;
	WRITE_ONCE(sk->sk_data_ready, cxe_gate_data_ready);
	WRITE_ONCE(sk->sk_state_change, cxe_gate_state_change);
	write_unlock_bh(&sk->sk_callback_lock);
}

/* After it, no callback of the socket reaches e or the gate */
static void cxe_gate_unhook(struct cxe_gated *e)
{
	struct sock *sk = e->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	WRITE_ONCE(sk->sk_data_ready, cxe_gate_tcp_data_ready);
	WRITE_ONCE(sk->sk_state_change, cxe_gate_tcp_state_change);
	write_unlock_bh(&sk->sk_callback_lock);
}

/*
 * Is the first Login request whole? 1 when it is (or when its header
 * already says the login path will refuse it), 0 while it is not, an
 * error when it never will be: the peer closed or reset the connection,
 * or sent urgent data, which iSCSI never does (-ECONNABORTED, as after
 * login).
 */
static int cxe_gate_whole(struct socket *sock)
{
	struct msghdr msg = { .msg_flags = MSG_PEEK | MSG_DONTWAIT };
	struct sock *sk = sock->sk;
	u8 bhs[CXE_BHS_LEN];
	struct kvec iov = { .iov_base = bhs, .iov_len = sizeof(bhs) };
	u64 need;
	int n, ret;

	if (READ_ONCE(tcp_sk(sk)->urg_data))
		return -ECONNABORTED;
	n = kernel_recvmsg(sock, &msg, &iov, 1, sizeof(bhs), msg.msg_flags);
	if (n == -EAGAIN)
		n = 0;
	else if (n == 0)
		return -ECONNRESET;	/* closed before a whole header */
	else if (n < 0)
		return n;
	if (n == sizeof(bhs)) {
		if (cxe_bhs_ahs_len(bhs) || cxe_bhs_dlen(bhs) > MAX_KEY_VALUE_PAIRS)
			return 1;
		need = cxe_pdu_wire_len(0, cxe_bhs_dlen(bhs), false, false);
	} else {
		need = sizeof(bhs);
	}
	lock_sock(sk);
	if (tcp_inq(sk) >= need)
		ret = 1;
	else if (sk->sk_shutdown & RCV_SHUTDOWN || sk->sk_err)
		ret = -ECONNRESET;	/* the rest will never come */
	else
		ret = 0;
	release_sock(sk);
	return ret;
}

/*
 * Close a waiting connection: why is 0 when the peer closed it (or the
 * portal goes), -ETIMEDOUT when it never sent a whole request in time,
 * -ECONNABORTED after urgent data; those two are counted and logged.
 */
static void cxe_gate_drop(struct cxe_gate *g, struct cxe_gated *e, int why)
{
	struct sockaddr_storage peer = {}, local = {};
	struct cxe_adapter *a;

	cxe_gate_unhook(e);
	list_del(&e->node);
	g->waiting--;
	if (why) {
		a = cxe_adapter_get_for_sk(e->sock->sk);
		if (a) {
			cxe_stat_add(a, why == -ETIMEDOUT ? CXE_STAT_LOGINS_STALLED :
				     CXE_STAT_DROPS, 1);
			cxe_adapter_put(a);
		}
		kernel_getpeername(e->sock, (struct sockaddr *)&peer);
		kernel_getsockname(e->sock, (struct sockaddr *)&local);
		if (why == -ETIMEDOUT)
			pr_info_ratelimited("connection %pISpc -> %pISpc: no whole Login request in %u s: closed\n",
					    &peer, &local, CXE_GATE_TIMEOUT / HZ);
		else
			pr_warn_ratelimited("%pISpc: TCP urgent data: dropping the connection\n",
					    &peer);
	}
	sock_release(e->sock);
	kfree(e);
}

/* The listener's new connections join the wait. g->lock held. */
static void cxe_gate_intake(struct cxe_gate *g)
{
	struct cxe_gated *e;
	struct socket *sock;

	while (!kernel_accept(g->listener, &sock, O_NONBLOCK)) {
		g->prepare(sock);
		e = kmalloc(sizeof(*e), GFP_KERNEL);
		if (!e) {
			sock_release(sock);	/* the initiator retries */
			continue;
		}
		if (g->waiting >= CXE_GATE_MAX)
			cxe_gate_drop(g, list_first_entry(&g->wait_list,
							  struct cxe_gated, node),
				      -ETIMEDOUT);
		e->sock = sock;
		e->gate = g;
		e->deadline = jiffies + CXE_GATE_TIMEOUT;
		list_add_tail(&e->node, &g->wait_list);
		g->waiting++;
		cxe_gate_hook(e);
	}
}

static void cxe_gate_work(struct work_struct *work)
{
	struct cxe_gate *g = container_of(to_delayed_work(work),
					  struct cxe_gate, work);
	struct cxe_gated *e, *n;
	unsigned long next = 0;
	bool woke = false;
	int ret;

	mutex_lock(&g->lock);
	if (g->closing)
		goto out;
	cxe_gate_intake(g);
	list_for_each_entry_safe(e, n, &g->wait_list, node) {
		ret = cxe_gate_whole(e->sock);
		if (ret > 0) {
			cxe_gate_unhook(e);
			list_move_tail(&e->node, &g->ready_list);
			g->waiting--;
			woke = true;
		} else if (ret == -ECONNABORTED) {
			cxe_gate_drop(g, e, ret);
		} else if (ret < 0) {
			cxe_gate_drop(g, e, 0);
		} else if (time_after_eq(jiffies, e->deadline)) {
			cxe_gate_drop(g, e, -ETIMEDOUT);
		} else if (!next || time_before(e->deadline, next)) {
			next = e->deadline;
		}
	}
	/* a kick meanwhile has queued it sooner: that one stands */
	if (next)
		queue_delayed_work(system_wq, &g->work,
				   max_t(long, next - jiffies, 1));
out:
	mutex_unlock(&g->lock);
	if (woke)
		cxe_np_ready(g->cnp);
}

void cxe_gate_init(struct cxe_gate *g, struct cxe_np *cnp,
		   struct socket *listener,
		   void (*prepare)(struct socket *sock))
{
	mutex_init(&g->lock);
	INIT_LIST_HEAD(&g->wait_list);
	INIT_LIST_HEAD(&g->ready_list);
	INIT_DELAYED_WORK(&g->work, cxe_gate_work);
	g->cnp = cnp;
	g->listener = listener;
	g->prepare = prepare;
}

/* The listener has a new connection (softirq) */
void cxe_gate_kick(struct cxe_gate *g)
{
	mod_delayed_work(system_wq, &g->work, 0);
}

/* The next connection whose first Login request is whole, or NULL */
struct socket *cxe_gate_take(struct cxe_gate *g)
{
	struct socket *sock = NULL;
	struct cxe_gated *e;

	mutex_lock(&g->lock);
	e = list_first_entry_or_null(&g->ready_list, struct cxe_gated, node);
	if (e) {
		list_del(&e->node);
		sock = e->sock;
		kfree(e);
	}
	mutex_unlock(&g->lock);
	return sock;
}

/*
 * Close every connection at the gate and stop its work. The listener
 * kicks it no more (the caller saw to that), and after the unhooking no
 * connection's callback does either.
 */
void cxe_gate_stop(struct cxe_gate *g)
{
	struct cxe_gated *e, *n;

	mutex_lock(&g->lock);
	g->closing = true;
	list_for_each_entry_safe(e, n, &g->wait_list, node)
		cxe_gate_drop(g, e, 0);
	list_for_each_entry_safe(e, n, &g->ready_list, node) {
		list_del(&e->node);
		sock_release(e->sock);
		kfree(e);
	}
	mutex_unlock(&g->lock);
	cancel_delayed_work_sync(&g->work);
	mutex_destroy(&g->lock);
}
