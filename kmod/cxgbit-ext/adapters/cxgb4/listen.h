/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgb4 backend: the life of a listening server, one server TID (STID) on
 * one adapter for one offloaded portal. Pure code (pdu/cxe_env.h); the
 * glue does what each answer's bits say, in their order.
 *
 * The rules, for every STID:
 *  - The STID is taken (cxgb4_alloc_stid) before the server is asked for
 *    (cxgb4_create_server), which the chip answers with CPL_PASS_OPEN_RPL:
 *    status 0, the server listens; anything else, there is none.
 *  - A server's removal (cxgb4_remove_server) is answered by
 *    CPL_CLOSE_LISTSRV_RPL. Status 0, it is gone; anything else, the chip
 *    may still hold it.
 *  - The STID goes back (cxgb4_free_stid) only once the chip holds no
 *    server on it and owes no answer for it: an answer for an STID given
 *    out again would be taken for the new server's. One the chip may still
 *    hold (a failed removal) is never given back.
 *  - Whoever waits for an answer (the portal's listen, its unlisten) waits
 *    a bounded time (the glue's) and is then told -ETIMEDOUT; the answer
 *    may still come. Mainline cxgbit keeps such an STID for good; here a
 *    late answer ends the server properly: a server that comes up when
 *    nobody wants it any more is removed at once, and a late failure or
 *    removal gives the STID back.
 *  - A portal that goes while its open is out waits for the answer, then
 *    for the removal when the server came up.
 *  - Connections (CPL_PASS_ACCEPT_REQ) are taken only while the server
 *    listens and is wanted.
 * An answer that cannot come in the state is a protocol error (-EPROTO):
 * the glue counts it and nothing changes.
 */
#ifndef CXE_CXGB4_LISTEN_H
#define CXE_CXGB4_LISTEN_H

#include "../../pdu/cxe_env.h"

enum cxe_c4lsn_state {
	CXE_C4LSN_OPENING,	/* server asked for, no answer yet */
	CXE_C4LSN_LISTENING,
	CXE_C4LSN_CLOSING,	/* removal asked for, no answer yet */
	CXE_C4LSN_DONE,		/* no answer owed: the STID is settled */
};

/* what the glue does, in this order */
#define CXE_C4L_REMOVE		BIT(0)	/* cxgb4_remove_server() */
#define CXE_C4L_FREE_STID	BIT(1)	/* cxgb4_free_stid() */
#define CXE_C4L_WAKE		BIT(2)	/* the waiter has its answer (err) */

struct cxe_c4lsn {
	u32 stid;
	enum cxe_c4lsn_state state;
	bool wanted;		/* the portal still wants the server */
	bool waiting;		/* a listen or unlisten waits for an answer */
	bool kept;		/* a failed removal: the STID is never freed */
	int err;		/* the waiter's answer */
	u8 status;		/* the last reply's CPL status */
};

/* the STID is taken and the open asked for; the portal's listen waits */
void cxe_c4lsn_init(struct cxe_c4lsn *l, u32 stid);

/* the chip's answers: CXE_C4L_* bits, or -EPROTO */
int cxe_c4lsn_open_rpl(struct cxe_c4lsn *l, u8 status);
int cxe_c4lsn_close_rpl(struct cxe_c4lsn *l, u8 status);

/*
 * cxgb4 could not send the request the state waits on (err): an open
 * that never left has no server and gives the STID back; a removal that
 * never left leaves the server in the chip, and the STID taken.
 */
int cxe_c4lsn_unsent(struct cxe_c4lsn *l, int err);

/*
 * The adapter went away (cxgb4's DETACH): the chip holds no server and
 * owes no answer, so the STID is settled, a kept one too, and goes back
 * (the device forgets it); a waiter is told -ENODEV. The portal's
 * unlisten then finds nothing to wait for.
 */
int cxe_c4lsn_gone(struct cxe_c4lsn *l);

/* the portal goes: it waits (unless DONE says it need not) */
int cxe_c4lsn_unlisten(struct cxe_c4lsn *l);
/* the waiter gave up: CXE_C4L_WAKE with -ETIMEDOUT, or 0 if it had its answer */
int cxe_c4lsn_timeout(struct cxe_c4lsn *l);

static inline bool cxe_c4lsn_may_accept(const struct cxe_c4lsn *l)
{
	return l->state == CXE_C4LSN_LISTENING && l->wanted;
}

/* the errno a listen gets for a CPL_PASS_OPEN_RPL status other than 0 */
int cxe_c4lsn_errno(u8 status);

#endif /* CXE_CXGB4_LISTEN_H */
