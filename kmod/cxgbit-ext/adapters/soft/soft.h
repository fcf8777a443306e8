/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgbit-ext software adapter: what its parts share. cm.c (listening,
 * steering, accept, hand-back, the ops table), gate.c (connections until
 * their first Login request is whole), io.c (the socket stream:
 * receive, transmit, digests, segmentation) and ddp.c (tag table and
 * placement). Nothing here is part of the adapter contract (adapter.h):
 * the PDU layer sees only struct cxe_conn and the ops.
 */
#ifndef CXE_SOFT_H
#define CXE_SOFT_H

#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>
#include <linux/types.h>
#include <linux/bvec.h>
#include <linux/mm_types.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>

#include "core.h"
#include "pdu/cxe_ddp.h"
#include "pdu/cxe_rx.h"

struct socket;
struct scatterlist;
struct sock;
struct sk_buff;

#define CXE_DDP_SLOTS	1024	/* live R2T tags per connection */
/* TTT of an R2T that got no DDP slot: its data is checked by LIO alone */
#define CXE_NODDP_IDX	(CXE_DDP_MAX_TAGS - 1)

/*
 * Most pieces of a PDU or burst (headers, pages, tails) sent under one
 * socket lock, in one call into TCP (io.c, "transmit"): 2 KiB of bio_vecs
 * per connection, enough for a 256 KiB burst of 8 KiB PDUs on whole pages
 * with both digests.
 */
#define CXE_TX_PIECES	128

/* The batch being sent (io.c); empty between batches */
struct cxe_soft_tx {
	u32			n;		/* pieces since the lock / call */
#ifndef CXE_HAVE_TCP_SENDPAGE_LOCKED
	u32			len;		/* bytes in bv[0..n) */
	struct page_frag_cache	frags;		/* copies of the small pieces */
	DECLARE_BITMAP(own, CXE_TX_PIECES);	/* bv[i] is such a copy */
	struct bio_vec		bv[CXE_TX_PIECES];
#endif
};

struct cxe_ddp_slot {
	struct cxe_task	*owner;
	u32		itt;
	u32		gen;
	u32		offset;
	u32		len;
};

/*
 * A connection as the software adapter keeps it: the shared part first
 * (the PDU layer allocates conn_size bytes, see struct cxe_backend), the
 * socket and its stream state after it.
 */
struct cxe_soft_conn {
	struct cxe_conn		c;
	struct socket		*sock;		/* LIO's too: conn->sock */
	spinlock_t		ddp_lock;	/* ddp[], noddp_gen */
	struct cxe_ddp_slot	*ddp;		/* CXE_DDP_SLOTS */
	u32			noddp_gen;	/* TTTs of R2Ts without a slot */
	u8			*bounce;	/* a page, when ddp is off */
	/* receive: the parser and what its callbacks fill */
	struct cxe_rx		rx;
	u8			*hdr;		/* recv_hdr's buffer */
	const struct cxe_data	*dst;		/* recv_data's destination */
	/*
	 * where the last piece of this PDU's data went (cxe_soft_place()),
	 * for a destination without a task's walk
	 */
	struct cxe_sg_pos	place;
	int			dstatus;	/* digest status of the PDU */
	bool			pdu_done;
	bool			got_hdr;
	u32			hdr_seq;	/* copied_seq after the last pull */
	/*
	 * The first Login request, read with MSG_PEEK and fed to the parser
	 * from here: it stays in the socket until the first send, so that
	 * a connection LIO has no target for here can still be handed,
	 * unread, to the stock listener (cxe_soft_hand_back).
	 */
	bool			held;
	u8			*held_buf;
	u32			held_len;
	u32			held_off;
	struct cxe_soft_tx	tx;
};

/*
 * A portal's login gate (gate.c): its listener's connections wait there
 * until their first Login request is whole, then the portal's accept
 * takes them.
 */
struct cxe_gate {
	struct mutex		lock;		/* the lists, waiting, closing */
	struct list_head	wait_list;	/* first Login request not whole */
	struct list_head	ready_list;	/* whole: for accept */
	unsigned int		waiting;
	bool			closing;
	struct delayed_work	work;
	struct socket		*listener;
	/* the listener's owner's, on each new connection before it waits */
	void			(*prepare)(struct socket *sock);
	struct cxe_np		*cnp;
};

void cxe_gate_init(struct cxe_gate *g, struct cxe_np *cnp,
		   struct socket *listener,
		   void (*prepare)(struct socket *sock));
void cxe_gate_kick(struct cxe_gate *g);
struct socket *cxe_gate_take(struct cxe_gate *g);
void cxe_gate_stop(struct cxe_gate *g);

static inline struct cxe_soft_conn *cxe_soft(struct cxe_conn *c)
{
	return container_of(c, struct cxe_soft_conn, c);
}

/* io.c */
bool cxe_urgent(struct cxe_conn *c, struct sock *sk);

/*
 * A reader of the connection's TCP stream (io.c's parser): take()
 * consumes bytes (how many, or an error); done(), asked after each
 * take(), says it has what its caller waits for.
 */
struct cxe_stream_reader {
	long (*take)(struct cxe_conn *c, const u8 *p, unsigned int n);
	/*
	 * Optional, tried first at each skb: take bytes straight from it
	 * (a data segment copied where it belongs); 0: none, use take().
	 */
	long (*take_skb)(struct cxe_conn *c, const struct sk_buff *skb,
			 unsigned int off, unsigned int len);
	bool (*done)(struct cxe_conn *c);
};

int cxe_stream_pull(struct cxe_conn *c, const struct cxe_stream_reader *r,
		    u32 *copied);
int cxe_wait_stop(struct sock *sk);
int cxe_wait_data(struct sock *sk, long *timeo, const struct sk_buff *last);
int cxe_soft_recv_hdr(struct cxe_conn *c, u8 *hdr, u32 *flags);
int cxe_soft_recv_data(struct cxe_conn *c, const struct cxe_data *dst,
		       u32 dlen, bool *bad);
int cxe_soft_data_taken(struct cxe_conn *c);
int cxe_soft_send_pdu(struct cxe_conn *c, const u8 *bhs,
		      const struct cxe_data *src);
int cxe_soft_send_burst(struct cxe_conn *c, const struct cxe_burst *b);
bool cxe_soft_tx_room(struct cxe_conn *c, u32 bytes);
void cxe_soft_tx_release(struct cxe_soft_conn *sc);

/* ddp.c */
int cxe_soft_place(struct cxe_soft_conn *sc, const struct cxe_data *dst,
		   u32 pos, const u8 *buf, u32 len);
int cxe_soft_place_skb(struct cxe_soft_conn *sc, const struct cxe_data *dst,
		       u32 pos, const struct sk_buff *skb, u32 off, u32 len,
		       u32 *crc);
int cxe_soft_bounce(struct cxe_soft_conn *sc, const struct cxe_data *dst,
		    u32 off, const u8 *buf, u32 len);
u32 cxe_soft_ddp_reserve(struct cxe_conn *c, struct cxe_task *owner,
			 u32 itt, const struct cxe_data *win, bool place);
bool cxe_soft_ddp_check(struct cxe_conn *c, u32 ttt, u32 itt, u32 off,
			u32 len, bool final);
void cxe_soft_ddp_release(struct cxe_conn *c, struct cxe_task *owner);

#endif /* CXE_SOFT_H */
