/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A model of the connection side of a Chelsio T5/T6 for one TID: the
 * backend's messages on the TID go in, and the peer's (or the chip's own
 * TCP's) doings are events; the connection messages the chip hands its
 * upper-layer driver come out, in order (README.md says what is modelled
 * and what is not). Pure code, as ulp_rx.h.
 *
 * It refuses what the firmware would refuse, or what would leave the
 * chip and the driver disagreeing about the TID:
 *  - a message for another TID, or any after the TID was released;
 *  - before the accept reply, anything else; a second accept reply;
 *  - a first request on the connection's transmit queue that is not
 *    FW_FLOWC_WR (CPL_SET_TCB_FIELD and CPL_RX_DATA_ACK are not on it), or
 *    a second FW_FLOWC_WR;
 *  - data, a TCB change or a close before CPL_PASS_ESTABLISH, data or a
 *    close after our close, anything but an abort reply after our abort,
 *    a second abort;
 *  - an abort reply for no reset of the peer's, or a second one;
 *  - releasing the TID while a message for it is still to come or one
 *    from the driver is still owed.
 * Data or a close that reaches the chip after the peer reset the
 * connection, but before the driver heard of it, is dropped, as a chip
 * drops it.
 */
#ifndef CXE_MODEL_ULP_CONN_H
#define CXE_MODEL_ULP_CONN_H

#include "cpl.h"

#define CXE_MODEL_CONN_QLEN	8	/* messages on their way, at most */
#define CXE_MODEL_CONN_MSG	24	/* the longest of them */

struct cxe_model_conn {
	u32 tid;
	u32 snd_isn, rcv_isn;
	bool accepted;		/* the accept reply came */
	bool established;	/* CPL_PASS_ESTABLISH sent */
	bool flowc;		/* FW_FLOWC_WR came */
	bool fin_in;		/* our CPL_CLOSE_CON_REQ came */
	bool fin_acked;		/* CPL_CLOSE_CON_RPL sent */
	bool peer_fin;		/* CPL_PEER_CLOSE sent */
	bool peer_reset;	/* CPL_ABORT_REQ_RSS (not advice) sent */
	bool abort_in;		/* our CPL_ABORT_REQ came */
	u32 rpl_owed;		/* CPL_ABORT_RPLs the driver owes */
	bool released;
	u32 dropped;		/* requests that came after a reset */
	const char *why;	/* the last refusal */
	u8 q[CXE_MODEL_CONN_QLEN][CXE_MODEL_CONN_MSG];
	u8 qlen[CXE_MODEL_CONN_QLEN];
	u32 head, n;
};

void cxe_model_conn_init(struct cxe_model_conn *m, u32 tid, u32 snd_isn,
			 u32 rcv_isn);

/* a message from the driver on the TID: 0, or -EPROTO (m->why says why) */
int cxe_model_conn_take(struct cxe_model_conn *m, const u8 *msg, u32 len);

/*
 * What the peer or the chip's TCP does; each returns whether it could
 * happen now (and queued its message), false otherwise:
 *  - ack: the peer's ACK of our SYN-ACK (CPL_PASS_ESTABLISH);
 *  - fin: the peer's FIN (CPL_PEER_CLOSE);
 *  - ack_fin: the peer acks our FIN (CPL_CLOSE_CON_RPL);
 *  - reset: the peer's RST or a TCP timeout (CPL_ABORT_REQ_RSS, status);
 *  - advice: negative advice (CPL_ABORT_REQ_RSS, status 35..37).
 */
bool cxe_model_conn_ack(struct cxe_model_conn *m);
bool cxe_model_conn_fin(struct cxe_model_conn *m);
bool cxe_model_conn_ack_fin(struct cxe_model_conn *m);
bool cxe_model_conn_reset(struct cxe_model_conn *m, u8 status);
bool cxe_model_conn_advice(struct cxe_model_conn *m, u8 status);

/* the next message to the driver: its length, 0 when none */
u32 cxe_model_conn_next(struct cxe_model_conn *m, u8 *buf);

/* the driver releases the TID: 0, or -EPROTO when the chip is not done */
int cxe_model_conn_release(struct cxe_model_conn *m);

/* the chip is done with the TID: it sends nothing more and waits for nothing */
bool cxe_model_conn_over(const struct cxe_model_conn *m);

/*
 * The flow still takes requests that hold credits: up, and neither our
 * close nor our abort nor the peer's reset has come. A FW_ULPTX_WR (page
 * pods: the adapter's memory, not the stream) is taken from the accept
 * reply until the TID's release whatever the state, and holds credits
 * only while this is true.
 */
bool cxe_model_conn_flow_live(const struct cxe_model_conn *m);

/*
 * The SYN of a connection a listening server takes, as the chip reports
 * it to the driver in CPL_PASS_ACCEPT_REQ: the CPL (the TCP options the
 * chip parsed out of the SYN), then the SYN's Ethernet, IP (IPv4 without
 * options, or IPv6 without extension headers) and TCP headers (20 bytes:
 * the options are in the CPL). Addresses are in network order; IPv4 in
 * the first 4 bytes.
 */
struct cxe_model_syn {
	u32 tid;		/* the connection's new TID */
	u32 stid;		/* the server's */
	u8 ip_version;		/* 4 or 6 */
	u8 local_ip[16];
	u8 peer_ip[16];
	u16 local_port;
	u16 peer_port;
	u32 peer_isn;		/* the SYN's sequence number */
	u16 window;		/* the SYN's window field */
	u16 peer_mss;
	bool wscale_ok;		/* the peer offered window scaling */
	u8 peer_wscale;		/* its shift, 0..14 */
	bool sack;
	bool tstamp;
	bool ece;		/* TCP flags of the SYN */
	bool cwr;
	u8 tos;			/* IPv4 TOS or IPv6 traffic class */
};

#define CXE_MODEL_ACCEPT_REQ_MAX	(CXE_CPL_PASS_ACCEPT_REQ_LEN + 14 + 40 + 20)

/*
 * CPL_PASS_ACCEPT_REQ for s, laid out for chip; returns its length, or
 * -EINVAL (an IP version other than 4 or 6, a window scale above 14),
 * -ENOSPC (size too small: nothing written).
 */
int cxe_model_accept_req(u8 *buf, u32 size, enum cxe_chip chip,
			 const struct cxe_model_syn *s);

/*
 * CPL_SET_TCB_RPL (CXE_CPL_SET_TCB_RPL_LEN bytes) answering a
 * CPL_SET_TCB_FIELD on tid with its cookie; returns its length
 */
u32 cxe_model_set_tcb_rpl(u8 *buf, u32 tid, u8 cookie, u8 status);

#endif /* CXE_MODEL_ULP_CONN_H */
