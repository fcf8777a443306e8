// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: building and parsing the chip's CPL messages and firmware
 * work requests. Pure code, see cpl.h.
 *
 * Offsets below are byte offsets from the start of a message. A message
 * the host sends to the TP starts with a 16-byte work request header:
 *   0  op(8) | flags | immediate length(8)	  the "hi" word
 *   4  flow id (from bit 8) | length in 16-byte units(8)
 *   8  64 bits the firmware does not read for these requests (zero)
 * followed by the CPL, whose first word is opcode(8) | TID(24).
 */
#include "cpl.h"

#ifndef BIT_ULL
#define BIT_ULL(nr)		(1ULL << (nr))
#endif

/* ---- byte order ---- */

static inline void put8(u8 *p, unsigned int off, u8 v)
{
	p[off] = v;
}

/* each byte masked: sparse warns of a constant truncated to a u8 otherwise */
static inline void put16(u8 *p, unsigned int off, u16 v)
{
	p[off] = (v >> 8) & 0xff;
	p[off + 1] = v & 0xff;
}

static inline void put32(u8 *p, unsigned int off, u32 v)
{
	p[off] = (v >> 24) & 0xff;
	p[off + 1] = (v >> 16) & 0xff;
	p[off + 2] = (v >> 8) & 0xff;
	p[off + 3] = v & 0xff;
}

static inline void put64(u8 *p, unsigned int off, u64 v)
{
	put32(p, off, v >> 32);
	put32(p, off + 4, (u32)v);
}

static inline u16 get16(const u8 *p, unsigned int off)
{
	return (u16)(p[off] << 8 | p[off + 1]);
}

static inline u32 get32(const u8 *p, unsigned int off)
{
	return (u32)p[off] << 24 | (u32)p[off + 1] << 16 |
	       (u32)p[off + 2] << 8 | p[off + 3];
}

static inline u64 get64(const u8 *p, unsigned int off)
{
	return (u64)get32(p, off) << 32 | get32(p, off + 4);
}

/* ---- work request header ---- */

/* hi word */
#define WR_OP_SHIFT		24
#define WR_COMPL		BIT(21)
/* mid word */
#define WR_FLOWID_SHIFT		8
/*
 * The headers give the flow id a start bit (8) but no width; the queue
 * status bits start at bit 30, so a flow id is at most 22 bits. That is
 * CXE_CPL_TID_MAX (a CPL's own TID field is 24 bits): more than any T5/T6
 * TID table holds, as far as we know.
 */

/*
 * A CPL sent as a TP work request (what cxgb4's INIT_TP_WR does): the
 * immediate data is the CPL after the header, the length counts the
 * message without the padding to 16 bytes.
 */
static void tp_wr(u8 *p, unsigned int cpl_len, u8 opcode, u32 tid)
{
	put32(p, 0, (u32)CXE_FW_TP_WR << WR_OP_SHIFT | (cpl_len - 16));
	put32(p, 4, tid << WR_FLOWID_SHIFT | ((cpl_len + 15) / 16));
	put64(p, 8, 0);
	put32(p, 16, (u32)opcode << 24 | tid);
}

static int start(void *buf, size_t size, unsigned int len, u32 tid)
{
	if (!buf || tid > CXE_CPL_TID_MAX)
		return -EINVAL;
	if (size < len)
		return -ENOSPC;
	memset(buf, 0, len);
	return 0;
}

/* ---- CPL_PASS_ACCEPT_RPL ---- */

/* opt0 (64 bits) */
#define OPT0_TX_CHAN_SHIFT	2	/* 2 bits */
#define OPT0_ULP_MODE_SHIFT	8	/* 4 bits */
#define OPT0_RCV_BUFSIZ_SHIFT	12	/* 10 bits, KiB */
#define OPT0_RCV_BUFSIZ_MAX	0x3ff
#define OPT0_DSCP_SHIFT		22	/* 6 bits */
#define OPT0_SMAC_SEL_SHIFT	28	/* 8 bits */
#define OPT0_L2T_IDX_SHIFT	36	/* 12 bits */
#define OPT0_L2T_IDX_MAX	0xfff
#define OPT0_TCAM_BYPASS	BIT_ULL(48)
#define OPT0_WND_SCALE_SHIFT	50	/* 4 bits */
#define OPT0_MSS_IDX_SHIFT	60	/* 4 bits */
#define ULP_MODE_ISCSI		2
/* opt2 (32 bits) */
#define OPT2_RSS_QUEUE_MAX	0x3ff	/* bits 0..9 */
#define OPT2_RSS_QUEUE_VALID	BIT(10)
#define OPT2_CONG_SHIFT		14	/* 2 bits */
#define CONG_ALG_NEWRENO	2
#define OPT2_T5_ISS		BIT(18)
#define OPT2_RX_FC_DISABLE	BIT(20)
#define OPT2_RX_CHANNEL		BIT(26)	/* 0: receive on channel 0 */
#define OPT2_CCTRL_ECN		BIT(27)
#define OPT2_WND_SCALE_EN	BIT(28)
#define OPT2_TSTAMPS_EN		BIT(29)
#define OPT2_SACK_EN		BIT(30)
#define OPT2_T5_OPT2_VALID	BIT(31)

/*
 * Layout (T5 and later): WR header, opcode/TID, opt2 (32), opt0 (64), ISS
 * (32), 4 reserved bytes: 40 bytes, sent as 48 (three 16-byte units, the
 * last 8 bytes zero) on both chips, as mainline cxgbit does. Debian's
 * cxgb4 headers define no separate T6 reply, and other drivers send the
 * T5 layout to T6 too; the chips differ in opt2 only: a T6 gets
 * RX_FC_DISABLE (mainline sets it on every chip but T5; what receive flow
 * control it turns off is not documented in the headers). The connection
 * is an iSCSI one (ULP mode iSCSI) with NewReno congestion control, as
 * mainline's.
 */
int cxe_cpl_pass_accept_rpl(void *buf, size_t size, enum cxe_chip chip,
			    const struct cxe_cpl_accept *a)
{
	u8 *p = buf;
	u32 win, opt2;
	u64 opt0;
	int ret;

	if (!a || (chip != CXE_CHIP_T5 && chip != CXE_CHIP_T6))
		return -EINVAL;
	if (a->mss_idx > 15 || a->tx_chan > 3 || a->wscale > 14 ||
	    a->l2t_idx > OPT0_L2T_IDX_MAX || a->rss_qid > OPT2_RSS_QUEUE_MAX)
		return -EINVAL;
	ret = start(buf, size, CXE_CPL_PASS_ACCEPT_RPL_LEN, a->tid);
	if (ret)
		return ret;

	win = a->rcv_win >> 10;
	if (win > OPT0_RCV_BUFSIZ_MAX)
		win = OPT0_RCV_BUFSIZ_MAX;
	opt0 = OPT0_TCAM_BYPASS |
	       (u64)a->wscale << OPT0_WND_SCALE_SHIFT |
	       (u64)a->mss_idx << OPT0_MSS_IDX_SHIFT |
	       (u64)a->l2t_idx << OPT0_L2T_IDX_SHIFT |
	       (u64)a->tx_chan << OPT0_TX_CHAN_SHIFT |
	       (u64)a->smac_idx << OPT0_SMAC_SEL_SHIFT |
	       (u64)(a->tos >> 2) << OPT0_DSCP_SHIFT |
	       (u64)ULP_MODE_ISCSI << OPT0_ULP_MODE_SHIFT |
	       (u64)win << OPT0_RCV_BUFSIZ_SHIFT;

	opt2 = OPT2_RSS_QUEUE_VALID | a->rss_qid |
	       CONG_ALG_NEWRENO << OPT2_CONG_SHIFT |
	       OPT2_T5_ISS | OPT2_T5_OPT2_VALID;
	if (chip != CXE_CHIP_T5)
		opt2 |= OPT2_RX_FC_DISABLE;
	if (a->tstamps)
		opt2 |= OPT2_TSTAMPS_EN;
	if (a->sack)
		opt2 |= OPT2_SACK_EN;
	if (a->wscale)
		opt2 |= OPT2_WND_SCALE_EN;
	if (a->ecn)
		opt2 |= OPT2_CCTRL_ECN;

	tp_wr(p, 40, CXE_CPL_PASS_ACCEPT_RPL, a->tid);
	put32(p, 20, opt2);
	put64(p, 24, opt0);
	put32(p, 32, a->iss);
	return CXE_CPL_PASS_ACCEPT_RPL_LEN;
}

/* ---- CPL_SET_TCB_FIELD ---- */

#define TCB_REPLY_QUEUE_MAX	0x3fff	/* reply_ctrl bits 0..13 */
#define TCB_NO_REPLY		BIT(15)
#define TCB_COOKIE_SHIFT	5	/* word_cookie: word 0..4, cookie 5..7 */
#define TCB_WORDS		32

/*
 * The iSCSI fields of TCB word 0: the ULP submode (digest offload, bits
 * 4..5) and the DDP page size index (bits 8..9). Debian's t4_tcb.h does
 * not name them (they lie in what other Chelsio code calls ULP_RAW, bits
 * 4..11); the positions are those mainline cxgbit writes.
 */
#define TCB_ULP_WORD		0
#define TCB_SUBMODE_SHIFT	4
#define TCB_PGIDX_SHIFT		8

/* layout: WR header, opcode/TID, reply_ctrl, word_cookie, mask, val */
int cxe_cpl_set_tcb_field(void *buf, size_t size,
			  const struct cxe_cpl_tcb_field *f)
{
	u8 *p = buf;
	int ret;

	if (!f || f->word >= TCB_WORDS || f->cookie > 7 ||
	    f->reply_qid > TCB_REPLY_QUEUE_MAX)
		return -EINVAL;
	ret = start(buf, size, CXE_CPL_SET_TCB_FIELD_LEN, f->tid);
	if (ret)
		return ret;
	tp_wr(p, 40, CXE_CPL_SET_TCB_FIELD, f->tid);
	put16(p, 20, (f->no_reply ? TCB_NO_REPLY : 0) | f->reply_qid);
	put16(p, 22, f->cookie << TCB_COOKIE_SHIFT | f->word);
	put64(p, 24, f->mask);
	put64(p, 32, f->val);
	return CXE_CPL_SET_TCB_FIELD_LEN;
}

int cxe_cpl_set_tcb_submode(void *buf, size_t size, u32 tid, u16 reply_qid,
			    bool hcrc, bool dcrc)
{
	struct cxe_cpl_tcb_field f = {
		.tid = tid,
		.reply_qid = reply_qid,
		.word = TCB_ULP_WORD,
		.mask = 3ULL << TCB_SUBMODE_SHIFT,
		.val = (u64)((hcrc ? CXE_ULP_CRC_HEADER : 0) |
			     (dcrc ? CXE_ULP_CRC_DATA : 0)) << TCB_SUBMODE_SHIFT,
	};

	return cxe_cpl_set_tcb_field(buf, size, &f);
}

int cxe_cpl_set_tcb_pgidx(void *buf, size_t size, u32 tid, u16 reply_qid,
			  u8 pgidx)
{
	struct cxe_cpl_tcb_field f = {
		.tid = tid,
		.reply_qid = reply_qid,
		.word = TCB_ULP_WORD,
		.mask = 3ULL << TCB_PGIDX_SHIFT,
		.val = (u64)pgidx << TCB_PGIDX_SHIFT,
	};

	if (pgidx > 3)
		return -EINVAL;
	return cxe_cpl_set_tcb_field(buf, size, &f);
}

/*
 * A CPL the backend sends in a TP work request, as the chip takes it: the
 * header is FW_TP_WR with the CPL's length as its immediate data and the
 * CPL's TID as its flow id (tp_wr() above)
 */
static int take_tp_wr(const void *buf, size_t len, unsigned int cpl_len,
		      u8 op, u32 *tid)
{
	const u8 *p = buf;

	if (!buf || len < cpl_len || p[0] != CXE_FW_TP_WR || p[16] != op ||
	    p[3] != cpl_len - 16)
		return -EBADMSG;
	*tid = get32(p, 16) & 0xffffff;
	if ((get32(p, 4) >> WR_FLOWID_SHIFT) != *tid)
		return -EBADMSG;
	return 0;
}

int cxe_cpl_parse_set_tcb_field(const void *buf, size_t len,
				struct cxe_cpl_tcb_field *f)
{
	const u8 *p = buf;
	u16 ctrl, wc;

	if (!f)
		return -EBADMSG;
	memset(f, 0, sizeof(*f));
	if (take_tp_wr(buf, len, 40, CXE_CPL_SET_TCB_FIELD, &f->tid))
		return -EBADMSG;
	ctrl = get16(p, 20);
	wc = get16(p, 22);
	f->no_reply = ctrl & TCB_NO_REPLY;
	f->reply_qid = ctrl & TCB_REPLY_QUEUE_MAX;
	f->cookie = wc >> TCB_COOKIE_SHIFT & 7;
	f->word = wc & (TCB_WORDS - 1);
	f->mask = get64(p, 24);
	f->val = get64(p, 32);
	return 40;
}

bool cxe_cpl_tcb_submode(const struct cxe_cpl_tcb_field *f, u8 *mask, u8 *val)
{
	const u64 bits = CXE_ULP_CRC_HEADER | CXE_ULP_CRC_DATA;

	if (!f || f->word != TCB_ULP_WORD ||
	    !(f->mask & bits << TCB_SUBMODE_SHIFT))
		return false;
	*mask = f->mask >> TCB_SUBMODE_SHIFT & bits;
	*val = f->val >> TCB_SUBMODE_SHIFT & *mask;
	return true;
}

/* ---- FW_FLOWC_WR ---- */

enum {
	FLOWC_PFNVFN = 0,	/* PF in bits 15..8, VF in 7..0 */
	FLOWC_CH = 1,
	FLOWC_PORT = 2,
	FLOWC_IQID = 3,
	FLOWC_SNDNXT = 4,
	FLOWC_RCVNXT = 5,
	FLOWC_SNDBUF = 6,
	FLOWC_MSS = 7,
	FLOWC_TXDATAPLEN_MAX = 8,
	FLOWC_DCBPRIO = 12,
	FLOWC_RCV_SCALE = 14,
	FLOWC_ULD_MODE = 15,
};

static unsigned int flowc_param(u8 *p, unsigned int n, u8 mnem, u32 val)
{
	put8(p, 8 + 8 * n, mnem);
	put32(p, 8 + 8 * n + 4, val);
	return n + 1;
}

/*
 * Layout: op(8) | nparams(8, bits 0..7) ; flow id | length in 16-byte
 * units ; then nparams 8-byte (mnemonic, 3 reserved, 32-bit value) pairs,
 * zero-padded to 16 bytes. The nine parameters mainline sends come first,
 * in its order. The ULP mode parameter is optional: mainline cxgbit does
 * not send it (the TCB's ULP mode comes from opt0 of the accept reply);
 * whether some firmware wants it for iSCSI we do not know. Its value is
 * the ULP mode number (iSCSI = 2).
 */
int cxe_fw_flowc_wr(void *buf, size_t size, const struct cxe_fw_flowc *f)
{
	unsigned int n = 0, len;
	u8 *p = buf;
	int ret;

	if (!f || f->tid > CXE_CPL_TID_MAX)
		return -EINVAL;
	len = 8 + 8 * (9 + !!f->rcv_scale + f->dcb + f->ulp_mode);
	len = (len + 15) & ~15U;
	ret = start(buf, size, len, f->tid);
	if (ret)
		return ret;

	n = flowc_param(p, n, FLOWC_PFNVFN, (u32)f->pf << 8 | f->vf);
	n = flowc_param(p, n, FLOWC_CH, f->channel);
	n = flowc_param(p, n, FLOWC_PORT, f->port);
	n = flowc_param(p, n, FLOWC_IQID, f->iqid);
	n = flowc_param(p, n, FLOWC_SNDNXT, f->snd_nxt);
	n = flowc_param(p, n, FLOWC_RCVNXT, f->rcv_nxt);
	n = flowc_param(p, n, FLOWC_SNDBUF, f->sndbuf);
	n = flowc_param(p, n, FLOWC_MSS, f->mss);
	n = flowc_param(p, n, FLOWC_TXDATAPLEN_MAX, f->txdataplen_max);
	if (f->rcv_scale)
		n = flowc_param(p, n, FLOWC_RCV_SCALE, f->rcv_scale);
	if (f->dcb)
		n = flowc_param(p, n, FLOWC_DCBPRIO, f->dcb_prio);
	if (f->ulp_mode)
		n = flowc_param(p, n, FLOWC_ULD_MODE, ULP_MODE_ISCSI);

	put32(p, 0, (u32)CXE_FW_FLOWC_WR << WR_OP_SHIFT | n);
	put32(p, 4, f->tid << WR_FLOWID_SHIFT | len / 16);
	return len;
}

/* ---- FW_OFLD_TX_DATA_WR ---- */

#define TXD_SHOVE		BIT(29)
#define TXD_T6_FORCE		BIT(20)
#define TXD_T5_FORCE		BIT(13)
#define TXD_ULPMODE_SHIFT	10	/* 3 bits: the T5 force bit is 13 */
#define TXD_ULPSUBMODE_SHIFT	6	/* 4 bits */
#define TXD_SUBMODE_ISO		0x8

/*
 * Layout: op | compl | immediate length ; flow id | length in 16-byte
 * units ; payload length ; tunnel_to_proxy flags. ULP mode iSCSI with the
 * digest submode (bit 0 header, bit 1 data) and, when a CPL_TX_DATA_ISO
 * follows, submode bit 3 and the iSCSI opcode of the request instead of
 * the plain one. Shove is always set, as mainline does. "Force": a T6
 * gets its force bit (20) always; a T5 gets its own (bit 13) only when no
 * digest is offloaded. That is what mainline cxgbit does; what forcing
 * means to the firmware (we take it to be "send now, do not wait for more
 * payload") is not documented in the headers.
 */
int cxe_fw_ofld_tx_data_wr(void *buf, size_t size, enum cxe_chip chip,
			   const struct cxe_fw_tx_data *t)
{
	u32 submode, flags, op;
	u8 *p = buf;
	int ret;

	if (!t || (chip != CXE_CHIP_T5 && chip != CXE_CHIP_T6))
		return -EINVAL;
	ret = start(buf, size, CXE_FW_OFLD_TX_DATA_WR_LEN, t->tid);
	if (ret)
		return ret;

	submode = (t->hcrc ? CXE_ULP_CRC_HEADER : 0) |
		  (t->dcrc ? CXE_ULP_CRC_DATA : 0);
	if (chip == CXE_CHIP_T5)
		flags = submode ? 0 : TXD_T5_FORCE;
	else
		flags = TXD_T6_FORCE;
	op = CXE_FW_OFLD_TX_DATA_WR;
	if (t->iso) {
		op = CXE_FW_ISCSI_TX_DATA_WR;
		submode |= TXD_SUBMODE_ISO;
	}
	flags |= TXD_SHOVE | ULP_MODE_ISCSI << TXD_ULPMODE_SHIFT |
		 submode << TXD_ULPSUBMODE_SHIFT;

	put32(p, 0, op << WR_OP_SHIFT | (t->compl ? WR_COMPL : 0) |
	      t->immdlen);
	put32(p, 4, t->tid << WR_FLOWID_SHIFT | t->len16);
	put32(p, 8, t->plen);
	put32(p, 12, flags);
	return CXE_FW_OFLD_TX_DATA_WR_LEN;
}

/* ---- CPL_TX_DATA_ISO ---- */

#define ISO_FIRST		BIT(23)
#define ISO_LAST		BIT(22)
#define ISO_CPLHDRLEN		BIT(21)
#define ISO_HDRCRC		BIT(20)
#define ISO_PLDCRC		BIT(19)
#define ISO_IMMEDIATE		BIT(18)
#define ISO_SCSI_SHIFT		16	/* 2 bits */
#define ISO_SEGLEN_OFFSET_MAX	0xffffff

/*
 * Layout (32 bytes, follows the FW_ISCSI_TX_DATA_WR header): op(8) |
 * flags ; reserved(8), AHS length(8), MPDU(16) ; burst size ; length ;
 * segment length offset(24) ; DataSN offset ; buffer offset ; reserved.
 *
 * What we know and what we do not:
 * - MPDU and burst size are in 4-byte units: mainline cxgbit divides both
 *   (rounding up) by 4; the callers here give bytes.
 * - pdu_type (the SCSI field): the initiator driver uses 0 for SCSI
 *   Command and 1 for Data-Out, the target (cxgbit) 2 for its Data-In; we
 *   take 2 to mean Data-In, which the headers do not say.
 * - immediate: the initiator sets it for immediate data after a command;
 *   a target leaves it 0.
 * - CPLHDRLEN is never set by either driver; its meaning is unknown to us,
 *   so it is always written 0.
 * - AHS length: bytes or words is not documented; both drivers send 0.
 * - segment length offset, DataSN and buffer offsets: the initiator sets
 *   them to resume a sequence mid-burst; cxgbit always sends 0 and lets
 *   the BHS template carry the starting DataSN and Buffer Offset.
 */
int cxe_cpl_tx_data_iso(void *buf, size_t size, const struct cxe_cpl_iso *i)
{
	u32 op, mpdu, burst;
	u8 *p = buf;
	int ret;

	if (!i || i->pdu_type > 3 || i->seglen_offset > ISO_SEGLEN_OFFSET_MAX)
		return -EINVAL;
	mpdu = i->mpdu / 4 + !!(i->mpdu % 4);
	burst = i->burst_size / 4 + !!(i->burst_size % 4);
	if (!mpdu || mpdu > 0xffff)
		return -EINVAL;
	ret = start(buf, size, CXE_CPL_TX_DATA_ISO_LEN, 0);
	if (ret)
		return ret;

	op = (u32)CXE_CPL_TX_DATA_ISO << 24 |
	     (i->first ? ISO_FIRST : 0) | (i->last ? ISO_LAST : 0) |
	     (i->hcrc ? ISO_HDRCRC : 0) | (i->dcrc ? ISO_PLDCRC : 0) |
	     (i->immediate ? ISO_IMMEDIATE : 0) |
	     (u32)i->pdu_type << ISO_SCSI_SHIFT;
	put32(p, 0, op);
	put8(p, 5, i->ahs_len);
	put16(p, 6, mpdu);
	put32(p, 8, burst);
	put32(p, 12, i->len);
	put32(p, 16, i->seglen_offset);
	put32(p, 20, i->datasn_offset);
	put32(p, 24, i->buffer_offset);
	return CXE_CPL_TX_DATA_ISO_LEN;
}

/* ---- CPL_RX_DATA_ACK, CPL_CLOSE_CON_REQ, CPL_ABORT_REQ/RPL ---- */

#define RXACK_CREDITS_MAX	0x0fffffff	/* bits 0..27 */
#define RXACK_FORCE_ACK		BIT(28)
#define RXACK_DACK_MODE_SHIFT	29		/* 2 bits */
#define RXACK_DACK_CHANGE	BIT(31)

/* layout: WR header, opcode/TID, credits and delayed-ACK control */
int cxe_cpl_rx_data_ack(void *buf, size_t size, const struct cxe_cpl_rx_ack *a)
{
	u8 *p = buf;
	u32 v;
	int ret;

	if (!a || a->credits > RXACK_CREDITS_MAX || a->dack_mode > 3 ||
	    (a->dack_mode && !a->set_dack))
		return -EINVAL;
	ret = start(buf, size, CXE_CPL_RX_DATA_ACK_LEN, a->tid);
	if (ret)
		return ret;
	v = a->credits | (a->force_ack ? RXACK_FORCE_ACK : 0);
	if (a->set_dack)
		v |= RXACK_DACK_CHANGE | (u32)a->dack_mode << RXACK_DACK_MODE_SHIFT;
	tp_wr(p, 24, CXE_CPL_RX_DATA_ACK, a->tid);
	put32(p, 20, v);
	return CXE_CPL_RX_DATA_ACK_LEN;
}

int cxe_cpl_parse_rx_data_ack(const void *buf, size_t len,
			      struct cxe_cpl_rx_ack *a)
{
	u32 v;

	if (!a)
		return -EBADMSG;
	memset(a, 0, sizeof(*a));
	if (take_tp_wr(buf, len, 24, CXE_CPL_RX_DATA_ACK, &a->tid))
		return -EBADMSG;
	v = get32(buf, 20);
	a->credits = v & RXACK_CREDITS_MAX;
	a->force_ack = v & RXACK_FORCE_ACK;
	a->set_dack = v & RXACK_DACK_CHANGE;
	a->dack_mode = v >> RXACK_DACK_MODE_SHIFT & 3;
	return 24;
}

/* layout: WR header, opcode/TID, 4 reserved bytes */
int cxe_cpl_close_con_req(void *buf, size_t size, u32 tid, bool compl)
{
	int ret = start(buf, size, CXE_CPL_CLOSE_CON_REQ_LEN, tid);

	if (ret)
		return ret;
	tp_wr(buf, 24, CXE_CPL_CLOSE_CON_REQ, tid);
	if (compl)
		cxe_wr_ask_compl(buf);
	return CXE_CPL_CLOSE_CON_REQ_LEN;
}

void cxe_wr_ask_compl(void *wr)
{
	put32(wr, 0, get32(wr, 0) | WR_COMPL);
}

#define ABORT_SEND_RST		0
#define ABORT_NO_RST		1

/* layout: WR header, opcode/TID, 5 reserved bytes, cmd, 6 reserved */
static int abort_msg(void *buf, size_t size, u8 opcode, u32 tid, bool rst)
{
	int ret = start(buf, size, CXE_CPL_ABORT_REQ_LEN, tid);

	if (ret)
		return ret;
	tp_wr(buf, 32, opcode, tid);
	put8(buf, 25, rst ? ABORT_SEND_RST : ABORT_NO_RST);
	return CXE_CPL_ABORT_REQ_LEN;
}

int cxe_cpl_abort_req(void *buf, size_t size, u32 tid, bool rst)
{
	return abort_msg(buf, size, CXE_CPL_ABORT_REQ, tid, rst);
}

int cxe_cpl_abort_rpl(void *buf, size_t size, u32 tid, bool rst)
{
	return abort_msg(buf, size, CXE_CPL_ABORT_RPL, tid, rst);
}

/* ---- page pods: ULP_TX_MEM_WRITE ---- */

/*
 * Layout: WR header (op FW_ULPTX_WR, flow id the TID), then the ULP_TX
 * command: cmd (ULP_TX_MEM_WRITE, bit 23 "immediate" on T5 and later),
 * len16 (the request after the WR header, in 16-byte units), dlen (the
 * data in 32-byte units), lock_addr (the pod memory address in 32-byte
 * units); then a ULP_TX_SC_IMM sub-command with the data's byte length,
 * then the pods. What mainline cxgbit writes; T5 and T6 alike.
 */
#define ULPTX_CMD_SHIFT		24
#define ULP_TX_MEM_WRITE	3
#define ULP_TX_SC_IMM		0x81
#define ULP_MEMIO_IMM		BIT(23)
/*
 * The headers give lock_addr's address no width, only bit 31 (lock) above
 * it; a u32 byte address in 32-byte units is at most 27 bits, below it.
 */
#define ULP_MEM_WRITE_HDR_LEN	40		/* WR, command, immediate sub-command */
/* a pod's header: the valid bit above the TID in its first word */
#define PPOD_VALID		BIT(24)
#define PPOD_TAG_MASK		0x3fffffff

/* A write of npods pods at pod_addr on tid's flow, zeroed: its length */
static int mem_write_start(void *buf, size_t size, u32 tid, u32 pod_addr,
			   u32 npods)
{
	u32 dlen = npods << CXE_PPOD_SHIFT;
	u32 len = (ULP_MEM_WRITE_HDR_LEN + dlen + 15) & ~15U;
	u8 *p = buf;
	int ret;

	if (!npods || npods > CXE_PPOD_IMM_MAX || pod_addr & 31)
		return -EINVAL;
	ret = start(buf, size, len, tid);
	if (ret)
		return ret;
	put32(p, 0, (u32)CXE_FW_ULPTX_WR << WR_OP_SHIFT);
	put32(p, 4, tid << WR_FLOWID_SHIFT | len / 16);
	put32(p, 16, (u32)ULP_TX_MEM_WRITE << ULPTX_CMD_SHIFT | ULP_MEMIO_IMM);
	put32(p, 20, (len - 16) / 16);
	put32(p, 24, dlen >> 5);
	put32(p, 28, pod_addr >> 5);
	put32(p, 32, (u32)ULP_TX_SC_IMM << ULPTX_CMD_SHIFT);
	put32(p, 36, dlen);
	return len;
}

int cxe_ppod_tagfmt_init(struct cxe_ppod_tagfmt *f, u32 tagmask)
{
	u32 bits = 0;

	/* the mask's width (fls()), its top bit the no-pods one */
	while (bits < 32 && tagmask >> bits)
		bits++;
	if (bits < CXE_PPOD_TAG_COLOR_BITS + 2 || bits > 30)
		return -EINVAL;
	f->idx_bits = bits - 1 - CXE_PPOD_TAG_COLOR_BITS;
	f->noddp = 1U << (bits - 1);
	return 0;
}

int cxe_ulp_ppod_clear(void *buf, size_t size, u32 pod_addr, u32 tid,
		       u32 npods)
{
	return mem_write_start(buf, size, tid, pod_addr, npods);
}

int cxe_ulp_ppod_write(void *buf, size_t size, u32 pod_addr,
		       const struct cxe_ppod_hdr *hdr, const u64 *pages,
		       u32 npages, u32 first, u32 npods)
{
	const u64 page_mask = (1ULL << CXE_PPOD_PAGE_SHIFT) - 1;
	u8 *p = buf;
	u32 i, j;
	int len;

	if (!hdr || !pages || !npages || !npods || npods > CXE_PPOD_IMM_MAX ||
	    first > npages ||
	    first + npods > (npages + CXE_PPOD_PAGES - 1) / CXE_PPOD_PAGES ||
	    hdr->tag & ~PPOD_TAG_MASK ||
	    hdr->page_offset > page_mask || pod_addr & 31)
		return -EINVAL;
	for (i = 0; i < npages; i++)
		if (pages[i] & page_mask)
			return -EINVAL;
	len = mem_write_start(buf, size, hdr->tid, pod_addr, npods);
	if (len < 0)
		return len;
	for (i = 0; i < npods; i++) {
		u8 *pod = p + ULP_MEM_WRITE_HDR_LEN + i * CXE_PPOD_LEN;
		u32 page = (first + i) * CXE_PPOD_PAGES;

		put32(pod, 0, PPOD_VALID | hdr->tid);
		put32(pod, 4, hdr->tag);
		put32(pod, 8, hdr->max_offset);
		put32(pod, 12, hdr->page_offset);
		/* bytes 16..23 reserved; then four pages and the next one */
		for (j = 0; j <= CXE_PPOD_PAGES; j++)
			put64(pod, 24 + 8 * j,
			      page + j < npages ? pages[page + j] : 0);
	}
	return len;
}

/* ---- parsers ---- */

int cxe_cpl_opcode(const void *buf, size_t len)
{
	if (!buf || !len)
		return -EBADMSG;
	return *(const u8 *)buf;
}

/* the message is at least min bytes and starts with opcode op; its TID */
static int check(const void *buf, size_t len, size_t min, u8 op, u32 *tid)
{
	const u8 *p = buf;

	if (!buf || len < min || p[0] != op)
		return -EBADMSG;
	*tid = get32(p, 0) & 0xffffff;
	return 0;
}

/* hdr_len of CPL_PASS_ACCEPT_REQ: the SYN's header lengths, in bytes */
#define SYN_RX_CHAN_MASK	0xf	/* bits 0..3 on both chips */
#define T5_TCP_HDR_LEN(x)	((x) >> 10 & 0x3f)
#define T5_IP_HDR_LEN(x)	((x) >> 16 & 0x3ff)
#define T5_ETH_HDR_LEN(x)	((x) >> 26 & 0x1f)
#define T6_TCP_HDR_LEN(x)	((x) >> 8 & 0x3f)
#define T6_IP_HDR_LEN(x)	((x) >> 14 & 0x3ff)
#define T6_ETH_HDR_LEN(x)	((x) >> 24 & 0xff)
#define ETH_MIN			14
#define TCP_MIN			20
#define TCP_FLAG_CWR		0x80
#define TCP_FLAG_ECE		0x40

/*
 * Layout (24 bytes): opcode/TID ; reserved(16), len(16) ; hdr_len ;
 * vlan(16), l2info(16) ; tos(8) | stid(24) ; peer MSS(16), window
 * scale(8), option flags(8: 0x80 timestamps, 0x40 SACK). The SYN's
 * Ethernet, IP and TCP headers follow; hdr_len gives their lengths, in
 * fields that moved on T6. What "len" counts is not documented (the SYN's
 * length, we suppose); it is reported as is. RX channel: bits 0..3 on T5;
 * we read the same bits on T6, where the headers do not say whether it
 * moved. Only the fixed 20 bytes of the TCP header are read (ports and
 * flags), and they must lie within len; the 4-tuple comes from the IP
 * header the version nibble names. The Ethernet type is not checked.
 */
int cxe_cpl_parse_pass_accept_req(const void *buf, size_t len,
				  enum cxe_chip chip,
				  struct cxe_cpl_accept_req *r)
{
	const u8 *p = buf, *ip, *tcp;
	u32 hl, tos_stid;
	u16 l2;
	u8 o;

	if (!r || (chip != CXE_CHIP_T5 && chip != CXE_CHIP_T6))
		return -EBADMSG;
	memset(r, 0, sizeof(*r));
	if (check(buf, len, CXE_CPL_PASS_ACCEPT_REQ_LEN,
		  CXE_CPL_PASS_ACCEPT_REQ, &r->tid))
		return -EBADMSG;

	r->syn_len = get16(p, 6);
	hl = get32(p, 8);
	r->vlan = get16(p, 12);
	l2 = get16(p, 14);
	tos_stid = get32(p, 16);
	r->peer_mss = get16(p, 20);
	r->peer_wscale = p[22];
	o = p[23];

	r->rx_chan = hl & SYN_RX_CHAN_MASK;
	if (chip == CXE_CHIP_T5) {
		r->tcp_len = T5_TCP_HDR_LEN(hl);
		r->ip_len = T5_IP_HDR_LEN(hl);
		r->eth_len = T5_ETH_HDR_LEN(hl);
	} else {
		r->tcp_len = T6_TCP_HDR_LEN(hl);
		r->ip_len = T6_IP_HDR_LEN(hl);
		r->eth_len = T6_ETH_HDR_LEN(hl);
	}
	r->mac_idx = l2 & 0x1ff;
	r->xact_match = l2 & BIT(9);
	r->intf = l2 >> 12 & 0xf;
	r->stid = tos_stid & 0xffffff;
	r->tos = tos_stid >> 24;
	r->tstamp = o & 0x80;
	r->sack = o & 0x40;

	if (r->eth_len < ETH_MIN || r->tcp_len < TCP_MIN ||
	    len - CXE_CPL_PASS_ACCEPT_REQ_LEN <
	    (size_t)r->eth_len + r->ip_len + TCP_MIN)
		return -EBADMSG;
	ip = p + CXE_CPL_PASS_ACCEPT_REQ_LEN + r->eth_len;
	tcp = ip + r->ip_len;
	r->ip_version = ip[0] >> 4;
	if (r->ip_version == 4) {
		if (r->ip_len < 20 || r->ip_len < (ip[0] & 0xf) * 4)
			return -EBADMSG;
		memcpy(r->peer_ip, ip + 12, 4);
		memcpy(r->local_ip, ip + 16, 4);
	} else if (r->ip_version == 6) {
		if (r->ip_len < 40)
			return -EBADMSG;
		memcpy(r->peer_ip, ip + 8, 16);
		memcpy(r->local_ip, ip + 24, 16);
	} else {
		return -EBADMSG;
	}
	r->peer_port = get16(tcp, 0);
	r->local_port = get16(tcp, 2);
	r->cwr = tcp[13] & TCP_FLAG_CWR;
	r->ece = tcp[13] & TCP_FLAG_ECE;
	return CXE_CPL_PASS_ACCEPT_REQ_LEN;
}

/*
 * Layout (24 bytes): opcode/TID ; reserved ; tos(8) | stid(24) ;
 * mac_idx(16), tcp_opt(16) ; snd_isn ; rcv_isn. tcp_opt: bit 5 window
 * scaling agreed, 6 SACK, 7 timestamps, 8..11 our send window scale,
 * 12..15 index of the MSS in the adapter's MTU table.
 */
int cxe_cpl_parse_pass_establish(const void *buf, size_t len,
				 struct cxe_cpl_established *e)
{
	const u8 *p = buf;
	u32 tos_stid;

	if (!e)
		return -EBADMSG;
	memset(e, 0, sizeof(*e));
	if (check(buf, len, CXE_CPL_PASS_ESTABLISH_LEN,
		  CXE_CPL_PASS_ESTABLISH, &e->tid))
		return -EBADMSG;
	tos_stid = get32(p, 8);
	e->stid = tos_stid & 0xffffff;
	e->tos = tos_stid >> 24;
	e->mac_idx = get16(p, 12);
	e->tcp_opt = get16(p, 14);
	e->wscale_ok = e->tcp_opt & BIT(5);
	e->sack = e->tcp_opt & BIT(6);
	e->tstamp = e->tcp_opt & BIT(7);
	e->snd_wscale = e->tcp_opt >> 8 & 0xf;
	e->mss_idx = e->tcp_opt >> 12 & 0xf;
	e->snd_isn = get32(p, 16);
	e->rcv_isn = get32(p, 20);
	return CXE_CPL_PASS_ESTABLISH_LEN;
}

/*
 * ddpvld of CPL_RX_ISCSI_DDP/CMP (bit numbers from mainline cxgbit and the
 * initiator driver, not from cxgb4's headers): 16 "ddp'able", 19 padding
 * error, 20 header digest error, 21 data digest error. Mainline takes
 * bit 16 to mean the payload was placed by DDP when no CPL_ISCSI_DATA
 * brought it; the flag here is the bit, the caller applies that rule.
 * Other bits are set by the chip for reasons we do not know; "other"
 * says one was, so that they show and are not silently ignored.
 */
#define DDPVLD_DDP		BIT(16)
#define DDPVLD_PAD		BIT(19)
#define DDPVLD_HCRC		BIT(20)
#define DDPVLD_DCRC		BIT(21)

void cxe_cpl_iscsi_status(u32 ddpvld, struct cxe_cpl_iscsi_status *st)
{
	st->raw = ddpvld;
	st->ddp = ddpvld & DDPVLD_DDP;
	st->pad_err = ddpvld & DDPVLD_PAD;
	st->hcrc_err = ddpvld & DDPVLD_HCRC;
	st->dcrc_err = ddpvld & DDPVLD_DCRC;
	st->other = ddpvld & ~(u32)(DDPVLD_DDP | DDPVLD_PAD | DDPVLD_HCRC |
				    DDPVLD_DCRC);
}

#define PDU_LEN_MASK		0x7fff
#define PDU_DDP			BIT(15)
#define BHS_LEN			48

/*
 * CPL_ISCSI_HDR (16 bytes): opcode/TID ; pdu_len_ddp(16), len(16) ; seq ;
 * urg(16), reserved(8), status(8). The PDU's header (len bytes, at least
 * a BHS) follows, in this buffer or in the fragments after it: only the
 * CPL is read here.
 */
int cxe_cpl_parse_iscsi_hdr(const void *buf, size_t len,
			    struct cxe_cpl_iscsi_pdu *p)
{
	const u8 *b = buf;
	u16 pl;

	if (!p)
		return -EBADMSG;
	memset(p, 0, sizeof(*p));
	if (check(buf, len, CXE_CPL_ISCSI_HDR_LEN, CXE_CPL_ISCSI_HDR, &p->tid))
		return -EBADMSG;
	pl = get16(b, 4);
	p->pdu_len = pl & PDU_LEN_MASK;
	p->ddp = pl & PDU_DDP;
	p->len = get16(b, 6);
	p->seq = get32(b, 8);
	p->urg = get16(b, 12);
	p->status = b[15];
	if (p->len < BHS_LEN)
		return -EBADMSG;
	return CXE_CPL_ISCSI_HDR_LEN;
}

/*
 * CPL_ISCSI_DATA (16 bytes): opcode/TID ; reserved(16), len(16) ; seq ;
 * urg(16), reserved(8), status(8). len bytes of payload follow.
 */
int cxe_cpl_parse_iscsi_data(const void *buf, size_t len,
			     struct cxe_cpl_iscsi_pdu *p)
{
	const u8 *b = buf;

	if (!p)
		return -EBADMSG;
	memset(p, 0, sizeof(*p));
	if (check(buf, len, CXE_CPL_ISCSI_DATA_LEN, CXE_CPL_ISCSI_DATA,
		  &p->tid))
		return -EBADMSG;
	p->len = get16(b, 6);
	p->seq = get32(b, 8);
	p->urg = get16(b, 12);
	p->status = b[15];
	return CXE_CPL_ISCSI_DATA_LEN;
}

/*
 * CPL_RX_ISCSI_DDP (24 bytes, alone, no payload): opcode/TID ; urg(16),
 * len(16, the PDU's length) ; seq ; ddp_report (also read as the next
 * sequence number; its meaning for iSCSI is not documented) ; ulp_crc
 * (the data digest received) ; ddpvld.
 */
int cxe_cpl_parse_rx_iscsi_ddp(const void *buf, size_t len,
			       struct cxe_cpl_iscsi_pdu *p)
{
	const u8 *b = buf;

	if (!p)
		return -EBADMSG;
	memset(p, 0, sizeof(*p));
	if (check(buf, len, CXE_CPL_RX_ISCSI_DDP_LEN, CXE_CPL_RX_ISCSI_DDP,
		  &p->tid))
		return -EBADMSG;
	p->urg = get16(b, 4);
	p->len = get16(b, 6);
	p->pdu_len = p->len;
	p->seq = get32(b, 8);
	p->ddp_report = get32(b, 12);
	p->ulp_crc = get32(b, 16);
	cxe_cpl_iscsi_status(get32(b, 20), &p->st);
	return CXE_CPL_RX_ISCSI_DDP_LEN;
}

/*
 * CPL_RX_ISCSI_CMP (24 bytes): CPL_ISCSI_HDR's 16 bytes, then ulp_crc and
 * ddpvld. The (last) PDU's header follows, len bytes. A T6 sends one for
 * a whole burst placed by DDP.
 */
int cxe_cpl_parse_rx_iscsi_cmp(const void *buf, size_t len,
			       struct cxe_cpl_iscsi_pdu *p)
{
	const u8 *b = buf;
	u16 pl;

	if (!p)
		return -EBADMSG;
	memset(p, 0, sizeof(*p));
	if (check(buf, len, CXE_CPL_RX_ISCSI_CMP_LEN, CXE_CPL_RX_ISCSI_CMP,
		  &p->tid))
		return -EBADMSG;
	pl = get16(b, 4);
	p->pdu_len = pl & PDU_LEN_MASK;
	p->ddp = pl & PDU_DDP;
	p->len = get16(b, 6);
	p->seq = get32(b, 8);
	p->urg = get16(b, 12);
	p->status = b[15];
	p->ulp_crc = get32(b, 16);
	cxe_cpl_iscsi_status(get32(b, 20), &p->st);
	if (p->len < BHS_LEN)
		return -EBADMSG;
	return CXE_CPL_RX_ISCSI_CMP_LEN;
}

/*
 * CPL_FW4_ACK (24 bytes): opcode/flow id ; credits(8), 2 reserved,
 * flags(8) ; snd_nxt ; snd_una ; 8 reserved.
 */
int cxe_cpl_parse_fw4_ack(const void *buf, size_t len,
			  struct cxe_cpl_fw4_ack *a)
{
	const u8 *p = buf;

	if (!a)
		return -EBADMSG;
	memset(a, 0, sizeof(*a));
	if (check(buf, len, CXE_CPL_FW4_ACK_LEN, CXE_CPL_FW4_ACK, &a->tid))
		return -EBADMSG;
	a->credits = p[4];
	a->flags = p[7];
	a->snd_nxt = get32(p, 8);
	a->snd_una = get32(p, 12);
	return CXE_CPL_FW4_ACK_LEN;
}

/* CPL_PEER_CLOSE (8 bytes): opcode/TID ; rcv_nxt */
int cxe_cpl_parse_peer_close(const void *buf, size_t len,
			     struct cxe_cpl_conn *c)
{
	if (!c)
		return -EBADMSG;
	memset(c, 0, sizeof(*c));
	if (check(buf, len, CXE_CPL_PEER_CLOSE_LEN, CXE_CPL_PEER_CLOSE,
		  &c->tid))
		return -EBADMSG;
	c->rcv_nxt = get32(buf, 4);
	return CXE_CPL_PEER_CLOSE_LEN;
}

/* CPL_CLOSE_CON_RPL (16 bytes): opcode/TID ; 3 reserved, status ; snd_nxt ; rcv_nxt */
int cxe_cpl_parse_close_con_rpl(const void *buf, size_t len,
				struct cxe_cpl_conn *c)
{
	if (!c)
		return -EBADMSG;
	memset(c, 0, sizeof(*c));
	if (check(buf, len, CXE_CPL_CLOSE_CON_RPL_LEN, CXE_CPL_CLOSE_CON_RPL,
		  &c->tid))
		return -EBADMSG;
	c->status = ((const u8 *)buf)[7];
	c->snd_nxt = get32(buf, 8);
	c->rcv_nxt = get32(buf, 12);
	return CXE_CPL_CLOSE_CON_RPL_LEN;
}

/*
 * CPL_ABORT_REQ_RSS (8 bytes): opcode/TID ; 3 bytes (the SRQ index on a
 * T6 connection that uses one; iSCSI does not), status. Statuses 35..37
 * are negative advice (retransmit, persist or keepalive trouble): the
 * connection is not aborted and must not be treated as such.
 */
int cxe_cpl_parse_abort_req_rss(const void *buf, size_t len,
				struct cxe_cpl_conn *c)
{
	if (!c)
		return -EBADMSG;
	memset(c, 0, sizeof(*c));
	if (check(buf, len, CXE_CPL_ABORT_REQ_RSS_LEN, CXE_CPL_ABORT_REQ_RSS,
		  &c->tid))
		return -EBADMSG;
	c->status = ((const u8 *)buf)[7];
	c->neg_adv = c->status == CXE_CPL_ERR_RTX_NEG_ADVICE ||
		     c->status == CXE_CPL_ERR_PERSIST_NEG_ADVICE ||
		     c->status == CXE_CPL_ERR_KEEPALV_NEG_ADVICE;
	return CXE_CPL_ABORT_REQ_RSS_LEN;
}

/* CPL_ABORT_RPL_RSS (8 bytes): opcode/TID ; 3 reserved, status */
int cxe_cpl_parse_abort_rpl_rss(const void *buf, size_t len,
				struct cxe_cpl_conn *c)
{
	if (!c)
		return -EBADMSG;
	memset(c, 0, sizeof(*c));
	if (check(buf, len, CXE_CPL_ABORT_RPL_RSS_LEN, CXE_CPL_ABORT_RPL_RSS,
		  &c->tid))
		return -EBADMSG;
	c->status = ((const u8 *)buf)[7];
	return CXE_CPL_ABORT_RPL_RSS_LEN;
}

/*
 * CPL_SET_TCB_RPL (16 bytes): opcode/TID ; reserved(16), cookie, status ;
 * oldval. The cookie byte holds the request's cookie in bits 5..7, where
 * the request's word_cookie has it (cxgb4's filter code reads it so).
 */
int cxe_cpl_parse_set_tcb_rpl(const void *buf, size_t len,
			      struct cxe_cpl_tcb_rpl *r)
{
	const u8 *p = buf;

	if (!r)
		return -EBADMSG;
	memset(r, 0, sizeof(*r));
	if (check(buf, len, CXE_CPL_SET_TCB_RPL_LEN, CXE_CPL_SET_TCB_RPL,
		  &r->tid))
		return -EBADMSG;
	r->cookie = p[6] >> TCB_COOKIE_SHIFT & 7;
	r->status = p[7];
	r->oldval = get64(p, 8);
	return CXE_CPL_SET_TCB_RPL_LEN;
}

/*
 * CPL_PASS_OPEN_RPL and CPL_CLOSE_LISTSRV_RPL (8 bytes each): opcode/STID ;
 * 3 reserved, status. cxgb4 builds the requests they answer itself
 * (cxgb4_create_server(), cxgb4_remove_server()).
 */
static int parse_listen_rpl(const void *buf, size_t len, u8 op, size_t size,
			    struct cxe_cpl_listen_rpl *r)
{
	if (!r)
		return -EBADMSG;
	memset(r, 0, sizeof(*r));
	if (check(buf, len, size, op, &r->stid))
		return -EBADMSG;
	r->status = ((const u8 *)buf)[7];
	return size;
}

int cxe_cpl_parse_pass_open_rpl(const void *buf, size_t len,
				struct cxe_cpl_listen_rpl *r)
{
	return parse_listen_rpl(buf, len, CXE_CPL_PASS_OPEN_RPL,
				CXE_CPL_PASS_OPEN_RPL_LEN, r);
}

int cxe_cpl_parse_close_listsrv_rpl(const void *buf, size_t len,
				    struct cxe_cpl_listen_rpl *r)
{
	return parse_listen_rpl(buf, len, CXE_CPL_CLOSE_LISTSRV_RPL,
				CXE_CPL_CLOSE_LISTSRV_RPL_LEN, r);
}
