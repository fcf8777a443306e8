/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgb4 backend: a Chelsio adapter as the backend's device glue (dev.c)
 * sees it, and what the glue asks of one, which uld.c does through
 * cxgb4. The glue never calls cxgb4 itself.
 *
 * What the glue does: for each offloaded portal, a listening server on
 * every adapter that serves the portal's address (listen.h keeps each
 * server's life); the connections the chip accepts for those servers, from
 * the accept request to the TID's release (cm.c, conn.h); and their PDUs,
 * through the receive assembler and the work requests (io.c), with write
 * data placed through page pods (ddp.c). A real adapter serves portals
 * only when the admin asks (uld.c: its calls have never run on a chip).
 *
 * The files call downward only: ops.c (the backend's entry) on top, then
 * uld.c (cxgb4's side), servers.c (servers, an adapter's life), io.c,
 * ddp.c, cm.c (connections), dev.c (adapters); the pure layers (cpl,
 * conn, listen, credits, rx, tx, limits) below all of them.
 */
#ifndef CXE_CXGB4_DEV_H
#define CXE_CXGB4_DEV_H

#include <linux/kref.h>
#include <linux/netdevice.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>

#include "conn.h"
#include "credits.h"
#include "limits.h"
#include "listen.h"
#include "rx.h"
#include "tx.h"

struct cxe_c4dev;
struct sk_buff;
struct sock;
struct cxe_c4_path;
struct cxe_cpl_accept;
struct cxe_cpl_accept_req;

struct cxe_c4dev_ops {
	/* cxgb4_alloc_stid(): an STID for a server of family, or < 0 */
	int (*alloc_stid)(struct cxe_c4dev *d, int family);
	void (*free_stid)(struct cxe_c4dev *d, u32 stid, int family);
	/*
	 * cxgb4_create_server{,6}() and cxgb4_remove_server(), in process
	 * context: 0 when the request went to the chip, whose answer then
	 * comes to cxe_c4dev_rx().
	 */
	int (*create_server)(struct cxe_c4dev *d, u32 stid,
			     const struct sockaddr_storage *addr);
	int (*remove_server)(struct cxe_c4dev *d, u32 stid, bool ipv6);
	/* whether nd is one of its ports (rcu_read_lock held) */
	bool (*has_port)(struct cxe_c4dev *d, const struct net_device *nd);
	/*
	 * Connections. The chip's messages about a TID come to
	 * cxe_c4dev_rx() as the listening servers' do, in order per TID.
	 *
	 * accept_path: what the accept reply for the SYN of r needs of the
	 * device: the path toward the peer in p (its MTU table, the route's
	 * MTU, the port's speed) and the reply's device fields in a
	 * (l2t_idx, rss_qid, tx_chan, smac_idx); process context. < 0:
	 * no route to the peer (the glue refuses the connection).
	 */
	int (*accept_path)(struct cxe_c4dev *d,
			   const struct cxe_cpl_accept_req *r,
			   struct cxe_c4_path *p, struct cxe_cpl_accept *a);
	/*
	 * send: one message or work request for tid, whole in skb
	 * (cxgb4_ofld_send(); the accept reply goes through
	 * cxgb4_l2t_send()). The device owns skb from here, on an error
	 * too. Any context: the glue answers a peer's abort from its
	 * receive path. Sent in the order of the calls for each TID.
	 */
	int (*send)(struct cxe_c4dev *d, u32 tid, struct sk_buff *skb);
	/*
	 * cxgb4_remove_tid(): the chip will send nothing more for tid and
	 * waits for nothing from the glue; the TID is the chip's again.
	 */
	void (*release_tid)(struct cxe_c4dev *d, u32 tid, bool ipv6);
	/*
	 * Page pods (a device with d->npods of them): the glue writes them
	 * with requests on the connection's flow (cm.c). pods_get: n free
	 * pods in a row, taken; the first one's index as a tag names it
	 * (its address d->ppod_base + (index << CXE_PPOD_SHIFT)), or < 0
	 * when there are none; in *color the first pod's colour, one more
	 * (modulo the tag's colours) each time it is taken, so that a tag
	 * of an earlier taking never matches a later one (libcxgb's rule);
	 * any context but hard irq. pods_put gives them back. map_page: the
	 * bus address the chip places into page at; unmap_page undoes it
	 * once no pod names it.
	 */
	int (*pods_get)(struct cxe_c4dev *d, u32 n, u32 *color);
	void (*pods_put)(struct cxe_c4dev *d, u32 idx, u32 n);
	int (*map_page)(struct cxe_c4dev *d, struct page *pg, u64 *addr);
	void (*unmap_page)(struct cxe_c4dev *d, u64 addr);
	/* the last reference is gone */
	void (*release)(struct cxe_c4dev *d);
};

struct cxe_c4dev {
	struct list_head	node;		/* the glue's adapters */
	struct kref		ref;		/* the list's, each server's */
	const struct cxe_c4dev_ops *ops;
	const char		*name;		/* PCI name */
	const char		*kind;		/* "T5", "T6" */
	u32			nports;
	enum cxe_chip		chip;
	u32			wr_cred;	/* a connection's transmit
						 * credits (cxgb4_lld_info's)
						 */
	struct cxe_cxgb4_limits	limits;
	bool			up;		/* CXGB4_STATE_UP, not since
						 * RECOVERY or DETACH
						 */
	bool			serves;		/* may listen for portals */
	bool			gone;		/* went away (cxe_c4dev_gone()) */
	bool			listed;		/* in the glue's list (its lock) */
	spinlock_t		lock;		/* its servers' states */
	struct xarray		servers;	/* STID -> struct cxe_c4srv */
	u32			unwaited;	/* answers nobody waited for */
	u32			stray;		/* answers no server expects */
	atomic64_t		cpl_dropped;	/* messages nothing takes */
	atomic64_t		accepted;	/* connections given to portals */
	/* the chip's connections: TID -> struct cxe_c4tid, under lock */
	struct xarray		tids;
	/* what its connections count on (cxe_adapter_add()) */
	struct cxe_adapter	*adapter;
	/*
	 * The chip's page pod memory for iSCSI: npods pods (0: it places
	 * nothing), the one a tag's index names at byte address ppod_base +
	 * (index << CXE_PPOD_SHIFT); tags as tagfmt says; pods in use, under
	 * lock
	 */
	u32			ppod_base;
	u32			npods;
	struct cxe_ppod_tagfmt	tagfmt;
	u32			pods_used;
	u32			resets;		/* of its chip, so far */
	struct work_struct	listen;		/* cxe_c4dev_up()'s servers */
	struct work_struct	unlist;		/* cxe_c4dev_settle()'s */
};

/* ref 1 (the list's) and the lock; the owner sets the rest */
void cxe_c4dev_init(struct cxe_c4dev *d, const struct cxe_c4dev_ops *ops);
/* listed: portals set up from now on may listen on it */
void cxe_c4dev_add(struct cxe_c4dev *d);
/*
 * Unlisted when it has no server (-EBUSY otherwise); the caller then
 * drops the list's reference
 */
int cxe_c4dev_del(struct cxe_c4dev *d);
void cxe_c4dev_put(struct cxe_c4dev *d);
/*
 * At unload, every adapter of ops: unlisted, whatever late answers left
 * of its servers dropped (no portal is left to wait on one)
 */
void cxe_c4dev_drop_all(const struct cxe_c4dev_ops *ops);
/*
 * n free pods in a row from the device, counted: the first one's index
 * (one a tag of d->tagfmt names, with the n - 1 after it) and its colour
 * this time, or < 0; given back
 */
int cxe_c4dev_pods_get(struct cxe_c4dev *d, u32 n, u32 *color);
void cxe_c4dev_pods_put(struct cxe_c4dev *d, u32 idx, u32 n);
/*
 * The adapter went away under its servers and connections (cxgb4's
 * DETACH), its chip answering nothing and placing
 * nothing any more: every server and connection of it is over at once,
 * with no call to the device but the TIDs' and STIDs' release, which it
 * takes as forgetting them. Process context.
 */
void cxe_c4dev_gone(struct cxe_c4dev *d);
/*
 * Its chip was reset (cxgb4's START_RECOVERY or DOWN): the same for its
 * servers and connections, the adapter staying, down. Process context.
 */
void cxe_c4dev_reset(struct cxe_c4dev *d);
/*
 * Up (cxgb4's UP: at its add, after a reset): a server for each portal
 * it serves and has none for, opened from a work item. Any context.
 */
void cxe_c4dev_up(struct cxe_c4dev *d);
/*
 * A TID of d went back: once d is gone and holds none, nor a server, it
 * leaves the list (from a work item). Any context.
 */
void cxe_c4dev_settle(struct cxe_c4dev *d);
/* one CPL message from the adapter (the RSS header stripped); any context */
void cxe_c4dev_rx(struct cxe_c4dev *d, const void *cpl, size_t len);

/* ---- the glue's parts: servers.c, cm.c (connections), io.c (PDUs) ---------- */

/* One listening server: an STID on one adapter for one portal */
struct cxe_c4srv {
	struct kref		ref;	/* its portal's, the STID map's, work's */
	struct cxe_c4dev	*dev;	/* with a reference */
	struct cxe_c4lsn	l;	/* under dev->lock */
	wait_queue_head_t	answered;	/* its waiter: !l.waiting */
	struct work_struct	remove;	/* a removal the receive path decided */
	bool			ipv6;
	struct list_head	node;	/* its portal's servers */
	/*
	 * Under dev->lock: the portal while it listens (NULL once it stops),
	 * and its connections the chip brought up that the portal's accept
	 * has not taken (struct cxe_c4tid's ready)
	 */
	struct cxe_np		*cnp;
	struct list_head	ready;
};

void cxe_c4srv_put(struct cxe_c4srv *s);
/*
 * dev.c, for servers.c: the adapters attached and the lock of the list
 * and of the portals; what listen.c's answer asks for; a request that
 * never reached the chip; every server of d over; a removal from work;
 * the chip's answer to an open or a removal
 */
extern struct list_head cxe_c4devs;
extern struct mutex cxe_c4devs_lock;
void cxe_c4srv_act(struct cxe_c4srv *s, int what, bool atomic);
void cxe_c4srv_unsent(struct cxe_c4srv *s, int err, bool atomic);
void cxe_c4dev_servers_gone(struct cxe_c4dev *d);
void cxe_c4srv_remove_work(struct work_struct *work);
void cxe_c4dev_listen_rpl(struct cxe_c4dev *d, const void *cpl, size_t len,
			  bool open);
void cxe_c4dev_stray(struct cxe_c4dev *d);
/* the glue's workqueue: what the receive path hands to process context */
extern struct workqueue_struct *cxe_c4_wq;

/*
 * One connection of the chip's, from its CPL_PASS_ACCEPT_REQ until the
 * TID goes back (conn.h keeps its states). Referenced by the TID map,
 * by the PDU layer once it accepted it, and by work under way.
 */
struct cxe_c4tid {
	struct kref		ref;
	struct cxe_c4dev	*dev;		/* with a reference */
	struct cxe_c4srv	*srv;		/* with a reference */
	u32			tid;
	u32			resets;		/* dev->resets at the SYN */
	bool			ipv6;
	struct sockaddr_storage	local;
	struct sockaddr_storage	peer;
	spinlock_t		lock;		/* all below */
	struct cxe_c4conn	st;
	struct list_head	ready;		/* srv->ready (dev->lock) */
	bool			mapped;		/* in dev->tids */
	/*
	 * Under dev->lock: the PDU layer's connection has page pods naming
	 * the TID, and a release the chip allowed waits for conn_release
	 */
	bool			pods_held;
	bool			release_deferred;
	const u16		*mtus;		/* the device's MTU table */
	struct cxe_fw_flowc	flowc;		/* for the first request */
	struct cxe_c4cred	cred;
	bool			cred_ok;	/* cred set up (at establish) */
	bool			close_wait;	/* our FIN waits for credits */
	u32			snd_win;
	u32			wr_max_len16;
	struct sk_buff_head	rxq;		/* iSCSI messages to take */
	bool			tcb_answered;	/* CPL_SET_TCB_RPL came */
	u8			tcb_status;
	wait_queue_head_t	wq;		/* receive, credits, TCB reply */
	struct timer_list	close_timer;
	struct work_struct	accept;		/* the accept request's */
	u8			*accept_req;	/* its message, until then */
	u32			accept_req_len;
	u32			protocol_errors;
};

/*
 * Whether the adapter reads no page pod of t's again: it went away, or
 * a reset of its chip took t's connection. That a reset chip places
 * nothing by the pods it held before is assumed, as at a detach.
 */
static inline bool cxe_c4tid_chip_done(const struct cxe_c4tid *t)
{
	return READ_ONCE(t->dev->gone) || READ_ONCE(t->dev->resets) != t->resets;
}

void cxe_c4tid_put(struct cxe_c4tid *t);

/*
 * A DDP tag of a connection (ddp.c): its task, the windows of the R2Ts
 * that carry it and how far its placed data was handed up, its pods and
 * the pages they name
 */
struct cxe_c4ddp {
	struct cxe_task		*owner;		/* NULL: the slot is free */
	/*
	 * Its pods being written or cleared: still counted in its owner's
	 * ddp_live, matching no TTT (ttt CXE_PPOD_TAG_NODDP)
	 */
	bool			busy;
	u32			itt;
	u32			ttt;
	/* the R2Ts' windows so far, from the first's start to the last's end */
	u32			offset;
	u32			len;
	u32			cover_end;	/* buffer bytes its pods name */
	u32			r2ts;		/* R2Ts it went out with */
	u32			done_to;
	u32			pod_idx;
	u32			pods;
	u64			*addrs;
	struct page		**pages;	/* addrs' pages, held */
	u32			npages;
};

/* a connection's live DDP tags, at most */
#define CXE_C4_DDP_SLOTS	64

/* The PDU layer's connection on a TID (the backend's conn_size) */
struct cxe_c4c {
	struct cxe_conn		c;
	struct cxe_c4tid	*t;		/* with a reference */
	struct cxe_cxgb4_limits	hw;		/* the adapter's, at accept */
	struct cxe_limits	limits;		/* c.limits points here */
	struct cxe_c4tx_conn	txc;
	/* receive (the RX thread's) */
	struct cxe_c4rx		as;
	struct cxe_c4rx_pdu	pdu;		/* the PDU handed up */
	bool			cur;		/* pdu is handed up */
	struct sk_buff		*data;		/* its CPL_ISCSI_DATA */
	u32			pdu_wire;	/* the receive window it took */
	u32			rcv_nxt;	/* sequence number after it */
	bool			seq_known;
	u32			unacked;	/* bytes taken, window not returned */
	/* transmit (the TX thread's, and the login's) */
	u8			*req;		/* a request's payload */
	u32			req_cap;
	/* DDP tags (NULL: the connection places nothing), under ddp_lock */
	spinlock_t		ddp_lock;
	struct cxe_c4ddp	*ddp;
	wait_queue_head_t	ddp_wq;		/* a slot stopped being busy */
	u32			noddp_gen;
	/* the last Login response, until the digests are set (io.c) */
	struct sk_buff		*held;
	struct cxe_c4tx_wr	held_wr;
	u32			held_dlen;
};

/* cm.c: the connections' messages (false: not one of them) */
bool cxe_c4tid_rx(struct cxe_c4dev *d, int opcode, const void *cpl,
		  size_t len);
/*
 * A server stops: the connections it brought up that nobody accepted
 * are aborted (dev->lock not held)
 */
void cxe_c4srv_drop_ready(struct cxe_c4srv *s);
void cxe_c4dev_drop_tids(struct cxe_c4dev *d);
/* cm.c: every connection of a gone adapter over (conn.c's gone) */
void cxe_c4dev_end_tids(struct cxe_c4dev *d);
/* cm.c: t's page pods cleared; the digests the chip checks from now on */
void cxe_c4tid_pods_cleared(struct cxe_c4tid *t);
int cxe_c4tid_set_digests(struct cxe_c4tid *t, bool hdigest, bool ddigest);
int cxe_c4dev_map_tid(struct cxe_c4dev *d, u32 tid, struct cxe_c4tid *t);
/*
 * dev.c: the adapter its connections count on, as one of backend b's,
 * with a reference, or NULL
 */
struct cxe_adapter *cxe_c4dev_adapter(struct cxe_c4dev *d,
				      const struct cxe_backend *b);
/* dev.c: counters_read for the backend named backend (size if buf NULL) */
ssize_t cxe_c4dev_counters_read(const char *backend, void *buf, size_t size);
/* dev.c: the backend's show_state */
ssize_t cxe_c4_show_state(char *page, ssize_t at);
/* servers.c: the backend's listen and unlisten (adapter.h) */
int cxe_c4_listen(struct cxe_np *cnp);
void cxe_c4_unlisten(struct cxe_np *cnp);
/* servers.c: the first accepted connection of a portal's servers, or NULL */
struct cxe_c4tid *cxe_c4_take_ready(struct cxe_np *cnp);
/*
 * Whether the chip still takes TCB changes and receive credits for t: it
 * is up or closing, neither aborted nor done (t->lock held)
 */
static inline bool cxe_c4tid_live(const struct cxe_c4tid *t)
{
	return t->st.state == CXE_C4CONN_UP ||
	       t->st.state == CXE_C4CONN_CLOSING;
}

/* cm.c: one of conn.c's steps for t, and what its answer asks for */
void cxe_c4tid_do(struct cxe_c4tid *t, int (*step)(struct cxe_c4conn *c));
/* cm.c: the requests conn.c's answer what asks for, t->lock held */
void cxe_c4tid_sends(struct cxe_c4tid *t, int what);
/* cm.c: a message or request for t's TID (GFP_ATOMIC allocations) */
int cxe_c4tid_send(struct cxe_c4tid *t, const void *msg, u32 len);
/*
 * cm.c: credits for a request of len16 on t's flow, the connection's
 * FW_FLOWC_WR sent first (its credits before the request's), waiting for
 * an ack that returns them. Returns with t->lock held, for the caller to
 * send under and let go: 0, taken (*compl as cxe_c4cred_take() says);
 * -EPIPE, the connection may send nothing more or is not up; a signal's
 * error while waiting.
 */
int cxe_c4tid_charge(struct cxe_c4tid *t, u32 len16, bool want_compl,
		     bool *compl) __acquires(&t->lock);
/*
 * cm.c: a ULP_TX_MEM_WRITE of page pods (wr, len bytes) for t, process
 * context; 0 once the chip has taken it (see cm.c), else an error
 */
int cxe_c4tid_ulptx(struct cxe_c4tid *t, u8 *wr, u32 len);
/* io.c */
int cxe_c4_recv_hdr(struct cxe_conn *c, u8 *hdr, u32 *flags);
int cxe_c4_recv_data(struct cxe_conn *c, const struct cxe_data *dst,
		     u32 dlen, bool *bad);
int cxe_c4_data_taken(struct cxe_conn *c);
int cxe_c4_send_held(struct cxe_conn *c);
int cxe_c4_send_pdu(struct cxe_conn *c, const u8 *bhs,
		    const struct cxe_data *src);
int cxe_c4_send_burst(struct cxe_conn *c, const struct cxe_burst *b);
/* ddp.c */
int cxe_c4_ddp_init(struct cxe_c4c *cc, bool place);
void cxe_c4_ddp_exit(struct cxe_c4c *cc);
void cxe_c4_ddp_placed(struct cxe_c4c *cc, const struct cxe_c4rx_pdu *pdu,
		       bool stands_for, u32 *flags);
u32 cxe_c4_ddp_reserve(struct cxe_conn *c, struct cxe_task *task, u32 itt,
		       const struct cxe_data *win, bool place);
bool cxe_c4_ddp_check(struct cxe_conn *c, u32 ttt, u32 itt, u32 off, u32 len,
		      bool final);
void cxe_c4_ddp_release(struct cxe_conn *c, struct cxe_task *task);

/* ops.c: the backend's connection ops (adapter.h) */
int cxe_c4_accept(struct cxe_np *cnp, struct cxe_conn *c);
void cxe_c4_conn_release(struct cxe_conn *c);
void cxe_c4_set_params(struct cxe_conn *c, bool hdigest, bool ddigest,
		       u32 max_recv_dlen);

/* uld.c: the real adapters, through cxgb4's ULD slot */
int cxe_c4real_init(void);
void cxe_c4real_exit(void);

#endif /* CXE_CXGB4_DEV_H */
