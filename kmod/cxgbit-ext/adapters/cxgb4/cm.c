// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: connections, from the chip's CPL_PASS_ACCEPT_REQ to the
 * release of the TID.
 *
 * A SYN for a listening server comes as CPL_PASS_ACCEPT_REQ on a TID the
 * chip chose. The glue answers it in process context: the options from
 * the SYN and the path (conn.h), CPL_PASS_ACCEPT_RPL through the device,
 * and the TID goes in the adapter's map before the reply, so that every
 * later message finds it. At CPL_PASS_ESTABLISH the connection waits on
 * its server for the portal's accept (cxe_np_ready()); a server that
 * stops first aborts the connections nobody took.
 *
 * conn.c decides each step of a connection's life; here it is done, under
 * the connection's lock for what is sent (so the requests of one TID go in
 * the order they were decided), after it for the rest. The TID map holds
 * a reference until the TID is released, the PDU layer one from accept to
 * conn_release, the close timer one while armed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <target/iscsi/iscsi_target_core.h>

#include "../../cxgbit_ext.h"
#include "dev.h"

/* how long our FIN waits for the peer's before the connection is aborted */
#define CXE_C4_CLOSE_WAIT	(30 * HZ)
/* how long a TCB change waits for the chip's answer: mainline's */
#define CXE_C4_TCB_WAIT		(10 * HZ)
/* the longest request the glue sends outside the data path */
#define CXE_C4_MSG_MAX		128

static void cxe_c4tid_free(struct kref *ref)
{
	struct cxe_c4tid *t = container_of(ref, struct cxe_c4tid, ref);

	skb_queue_purge(&t->rxq);
	kfree(t->accept_req);
	if (t->srv)
		cxe_c4srv_put(t->srv);
	cxe_c4dev_put(t->dev);
	kfree(t);
}

void cxe_c4tid_put(struct cxe_c4tid *t)
{
	kref_put(&t->ref, cxe_c4tid_free);
}

static struct cxe_c4tid *cxe_c4tid_get(struct cxe_c4dev *d, u32 tid)
{
	struct cxe_c4tid *t;

	spin_lock_bh(&d->lock);
	t = xa_load(&d->tids, tid);
	if (t)
		kref_get(&t->ref);
	spin_unlock_bh(&d->lock);
	return t;
}

int cxe_c4tid_send(struct cxe_c4tid *t, const void *msg, u32 len)
{
	struct sk_buff *skb;

	skb = alloc_skb(len, GFP_ATOMIC);
	if (!skb)
		return -ENOMEM;
	skb_put_data(skb, msg, len);
	return t->dev->ops->send(t->dev, t->tid, skb);
}

static bool cxe_c4tid_may_take(struct cxe_c4tid *t, u32 len16)
{
	bool ok;

	spin_lock_bh(&t->lock);
	ok = (t->cred.avail >= len16 && t->cred.n < CXE_C4CRED_RING) ||
	     !cxe_c4conn_may_send(&t->st) || !t->cred_ok;
	spin_unlock_bh(&t->lock);
	return ok;
}

int cxe_c4tid_charge(struct cxe_c4tid *t, u32 len16, bool want_compl,
		     bool *compl)
	__acquires(&t->lock)
{
	int ret, what;

	spin_lock_bh(&t->lock);
	for (;;) {
		if (!cxe_c4conn_may_send(&t->st) || !t->cred_ok)
			return -EPIPE;
		/* the connection's FW_FLOWC_WR first, its credits before ours */
		what = cxe_c4conn_tx_begin(&t->st);
		if (what > 0)
			cxe_c4tid_sends(t, what);
		ret = cxe_c4cred_take(&t->cred, len16, want_compl, compl);
		if (ret != -EAGAIN)
			return ret;
		spin_unlock_bh(&t->lock);
		ret = wait_event_interruptible(t->wq,
					       cxe_c4tid_may_take(t, len16));
		spin_lock_bh(&t->lock);
		if (ret)
			return ret;
	}
}

/* whether the request that left t's ledger at mark came back, or t is over */
static bool cxe_c4tid_ulptx_done(struct cxe_c4tid *t, u32 mark)
{
	bool done;

	spin_lock_bh(&t->lock);
	done = cxe_c4cred_acked(&t->cred, mark) ||
	       !cxe_c4conn_may_send(&t->st);
	spin_unlock_bh(&t->lock);
	return done;
}

/*
 * Page pods go on the connection's flow, as mainline sends them, and the
 * chip takes a flow's requests in order. While the connection may send,
 * the write is a request like any other: its credits taken, an ack asked
 * for, and that ack waited for, since the chip returns a request's
 * credits once it has carried it out: the pods then read as written.
 * Once the connection may send nothing more (our FIN or abort went, or
 * the peer reset it), the chip places nothing more for it either: the
 * write goes outside the ledger, ahead of the TID's release, which the
 * glue sends only after it. -ECONNRESET: the connection ended while the
 * write waited for its ack (the chip may not have carried it out);
 * -ETIMEDOUT: no ack within CXE_C4_ULPTX_WAIT.
 */
#define CXE_C4_ULPTX_WAIT	(10 * HZ)
int cxe_c4tid_ulptx(struct cxe_c4tid *t, u8 *wr, u32 len)
{
	u32 mark;
	bool compl;
	int ret;

	ret = cxe_c4tid_charge(t, len / 16, true, &compl);
	if (ret == -EPIPE) {
		/* the flow is over: outside the ledger, ahead of the release */
		ret = cxe_c4tid_send(t, wr, len);
		spin_unlock_bh(&t->lock);
		return ret;
	}
	if (!ret) {
		mark = t->cred.taken;
		cxe_wr_ask_compl(wr);
		ret = cxe_c4tid_send(t, wr, len);
	}
	spin_unlock_bh(&t->lock);
	if (ret)
		return ret;
	/* the chip acks what it carried out at once: a signal does not stop it */
	ret = wait_event_timeout(t->wq, cxe_c4tid_ulptx_done(t, mark),
				 CXE_C4_ULPTX_WAIT);
	spin_lock_bh(&t->lock);
	if (cxe_c4cred_acked(&t->cred, mark))
		ret = 0;
	else
		ret = ret ? -ECONNRESET : -ETIMEDOUT;
	spin_unlock_bh(&t->lock);
	return ret;
}

/*
 * Our FIN, behind the data: its credits taken and the ack that returns
 * them asked for, as mainline's cxgbit_push_tx_frames() does. When the
 * credits are out it waits for an ack (close_wait), which is then always
 * on its way (credits.h). t->lock held.
 */
static int cxe_c4tid_close(struct cxe_c4tid *t)
{
	u8 buf[CXE_C4_MSG_MAX];
	bool compl = true;
	int ret;

	if (t->cred_ok) {
		ret = cxe_c4cred_take(&t->cred,
				      DIV_ROUND_UP(CXE_CPL_CLOSE_CON_REQ_LEN, 16),
				      true, &compl);
		t->close_wait = ret == -EAGAIN;
		if (ret)
			return ret == -EAGAIN ? 0 : ret;
	}
	ret = cxe_cpl_close_con_req(buf, sizeof(buf), t->tid, compl);
	return ret < 0 ? ret : cxe_c4tid_send(t, buf, ret);
}

/* The requests conn.c asked for, in its order; t->lock held */
void cxe_c4tid_sends(struct cxe_c4tid *t, int what)
{
	u8 buf[CXE_C4_MSG_MAX];
	int len, ret = 0;

	lockdep_assert_held(&t->lock);
	if (what & CXE_C4_SEND_FLOWC) {
		bool compl;

		len = cxe_fw_flowc_wr(buf, sizeof(buf), &t->flowc);
		/* its credits are the chip's until an ack, as mainline counts */
		if (len > 0 && t->cred_ok)
			cxe_c4cred_take(&t->cred, DIV_ROUND_UP(len, 16), false,
					&compl);
		ret = len < 0 ? len : cxe_c4tid_send(t, buf, len);
	}
	if (!ret && (what & CXE_C4_SEND_ABORT_RPL)) {
		len = cxe_cpl_abort_rpl(buf, sizeof(buf), t->tid, false);
		ret = len < 0 ? len : cxe_c4tid_send(t, buf, len);
	}
	if (!ret && (what & CXE_C4_SEND_CLOSE))
		ret = cxe_c4tid_close(t);
	if (what & CXE_C4_SEND_ABORT)
		t->close_wait = false;	/* the abort goes instead */
	if (!ret && (what & CXE_C4_SEND_ABORT)) {
		len = cxe_cpl_abort_req(buf, sizeof(buf), t->tid, true);
		ret = len < 0 ? len : cxe_c4tid_send(t, buf, len);
	}
	if (ret)
		pr_err("cxgb4 adapter %s: TID %u: a request did not go (%d); the chip may keep the TID\n",
		       t->dev->name, t->tid, ret);
	if ((what & CXE_C4_ARM_TIMER) &&
	    !mod_timer(&t->close_timer, jiffies + CXE_C4_CLOSE_WAIT))
		kref_get(&t->ref);	/* the timer's */
}

static void cxe_c4tid_up(struct cxe_c4tid *t);
static void cxe_c4tid_release(struct cxe_c4tid *t);

/* What conn.c asked for once the requests went; no lock held */
static void cxe_c4tid_after(struct cxe_c4tid *t, int what)
{
	if (what & CXE_C4_UP)
		cxe_c4tid_up(t);
	if (what & CXE_C4_END)
		wake_up(&t->wq);
	if (what & CXE_C4_RELEASE_TID)
		cxe_c4tid_release(t);
}

/* conn.c's answer to a message; a protocol error aborts the connection */
static void cxe_c4tid_answer(struct cxe_c4tid *t, int what)
{
	if (what == -EPROTO) {
		spin_lock_bh(&t->lock);
		t->protocol_errors++;
		spin_unlock_bh(&t->lock);
		pr_warn_ratelimited("cxgb4 adapter %s: TID %u: a message its state does not allow: aborting it\n",
				    t->dev->name, t->tid);
		cxe_c4tid_do(t, cxe_c4conn_abort);
		return;
	}
	if (what > 0)
		cxe_c4tid_after(t, what);
}

void cxe_c4tid_do(struct cxe_c4tid *t, int (*step)(struct cxe_c4conn *c))
{
	int what;

	spin_lock_bh(&t->lock);
	what = step(&t->st);
	if (what > 0)
		cxe_c4tid_sends(t, what);
	spin_unlock_bh(&t->lock);
	cxe_c4tid_answer(t, what);
}

/*
 * Up: the connection waits on its server for the portal's accept, or is
 * aborted when the portal stopped listening meanwhile. The portal is told
 * under the lock its unlisten clears it under.
 */
static void cxe_c4tid_up(struct cxe_c4tid *t)
{
	struct cxe_c4dev *d = t->dev;
	bool queued = false;

	spin_lock_bh(&d->lock);
	if (t->srv->cnp && t->mapped) {
		kref_get(&t->ref);	/* the ready list's */
		list_add_tail(&t->ready, &t->srv->ready);
		cxe_np_ready(t->srv->cnp);
		atomic64_inc(&d->accepted);
		queued = true;
	}
	spin_unlock_bh(&d->lock);
	if (!queued)
		cxe_c4tid_do(t, cxe_c4conn_release);
}

void cxe_c4srv_drop_ready(struct cxe_c4srv *s)
{
	struct cxe_c4tid *t;

	for (;;) {
		spin_lock_bh(&s->dev->lock);
		t = list_first_entry_or_null(&s->ready, struct cxe_c4tid, ready);
		if (t)
			list_del_init(&t->ready);
		spin_unlock_bh(&s->dev->lock);
		if (!t)
			return;
		cxe_c4tid_do(t, cxe_c4conn_release);
		cxe_c4tid_put(t);
	}
}

/*
 * The chip is done with the TID: out of the map, back to the chip. Not
 * while the PDU layer's connection may hold page pods naming it: a new
 * connection on the TID could be placed by them. conn_release gives it
 * back after it cleared them.
 */
static void cxe_c4tid_release(struct cxe_c4tid *t)
{
	struct cxe_c4dev *d = t->dev;
	bool mapped, ready, deferred;

	spin_lock_bh(&d->lock);
	deferred = t->pods_held;
	t->release_deferred = deferred;
	spin_unlock_bh(&d->lock);
	if (deferred)
		return;
	if (timer_delete(&t->close_timer))
		cxe_c4tid_put(t);	/* the timer's; the map's is still held */
	spin_lock_bh(&d->lock);
	mapped = t->mapped;
	t->mapped = false;
	if (mapped)
		xa_erase_bh(&d->tids, t->tid);
	ready = !list_empty(&t->ready);
	if (ready)
		list_del_init(&t->ready);
	spin_unlock_bh(&d->lock);
	if (!mapped)
		return;
	d->ops->release_tid(d, t->tid, t->ipv6);
	cxe_c4dev_settle(d);
	wake_up(&t->wq);
	if (ready)
		cxe_c4tid_put(t);
	cxe_c4tid_put(t);	/* the map's */
}

static void cxe_c4tid_timeout(struct timer_list *tm)
{
	struct cxe_c4tid *t = from_timer(t, tm, close_timer);

	pr_info("cxgb4 adapter %s: TID %u: the peer did not close in time: aborting it\n",
		t->dev->name, t->tid);
	cxe_c4tid_do(t, cxe_c4conn_timeout);
	cxe_c4tid_put(t);
}

/*
 * At unload, after the device stopped: what is left of its connections
 * (closes the peer never finished) goes without a word to the chip
 */
void cxe_c4dev_drop_tids(struct cxe_c4dev *d)
{
	struct cxe_c4tid *t;
	unsigned long tid;

	xa_for_each(&d->tids, tid, t) {
		if (timer_delete_sync(&t->close_timer))
			cxe_c4tid_put(t);
		spin_lock_bh(&d->lock);
		xa_erase_bh(&d->tids, tid);
		t->mapped = false;
		spin_unlock_bh(&d->lock);
		wake_up(&t->wq);
		cxe_c4tid_put(t);
	}
}

void cxe_c4dev_end_tids(struct cxe_c4dev *d)
{
	struct cxe_c4tid *t;
	unsigned long tid = 0;

	for (;; tid++) {
		/* the map's reference is dropped only after its erase */
		spin_lock_bh(&d->lock);
		t = xa_find(&d->tids, &tid, ULONG_MAX, XA_PRESENT);
		if (t)
			kref_get(&t->ref);
		spin_unlock_bh(&d->lock);
		if (!t)
			return;
		cxe_c4tid_do(t, cxe_c4conn_gone);
		/* waiters for credits or an ack: none comes */
		wake_up_all(&t->wq);
		cxe_c4tid_put(t);
	}
}

/* ---- accepting ----------------------------------------------------------- */

static void cxe_c4tid_addr(struct sockaddr_storage *ss, u8 version,
			   const u8 *ip, u16 port)
{
	memset(ss, 0, sizeof(*ss));
	if (version == 6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, ip, 16);
		sin6->sin6_port = htons(port);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, ip, 4);
		sin->sin_port = htons(port);
	}
}

/* The listening server the SYN came to, while its portal takes connections */
static struct cxe_c4srv *cxe_c4srv_for(struct cxe_c4dev *d, u32 stid)
{
	struct cxe_c4srv *s;

	spin_lock_bh(&d->lock);
	s = xa_load(&d->servers, stid);
	if (s && s->cnp && s->l.state == CXE_C4LSN_LISTENING)
		kref_get(&s->ref);
	else
		s = NULL;
	spin_unlock_bh(&d->lock);
	return s;
}

/*
 * A SYN the glue cannot take at all: its TID goes back at once, before
 * any reply (the chip then drops the connection)
 */
static void cxe_c4tid_refuse(struct cxe_c4dev *d,
			     const struct cxe_cpl_accept_req *r)
{
	pr_warn_ratelimited("cxgb4 adapter %s: the accept request on TID %u could not be taken: TID given back\n",
			    d->name, r->tid);
	atomic64_inc(&d->cpl_dropped);
	d->ops->release_tid(d, r->tid, r->ip_version == 6);
}

/*
 * The accept request in process context: the reply's options, the TID in
 * the map, the reply. A SYN no server listens for any more (its portal is
 * closing, the chip has not closed the server yet), and one the device
 * has no path for (no route, no L2T entry), get their TID back
 * unanswered, as mainline gives them back: an accept reply and an abort
 * after it could reach the chip in the other order, the reply parked on
 * an L2T entry still resolving.
 */
static void cxe_c4tid_accept_work(struct work_struct *work)
{
	struct cxe_c4tid *t = container_of(work, struct cxe_c4tid, accept);
	struct cxe_c4dev *d = t->dev;
	struct cxe_cpl_accept_req r;
	struct cxe_cpl_accept a = {};
	struct cxe_c4_path path = {};
	u8 buf[CXE_C4_MSG_MAX];
	bool refuse = false;
	int len, ret;

	ret = cxe_cpl_parse_pass_accept_req(t->accept_req, t->accept_req_len,
					    d->chip, &r);
	kfree(t->accept_req);
	t->accept_req = NULL;
	if (ret < 0)
		goto out;	/* parsed once already: cannot happen */
	t->ipv6 = r.ip_version == 6;
	cxe_c4tid_addr(&t->local, r.ip_version, r.local_ip, r.local_port);
	cxe_c4tid_addr(&t->peer, r.ip_version, r.peer_ip, r.peer_port);
	t->srv = cxe_c4srv_for(d, r.stid);
	if (!t->srv) {
		struct cxe_c4tid *other = cxe_c4tid_get(d, r.tid);

		pr_info("cxgb4 adapter %s: SYN from %pISpc for server %u refused (no portal listening)\n",
			d->name, &t->peer, r.stid);
		/* the TID of a connection of ours is that one's to give back */
		if (other)
			cxe_c4tid_put(other);
		else
			d->ops->release_tid(d, r.tid, t->ipv6);
		goto out;
	}
	ret = d->ops->accept_path(d, &r, &path, &a);
	if (ret == -EBUSY) {
		/* the TID is another connection's: nothing to give back */
		pr_err("cxgb4 adapter %s: accept request on TID %u, which is in use: dropped\n",
		       d->name, r.tid);
		goto out;
	}
	if (ret) {
		pr_info("cxgb4 adapter %s: SYN from %pISpc for server %u refused (no path to the peer: %d)\n",
			d->name, &t->peer, r.stid, ret);
		cxe_c4tid_refuse(d, &r);
		goto out;
	}
	a.tid = r.tid;
	t->snd_win = cxe_c4conn_accept_opts(&r, &path, &a);
	t->mtus = path.mtus;
	t->flowc = (struct cxe_fw_flowc) {
		.tid		= r.tid,
		.pf		= path.pf,
		.channel	= a.tx_chan,
		.port		= a.tx_chan,
		.iqid		= a.rss_qid,
		.sndbuf		= t->snd_win,
		.mss		= 536,
		/* ISO requests carry up to 64 KiB: the firmware must know */
		.txdataplen_max	= d->limits.max_iso_burst ? CXE_CXGB4_TXPLEN_ISO :
						    CXE_CXGB4_TXPLEN,
		.dcb		= path.dcb,
		.dcb_prio	= path.dcb_prio,
	};

	ret = cxe_c4dev_map_tid(d, r.tid, t);
	if (ret == -EBUSY) {
		/* the TID is another connection's: nothing to give back */
		pr_err("cxgb4 adapter %s: accept request on TID %u, which is in use: dropped\n",
		       d->name, r.tid);
		goto out;
	}
	if (ret) {
		cxe_c4tid_refuse(d, &r);
		goto out;
	}
	kref_get(&t->ref);	/* the map's */
	spin_lock_bh(&d->lock);
	t->mapped = true;
	spin_unlock_bh(&d->lock);

	spin_lock_bh(&t->lock);
	len = cxe_cpl_pass_accept_rpl(buf, sizeof(buf), d->chip, &a);
	ret = len < 0 ? len : cxe_c4tid_send(t, buf, len);
	spin_unlock_bh(&t->lock);
	if (ret) {
		pr_err("cxgb4 adapter %s: TID %u: accept reply not sent (%d)\n",
		       d->name, r.tid, ret);
		refuse = true;
	}
	if (refuse)
		cxe_c4tid_do(t, cxe_c4conn_abort);
out:
	cxe_c4tid_put(t);	/* the work's */
}

static void cxe_c4tid_accept_req(struct cxe_c4dev *d, const void *cpl,
				 size_t len)
{
	struct cxe_cpl_accept_req r;
	struct cxe_c4tid *t;

	/* a device that takes no connection yet (a real one) never listens */
	if (!d->ops->send || !d->ops->accept_path || !d->ops->release_tid ||
	    cxe_cpl_parse_pass_accept_req(cpl, len, d->chip, &r) < 0) {
		atomic64_inc(&d->cpl_dropped);
		return;
	}
	t = kzalloc(sizeof(*t), GFP_ATOMIC);
	if (t)
		t->accept_req = kmemdup(cpl, len, GFP_ATOMIC);
	if (!t || !t->accept_req) {
		kfree(t);
		cxe_c4tid_refuse(d, &r);
		return;
	}
	kref_init(&t->ref);	/* the work's */
	kref_get(&d->ref);
	t->dev = d;
	t->tid = r.tid;
	t->resets = READ_ONCE(d->resets);
	t->accept_req_len = len;
	spin_lock_init(&t->lock);
	cxe_c4conn_init(&t->st, r.tid);
	INIT_LIST_HEAD(&t->ready);
	skb_queue_head_init(&t->rxq);
	init_waitqueue_head(&t->wq);
	timer_setup(&t->close_timer, cxe_c4tid_timeout, 0);
	INIT_WORK(&t->accept, cxe_c4tid_accept_work);
	queue_work(cxe_c4_wq, &t->accept);
}

/* ---- the chip's messages about connections ------------------------------- */

/* The largest request a connection sends, in credits (its payload gathered) */
static u32 cxe_c4tid_max_len16(const struct cxe_c4dev *d)
{
	u32 dlen = max(d->limits.max_send_dlen, d->limits.max_iso_burst);
	struct cxe_c4tx_conn txc = { .chip = d->chip, .tid = 0 };
	u8 head[CXE_C4TX_HEAD_MAX];
	struct cxe_c4tx_wr wr;

	if (cxe_c4tx_pdu(head, sizeof(head), &txc, CXE_BHS_LEN, dlen,
			 3 + DIV_ROUND_UP(dlen, PAGE_SIZE), false, &wr) < 0)
		return 0;
	return wr.len16 + DIV_ROUND_UP(CXE_CPL_TX_DATA_ISO_LEN, 16);
}

static void cxe_c4tid_established(struct cxe_c4tid *t, const void *cpl,
				  size_t len)
{
	struct cxe_cpl_established e;
	int what, ret = 0;

	if (cxe_cpl_parse_pass_establish(cpl, len, &e) < 0) {
		cxe_c4tid_answer(t, -EPROTO);
		return;
	}
	spin_lock_bh(&t->lock);
	/* the flow and the ledger once, for the connection being set up */
	if (t->st.state == CXE_C4CONN_CONNECTING) {
		t->flowc.snd_nxt = e.snd_isn;
		t->flowc.rcv_nxt = e.rcv_isn;
		if (t->mtus)
			t->flowc.mss = cxe_c4conn_emss(t->mtus, &e, t->ipv6);
		t->flowc.rcv_scale = cxe_c4conn_rcv_scale(&e);
		t->wr_max_len16 = cxe_c4tid_max_len16(t->dev);
		ret = cxe_c4cred_init(&t->cred, t->dev->wr_cred,
				      t->wr_max_len16, e.snd_isn);
		t->cred_ok = !ret;
	}
	what = cxe_c4conn_established(&t->st);
	if (what > 0)
		cxe_c4tid_sends(t, what);
	spin_unlock_bh(&t->lock);
	if (ret)
		pr_err("cxgb4 adapter %s: TID %u: %u transmit credits take no request of %u: aborting it\n",
		       t->dev->name, t->tid, t->dev->wr_cred, t->wr_max_len16);
	cxe_c4tid_answer(t, what);
	if (ret)
		cxe_c4tid_do(t, cxe_c4conn_abort);
}

static void cxe_c4tid_conn_msg(struct cxe_c4tid *t, int opcode,
			       const void *cpl, size_t len)
{
	struct cxe_cpl_conn m;
	int what;

	switch (opcode) {
	case CXE_CPL_PEER_CLOSE:
		what = cxe_cpl_parse_peer_close(cpl, len, &m);
		break;
	case CXE_CPL_CLOSE_CON_RPL:
		what = cxe_cpl_parse_close_con_rpl(cpl, len, &m);
		break;
	case CXE_CPL_ABORT_REQ_RSS:
		what = cxe_cpl_parse_abort_req_rss(cpl, len, &m);
		break;
	default:
		what = cxe_cpl_parse_abort_rpl_rss(cpl, len, &m);
	}
	if (what < 0) {
		cxe_c4tid_answer(t, -EPROTO);
		return;
	}
	spin_lock_bh(&t->lock);
	switch (opcode) {
	case CXE_CPL_PEER_CLOSE:
		what = cxe_c4conn_peer_close(&t->st);
		break;
	case CXE_CPL_CLOSE_CON_RPL:
		what = cxe_c4conn_close_rpl(&t->st);
		break;
	case CXE_CPL_ABORT_REQ_RSS:
		what = cxe_c4conn_peer_abort(&t->st, m.neg_adv);
		break;
	default:
		what = cxe_c4conn_abort_rpl(&t->st);
	}
	if (what > 0)
		cxe_c4tid_sends(t, what);
	spin_unlock_bh(&t->lock);
	cxe_c4tid_answer(t, what);
}

/* transmit credits back; a chip that breaks the ledger loses the connection */
static void cxe_c4tid_fw4_ack(struct cxe_c4tid *t, const void *cpl, size_t len)
{
	struct cxe_cpl_fw4_ack a;
	int ret = -EPROTO;

	spin_lock_bh(&t->lock);
	if (cxe_cpl_parse_fw4_ack(cpl, len, &a) >= 0 && t->cred_ok)
		ret = cxe_c4cred_ack(&t->cred, &a);
	/* our FIN waited for these credits */
	if (ret >= 0 && t->close_wait && cxe_c4tid_close(t))
		pr_err("cxgb4 adapter %s: TID %u: our FIN did not go; the close timer aborts it\n",
		       t->dev->name, t->tid);
	spin_unlock_bh(&t->lock);
	wake_up(&t->wq);
	if (ret < 0)
		cxe_c4tid_answer(t, -EPROTO);
}

static void cxe_c4tid_tcb_rpl(struct cxe_c4tid *t, const void *cpl, size_t len)
{
	struct cxe_cpl_tcb_rpl r;

	if (cxe_cpl_parse_set_tcb_rpl(cpl, len, &r) < 0) {
		cxe_c4tid_answer(t, -EPROTO);
		return;
	}
	spin_lock_bh(&t->lock);
	t->tcb_answered = true;
	t->tcb_status = r.status;
	spin_unlock_bh(&t->lock);
	wake_up(&t->wq);
}

/* A message of the stream could not be kept: the stream is lost */
static void cxe_c4tid_lost(struct cxe_c4tid *t)
{
	pr_err_ratelimited("cxgb4 adapter %s: TID %u: a received message could not be kept: aborting it\n",
			   t->dev->name, t->tid);
	cxe_c4tid_do(t, cxe_c4conn_abort);
}

/* A received PDU's message: for the PDU layer's receive (io.c) */
static void cxe_c4tid_queue(struct cxe_c4tid *t, const void *cpl, size_t len)
{
	struct sk_buff *skb = alloc_skb(len, GFP_ATOMIC);

	if (!skb) {
		cxe_c4tid_lost(t);
		return;
	}
	skb_put_data(skb, cpl, len);
	skb_queue_tail(&t->rxq, skb);
	wake_up(&t->wq);
}

bool cxe_c4tid_rx(struct cxe_c4dev *d, int opcode, const void *cpl,
		  size_t len)
{
	struct cxe_c4tid *t;
	u32 tid;

	if (opcode == CXE_CPL_PASS_ACCEPT_REQ) {
		cxe_c4tid_accept_req(d, cpl, len);
		return true;
	}
	switch (opcode) {
	case CXE_CPL_PASS_ESTABLISH:
	case CXE_CPL_PEER_CLOSE:
	case CXE_CPL_CLOSE_CON_RPL:
	case CXE_CPL_ABORT_REQ_RSS:
	case CXE_CPL_ABORT_RPL_RSS:
	case CXE_CPL_FW4_ACK:
	case CXE_CPL_SET_TCB_RPL:
	case CXE_CPL_ISCSI_HDR:
	case CXE_CPL_ISCSI_DATA:
	case CXE_CPL_RX_ISCSI_DDP:
	case CXE_CPL_RX_ISCSI_CMP:
		break;
	default:
		return false;
	}
	/* every one of them begins with its opcode and TID */
	if (len < 4)
		return false;
	tid = cxe_get_be32(cpl) & CXE_CPL_TID_MAX;
	t = cxe_c4tid_get(d, tid);
	if (!t) {
		pr_warn_ratelimited("cxgb4 adapter %s: CPL opcode %#x for TID %u, which has no connection: dropped\n",
				    d->name, opcode, tid);
		atomic64_inc(&d->cpl_dropped);
		return true;
	}
	switch (opcode) {
	case CXE_CPL_PASS_ESTABLISH:
		cxe_c4tid_established(t, cpl, len);
		break;
	case CXE_CPL_FW4_ACK:
		cxe_c4tid_fw4_ack(t, cpl, len);
		break;
	case CXE_CPL_SET_TCB_RPL:
		cxe_c4tid_tcb_rpl(t, cpl, len);
		break;
	case CXE_CPL_ISCSI_HDR:
	case CXE_CPL_ISCSI_DATA:
	case CXE_CPL_RX_ISCSI_DDP:
	case CXE_CPL_RX_ISCSI_CMP:
		cxe_c4tid_queue(t, cpl, len);
		break;
	default:
		cxe_c4tid_conn_msg(t, opcode, cpl, len);
	}
	cxe_c4tid_put(t);
	return true;
}

/*
 * The connection's page pods are cleared (conn_release): a release of
 * the TID that waited for them goes on now.
 */
void cxe_c4tid_pods_cleared(struct cxe_c4tid *t)
{
	bool deferred;

	spin_lock_bh(&t->dev->lock);
	t->pods_held = false;
	deferred = t->release_deferred;
	spin_unlock_bh(&t->dev->lock);
	if (deferred)
		cxe_c4tid_release(t);
}

/*
 * The chip checks the negotiated digests from the next PDU it receives
 * on (CPL_SET_TCB_FIELD); 0 once it answered that it took them, else
 * why not: the connection gone, no answer in CXE_C4_TCB_WAIT, a refusal.
 */
int cxe_c4tid_set_digests(struct cxe_c4tid *t, bool hdigest, bool ddigest)
{
	u8 buf[CXE_C4_MSG_MAX];
	int len, ret;

	spin_lock_bh(&t->lock);
	t->tcb_answered = false;
	len = cxe_cpl_set_tcb_submode(buf, sizeof(buf), t->tid, 0, hdigest,
				      ddigest);
	if (!cxe_c4tid_live(t))
		ret = -ECONNRESET;
	else
		ret = len < 0 ? len : cxe_c4tid_send(t, buf, len);
	spin_unlock_bh(&t->lock);
	if (!ret && !wait_event_timeout(t->wq, READ_ONCE(t->tcb_answered) ||
					READ_ONCE(t->st.state) == CXE_C4CONN_DONE,
					CXE_C4_TCB_WAIT))
		ret = -ETIMEDOUT;
	if (!ret && READ_ONCE(t->tcb_status))
		ret = -EIO;
	return ret;
}
