/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgb4 backend: the life of an offloaded connection, from the accept
 * reply to the release of its TID. Pure code (pdu/cxe_env.h); the device
 * glue feeds it the chip's messages and the PDU layer's requests and does
 * what it answers, in the order of the answer's bits.
 *
 * The chip runs TCP. The backend knows the connection only by messages,
 * and these rules hold for every TID:
 *  - It is up at CPL_PASS_ESTABLISH. Until then only a peer's reset, or
 *    our abort (a listener going away), can end it, and the PDU layer
 *    does not know of it.
 *  - The first work request on its transmit queue is FW_FLOWC_WR,
 *    whatever follows (data, a close, an abort, an abort reply): the
 *    firmware learns the flow from it. TCB changes and receive credits do
 *    not go on that queue.
 *  - Our close is CPL_CLOSE_CON_REQ (a FIN after the data queued before
 *    it), answered by CPL_CLOSE_CON_RPL once the peer acked it; no data
 *    goes after it. The peer's FIN is CPL_PEER_CLOSE. The connection is
 *    over when both have come.
 *  - Our abort is CPL_ABORT_REQ, answered by CPL_ABORT_RPL_RSS; nothing
 *    but abort replies goes after it, and messages the chip sent before
 *    it took the abort (a peer close, a close reply) are dropped. A
 *    peer's reset, or the chip giving up, is CPL_ABORT_REQ_RSS, which we
 *    answer with CPL_ABORT_RPL, also while our own abort is out (the
 *    chip then still answers ours). Negative advice is a warning only.
 *  - The TID is released once, when the chip will send nothing more for
 *    it and waits for nothing from us; the connection is freed once the
 *    TID is released and the PDU layer is done with it (or never had it).
 *  - A close that the peer never completes is aborted when the close
 *    timer (the glue's) fires.
 *  - An adapter that goes away (cxgb4's DETACH) ends every connection
 *    at once: nothing more comes from its chip, nothing goes to it.
 * A message that cannot come in the connection's state is a protocol
 * error (-EPROTO): the glue aborts the connection. Mainline cxgbit logs
 * such messages and goes on.
 */
#ifndef CXE_CXGB4_CONN_H
#define CXE_CXGB4_CONN_H

#include "cpl.h"

enum cxe_c4conn_state {
	CXE_C4CONN_CONNECTING,	/* accept reply sent, not established */
	CXE_C4CONN_UP,
	CXE_C4CONN_CLOSING,	/* a FIN sent or received, not both done */
	CXE_C4CONN_ABORTING,	/* our CPL_ABORT_REQ out, no reply yet */
	CXE_C4CONN_DONE,	/* the chip is done with the TID */
};

/* what the glue does, in this order */
#define CXE_C4_SEND_FLOWC	BIT(0)	/* FW_FLOWC_WR */
#define CXE_C4_SEND_ABORT_RPL	BIT(1)	/* CPL_ABORT_RPL (no RST) */
#define CXE_C4_SEND_CLOSE	BIT(2)	/* CPL_CLOSE_CON_REQ, after queued data */
#define CXE_C4_SEND_ABORT	BIT(3)	/* CPL_ABORT_REQ (RST); queued data dropped */
#define CXE_C4_UP		BIT(4)	/* give the connection to the PDU layer */
#define CXE_C4_END		BIT(5)	/* tell it no more data comes (see reset) */
#define CXE_C4_ARM_TIMER	BIT(6)	/* start the close timer */
#define CXE_C4_RELEASE_TID	BIT(7)
#define CXE_C4_FREE		BIT(8)	/* drop the connection's last reference */

struct cxe_c4conn {
	u32 tid;
	enum cxe_c4conn_state state;
	bool flowc_sent;
	bool fin_sent;		/* CPL_CLOSE_CON_REQ went */
	bool fin_acked;		/* CPL_CLOSE_CON_RPL came */
	bool peer_fin;		/* CPL_PEER_CLOSE came */
	bool reset;		/* ended by an abort, ours or the peer's */
	bool given;		/* the PDU layer had it (CXE_C4_UP) */
	bool ended;		/* CXE_C4_END said */
	bool released;		/* the PDU layer is done with it */
};

/* after the accept reply for tid went */
void cxe_c4conn_init(struct cxe_c4conn *c, u32 tid);

/* the chip's messages for the connection: CXE_C4_* bits, or -EPROTO */
int cxe_c4conn_established(struct cxe_c4conn *c);
int cxe_c4conn_peer_close(struct cxe_c4conn *c);
int cxe_c4conn_close_rpl(struct cxe_c4conn *c);
int cxe_c4conn_peer_abort(struct cxe_c4conn *c, bool neg_adv);
int cxe_c4conn_abort_rpl(struct cxe_c4conn *c);

/* the PDU layer's and the glue's requests: CXE_C4_* bits */
int cxe_c4conn_close(struct cxe_c4conn *c);	/* after a logout */
int cxe_c4conn_abort(struct cxe_c4conn *c);
int cxe_c4conn_release(struct cxe_c4conn *c);	/* the PDU layer is done */
int cxe_c4conn_timeout(struct cxe_c4conn *c);	/* the close timer fired */
/* the adapter is gone: over at once, no message goes (conn.c) */
int cxe_c4conn_gone(struct cxe_c4conn *c);

/*
 * Whether a data work request may go now; the first one is preceded by
 * FW_FLOWC_WR (cxe_c4conn_tx_begin() says so and records it).
 */
bool cxe_c4conn_may_send(const struct cxe_c4conn *c);
int cxe_c4conn_tx_begin(struct cxe_c4conn *c);

/*
 * What the backend chooses at accept, from the SYN and the path to the
 * peer, as mainline cxgbit chooses it:
 *  - the MSS, as an index into the adapter's MTU table: the largest entry
 *    not above the path MTU (less, when the peer's MSS is smaller; the
 *    first entry when none fits), or the entry below it when that one
 *    leaves a payload of whole 8-byte units and the largest does not
 *    (cxgb4 keeps 1488 beside 1500 for this);
 *  - the receive window, 256 KiB per 10 Gb/s of link, at most what opt0
 *    carries (1023 KiB), and the smallest window scale that covers it;
 *  - timestamps and SACK as the peer offered them, ECN when its SYN had
 *    both ECE and CWR, and the SYN's TOS.
 * The caller fills in the rest of the accept reply (TID, ISS, L2T entry,
 * queue, channel, source MAC). Returns the send window in bytes (256 KiB
 * per 10 Gb/s, at most 512 KiB) for FW_FLOWC_WR.
 */
#define CXE_C4_NMTUS		16

struct cxe_c4_path {
	const u16 *mtus;	/* the adapter's MTU table, CXE_C4_NMTUS entries */
	u32 mtu;		/* the route's MTU toward the peer */
	u32 speed_mbps;		/* the port's link speed */
	u8 pf;			/* the PCI function cxgb4 drives the adapter from */
	bool dcb;		/* cxgb4 runs DCB on its ports */
	u8 dcb_prio;		/* then the next hop's VLAN priority (0 untagged) */
};

u32 cxe_c4conn_accept_opts(const struct cxe_cpl_accept_req *req,
			   const struct cxe_c4_path *p,
			   struct cxe_cpl_accept *a);

/* the entry of mtus chosen for a path MTU, hdr bytes of TCP/IP headers */
u8 cxe_c4_mtu_idx(const u16 *mtus, u32 hdr, u32 mtu);

/*
 * The payload of a full segment once established (CPL_PASS_ESTABLISH's
 * MSS index and timestamps): the entry less the TCP/IP headers, at least
 * 128 bytes, as mainline takes it for FW_FLOWC_WR's MSS.
 */
u32 cxe_c4conn_emss(const u16 *mtus, const struct cxe_cpl_established *e,
		    bool ipv6);

/*
 * The shift the firmware scales the peer's advertised windows by
 * (FW_FLOWC_WR's RCV_SCALE): the one TCP agreed, as CPL_PASS_ESTABLISH
 * reports it (mainline cxgbit's rule), not the SYN's offer, which a peer
 * may not make (the chip then reports a shift above 14); 0 where scaling
 * was not agreed, which FW_FLOWC_WR leaves out.
 */
u8 cxe_c4conn_rcv_scale(const struct cxe_cpl_established *e);

#endif /* CXE_CXGB4_CONN_H */
