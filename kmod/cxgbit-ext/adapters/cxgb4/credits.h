/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgb4 backend: a connection's transmit credits. Pure code (pdu/cxe_env.h).
 *
 * The chip takes a connection's work requests into a queue of wr_cred
 * 16-byte credits (what cxgb4 reports of the adapter, less those of an
 * abort request, which must always be able to go). Each request holds its
 * len16 credits until the chip returns them in CPL_FW4_ACK, in the order
 * the requests were sent; a request goes only when its credits are free.
 * The chip acks when a request asks for it (FW_WR_COMPL), so a request
 * asks when half the credits have gone out unasked since the last one
 * that did (acks keep coming while the queue is busy), and when it leaves
 * fewer credits free than the connection's largest request takes: a
 * request that has to wait then always has an ack on its way. (Mainline
 * cxgbit asks at half only: a request larger than half the credits can
 * then wait for an ack nobody asked for.) An ack that returns more
 * credits than are out, or moves snd_una back, cannot come from a chip
 * that follows this: the connection is to be aborted (mainline cxgbit
 * logs it and goes on).
 */
#ifndef CXE_CXGB4_CREDITS_H
#define CXE_CXGB4_CREDITS_H

#include "cpl.h"

#define CXE_C4CRED_RING		256	/* requests out at once, at most */

struct cxe_c4cred {
	u32 max;		/* credits the connection's requests may hold */
	u32 max_len16;		/* the largest request the connection sends */
	u32 avail;		/* free now */
	u32 unasked;		/* sent since the last request that asked for an ack */
	u32 snd_una;		/* the chip's last word on what the peer acked */
	/*
	 * Requests taken and wholly acked since init, modulo 2^32: a request
	 * is acked once acked has passed taken as it was after its take
	 */
	u32 taken;
	u32 acked;
	/* the credits each request out holds, oldest first */
	u8 ring[CXE_C4CRED_RING];
	u32 head;
	u32 n;
};

/*
 * wr_cred: the adapter's per-connection credits (cxgb4_lld_info.wr_cred);
 * max_len16: the largest request the connection will send, in credits;
 * snd_isn: our initial sequence number (CPL_PASS_ESTABLISH). -EINVAL when
 * such a request would not fit in wr_cred once an abort request's credits
 * are kept back.
 */
int cxe_c4cred_init(struct cxe_c4cred *c, u32 wr_cred, u32 max_len16,
		    u32 snd_isn);

/*
 * A request of len16 credits, sent if they are free: 0, with *compl
 * whether it must ask for an ack (always when want_compl); -EAGAIN when
 * it must wait for an ack (which is then always on its way); -EINVAL for
 * 0 credits or more than max_len16.
 */
int cxe_c4cred_take(struct cxe_c4cred *c, u32 len16, bool want_compl,
		    bool *compl);

/*
 * A CPL_FW4_ACK for this connection: its credits back. Returns how many
 * requests are now wholly acked (the oldest ones: their buffers can be
 * freed), or -EPROTO for an ack that returns credits no request holds or
 * moves snd_una back.
 */
int cxe_c4cred_ack(struct cxe_c4cred *c, const struct cxe_cpl_fw4_ack *a);

/* whether the request that left taken at mark has come back in full */
static inline bool cxe_c4cred_acked(const struct cxe_c4cred *c, u32 mark)
{
	return !((c->acked - mark) >> 31);	/* acked - mark "not negative" */
}

/* credits held by requests out (max - avail) */
static inline u32 cxe_c4cred_out(const struct cxe_c4cred *c)
{
	return c->max - c->avail;
}

#endif /* CXE_CXGB4_CREDITS_H */
