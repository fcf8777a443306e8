/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgb4 backend: the messages it exchanges with a Chelsio T5/T6 adapter.
 *
 * Builders write one CPL message or firmware work request into a buffer
 * the caller provides and return its length in bytes (a whole number of
 * 16-byte units, zero-padded, as work requests are sized), -ENOSPC when
 * the buffer is too small or -EINVAL when an argument does not fit its
 * field. Parsers take the bytes of one received CPL starting at its
 * opcode (the RSS header already stripped), return the length of the CPL
 * itself (where any payload it carries starts) and fill a struct, or
 * return -EBADMSG for a short message, a wrong opcode or an inconsistent
 * field; they never read past the length they are given.
 *
 * Every field is written and read byte by byte in network order, so the
 * code needs no alignment and no kernel header: it builds into the module
 * and into user-space tests alike (see pdu/cxe_env.h). The layouts are the
 * chip's; what is known of each field, and what is not, is said where it
 * is defined in cpl.c.
 */
#ifndef CXE_CPL_H
#define CXE_CPL_H

#include "../../pdu/cxe_env.h"

enum cxe_chip {
	CXE_CHIP_T5 = 5,
	CXE_CHIP_T6 = 6,
};

/* CPL opcodes (first byte of a CPL) */
#define CXE_CPL_PASS_ACCEPT_RPL		0x02
#define CXE_CPL_SET_TCB_FIELD		0x05
#define CXE_CPL_CLOSE_CON_REQ		0x08
#define CXE_CPL_ABORT_REQ		0x0a
#define CXE_CPL_ABORT_RPL		0x0b
#define CXE_CPL_RX_DATA_ACK		0x0d
#define CXE_CPL_TX_DATA_ISO		0x1f
#define CXE_CPL_CLOSE_LISTSRV_RPL	0x20
#define CXE_CPL_PASS_OPEN_RPL		0x24
#define CXE_CPL_PEER_CLOSE		0x26
#define CXE_CPL_ABORT_REQ_RSS		0x2b
#define CXE_CPL_ABORT_RPL_RSS		0x2d
#define CXE_CPL_CLOSE_CON_RPL		0x32
#define CXE_CPL_ISCSI_HDR		0x33
#define CXE_CPL_SET_TCB_RPL		0x3a
#define CXE_CPL_PASS_ESTABLISH		0x41
#define CXE_CPL_PASS_ACCEPT_REQ		0x44
#define CXE_CPL_RX_ISCSI_CMP		0x45
#define CXE_CPL_RX_ISCSI_DDP		0x49
#define CXE_CPL_ISCSI_DATA		0xb2
#define CXE_CPL_FW4_ACK			0xc3

/* firmware work request opcodes (first byte of a work request) */
#define CXE_FW_TP_WR			0x05
#define CXE_FW_FLOWC_WR			0x0a
#define CXE_FW_OFLD_TX_DATA_WR		0x0b
#define CXE_FW_ISCSI_TX_DATA_WR		0x45
#define CXE_FW_ULPTX_WR			0x04

/* status codes of CPL_ABORT_REQ_RSS that are advice, not an abort */
#define CXE_CPL_ERR_RTX_NEG_ADVICE	35
#define CXE_CPL_ERR_PERSIST_NEG_ADVICE	36
#define CXE_CPL_ERR_KEEPALV_NEG_ADVICE	37
/* and some of a connection the chip ended (t4_msg.h's enum CPL_error) */
#define CXE_CPL_ERR_CONN_RESET		20	/* the peer's RST */
#define CXE_CPL_ERR_XMIT_TIMEDOUT	31	/* retransmissions gave up */
#define CXE_CPL_ERR_KEEPALIVE_TIMEDOUT	34

/* TCB ULP submode bits: the chip checks/inserts these digests */
#define CXE_ULP_CRC_HEADER		0x1
#define CXE_ULP_CRC_DATA		0x2

/* CPL_FW4_ACK flags */
#define CXE_FW4_ACK_SEQVAL		0x1
#define CXE_FW4_ACK_CH			0x2
#define CXE_FW4_ACK_FLOWC		0x4

/* largest TID a message here takes (see cpl.c: the work request flow id) */
#define CXE_CPL_TID_MAX			0x3fffff

/* lengths of what the builders write */
#define CXE_CPL_PASS_ACCEPT_RPL_LEN	48
#define CXE_CPL_SET_TCB_FIELD_LEN	48
#define CXE_CPL_RX_DATA_ACK_LEN		32
#define CXE_CPL_CLOSE_CON_REQ_LEN	32
#define CXE_CPL_ABORT_REQ_LEN		32
#define CXE_CPL_ABORT_RPL_LEN		32
#define CXE_FW_OFLD_TX_DATA_WR_LEN	16
#define CXE_CPL_TX_DATA_ISO_LEN		32
#define CXE_FW_FLOWC_MAX_PARAMS		12
#define CXE_FW_FLOWC_WR_MAX_LEN		112

/* lengths of the received CPLs (without what follows them) */
#define CXE_CPL_PASS_ACCEPT_REQ_LEN	24
#define CXE_CPL_PASS_ESTABLISH_LEN	24
#define CXE_CPL_ISCSI_HDR_LEN		16
#define CXE_CPL_ISCSI_DATA_LEN		16
#define CXE_CPL_RX_ISCSI_DDP_LEN	24
#define CXE_CPL_RX_ISCSI_CMP_LEN	24
#define CXE_CPL_FW4_ACK_LEN		24
#define CXE_CPL_PEER_CLOSE_LEN		8
#define CXE_CPL_CLOSE_CON_RPL_LEN	16
#define CXE_CPL_ABORT_REQ_RSS_LEN	8
#define CXE_CPL_ABORT_RPL_RSS_LEN	8
#define CXE_CPL_SET_TCB_RPL_LEN		16
#define CXE_CPL_PASS_OPEN_RPL_LEN	8
#define CXE_CPL_CLOSE_LISTSRV_RPL_LEN	8

/* ---- messages the backend sends ---- */

struct cxe_cpl_accept {
	u32 tid;
	u32 iss;		/* our initial send sequence number */
	u32 rcv_win;		/* bytes; opt0 carries it in KiB, clamped */
	u16 l2t_idx;		/* L2 table entry of the next hop */
	u16 rss_qid;		/* ingress queue for this connection's CPLs */
	u8 mss_idx;		/* index into the adapter's MTU table */
	u8 tx_chan;
	u8 smac_idx;		/* source MAC table entry */
	u8 tos;			/* IP TOS of the SYN; opt0 takes its DSCP */
	u8 wscale;		/* our receive window scale, 0 = none */
	bool tstamps;		/* peer offered timestamps */
	bool sack;		/* peer offered SACK */
	bool ecn;		/* peer's SYN had ECE and CWR */
};

int cxe_cpl_pass_accept_rpl(void *buf, size_t size, enum cxe_chip chip,
			    const struct cxe_cpl_accept *a);

struct cxe_cpl_tcb_field {
	u32 tid;
	u16 reply_qid;		/* queue of the CPL_SET_TCB_RPL */
	bool no_reply;
	u8 cookie;		/* 3 bits, echoed in CPL_SET_TCB_RPL */
	u8 word;		/* 64-bit TCB word, 0..31 */
	u64 mask;
	u64 val;
};

int cxe_cpl_set_tcb_field(void *buf, size_t size,
			  const struct cxe_cpl_tcb_field *f);
/* iSCSI ULP submode: header/data digest offload on or off */
int cxe_cpl_set_tcb_submode(void *buf, size_t size, u32 tid, u16 reply_qid,
			    bool hcrc, bool dcrc);
/* DDP page size index (0..3) the connection's page pods use */
int cxe_cpl_set_tcb_pgidx(void *buf, size_t size, u32 tid, u16 reply_qid,
			  u8 pgidx);
/*
 * The request read back, as the chip takes it (the chip model): the whole
 * TP work request the builder writes; returns the bytes it reads (40) or
 * -EBADMSG for a short one, another request, or a header whose flow id or
 * immediate length disagrees with its CPL.
 */
int cxe_cpl_parse_set_tcb_field(const void *buf, size_t len,
				struct cxe_cpl_tcb_field *f);
/*
 * Whether a TCB write changes the iSCSI ULP submode; if so, which of the
 * CXE_ULP_CRC_* bits it changes (*mask) and what it sets them to (*val).
 */
bool cxe_cpl_tcb_submode(const struct cxe_cpl_tcb_field *f, u8 *mask, u8 *val);

struct cxe_fw_flowc {
	u32 tid;
	u8 pf;
	u8 vf;
	u8 channel;
	u8 port;
	u16 iqid;		/* ingress queue of the connection */
	u32 snd_nxt;
	u32 rcv_nxt;
	u32 sndbuf;		/* send window, bytes */
	u32 mss;		/* effective MSS */
	u32 txdataplen_max;	/* largest payload one TX work request has */
	u8 rcv_scale;		/* the peer's window shift TCP agreed; 0 = none */
	bool dcb;		/* send the DCB priority */
	u8 dcb_prio;
	bool ulp_mode;		/* send the ULP mode (iSCSI); see cpl.c */
};

int cxe_fw_flowc_wr(void *buf, size_t size, const struct cxe_fw_flowc *f);

struct cxe_fw_tx_data {
	u32 tid;
	u32 plen;		/* payload bytes, digests excluded */
	u8 immdlen;		/* bytes of immediate data after the header */
	u8 len16;		/* whole request in 16-byte units (credits) */
	bool iso;		/* a CPL_TX_DATA_ISO follows */
	bool hcrc;		/* chip inserts header digests */
	bool dcrc;		/* chip inserts data digests */
	bool compl;		/* ask for a CPL_FW4_ACK */
};

int cxe_fw_ofld_tx_data_wr(void *buf, size_t size, enum cxe_chip chip,
			   const struct cxe_fw_tx_data *t);

struct cxe_cpl_iso {
	bool first;		/* first slice of the burst */
	bool last;		/* last slice of the burst */
	bool hcrc;
	bool dcrc;
	bool immediate;		/* see cpl.c */
	u8 pdu_type;		/* 2 bits, see cpl.c */
	u8 ahs_len;
	u32 mpdu;		/* data bytes per PDU (4-byte units on wire) */
	u32 burst_size;		/* bytes (4-byte units on wire) */
	u32 len;		/* bytes the chip segments */
	u32 seglen_offset;	/* 24 bits */
	u32 datasn_offset;
	u32 buffer_offset;
};

int cxe_cpl_tx_data_iso(void *buf, size_t size, const struct cxe_cpl_iso *i);

struct cxe_cpl_rx_ack {
	u32 tid;
	u32 credits;		/* bytes of receive window returned, 28 bits */
	bool set_dack;		/* change the delayed-ACK mode to dack_mode */
	u8 dack_mode;		/* 0..3 */
	bool force_ack;
};

int cxe_cpl_rx_data_ack(void *buf, size_t size, const struct cxe_cpl_rx_ack *a);
/* read back as the chip takes it, as cxe_cpl_parse_set_tcb_field() (24) */
int cxe_cpl_parse_rx_data_ack(const void *buf, size_t len,
			      struct cxe_cpl_rx_ack *a);
/*
 * Our FIN. It goes behind the connection's data and holds transmit
 * credits as a data request does; compl asks the chip for the ack that
 * returns them (FW_WR_COMPL), as mainline cxgbit always does for it.
 */
int cxe_cpl_close_con_req(void *buf, size_t size, u32 tid, bool compl);
/* a built work request asks for the ack that returns its credits */
void cxe_wr_ask_compl(void *wr);
/* rst: the chip sends a RST (CPL_ABORT_SEND_RST) or not (CPL_ABORT_NO_RST) */
int cxe_cpl_abort_req(void *buf, size_t size, u32 tid, bool rst);
int cxe_cpl_abort_rpl(void *buf, size_t size, u32 tid, bool rst);

/*
 * Page pods. A task whose data the chip places has pods in the adapter's
 * pod memory: each is 64 bytes, a header saying which connection, tag and
 * buffer length it is valid for, then the bus addresses of four pages of
 * the buffer and of the page after them (the next pod's first, or 0).
 * Pods are written with ULP_TX_MEM_WRITE work requests carrying them as
 * immediate data, at most CXE_PPOD_IMM_MAX to a request so that it stays
 * immediate (under 256 bytes).
 */
#define CXE_PPOD_LEN			64
#define CXE_PPOD_SHIFT			6	/* log2 of CXE_PPOD_LEN */
#define CXE_PPOD_PAGES			4
#define CXE_PPOD_PAGE_SHIFT		12	/* the pages pods name: 4 KiB */
#define CXE_PPOD_IMM_MAX		3
#define CXE_ULP_MEM_WRITE_MAX_LEN	240	/* a write of CXE_PPOD_IMM_MAX pods */

struct cxe_ppod_hdr {
	u32 tid;		/* the connection the pods are valid for */
	u32 tag;		/* as the pods hold it: the DDP tag, bits 30..31 clear */
	u32 max_offset;		/* bytes of the buffer: the task's transfer length */
	u32 page_offset;	/* where the buffer starts in its first page */
};

/* pods needed for a buffer of len bytes starting page_offset into its first page */
static inline u32 cxe_ppod_count(u32 page_offset, u32 len)
{
	u32 pages = (page_offset + len + (1U << CXE_PPOD_PAGE_SHIFT) - 1) >>
		    CXE_PPOD_PAGE_SHIFT;

	return (pages + CXE_PPOD_PAGES - 1) / CXE_PPOD_PAGES;
}

/*
 * Pods [first, first + npods) of a buffer whose pages (page-aligned bus
 * addresses) are pages[0..npages), written to pod memory at byte address
 * pod_addr (32-byte aligned: the address of pod first), on the flow of
 * the connection the pods are for (hdr->tid). npods is 1..CXE_PPOD_IMM_MAX
 * and the pods must be the buffer's own (first + npods at most
 * DIV_ROUND_UP(npages, CXE_PPOD_PAGES)).
 */
int cxe_ulp_ppod_write(void *buf, size_t size, u32 pod_addr,
		       const struct cxe_ppod_hdr *hdr, const u64 *pages,
		       u32 npages, u32 first, u32 npods);

/*
 * npods pods at pod_addr made invalid (libcxgb's cxgbi_ppm_ppod_clear():
 * the valid bit clear), on the flow of connection tid, whose pods they
 * were: the chip places nothing more by them.
 */
int cxe_ulp_ppod_clear(void *buf, size_t size, u32 pod_addr, u32 tid,
		       u32 npods);

/*
 * The DDP tag of a Data-Out's TTT, as the chip reads it: the index of
 * the buffer's first pod above a 6-bit colour (libcxgb's
 * cxgbi_ppm_make_ddp_tag()), bits 30..31 (the page size selector) clear
 * as the pods are 4 KiB ones. How wide the index is, and which bit says
 * a tag names no pods, is the adapter's: its ULP_RX_ISCSI_TAGMASK
 * (cxgb4_lld_info's iscsi_tagmask) read as libcxgb's
 * cxgbi_tagmask_check() reads it, the no-pods bit at the mask's top. A
 * TTT with that bit set is never placed: the chip hands its Data-Outs'
 * data up.
 */
#define CXE_PPOD_TAG_COLOR_BITS	6
#define CXE_PPOD_TAG_COLOR_MASK	((1U << CXE_PPOD_TAG_COLOR_BITS) - 1)

struct cxe_ppod_tagfmt {
	u32 idx_bits;		/* pod index bits above the colour */
	u32 noddp;		/* the bit of a tag that names no pods */
};

/*
 * The format of tagmask: 0, or -EINVAL for a mask that leaves no index
 * bit or reaches into the page size selector
 */
int cxe_ppod_tagfmt_init(struct cxe_ppod_tagfmt *f, u32 tagmask);

/* pod indices a tag of f can name: [0, cxe_ppod_tag_max_idx()) */
static inline u32 cxe_ppod_tag_max_idx(const struct cxe_ppod_tagfmt *f)
{
	return 1U << f->idx_bits;
}

static inline u32 cxe_ppod_tag(u32 idx, u32 color)
{
	return idx << CXE_PPOD_TAG_COLOR_BITS | (color & CXE_PPOD_TAG_COLOR_MASK);
}

static inline bool cxe_ppod_tag_ddp(const struct cxe_ppod_tagfmt *f, u32 ttt)
{
	return !(ttt & f->noddp) && !(ttt >> 30);
}

static inline u32 cxe_ppod_tag_idx(const struct cxe_ppod_tagfmt *f, u32 ttt)
{
	return (ttt >> CXE_PPOD_TAG_COLOR_BITS) & (cxe_ppod_tag_max_idx(f) - 1);
}

/*
 * The n-th of CXE_PPOD_NODDP_TAGS distinct TTTs that name no pods (n
 * taken modulo their number): n's bits below the no-pods bit, that bit
 * set, n's other bits above it, as libcxgb's
 * cxgbi_ppm_make_non_ddp_tag() spreads a software tag. Never 0xffffffff.
 */
#define CXE_PPOD_NODDP_TAGS	BIT(30)

static inline u32 cxe_ppod_tag_noddp(const struct cxe_ppod_tagfmt *f, u32 n)
{
	u32 low = f->noddp - 1;

	n %= CXE_PPOD_NODDP_TAGS;
	return (n & ~low) << 1 | f->noddp | (n & low);
}

/* ---- messages the backend receives ---- */

/* opcode of a received CPL, or -EBADMSG for an empty one */
int cxe_cpl_opcode(const void *buf, size_t len);

struct cxe_cpl_accept_req {
	u32 tid;
	u32 stid;		/* listening server's TID */
	u8 tos;
	u16 syn_len;		/* "len" field; see cpl.c */
	u16 vlan;
	u8 rx_chan;
	u8 intf;		/* port the SYN came in on */
	u16 mac_idx;
	bool xact_match;
	u16 peer_mss;
	u8 peer_wscale;
	bool sack;
	bool tstamp;
	u16 eth_len;		/* header lengths of the SYN that follows */
	u16 ip_len;
	u8 tcp_len;
	u8 ip_version;		/* 4 or 6 */
	u8 local_ip[16];	/* IPv4: first 4 bytes */
	u8 peer_ip[16];
	u16 local_port;
	u16 peer_port;
	bool ece;		/* TCP flags of the SYN */
	bool cwr;
};

int cxe_cpl_parse_pass_accept_req(const void *buf, size_t len,
				  enum cxe_chip chip,
				  struct cxe_cpl_accept_req *r);

struct cxe_cpl_established {
	u32 tid;
	u32 stid;
	u8 tos;
	u16 mac_idx;
	u16 tcp_opt;		/* raw; decoded below */
	u8 mss_idx;
	u8 snd_wscale;
	bool wscale_ok;
	bool sack;
	bool tstamp;
	/* the sequence numbers after the SYNs: each way's first byte of data */
	u32 snd_isn;
	u32 rcv_isn;
};

int cxe_cpl_parse_pass_establish(const void *buf, size_t len,
				 struct cxe_cpl_established *e);

/* what the chip says it did with a received PDU (ddpvld) */
struct cxe_cpl_iscsi_status {
	u32 raw;
	bool ddp;		/* data placed by DDP (see cpl.c) */
	bool pad_err;
	bool hcrc_err;
	bool dcrc_err;
	bool other;		/* a bit set that none of the above names */
};

struct cxe_cpl_iscsi_pdu {
	u32 tid;
	u32 seq;		/* TCP sequence number of the PDU */
	u16 len;		/* bytes that follow this CPL */
	u16 pdu_len;		/* CPL_ISCSI_HDR/RX_ISCSI_CMP: PDU length */
	bool ddp;		/* CPL_ISCSI_HDR/RX_ISCSI_CMP: DDP flag */
	u16 urg;
	u8 status;
	u32 ulp_crc;		/* RX_ISCSI_DDP/CMP: data digest received */
	u32 ddp_report;		/* RX_ISCSI_DDP only */
	struct cxe_cpl_iscsi_status st;	/* RX_ISCSI_DDP/CMP */
};

int cxe_cpl_parse_iscsi_hdr(const void *buf, size_t len,
			    struct cxe_cpl_iscsi_pdu *p);
int cxe_cpl_parse_iscsi_data(const void *buf, size_t len,
			     struct cxe_cpl_iscsi_pdu *p);
int cxe_cpl_parse_rx_iscsi_ddp(const void *buf, size_t len,
			       struct cxe_cpl_iscsi_pdu *p);
int cxe_cpl_parse_rx_iscsi_cmp(const void *buf, size_t len,
			       struct cxe_cpl_iscsi_pdu *p);
void cxe_cpl_iscsi_status(u32 ddpvld, struct cxe_cpl_iscsi_status *st);

struct cxe_cpl_fw4_ack {
	u32 tid;
	u8 credits;		/* 16-byte TX credits returned */
	u8 flags;		/* CXE_FW4_ACK_* */
	u32 snd_nxt;
	u32 snd_una;		/* valid with CXE_FW4_ACK_SEQVAL */
};

int cxe_cpl_parse_fw4_ack(const void *buf, size_t len,
			  struct cxe_cpl_fw4_ack *a);

/* the connection-state CPLs: which fields each one has is said in cpl.c */
struct cxe_cpl_conn {
	u32 tid;
	u8 status;
	bool neg_adv;		/* ABORT_REQ_RSS: advice, not an abort */
	u32 snd_nxt;		/* CLOSE_CON_RPL */
	u32 rcv_nxt;		/* PEER_CLOSE, CLOSE_CON_RPL */
};

int cxe_cpl_parse_peer_close(const void *buf, size_t len,
			     struct cxe_cpl_conn *c);
int cxe_cpl_parse_close_con_rpl(const void *buf, size_t len,
				struct cxe_cpl_conn *c);
int cxe_cpl_parse_abort_req_rss(const void *buf, size_t len,
				struct cxe_cpl_conn *c);
int cxe_cpl_parse_abort_rpl_rss(const void *buf, size_t len,
				struct cxe_cpl_conn *c);

struct cxe_cpl_tcb_rpl {
	u32 tid;
	u8 cookie;
	u8 status;
	u64 oldval;
};

int cxe_cpl_parse_set_tcb_rpl(const void *buf, size_t len,
			      struct cxe_cpl_tcb_rpl *r);

/* the chip's answers to cxgb4_create_server() and cxgb4_remove_server() */
struct cxe_cpl_listen_rpl {
	u32 stid;		/* the server's TID */
	u8 status;		/* 0: done; CPL_ERR_* otherwise */
};

int cxe_cpl_parse_pass_open_rpl(const void *buf, size_t len,
				struct cxe_cpl_listen_rpl *r);
int cxe_cpl_parse_close_listsrv_rpl(const void *buf, size_t len,
				    struct cxe_cpl_listen_rpl *r);

#endif /* CXE_CPL_H */
