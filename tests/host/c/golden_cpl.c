// SPDX-License-Identifier: GPL-2.0-only
/*
 * Golden test of kmod/cxgbit-ext/adapters/cxgb4/cpl.c against the cxgb4
 * headers of one kernel (Debian's linux-source, extracted by `make deps`):
 * every message our builders write must equal, byte for byte, the same
 * message set field by field with the headers' own structs and macros,
 * and our parsers must read back the fields of messages so built. The
 * Makefile compiles this file once per kernel whose headers are there.
 * The iSCSI status bits of CPL_RX_ISCSI_DDP/CMP are not in cxgb4's
 * headers: the Makefile takes them from that kernel's cxgbit_lro.h, and
 * the page pod's layout from its libcxgb_ppm.h (which needs the kernel's
 * own headers to be included whole).
 */
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include "cxgb4_shim.h"
#include "t4_msg.h"
#include "t4fw_api.h"
#include "t4_tcb.h"
#include "t4_hw.h"
#include "ddp_bits.h"
/* what libcxgb's tag helpers call of the kernel's */
#define pr_info(...) do { } while (0)
static inline int fls(unsigned int x)
{
	return x ? 32 - __builtin_clz(x) : 0;
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "ppod_bits.h"
#pragma GCC diagnostic pop
#include "cpl.h"
#include "ppod.h"
#include "ulp_rx.h"
#include "ulp_tx.h"
#include "ulp_conn.h"
#include "conn.h"
#include "check.h"

/* cxgb4's and libcxgb's own choices of MSS and window scale (Makefile) */
#include "cm_fns.h"

static u32 rnd32(void)
{
	return (u32)random() << 16 ^ (u32)random();
}

static u64 rnd64(void)
{
	return (u64)rnd32() << 32 | rnd32();
}

static void same(const char *what, const void *ours, int len,
		 const void *ref, size_t ref_len)
{
	checks++;
	if (len >= 0 && (size_t)len == ref_len && !memcmp(ours, ref, ref_len))
		return;
	failures++;
	fprintf(stderr, "%s: ours (%d bytes) differs from the headers' (%zu):\n",
		what, len, ref_len);
	for (size_t i = 0; i < ref_len; i++)
		fprintf(stderr, "%s%02x/%02x", i % 8 ? " " : "\n  ",
			((const u8 *)ours)[i], ((const u8 *)ref)[i]);
	fprintf(stderr, "\n");
}

/* a CPL sent as a TP work request: header from the t4fw_api.h fields */
static void ref_tp_wr(struct work_request_hdr *wr, size_t cpl_size, u32 tid)
{
	wr->wr_hi = htonl(FW_WR_OP_V(FW_TP_WR) |
			  FW_WR_IMMDLEN_V(cpl_size - sizeof(*wr)));
	wr->wr_mid = htonl(FW_WR_LEN16_V(DIV_ROUND_UP(cpl_size, 16)) |
			   FW_WR_FLOWID_V(tid));
	wr->wr_lo = 0;
}

static void test_constants(void)
{
	CHECK(CXE_CPL_PASS_ACCEPT_RPL == CPL_PASS_ACCEPT_RPL);
	CHECK(CXE_CPL_SET_TCB_FIELD == CPL_SET_TCB_FIELD);
	CHECK(CXE_CPL_CLOSE_CON_REQ == CPL_CLOSE_CON_REQ);
	CHECK(CXE_CPL_ABORT_REQ == CPL_ABORT_REQ);
	CHECK(CXE_CPL_ABORT_RPL == CPL_ABORT_RPL);
	CHECK(CXE_CPL_RX_DATA_ACK == CPL_RX_DATA_ACK);
	CHECK(CXE_CPL_TX_DATA_ISO == CPL_TX_DATA_ISO);
	CHECK(CXE_CPL_PEER_CLOSE == CPL_PEER_CLOSE);
	CHECK(CXE_CPL_ABORT_REQ_RSS == CPL_ABORT_REQ_RSS);
	CHECK(CXE_CPL_ABORT_RPL_RSS == CPL_ABORT_RPL_RSS);
	CHECK(CXE_CPL_CLOSE_CON_RPL == CPL_CLOSE_CON_RPL);
	CHECK(CXE_CPL_ISCSI_HDR == CPL_ISCSI_HDR);
	CHECK(CXE_CPL_SET_TCB_RPL == CPL_SET_TCB_RPL);
	CHECK(CXE_CPL_PASS_ESTABLISH == CPL_PASS_ESTABLISH);
	CHECK(CXE_CPL_PASS_ACCEPT_REQ == CPL_PASS_ACCEPT_REQ);
	CHECK(CXE_CPL_RX_ISCSI_CMP == CPL_RX_ISCSI_CMP);
	CHECK(CXE_CPL_RX_ISCSI_DDP == CPL_RX_ISCSI_DDP);
	CHECK(CXE_CPL_ISCSI_DATA == CPL_ISCSI_DATA);
	CHECK(CXE_CPL_FW4_ACK == CPL_FW4_ACK);
	CHECK(CXE_FW_TP_WR == FW_TP_WR);
	CHECK(CXE_FW_FLOWC_WR == FW_FLOWC_WR);
	CHECK(CXE_FW_OFLD_TX_DATA_WR == FW_OFLD_TX_DATA_WR);
	CHECK(CXE_FW_ISCSI_TX_DATA_WR == FW_ISCSI_TX_DATA_WR);
	CHECK(CXE_CPL_ERR_RTX_NEG_ADVICE == CPL_ERR_RTX_NEG_ADVICE);
	CHECK(CXE_CPL_ERR_PERSIST_NEG_ADVICE == CPL_ERR_PERSIST_NEG_ADVICE);
	CHECK(CXE_CPL_ERR_KEEPALV_NEG_ADVICE == CPL_ERR_KEEPALV_NEG_ADVICE);
	CHECK(CXE_CPL_ERR_CONN_RESET == CPL_ERR_CONN_RESET);
	CHECK(CXE_CPL_ERR_XMIT_TIMEDOUT == CPL_ERR_XMIT_TIMEDOUT);
	CHECK(CXE_CPL_ERR_KEEPALIVE_TIMEDOUT == CPL_ERR_KEEPALIVE_TIMEDOUT);
	CHECK(CXE_ULP_CRC_HEADER == ULP_CRC_HEADER);
	CHECK(CXE_ULP_CRC_DATA == ULP_CRC_DATA);
	CHECK(CXE_FW4_ACK_SEQVAL == CPL_FW4_ACK_FLAGS_SEQVAL);
	CHECK(CXE_FW4_ACK_CH == CPL_FW4_ACK_FLAGS_CH);
	CHECK(CXE_FW4_ACK_FLOWC == CPL_FW4_ACK_FLAGS_FLOWC);
	CHECK(CXE_CPL_PASS_ACCEPT_RPL_LEN ==
	      roundup(sizeof(struct cpl_t5_pass_accept_rpl), 16));
	CHECK(CXE_CPL_SET_TCB_FIELD_LEN ==
	      roundup(sizeof(struct cpl_set_tcb_field), 16));
	CHECK(CXE_CPL_RX_DATA_ACK_LEN ==
	      roundup(sizeof(struct cpl_rx_data_ack), 16));
	CHECK(CXE_CPL_CLOSE_CON_REQ_LEN ==
	      roundup(sizeof(struct cpl_close_con_req), 16));
	CHECK(CXE_CPL_ABORT_REQ_LEN == roundup(sizeof(struct cpl_abort_req), 16));
	CHECK(CXE_CPL_ABORT_RPL_LEN == roundup(sizeof(struct cpl_abort_rpl), 16));
	CHECK(CXE_FW_OFLD_TX_DATA_WR_LEN == sizeof(struct fw_ofld_tx_data_wr));
	CHECK(CXE_CPL_TX_DATA_ISO_LEN == sizeof(struct cpl_tx_data_iso));
	CHECK(CXE_FW_FLOWC_WR_MAX_LEN ==
	      roundup(offsetof(struct fw_flowc_wr,
			       mnemval[CXE_FW_FLOWC_MAX_PARAMS]), 16));
	CHECK(CXE_CPL_PASS_ACCEPT_REQ_LEN == sizeof(struct cpl_pass_accept_req));
	CHECK(CXE_CPL_PASS_ESTABLISH_LEN == sizeof(struct cpl_pass_establish));
	CHECK(CXE_CPL_ISCSI_HDR_LEN == sizeof(struct cpl_iscsi_hdr));
	CHECK(CXE_CPL_ISCSI_DATA_LEN == sizeof(struct cpl_iscsi_data));
	CHECK(CXE_CPL_RX_ISCSI_DDP_LEN == sizeof(struct cpl_rx_iscsi_ddp));
	CHECK(CXE_CPL_RX_ISCSI_CMP_LEN == sizeof(struct cpl_rx_iscsi_cmp));
	CHECK(CXE_CPL_FW4_ACK_LEN == sizeof(struct cpl_fw4_ack));
	CHECK(CXE_CPL_PEER_CLOSE_LEN == sizeof(struct cpl_peer_close));
	CHECK(CXE_CPL_CLOSE_CON_RPL_LEN == sizeof(struct cpl_close_con_rpl));
	CHECK(CXE_CPL_ABORT_REQ_RSS_LEN == sizeof(struct cpl_abort_req_rss));
	CHECK(CXE_CPL_ABORT_RPL_RSS_LEN == sizeof(struct cpl_abort_rpl_rss));
	CHECK(CXE_CPL_SET_TCB_RPL_LEN == sizeof(struct cpl_set_tcb_rpl));
	CHECK(CXE_CPL_PASS_OPEN_RPL_LEN == sizeof(struct cpl_pass_open_rpl));
	CHECK(CXE_CPL_CLOSE_LISTSRV_RPL_LEN == sizeof(struct cpl_close_listsvr_rpl));
}

/* ---- builders ---- */

static void golden_accept_rpl(enum cxe_chip chip)
{
	struct cxe_cpl_accept a = {
		.tid = rnd32() & CXE_CPL_TID_MAX,
		.iss = rnd32(),
		.rcv_win = rnd32() >> (random() % 16),
		.l2t_idx = rnd32() & 0xfff,
		.rss_qid = rnd32() & RSS_QUEUE_M,
		.mss_idx = random() & MSS_IDX_M,
		.tx_chan = random() & 3,
		.smac_idx = random(),
		.tos = random(),
		.wscale = random() % 15,
		.tstamps = random() & 1,
		.sack = random() & 1,
		.ecn = random() & 1,
	};
	u8 ours[64], ref[CXE_CPL_PASS_ACCEPT_RPL_LEN] = { 0 };
	struct cpl_t5_pass_accept_rpl *r = (void *)ref;
	u32 win = a.rcv_win >> 10, opt2;
	u64 opt0;
	int len;

	if (win > RCV_BUFSIZ_M)
		win = RCV_BUFSIZ_M;
	opt0 = TCAM_BYPASS_F | WND_SCALE_V((u64)a.wscale) |
	       MSS_IDX_V((u64)a.mss_idx) | L2T_IDX_V((u64)a.l2t_idx) |
	       TX_CHAN_V((u64)a.tx_chan) | SMAC_SEL_V((u64)a.smac_idx) |
	       DSCP_V((u64)(a.tos >> 2)) | ULP_MODE_V((u64)ULP_MODE_ISCSI) |
	       RCV_BUFSIZ_V((u64)win);
	opt2 = RX_CHANNEL_V(0) | RSS_QUEUE_VALID_F | RSS_QUEUE_V(a.rss_qid);
	if (chip != CXE_CHIP_T5)
		opt2 |= RX_FC_DISABLE_F;
	if (a.tstamps)
		opt2 |= TSTAMPS_EN_F;
	if (a.sack)
		opt2 |= SACK_EN_F;
	if (a.wscale)
		opt2 |= WND_SCALE_EN_F;
	if (a.ecn)
		opt2 |= CCTRL_ECN_V(1);
	opt2 |= CONG_CNTRL_V(CONG_ALG_NEWRENO) | T5_ISS_F | T5_OPT_2_VALID_F;
	ref_tp_wr(&r->wr, sizeof(*r), a.tid);
	OPCODE_TID(r) = cpu_to_be32(MK_OPCODE_TID(CPL_PASS_ACCEPT_RPL, a.tid));
	r->opt0 = cpu_to_be64(opt0);
	r->opt2 = cpu_to_be32(opt2);
	r->iss = cpu_to_be32(a.iss);

	len = cxe_cpl_pass_accept_rpl(ours, sizeof(ours), chip, &a);
	same(chip == CXE_CHIP_T5 ? "PASS_ACCEPT_RPL T5" : "PASS_ACCEPT_RPL T6",
	     ours, len, ref, sizeof(ref));
}

static void ref_set_tcb(u8 *ref, u32 tid, u16 qid, bool no_reply, u8 cookie,
			u8 word, u64 mask, u64 val)
{
	struct cpl_set_tcb_field *req = (void *)ref;

	ref_tp_wr(&req->wr, sizeof(*req), tid);
	OPCODE_TID(req) = htonl(MK_OPCODE_TID(CPL_SET_TCB_FIELD, tid));
	req->reply_ctrl = htons(NO_REPLY_V(no_reply) | QUEUENO_V(qid));
	req->word_cookie = htons(TCB_WORD_V(word) | TCB_COOKIE_V(cookie));
	req->mask = cpu_to_be64(mask);
	req->val = cpu_to_be64(val);
}

static void golden_set_tcb(void)
{
	struct cxe_cpl_tcb_field f = {
		.tid = rnd32() & CXE_CPL_TID_MAX,
		.reply_qid = rnd32() & 0x3fff,
		.no_reply = random() & 1,
		.cookie = random() & TCB_COOKIE_M,
		.word = random() % 32,
		.mask = rnd64(),
		.val = rnd64(),
	};
	u8 ours[64], ref[CXE_CPL_SET_TCB_FIELD_LEN] = { 0 };
	bool h = random() & 1, d = random() & 1;
	u8 pgidx = random() & 3, mask, val;
	struct cxe_cpl_tcb_field g;
	int len;

	ref_set_tcb(ref, f.tid, f.reply_qid, f.no_reply, f.cookie, f.word,
		    f.mask, f.val);
	len = cxe_cpl_set_tcb_field(ours, sizeof(ours), &f);
	same("SET_TCB_FIELD", ours, len, ref, sizeof(ref));
	/* read back as the chip model takes it */
	CHECK(cxe_cpl_parse_set_tcb_field(ref, sizeof(ref), &g) == 40);
	CHECK(g.tid == f.tid && g.reply_qid == f.reply_qid &&
	      g.no_reply == f.no_reply && g.cookie == f.cookie &&
	      g.word == f.word && g.mask == f.mask && g.val == f.val);

	/* as mainline sets the digest submode and page size index */
	memset(ref, 0, sizeof(ref));
	ref_set_tcb(ref, f.tid, f.reply_qid, 0, 0, 0, 0x3 << 4,
		    ((h ? ULP_CRC_HEADER : 0) | (d ? ULP_CRC_DATA : 0)) << 4);
	len = cxe_cpl_set_tcb_submode(ours, sizeof(ours), f.tid, f.reply_qid,
				      h, d);
	same("SET_TCB_FIELD submode", ours, len, ref, sizeof(ref));
	CHECK(cxe_cpl_parse_set_tcb_field(ref, sizeof(ref), &g) == 40);
	CHECK(cxe_cpl_tcb_submode(&g, &mask, &val) && mask == 3 &&
	      val == ((h ? ULP_CRC_HEADER : 0) | (d ? ULP_CRC_DATA : 0)));
	memset(ref, 0, sizeof(ref));
	ref_set_tcb(ref, f.tid, f.reply_qid, 0, 0, 0, 0x3 << 8,
		    (u64)pgidx << 8);
	len = cxe_cpl_set_tcb_pgidx(ours, sizeof(ours), f.tid, f.reply_qid,
				    pgidx);
	same("SET_TCB_FIELD pgidx", ours, len, ref, sizeof(ref));
}

static void golden_flowc(void)
{
	struct cxe_fw_flowc f = {
		.tid = rnd32() & CXE_CPL_TID_MAX,
		.pf = random() & 7,
		.vf = random(),
		.channel = random() & 3,
		.port = random() & 3,
		.iqid = rnd32(),
		.snd_nxt = rnd32(),
		.rcv_nxt = rnd32(),
		.sndbuf = rnd32(),
		.mss = rnd32() & 0xffff,
		.txdataplen_max = rnd32() & 0x1ffff,
		.rcv_scale = random() & 1 ? 0 : random() % 15,
		.dcb = random() & 1,
		.dcb_prio = random() & 7,
		.ulp_mode = random() & 1,
	};
	u8 ours[CXE_FW_FLOWC_WR_MAX_LEN + 16], ref[CXE_FW_FLOWC_WR_MAX_LEN];
	struct fw_flowc_wr *w = (void *)ref;
	u32 n = 0, flowclen, flowclen16;
	int len;

	memset(ref, 0, sizeof(ref));
#define P(m, v) do {							\
		w->mnemval[n].mnemonic = (m);				\
		w->mnemval[n].val = cpu_to_be32(v);			\
		n++;							\
	} while (0)
	P(FW_FLOWC_MNEM_PFNVFN,
	  FW_PFVF_CMD_PFN_V((u32)f.pf) | FW_PFVF_CMD_VFN_V((u32)f.vf));
	P(FW_FLOWC_MNEM_CH, f.channel);
	P(FW_FLOWC_MNEM_PORT, f.port);
	P(FW_FLOWC_MNEM_IQID, f.iqid);
	P(FW_FLOWC_MNEM_SNDNXT, f.snd_nxt);
	P(FW_FLOWC_MNEM_RCVNXT, f.rcv_nxt);
	P(FW_FLOWC_MNEM_SNDBUF, f.sndbuf);
	P(FW_FLOWC_MNEM_MSS, f.mss);
	P(FW_FLOWC_MNEM_TXDATAPLEN_MAX, f.txdataplen_max);
	if (f.rcv_scale)
		P(FW_FLOWC_MNEM_RCV_SCALE, f.rcv_scale);
	if (f.dcb)
		P(FW_FLOWC_MNEM_DCBPRIO, f.dcb_prio);
	if (f.ulp_mode)
		P(FW_FLOWC_MNEM_ULD_MODE, ULP_MODE_ISCSI);
#undef P
	flowclen = offsetof(struct fw_flowc_wr, mnemval[n]);
	flowclen16 = DIV_ROUND_UP(flowclen, 16);
	flowclen = flowclen16 * 16;
	w->op_to_nparams = cpu_to_be32(FW_WR_OP_V(FW_FLOWC_WR) |
				       FW_FLOWC_WR_NPARAMS_V(n));
	w->flowid_len16 = cpu_to_be32(FW_WR_LEN16_V(flowclen16) |
				      FW_WR_FLOWID_V(f.tid));
	len = cxe_fw_flowc_wr(ours, sizeof(ours), &f);
	same("FW_FLOWC_WR", ours, len, ref, flowclen);
}

static void golden_tx_data(enum cxe_chip chip)
{
	struct cxe_fw_tx_data t = {
		.tid = rnd32() & CXE_CPL_TID_MAX,
		.plen = rnd32(),
		.immdlen = random(),
		.len16 = random(),
		.iso = random() & 1,
		.hcrc = random() & 1,
		.dcrc = random() & 1,
		.compl = random() & 1,
	};
	u8 ours[32], ref[sizeof(struct fw_ofld_tx_data_wr)] = { 0 };
	struct fw_ofld_tx_data_wr *req = (void *)ref;
	u32 submode = (t.hcrc ? ULP_CRC_HEADER : 0) | (t.dcrc ? ULP_CRC_DATA : 0);
	u32 force = chip == CXE_CHIP_T5 ? TX_FORCE_V(!submode) : T6_TX_FORCE_F;
	u32 op = FW_OFLD_TX_DATA_WR;
	int len;

	if (t.iso) {
		op = FW_ISCSI_TX_DATA_WR;
		submode |= 8;
	}
	req->op_to_immdlen = cpu_to_be32(FW_WR_OP_V(op) |
					 FW_WR_COMPL_V((u32)t.compl) |
					 FW_WR_IMMDLEN_V((u32)t.immdlen));
	req->flowid_len16 = cpu_to_be32(FW_WR_FLOWID_V(t.tid) |
					FW_WR_LEN16_V((u32)t.len16));
	req->plen = htonl(t.plen);
	req->tunnel_to_proxy =
		htonl(FW_OFLD_TX_DATA_WR_ULPMODE_V(ULP_MODE_ISCSI) |
		      FW_OFLD_TX_DATA_WR_ULPSUBMODE_V(submode) | force |
		      FW_OFLD_TX_DATA_WR_SHOVE_F);
	len = cxe_fw_ofld_tx_data_wr(ours, sizeof(ours), chip, &t);
	same(chip == CXE_CHIP_T5 ? "OFLD_TX_DATA_WR T5" : "OFLD_TX_DATA_WR T6",
	     ours, len, ref, sizeof(ref));
}

static void golden_iso(void)
{
	struct cxe_cpl_iso i = {
		.first = random() & 1,
		.last = random() & 1,
		.hcrc = random() & 1,
		.dcrc = random() & 1,
		.immediate = random() & 1,
		.pdu_type = random() & 3,
		.ahs_len = random(),
		.mpdu = 1 + rnd32() % 0x3fffc,
		.burst_size = rnd32() >> 2,
		.len = rnd32(),
		.seglen_offset = rnd32() & 0xffffff,
		.datasn_offset = rnd32(),
		.buffer_offset = rnd32(),
	};
	u8 ours[48], ref[sizeof(struct cpl_tx_data_iso)] = { 0 };
	struct cpl_tx_data_iso *cpl = (void *)ref;
	int len;

	cpl->op_to_scsi = htonl(CPL_TX_DATA_ISO_OP_V(CPL_TX_DATA_ISO) |
			CPL_TX_DATA_ISO_FIRST_V((u32)i.first) |
			CPL_TX_DATA_ISO_LAST_V((u32)i.last) |
			CPL_TX_DATA_ISO_CPLHDRLEN_V(0) |
			CPL_TX_DATA_ISO_HDRCRC_V((u32)i.hcrc) |
			CPL_TX_DATA_ISO_PLDCRC_V((u32)i.dcrc) |
			CPL_TX_DATA_ISO_IMMEDIATE_V((u32)i.immediate) |
			CPL_TX_DATA_ISO_SCSI_V((u32)i.pdu_type));
	cpl->ahs_len = i.ahs_len;
	cpl->mpdu = htons(DIV_ROUND_UP(i.mpdu, 4));
	cpl->burst_size = htonl(DIV_ROUND_UP(i.burst_size, 4));
	cpl->len = htonl(i.len);
	cpl->reserved2_seglen_offset =
		htonl(CPL_TX_DATA_ISO_SEGLEN_OFFSET_V(i.seglen_offset));
	cpl->datasn_offset = htonl(i.datasn_offset);
	cpl->buffer_offset = htonl(i.buffer_offset);
	len = cxe_cpl_tx_data_iso(ours, sizeof(ours), &i);
	same("TX_DATA_ISO", ours, len, ref, sizeof(ref));
}

static void golden_small(void)
{
	u32 tid = rnd32() & CXE_CPL_TID_MAX;
	struct cxe_cpl_rx_ack a = {
		.tid = tid,
		.credits = rnd32() & 0x0fffffff,
		.set_dack = random() & 1,
		.force_ack = random() & 1,
	};
	u8 ours[48], ref[32];
	struct cpl_rx_data_ack *ack = (void *)ref;
	struct cpl_close_con_req *cl = (void *)ref;
	struct cpl_abort_req *ab = (void *)ref;
	struct cpl_abort_rpl *ar = (void *)ref;
	bool rst = random() & 1;
	struct cxe_cpl_rx_ack b;
	int len;

	if (a.set_dack)
		a.dack_mode = random() & 3;
	memset(ref, 0, sizeof(ref));
	ref_tp_wr(&ack->wr, sizeof(*ack), tid);
	OPCODE_TID(ack) = cpu_to_be32(MK_OPCODE_TID(CPL_RX_DATA_ACK, tid));
	ack->credit_dack = cpu_to_be32(RX_CREDITS_V(a.credits) |
		(a.force_ack ? RX_FORCE_ACK_F : 0) |
		(a.set_dack ? RX_DACK_CHANGE_V(1U) |
			      RX_DACK_MODE_V((u32)a.dack_mode) : 0));
	len = cxe_cpl_rx_data_ack(ours, sizeof(ours), &a);
	same("RX_DATA_ACK", ours, len, ref, roundup(sizeof(*ack), 16));
	CHECK(cxe_cpl_parse_rx_data_ack(ref, sizeof(*ack), &b) ==
	      (int)sizeof(*ack));
	CHECK(b.tid == tid && b.credits == a.credits &&
	      b.set_dack == a.set_dack && b.dack_mode == a.dack_mode &&
	      b.force_ack == a.force_ack);

	memset(ref, 0, sizeof(ref));
	ref_tp_wr(&cl->wr, sizeof(*cl), tid);
	OPCODE_TID(cl) = cpu_to_be32(MK_OPCODE_TID(CPL_CLOSE_CON_REQ, tid));
	len = cxe_cpl_close_con_req(ours, sizeof(ours), tid, false);
	same("CLOSE_CON_REQ", ours, len, ref, roundup(sizeof(*cl), 16));
	/* asking for the ack, as cxgbit_push_tx_frames() does for it */
	cl->wr.wr_hi |= cpu_to_be32(FW_WR_COMPL_F);
	len = cxe_cpl_close_con_req(ours, sizeof(ours), tid, true);
	same("CLOSE_CON_REQ with FW_WR_COMPL", ours, len, ref, roundup(sizeof(*cl), 16));

	memset(ref, 0, sizeof(ref));
	ref_tp_wr(&ab->wr, sizeof(*ab), tid);
	OPCODE_TID(ab) = cpu_to_be32(MK_OPCODE_TID(CPL_ABORT_REQ, tid));
	ab->cmd = rst ? CPL_ABORT_SEND_RST : CPL_ABORT_NO_RST;
	len = cxe_cpl_abort_req(ours, sizeof(ours), tid, rst);
	same("ABORT_REQ", ours, len, ref, roundup(sizeof(*ab), 16));

	memset(ref, 0, sizeof(ref));
	ref_tp_wr(&ar->wr, sizeof(*ar), tid);
	OPCODE_TID(ar) = cpu_to_be32(MK_OPCODE_TID(CPL_ABORT_RPL, tid));
	ar->cmd = rst ? CPL_ABORT_SEND_RST : CPL_ABORT_NO_RST;
	len = cxe_cpl_abort_rpl(ours, sizeof(ours), tid, rst);
	same("ABORT_RPL", ours, len, ref, roundup(sizeof(*ar), 16));
}

/* ---- parsers, on messages built with the headers' structs ---- */

static void golden_accept_req(enum cxe_chip chip, bool v6, bool vlan)
{
	u8 buf[256] = { 0 };
	struct cpl_pass_accept_req *req = (void *)buf;
	u32 tid = rnd32() & 0xffffff, stid = rnd32() & 0xffffff;
	u32 eth = vlan ? 18 : 14, ip = v6 ? 40 : 20 + 4 * (random() % 3);
	u32 tcp = 20 + 4 * (random() % 11), chan = random() & 3;
	u16 mss = rnd32(), l2 = rnd32() & 0xf3ff;
	u8 tos = random(), wsf = random(), *iph, *tcph, flags = random();
	struct cxe_cpl_accept_req r;
	u32 hl;
	int ret;

	OPCODE_TID(req) = htonl(MK_OPCODE_TID(CPL_PASS_ACCEPT_REQ, tid));
	req->len = htons(eth + ip + tcp);
	if (chip == CXE_CHIP_T5)
		hl = ETH_HDR_LEN_V(eth) | IP_HDR_LEN_V(ip) | TCP_HDR_LEN_V(tcp);
	else
		hl = T6_ETH_HDR_LEN_V(eth) | T6_IP_HDR_LEN_V(ip) |
		     T6_TCP_HDR_LEN_V(tcp);
	req->hdr_len = htonl(hl | SYN_RX_CHAN_V(chan));
	req->vlan = htons(0x1234);
	req->l2info = htons(l2);
	req->tos_stid = htonl(PASS_OPEN_TOS_V((u32)tos) | PASS_OPEN_TID_V(stid));
	req->tcpopt.mss = htons(mss);
	req->tcpopt.wsf = wsf;
	req->tcpopt.sack = flags & 1;
	req->tcpopt.tstamp = flags >> 1 & 1;
	iph = buf + sizeof(*req) + eth;
	tcph = iph + ip;
	if (v6) {
		iph[0] = 0x60;
		for (int i = 0; i < 32; i++)
			iph[8 + i] = random();
	} else {
		iph[0] = 0x40 | ip / 4;
		for (int i = 0; i < 8; i++)
			iph[12 + i] = random();
	}
	tcph[0] = 0x0c;
	tcph[1] = 0xbc;
	tcph[2] = 0x0c;
	tcph[3] = 0xbd;
	tcph[13] = 0x02 | (flags & 0xc0);

	ret = cxe_cpl_parse_pass_accept_req(buf, sizeof(*req) + eth + ip + tcp,
					    chip, &r);
	CHECK(ret == (int)sizeof(*req));
	CHECK(r.tid == GET_TID(req));
	CHECK(r.stid == PASS_OPEN_TID_G(ntohl(req->tos_stid)));
	CHECK(r.tos == PASS_OPEN_TOS_G(ntohl(req->tos_stid)));
	CHECK(r.peer_mss == ntohs(req->tcpopt.mss));
	CHECK(r.peer_wscale == req->tcpopt.wsf);
	CHECK(r.sack == req->tcpopt.sack);
	CHECK(r.tstamp == req->tcpopt.tstamp);
	CHECK(r.syn_len == ntohs(req->len));
	CHECK(r.vlan == 0x1234);
	CHECK(r.rx_chan == SYN_RX_CHAN_G(ntohl(req->hdr_len)));
	CHECK(r.mac_idx == SYN_MAC_IDX_G(ntohs(req->l2info)));
	CHECK(r.xact_match == !!(ntohs(req->l2info) & SYN_XACT_MATCH_F));
	CHECK(r.intf == SYN_INTF_G(ntohs(req->l2info)));
	hl = ntohl(req->hdr_len);
	if (chip == CXE_CHIP_T5) {
		CHECK(r.eth_len == ETH_HDR_LEN_G(hl));
		CHECK(r.ip_len == IP_HDR_LEN_G(hl));
		CHECK(r.tcp_len == TCP_HDR_LEN_G(hl));
	} else {
		CHECK(r.eth_len == T6_ETH_HDR_LEN_G(hl));
		CHECK(r.ip_len == T6_IP_HDR_LEN_G(hl));
		CHECK(r.tcp_len == T6_TCP_HDR_LEN_G(hl));
	}
	CHECK(r.ip_version == (v6 ? 6 : 4));
	if (v6) {
		CHECK(!memcmp(r.peer_ip, iph + 8, 16));
		CHECK(!memcmp(r.local_ip, iph + 24, 16));
	} else {
		CHECK(!memcmp(r.peer_ip, iph + 12, 4));
		CHECK(!memcmp(r.local_ip, iph + 16, 4));
	}
	CHECK(r.peer_port == 0x0cbc && r.local_port == 0x0cbd);
	CHECK(r.cwr == !!(flags & 0x80) && r.ece == !!(flags & 0x40));
	/* one byte short of the fixed TCP header */
	CHECK(cxe_cpl_parse_pass_accept_req(buf, sizeof(*req) + eth + ip + 19,
					    chip, &r) == -EBADMSG);
}

static void golden_establish(void)
{
	u8 buf[sizeof(struct cpl_pass_establish)] = { 0 };
	struct cpl_pass_establish *e = (void *)buf;
	struct cxe_cpl_established r;
	u32 tid = rnd32() & 0xffffff;
	u16 opt = rnd32();

	OPCODE_TID(e) = htonl(MK_OPCODE_TID(CPL_PASS_ESTABLISH, tid));
	e->tos_stid = htonl(rnd32());
	e->mac_idx = htons(rnd32());
	e->tcp_opt = htons(opt);
	e->snd_isn = htonl(rnd32());
	e->rcv_isn = htonl(rnd32());
	CHECK(cxe_cpl_parse_pass_establish(buf, sizeof(buf), &r) ==
	      (int)sizeof(buf));
	CHECK(r.tid == GET_TID(e));
	CHECK(r.stid == PASS_OPEN_TID_G(ntohl(e->tos_stid)));
	CHECK(r.tos == PASS_OPEN_TOS_G(ntohl(e->tos_stid)));
	CHECK(r.mac_idx == ntohs(e->mac_idx));
	CHECK(r.tcp_opt == opt);
	CHECK(r.wscale_ok == TCPOPT_WSCALE_OK_G(opt));
	CHECK(r.sack == TCPOPT_SACK_G(opt));
	CHECK(r.tstamp == TCPOPT_TSTAMP_G(opt));
	CHECK(r.snd_wscale == TCPOPT_SND_WSCALE_G(opt));
	CHECK(r.mss_idx == TCPOPT_MSS_G(opt));
	CHECK(r.snd_isn == ntohl(e->snd_isn));
	CHECK(r.rcv_isn == ntohl(e->rcv_isn));
}

static u32 ref_ddpvld(bool ddp, bool pad, bool h, bool d)
{
	return (ddp ? 1U << CPL_RX_ISCSI_DDP_STATUS_DDP_SHIFT : 0) |
	       (pad ? 1U << CPL_RX_ISCSI_DDP_STATUS_PAD_SHIFT : 0) |
	       (h ? 1U << CPL_RX_ISCSI_DDP_STATUS_HCRC_SHIFT : 0) |
	       (d ? 1U << CPL_RX_ISCSI_DDP_STATUS_DCRC_SHIFT : 0);
}

static void golden_iscsi(void)
{
	u8 buf[64] = { 0 };
	struct cpl_iscsi_hdr *h = (void *)buf;
	struct cpl_iscsi_data *d = (void *)buf;
	struct cpl_rx_iscsi_ddp *dd = (void *)buf;
	struct cpl_rx_iscsi_cmp *c = (void *)buf;
	bool fddp = random() & 1, fpad = random() & 1;
	bool fh = random() & 1, fd = random() & 1, ddp = random() & 1;
	u32 tid = rnd32() & 0xffffff, plen = rnd32() & ISCSI_PDU_LEN_M;
	u16 hlen = 48 + (rnd32() & 0x3ff);
	struct cxe_cpl_iscsi_pdu p;

	OPCODE_TID(h) = htonl(MK_OPCODE_TID(CPL_ISCSI_HDR, tid));
	h->pdu_len_ddp = htons(ISCSI_PDU_LEN_V(plen) | (ddp ? ISCSI_DDP_F : 0));
	h->len = htons(hlen);
	h->seq = htonl(rnd32());
	h->urg = htons(rnd32());
	h->status = random();
	CHECK(cxe_cpl_parse_iscsi_hdr(buf, sizeof(*h), &p) == (int)sizeof(*h));
	CHECK(p.tid == GET_TID(h) && p.len == hlen && p.seq == ntohl(h->seq));
	CHECK(p.pdu_len == ISCSI_PDU_LEN_G(ntohs(h->pdu_len_ddp)));
	CHECK(p.ddp == ddp && p.urg == ntohs(h->urg) && p.status == h->status);

	memset(buf, 0, sizeof(buf));
	OPCODE_TID(d) = htonl(MK_OPCODE_TID((u32)CPL_ISCSI_DATA, tid));
	d->len = htons(rnd32());
	d->seq = htonl(rnd32());
	d->urg = htons(rnd32());
	d->status = random();
	CHECK(cxe_cpl_parse_iscsi_data(buf, sizeof(*d), &p) == (int)sizeof(*d));
	CHECK(p.tid == tid && p.len == ntohs(d->len) && p.seq == ntohl(d->seq));
	CHECK(p.urg == ntohs(d->urg) && p.status == d->status);

	memset(buf, 0, sizeof(buf));
	OPCODE_TID(dd) = htonl(MK_OPCODE_TID(CPL_RX_ISCSI_DDP, tid));
	dd->urg = htons(rnd32());
	dd->len = htons(rnd32());
	dd->seq = htonl(rnd32());
	dd->ddp_report = htonl(rnd32());
	dd->ulp_crc = htonl(rnd32());
	dd->ddpvld = htonl(ref_ddpvld(fddp, fpad, fh, fd));
	CHECK(cxe_cpl_parse_rx_iscsi_ddp(buf, sizeof(*dd), &p) ==
	      (int)sizeof(*dd));
	CHECK(p.tid == tid && p.len == ntohs(dd->len) && p.seq == ntohl(dd->seq));
	CHECK(p.urg == ntohs(dd->urg) && p.ulp_crc == ntohl(dd->ulp_crc));
	CHECK(p.ddp_report == ntohl(dd->ddp_report));
	CHECK(p.st.raw == ntohl(dd->ddpvld));
	CHECK(p.st.ddp == fddp && p.st.pad_err == fpad);
	CHECK(p.st.hcrc_err == fh && p.st.dcrc_err == fd && !p.st.other);

	memset(buf, 0, sizeof(buf));
	OPCODE_TID(c) = htonl(MK_OPCODE_TID(CPL_RX_ISCSI_CMP, tid));
	c->pdu_len_ddp = htons(ISCSI_PDU_LEN_V(plen) | (ddp ? ISCSI_DDP_F : 0));
	c->len = htons(hlen);
	c->seq = htonl(rnd32());
	c->urg = htons(rnd32());
	c->status = random();
	c->ulp_crc = htonl(rnd32());
	c->ddpvld = htonl(ref_ddpvld(fddp, fpad, fh, fd));
	CHECK(cxe_cpl_parse_rx_iscsi_cmp(buf, sizeof(*c), &p) == (int)sizeof(*c));
	CHECK(p.tid == tid && p.len == hlen && p.seq == ntohl(c->seq));
	CHECK(p.pdu_len == plen && p.ddp == ddp && p.status == c->status);
	CHECK(p.urg == ntohs(c->urg) && p.ulp_crc == ntohl(c->ulp_crc));
	CHECK(p.st.ddp == fddp && p.st.pad_err == fpad);
	CHECK(p.st.hcrc_err == fh && p.st.dcrc_err == fd && !p.st.other);
}

/*
 * The chip model's messages (tests/chipmodel) against the same structs:
 * the backend is tested against messages laid out as the chip's.
 */
static void golden_model_rx(void)
{
	u8 ref[64], ours[64];
	struct cpl_iscsi_hdr *h = (void *)ref;
	struct cpl_iscsi_data *d = (void *)ref;
	struct cpl_rx_iscsi_ddp *dd = (void *)ref;
	struct cpl_rx_iscsi_cmp *c = (void *)ref;
	bool fddp = random() & 1, fpad = random() & 1;
	bool fh = random() & 1, fd = random() & 1, ddp = random() & 1;
	u32 tid = rnd32() & 0xffffff, plen = rnd32() & ISCSI_PDU_LEN_M;
	u32 seq = rnd32(), crc = rnd32(), vld = ref_ddpvld(fddp, fpad, fh, fd);
	u16 hlen = 48 + (rnd32() & 0x3ff), dlen = rnd32();
	int n;

	memset(ref, 0, sizeof(ref));
	OPCODE_TID(h) = htonl(MK_OPCODE_TID(CPL_ISCSI_HDR, tid));
	h->pdu_len_ddp = htons(ISCSI_PDU_LEN_V(plen) | (ddp ? ISCSI_DDP_F : 0));
	h->len = htons(hlen);
	h->seq = htonl(seq);
	n = cxe_model_cpl_iscsi_hdr(ours, tid, seq, plen, ddp, hlen);
	same("model CPL_ISCSI_HDR", ours, n, ref, sizeof(*h));

	memset(ref, 0, sizeof(ref));
	OPCODE_TID(d) = htonl(MK_OPCODE_TID((u32)CPL_ISCSI_DATA, tid));
	d->len = htons(dlen);
	d->seq = htonl(seq);
	n = cxe_model_cpl_iscsi_data(ours, tid, seq, dlen);
	same("model CPL_ISCSI_DATA", ours, n, ref, sizeof(*d));

	memset(ref, 0, sizeof(ref));
	OPCODE_TID(dd) = htonl(MK_OPCODE_TID(CPL_RX_ISCSI_DDP, tid));
	dd->len = htons(plen);
	dd->seq = htonl(seq);
	dd->ulp_crc = htonl(crc);
	dd->ddpvld = htonl(vld);
	n = cxe_model_cpl_rx_iscsi_ddp(ours, tid, seq, plen, crc, vld);
	same("model CPL_RX_ISCSI_DDP", ours, n, ref, sizeof(*dd));

	memset(ref, 0, sizeof(ref));
	OPCODE_TID(c) = htonl(MK_OPCODE_TID(CPL_RX_ISCSI_CMP, tid));
	c->pdu_len_ddp = htons(ISCSI_PDU_LEN_V(plen) | (ddp ? ISCSI_DDP_F : 0));
	c->len = htons(hlen);
	c->seq = htonl(seq);
	c->ulp_crc = htonl(crc);
	c->ddpvld = htonl(vld);
	n = cxe_model_cpl_rx_iscsi_cmp(ours, tid, seq, plen, ddp, hlen, crc, vld);
	same("model CPL_RX_ISCSI_CMP", ours, n, ref, sizeof(*c));
	CHECK(CXE_MODEL_DDPVLD_DDP == 1U << CPL_RX_ISCSI_DDP_STATUS_DDP_SHIFT &&
	      CXE_MODEL_DDPVLD_PAD == 1U << CPL_RX_ISCSI_DDP_STATUS_PAD_SHIFT &&
	      CXE_MODEL_DDPVLD_HCRC == 1U << CPL_RX_ISCSI_DDP_STATUS_HCRC_SHIFT &&
	      CXE_MODEL_DDPVLD_DCRC == 1U << CPL_RX_ISCSI_DDP_STATUS_DCRC_SHIFT);
}

/*
 * The chip model's transmit side on requests built as mainline cxgbit
 * builds them with these structs (cxgbit_tx_data_wr(),
 * cxgbit_cpl_tx_data_iso()): it takes them, and sends as many bytes as
 * cxgbit's own accounting (plen: payload, digests, the headers ISO adds)
 * says the chip will.
 */
static void golden_model_tx(enum cxe_chip chip)
{
	static u8 req[512], payload[32 * 1024], out[48 * 1024];
	struct fw_ofld_tx_data_wr *wr = (void *)req;
	struct cpl_tx_data_iso *cpl = (void *)(req + sizeof(*wr));
	bool h = random() & 1, d = random() & 1, iso = random() & 1;
	u32 submode = (h ? ULP_CRC_HEADER : 0) | (d ? ULP_CRC_DATA : 0);
	u32 force = chip == CXE_CHIP_T5 ? TX_FORCE_V(!submode) : T6_TX_FORCE_F;
	u32 tid = rnd32() & CXE_CPL_TID_MAX, mpdu = 512 * (1 + random() % 8);
	u32 npdu = 2 + random() % 4, dlen, plen, immlen = 0, op;
	u32 digests = (h ? 4 : 0) + (d ? 4 : 0);
	struct cxe_model_tx m = { chip, tid, 8192 };
	long n;

	memset(req, 0, sizeof(req));
	memset(payload, 0, 48);
	if (iso) {
		dlen = (npdu - 1) * mpdu + 4 * (1 + random() % (mpdu / 4));
		payload[0] = 0x25;	/* Data-In */
		payload[1] = 0x01;	/* S, no F: as cxgbit lays its last slice */
		plen = 48 + dlen + (npdu - 1) * 48 + npdu * digests;
		op = FW_ISCSI_TX_DATA_WR;
		immlen = sizeof(*cpl);
		cpl->op_to_scsi = htonl(CPL_TX_DATA_ISO_OP_V(CPL_TX_DATA_ISO) |
				CPL_TX_DATA_ISO_FIRST_V(1) |
				CPL_TX_DATA_ISO_LAST_V(1) |
				CPL_TX_DATA_ISO_HDRCRC_V((u32)h) |
				CPL_TX_DATA_ISO_PLDCRC_V((u32)d) |
				CPL_TX_DATA_ISO_SCSI_V(2));
		cpl->mpdu = htons(DIV_ROUND_UP(mpdu, 4));
		cpl->burst_size = htonl(DIV_ROUND_UP(npdu * mpdu, 4));
		cpl->len = htonl(48 + dlen);
		submode |= 8;
	} else {
		dlen = random() % 8192;
		payload[0] = 0x21;
		plen = 48 + dlen + ((-dlen) & 3) + (h ? 4 : 0) +
		       (d && dlen ? 4 : 0);
		op = FW_OFLD_TX_DATA_WR;
		if (!dlen)
			submode &= ~ULP_CRC_DATA;
	}
	payload[5] = dlen >> 16;
	payload[6] = dlen >> 8;
	payload[7] = dlen;
	for (u32 i = 48; i < 48 + dlen; i++)
		payload[i] = random();
	wr->op_to_immdlen = cpu_to_be32(FW_WR_OP_V(op) |
					FW_WR_IMMDLEN_V(immlen));
	wr->flowid_len16 = cpu_to_be32(FW_WR_FLOWID_V(tid) |
				       FW_WR_LEN16_V(DIV_ROUND_UP(sizeof(*wr) + immlen + 64, 16)));
	wr->plen = htonl(plen);
	wr->tunnel_to_proxy =
		htonl(FW_OFLD_TX_DATA_WR_ULPMODE_V(ULP_MODE_ISCSI) |
		      FW_OFLD_TX_DATA_WR_ULPSUBMODE_V(submode) | force |
		      FW_OFLD_TX_DATA_WR_SHOVE_F);
	n = cxe_model_tx_wr(&m, req, sizeof(*wr) + immlen, payload,
			    48 + dlen + ((-dlen) & 3), out, sizeof(out));
	CHECK(n == (long)plen);
	if (n != (long)plen)
		fprintf(stderr, "model TX T%d iso %d h %d d %d dlen %u: %ld, not %u\n",
			chip, iso, h, d, dlen, n, plen);
}

static void golden_conn(void)
{
	u8 buf[32] = { 0 };
	struct cpl_fw4_ack *a = (void *)buf;
	struct cpl_peer_close *pc = (void *)buf;
	struct cpl_close_con_rpl *cr = (void *)buf;
	struct cpl_abort_req_rss *ar = (void *)buf;
	struct cpl_abort_rpl_rss *rr = (void *)buf;
	struct cpl_set_tcb_rpl *tr = (void *)buf;
	struct cpl_pass_open_rpl *or = (void *)buf;
	struct cpl_close_listsvr_rpl *lr = (void *)buf;
	struct cxe_cpl_listen_rpl l;
	u32 tid = rnd32() & 0xffffff;
	struct cxe_cpl_fw4_ack fa;
	struct cxe_cpl_conn c;
	struct cxe_cpl_tcb_rpl t;
	u8 cookie = random() & TCB_COOKIE_M, st = 33 + random() % 6;

	OPCODE_TID(a) = htonl(MK_OPCODE_TID((u32)CPL_FW4_ACK, tid));
	a->credits = random();
	a->seq_vld = random() & 7;
	a->snd_nxt = htonl(rnd32());
	a->snd_una = htonl(rnd32());
	CHECK(cxe_cpl_parse_fw4_ack(buf, sizeof(*a), &fa) == (int)sizeof(*a));
	CHECK(fa.tid == CPL_FW4_ACK_FLOWID_G(ntohl(OPCODE_TID(a))));
	CHECK(fa.credits == a->credits && fa.flags == a->seq_vld);
	CHECK(fa.snd_nxt == ntohl(a->snd_nxt) && fa.snd_una == ntohl(a->snd_una));

	memset(buf, 0, sizeof(buf));
	OPCODE_TID(pc) = htonl(MK_OPCODE_TID(CPL_PEER_CLOSE, tid));
	pc->rcv_nxt = htonl(rnd32());
	CHECK(cxe_cpl_parse_peer_close(buf, sizeof(*pc), &c) == (int)sizeof(*pc));
	CHECK(c.tid == tid && c.rcv_nxt == ntohl(pc->rcv_nxt));

	memset(buf, 0, sizeof(buf));
	OPCODE_TID(cr) = htonl(MK_OPCODE_TID(CPL_CLOSE_CON_RPL, tid));
	cr->status = random();
	cr->snd_nxt = htonl(rnd32());
	cr->rcv_nxt = htonl(rnd32());
	CHECK(cxe_cpl_parse_close_con_rpl(buf, sizeof(*cr), &c) ==
	      (int)sizeof(*cr));
	CHECK(c.tid == tid && c.status == cr->status);
	CHECK(c.snd_nxt == ntohl(cr->snd_nxt) && c.rcv_nxt == ntohl(cr->rcv_nxt));

	memset(buf, 0, sizeof(buf));
	OPCODE_TID(ar) = htonl(MK_OPCODE_TID(CPL_ABORT_REQ_RSS, tid));
	ar->status = st;
	CHECK(cxe_cpl_parse_abort_req_rss(buf, sizeof(*ar), &c) ==
	      (int)sizeof(*ar));
	CHECK(c.tid == tid && c.status == st);
	CHECK(c.neg_adv == (st == CPL_ERR_RTX_NEG_ADVICE ||
			    st == CPL_ERR_PERSIST_NEG_ADVICE ||
			    st == CPL_ERR_KEEPALV_NEG_ADVICE));
	/* the T6 (SRQ) layout of the same message: status in the low byte */
	((struct cpl_abort_req_rss6 *)buf)->srqidx_status =
		htonl(ABORT_RSS_SRQIDX_V(0x123U) | ABORT_RSS_STATUS_V((u32)st));
	CHECK(cxe_cpl_parse_abort_req_rss(buf, sizeof(*ar), &c) ==
	      (int)sizeof(*ar));
	CHECK(c.status == st);

	memset(buf, 0, sizeof(buf));
	OPCODE_TID(rr) = htonl(MK_OPCODE_TID(CPL_ABORT_RPL_RSS, tid));
	rr->status = random();
	CHECK(cxe_cpl_parse_abort_rpl_rss(buf, sizeof(*rr), &c) ==
	      (int)sizeof(*rr));
	CHECK(c.tid == tid && c.status == rr->status);

	memset(buf, 0, sizeof(buf));
	OPCODE_TID(tr) = htonl(MK_OPCODE_TID(CPL_SET_TCB_RPL, tid));
	tr->cookie = TCB_COOKIE_V(cookie);
	tr->status = random();
	tr->oldval = cpu_to_be64(rnd64());
	CHECK(cxe_cpl_parse_set_tcb_rpl(buf, sizeof(*tr), &t) == (int)sizeof(*tr));
	CHECK(t.tid == tid && t.cookie == TCB_COOKIE_G(tr->cookie));
	CHECK(t.status == tr->status && t.oldval == be64_to_cpu(tr->oldval));

	/* a server's answers, as cxgbit's handlers read them (GET_TID, status) */
	memset(buf, 0, sizeof(buf));
	OPCODE_TID(or) = htonl(MK_OPCODE_TID(CPL_PASS_OPEN_RPL, tid));
	or->status = random();
	CHECK(cxe_cpl_parse_pass_open_rpl(buf, sizeof(*or), &l) == (int)sizeof(*or));
	CHECK(l.stid == GET_TID(or) && l.status == or->status);
	memset(buf, 0, sizeof(buf));
	OPCODE_TID(lr) = htonl(MK_OPCODE_TID(CPL_CLOSE_LISTSRV_RPL, tid));
	lr->status = random();
	CHECK(cxe_cpl_parse_close_listsrv_rpl(buf, sizeof(*lr), &l) == (int)sizeof(*lr));
	CHECK(l.stid == GET_TID(lr) && l.status == lr->status);
}

/*
 * Page pods: a ULP_TX_MEM_WRITE of npods pods as cxgbit_ppod_init_idata()
 * and cxgbit_set_one_ppod() write it (a buffer of single-page scatterlist
 * entries), with the pod header as libcxgb's cxgbi_ppm_make_ppod_hdr()
 * makes it; the model takes it, and places where the pages say.
 */
static void golden_ppod(void)
{
	u8 ours[CXE_ULP_MEM_WRITE_MAX_LEN], ref[CXE_ULP_MEM_WRITE_MAX_LEN] = { 0 };
	static u8 mem[64 * CXE_PPOD_LEN];
	struct cxe_model_ppm m = { .mem = mem, .base = 0x100000, .size = sizeof(mem) };
	u32 npages = 1 + random() % 12, total = (npages + 3) / 4;
	u32 npods = 1 + random() % (total < ULPMEM_IDATA_MAX_NPPODS ? total : ULPMEM_IDATA_MAX_NPPODS);
	u32 first = random() % (total - npods + 1), tid = rnd32() % (CXE_CPL_TID_MAX + 1);
	u32 idx = random() % (64 - total + 1), pm_addr = m.base + ((idx + first) << PPOD_SIZE_SHIFT);
	u32 dlen = npods << PPOD_SIZE_SHIFT;
	u32 wr_len = roundup(sizeof(struct ulp_mem_io) + sizeof(struct ulptx_idata) + dlen, 16);
	struct ulp_mem_io *req = (struct ulp_mem_io *)ref;
	struct ulptx_idata *idata = (struct ulptx_idata *)(req + 1);
	struct cxgbi_pagepod *ppod = (struct cxgbi_pagepod *)(idata + 1);
	struct cxe_ppod_hdr h = {
		.tid = tid, .tag = (idx << PPOD_SIZE_SHIFT | (random() & 63)) & 0x3fffffff,
		.page_offset = random() % 4096,
	};
	u64 pages[12], at;

	h.max_offset = npages * 4096 - h.page_offset - random() % 4096 % (npages * 4096 - h.page_offset);
	for (u32 i = 0; i < npages; i++)
		pages[i] = rnd64() & 0xffffffffff000ULL;

	req->wr.wr_hi = htonl(FW_WR_OP_V(FW_ULPTX_WR) | FW_WR_ATOMIC_V(0));
	req->wr.wr_mid = htonl(FW_WR_LEN16_V(DIV_ROUND_UP(wr_len, 16)) | FW_WR_FLOWID_V(tid));
	req->cmd = htonl(ULPTX_CMD_V(ULP_TX_MEM_WRITE) | ULP_MEMIO_ORDER_V(0) | T5_ULP_MEMIO_IMM_V(1));
	req->dlen = htonl(ULP_MEMIO_DATA_LEN_V(dlen >> 5));
	req->lock_addr = htonl(ULP_MEMIO_ADDR_V(pm_addr >> 5));
	req->len16 = htonl(DIV_ROUND_UP(wr_len - sizeof(req->wr), 16));
	/* unsigned: 0x81 << 24 overflows an int, which UBSan stops at */
	idata->cmd_more = htonl(ULPTX_CMD_V((u32)ULP_TX_SC_IMM));
	idata->len = htonl(dlen);
	for (u32 i = 0; i < npods; i++, ppod++) {
		u32 page = (first + i) * PPOD_PAGES_MAX;

		ppod->hdr.vld_tid = htonl(PPOD_VALID_FLAG | PPOD_TID(tid));
		ppod->hdr.pgsz_tag_clr = htonl(h.tag);
		ppod->hdr.max_offset = htonl(h.max_offset);
		ppod->hdr.page_offset = htonl(h.page_offset);
		for (u32 j = 0; j <= PPOD_PAGES_MAX; j++)
			ppod->addr[j] = page + j < npages ? cpu_to_be64(pages[page + j]) : 0;
	}
	CHECK(sizeof(struct cxgbi_pagepod) == CXE_PPOD_LEN && 1U << PPOD_SIZE_SHIFT == CXE_PPOD_LEN);
	CHECK(ULPMEM_IDATA_MAX_NPPODS == CXE_PPOD_IMM_MAX && PPOD_PAGES_MAX == CXE_PPOD_PAGES);
	same("ULP_TX_MEM_WRITE of page pods",
	     ours, cxe_ulp_ppod_write(ours, sizeof(ours), pm_addr, &h, pages, npages, first, npods),
	     ref, wr_len);
	CHECK(cxe_model_ppm_write(&m, ref, wr_len) == (int)npods);
	if (first == 0) {
		CHECK(cxe_model_ppm_locate(&m, idx, tid, h.tag, 0, &at) == 0 &&
		      at == pages[0] + h.page_offset);
	}

	/* a clear: the same request, every pod's valid bit clear, as libcxgb's
	 * cxgbi_ppm_ppod_clear() leaves it; the model then places nothing */
	ppod = (struct cxgbi_pagepod *)(idata + 1);
	CHECK(cxe_ulp_ppod_clear(ours, sizeof(ours), pm_addr, tid, npods) == (int)wr_len);
	CHECK(!memcmp(ours, ref, sizeof(*req) + sizeof(*idata)));
	for (u32 i = 0; i < npods; i++, ppod++) {
		ppod->hdr.vld_tid = 0;
		CHECK(((struct cxgbi_pagepod *)(ours + sizeof(*req) + sizeof(*idata)))[i].hdr.vld_tid == 0);
	}
	CHECK(cxe_model_ppm_write(&m, ours, wr_len) == (int)npods);
	if (first == 0)
		CHECK(cxe_model_ppm_locate(&m, idx, tid, h.tag, 0, &at) == -ENOENT);
	CHECK(cxe_model_ppm_write(&m, ref, wr_len) == (int)npods);	/* libcxgb's clear */
	if (first == 0)
		CHECK(cxe_model_ppm_locate(&m, idx, tid, h.tag, 0, &at) == -ENOENT);

	/* the DDP tag: libcxgb's format, the first pod's index above a colour */
	CHECK(PPOD_IDX_SHIFT == CXE_PPOD_TAG_COLOR_BITS);
	CHECK(cxe_ppod_tag(idx, first) == cxgbi_ppm_make_ddp_tag(idx, first & 63));
}

/*
 * The tag format of a chip's tag mask, as libcxgb reads the mask
 * (cxgbi_tagmask_check()): the same index width and no-pods bit, the
 * same index read from a tag, and tags without pods spread as
 * cxgbi_ppm_make_non_ddp_tag() spreads a software tag
 */
static void golden_tagfmt(void)
{
	u32 bits = 8 + random() % 23, mask = (1U << (bits - 1)) | (rnd32() & ((1U << (bits - 1)) - 1));
	struct cxgbi_ppm ppm = { .base_idx = 0 };
	struct cxe_ppod_tagfmt f;
	u32 idx, tag, theirs, n;

	CHECK(cxe_ppod_tagfmt_init(&f, mask) == 0);
	cxgbi_tagmask_check(mask, &ppm.tformat);
	CHECK(f.idx_bits == ppm.tformat.idx_bits && f.noddp == ppm.tformat.no_ddp_mask);
	idx = rnd32() % cxe_ppod_tag_max_idx(&f);
	tag = cxe_ppod_tag(idx, rnd32());
	CHECK(cxe_ppod_tag_ddp(&f, tag) && cxgbi_ppm_is_ddp_tag(&ppm, tag));
	CHECK(cxe_ppod_tag_idx(&f, tag) == idx && cxgbi_ppm_ddp_tag_get_idx(&ppm, tag) == idx);
	n = rnd32() % CXE_PPOD_NODDP_TAGS;
	CHECK(cxgbi_ppm_make_non_ddp_tag(&ppm, n, &theirs) == 0);
	CHECK(cxe_ppod_tag_noddp(&f, n) == theirs);
	CHECK(!cxe_ppod_tag_ddp(&f, theirs) && !cxgbi_ppm_is_ddp_tag(&ppm, theirs));
	/* wider than the page size selector leaves: libcxgb's format breaks */
	CHECK(cxe_ppod_tagfmt_init(&f, 1U << (30 + random() % 2)) == -EINVAL);
}

/* the transmit model's CPL_FW4_ACK, read with the headers' struct */
static void golden_fw4_ack(void)
{
	struct cxe_model_txcred m;
	u8 wr[CXE_FW_OFLD_TX_DATA_WR_LEN], msg[CXE_CPL_FW4_ACK_LEN];
	const struct cpl_fw4_ack *a = (const void *)msg;
	struct cxe_fw_tx_data t = { .tid = rnd32() % (CXE_CPL_TID_MAX + 1), .len16 = 1 + random() % 200,
				    .plen = random() % 65536, .compl = random() & 1 };
	u32 isn = rnd32(), give = 1 + random() % t.len16;

	cxe_model_txcred_init(&m, t.tid, isn);
	CHECK(cxe_fw_ofld_tx_data_wr(wr, sizeof(wr), CXE_CHIP_T6, &t) == sizeof(wr));
	cxe_model_txcred_took(&m, wr, t.plen);
	CHECK(m.owed == (t.compl ? t.len16 : 0));
	CHECK(cxe_model_txcred_ack(&m, msg, give, false) == sizeof(*a));
	CHECK(sizeof(*a) == CXE_CPL_FW4_ACK_LEN);
	CHECK(ntohl(OPCODE_TID(a)) >> 24 == CPL_FW4_ACK && GET_TID(a) == t.tid);
	CHECK(a->credits == give && a->seq_vld == CPL_FW4_ACK_FLAGS_SEQVAL);
	CHECK(ntohl(a->snd_nxt) == isn + t.plen && ntohl(a->snd_una) == isn + t.plen);
	CHECK(m.held == t.len16 - give);
}

/*
 * The connection model's messages, read with the headers' structs: the
 * establishment, the peer's close, the reply to our close, a reset and
 * the reply to our abort, each for the model's TID.
 */
static void golden_model_conn(void)
{
	u32 tid = 1 + rnd32() % CXE_CPL_TID_MAX, isn = rnd32();
	u8 acc[CXE_CPL_PASS_ACCEPT_RPL_LEN], flowc[CXE_FW_FLOWC_WR_MAX_LEN];
	u8 close[CXE_CPL_CLOSE_CON_REQ_LEN], abort[CXE_CPL_ABORT_REQ_LEN];
	u8 msg[CXE_MODEL_CONN_MSG];
	struct cxe_cpl_accept a = { .tid = tid };
	struct cxe_fw_flowc f = { .tid = tid };
	struct cxe_model_conn m;
	const struct cpl_pass_establish *e = (const void *)msg;
	const struct cpl_peer_close *pc = (const void *)msg;
	const struct cpl_close_con_rpl *cr = (const void *)msg;
	const struct cpl_abort_req_rss *ar = (const void *)msg;
	const struct cpl_abort_rpl_rss *rr = (const void *)msg;
	u8 st = random() & 1 ? CPL_ERR_CONN_RESET : CPL_ERR_FINWAIT2_TIMEDOUT;

	cxe_model_conn_init(&m, tid, isn, ~isn);
	CHECK(cxe_model_conn_take(&m, acc, cxe_cpl_pass_accept_rpl(acc, sizeof(acc),
								   CXE_CHIP_T6, &a)) == 0);
	CHECK(cxe_model_conn_take(&m, flowc, cxe_fw_flowc_wr(flowc, sizeof(flowc), &f)) == 0);
	CHECK(cxe_model_conn_ack(&m));
	CHECK(cxe_model_conn_next(&m, msg) == sizeof(*e));
	CHECK(ntohl(OPCODE_TID(e)) >> 24 == CPL_PASS_ESTABLISH && GET_TID(e) == tid);
	/*
	 * the sequence numbers after the SYNs, as cxgbit, cxgb4i and chtls
	 * read them (the first byte of data each way)
	 */
	CHECK(ntohl(e->snd_isn) == isn + 1 && ntohl(e->rcv_isn) == ~isn + 1);

	CHECK(cxe_model_conn_fin(&m));
	CHECK(cxe_model_conn_next(&m, msg) == sizeof(*pc));
	CHECK(ntohl(OPCODE_TID(pc)) >> 24 == CPL_PEER_CLOSE && GET_TID(pc) == tid);

	CHECK(cxe_model_conn_take(&m, close, cxe_cpl_close_con_req(close, sizeof(close), tid, true)) == 0);
	if (random() & 1) {
		CHECK(cxe_model_conn_ack_fin(&m));
		CHECK(cxe_model_conn_next(&m, msg) == sizeof(*cr));
		CHECK(ntohl(OPCODE_TID(cr)) >> 24 == CPL_CLOSE_CON_RPL &&
		      GET_TID(cr) == tid && cr->status == CPL_ERR_NONE);
		CHECK(cxe_model_conn_release(&m) == 0);
		return;
	}
	CHECK(cxe_model_conn_reset(&m, st));
	CHECK(cxe_model_conn_next(&m, msg) == sizeof(*ar));
	CHECK(ntohl(OPCODE_TID(ar)) >> 24 == CPL_ABORT_REQ_RSS && GET_TID(ar) == tid);
	CHECK(ar->status == st);
	CHECK(cxe_model_conn_take(&m, abort, cxe_cpl_abort_req(abort, sizeof(abort), tid, true)) == 0);
	CHECK(cxe_model_conn_next(&m, msg) == sizeof(*rr));
	CHECK(ntohl(OPCODE_TID(rr)) >> 24 == CPL_ABORT_RPL_RSS && GET_TID(rr) == tid);
	CHECK(rr->status == CPL_ERR_NONE);
}

/*
 * The connection model's CPL_PASS_ACCEPT_REQ, read with the headers'
 * struct and macros, as a driver reads it (cxgbit's and chtls's fields)
 */
static void golden_model_accept_req(enum cxe_chip chip, bool v6)
{
	u8 buf[CXE_MODEL_ACCEPT_REQ_MAX];
	const struct cpl_pass_accept_req *req = (const void *)buf;
	struct cxe_model_syn s = {
		.tid = rnd32() & 0xffffff, .stid = rnd32() & 0xffffff,
		.ip_version = v6 ? 6 : 4, .local_port = rnd32(),
		.peer_port = rnd32(), .peer_isn = rnd32(), .window = rnd32(),
		.peer_mss = rnd32(), .wscale_ok = random() & 1,
		.peer_wscale = random() % 15, .sack = random() & 1,
		.tstamp = random() & 1, .ece = random() & 1,
		.cwr = random() & 1, .tos = random(),
	};
	u32 ip = v6 ? 40 : 20, hl;
	const u8 *iph = buf + sizeof(*req) + 14, *tcph = iph + ip;
	int len;

	for (int i = 0; i < 16; i++) {
		s.local_ip[i] = random();
		s.peer_ip[i] = random();
	}
	len = cxe_model_accept_req(buf, sizeof(buf), chip, &s);
	CHECK(len == (int)(sizeof(*req) + 14 + ip + 20));
	CHECK(ntohl(OPCODE_TID(req)) >> 24 == CPL_PASS_ACCEPT_REQ);
	CHECK(GET_TID(req) == s.tid);
	CHECK(PASS_OPEN_TID_G(ntohl(req->tos_stid)) == s.stid);
	CHECK(PASS_OPEN_TOS_G(ntohl(req->tos_stid)) == s.tos);
	CHECK(ntohs(req->len) == 14 + ip + 20);
	hl = ntohl(req->hdr_len);
	if (chip == CXE_CHIP_T5)
		CHECK(ETH_HDR_LEN_G(hl) == 14 && IP_HDR_LEN_G(hl) == ip &&
		      TCP_HDR_LEN_G(hl) == 20);
	else
		CHECK(T6_ETH_HDR_LEN_G(hl) == 14 && T6_IP_HDR_LEN_G(hl) == ip &&
		      T6_TCP_HDR_LEN_G(hl) == 20);
	CHECK(SYN_RX_CHAN_G(hl) == 0);
	CHECK(ntohs(req->tcpopt.mss) == s.peer_mss);
	/* chtls takes a scale above 14 for none offered */
	CHECK(s.wscale_ok ? req->tcpopt.wsf == s.peer_wscale : req->tcpopt.wsf > 14);
	CHECK(req->tcpopt.sack == s.sack && req->tcpopt.tstamp == s.tstamp);
	CHECK((iph[0] >> 4) == (v6 ? 6 : 4));
	if (v6) {
		CHECK(!memcmp(iph + 8, s.peer_ip, 16) && !memcmp(iph + 24, s.local_ip, 16));
	} else {
		CHECK((iph[0] & 0xf) * 4 == 20 && iph[1] == s.tos);
		CHECK(!memcmp(iph + 12, s.peer_ip, 4) && !memcmp(iph + 16, s.local_ip, 4));
	}
	CHECK((tcph[0] << 8 | tcph[1]) == s.peer_port);
	CHECK((tcph[2] << 8 | tcph[3]) == s.local_port);
	CHECK(!!(tcph[13] & 0x40) == s.ece && !!(tcph[13] & 0x80) == s.cwr);
}

/* the connection model's CPL_SET_TCB_RPL, read with the headers' struct */
static void golden_model_set_tcb_rpl(void)
{
	u8 buf[CXE_CPL_SET_TCB_RPL_LEN];
	const struct cpl_set_tcb_rpl *tr = (const void *)buf;
	u32 tid = rnd32() & 0xffffff;
	u8 cookie = random() & TCB_COOKIE_M, st = random();

	CHECK(cxe_model_set_tcb_rpl(buf, tid, cookie, st) == sizeof(*tr));
	CHECK(ntohl(OPCODE_TID(tr)) >> 24 == CPL_SET_TCB_RPL && GET_TID(tr) == tid);
	CHECK(TCB_COOKIE_G(tr->cookie) == cookie && tr->status == st);
	CHECK(tr->oldval == 0);
}

/*
 * The options of an accept: the MTU table entry, window and scale chosen
 * as mainline cxgbit chooses them (cxgbit_pass_accept_req() clamps the
 * path MTU to the peer's MSS, cxgb_best_mtu() asks
 * cxgb4_best_aligned_mtu() for an 8-byte aligned payload, and
 * cxgbit_set_tcp_window() scales the windows with the link), on random
 * tables (sorted like an adapter's, or not), paths and SYNs.
 */
static void golden_accept_opts(void)
{
	u16 mtus[NMTUS];
	struct cxe_cpl_accept_req req = {
		.ip_version = random() & 1 ? 6 : 4, .tstamp = random() & 1,
		.peer_mss = random() & 3 ? 200 + random() % 9000 : 0,
		.ece = random() & 1, .cwr = random() & 1, .sack = random() & 1,
	};
	static const u32 speeds[] = { 1000, 10000, 25000, 40000, 50000, 100000 };
	struct cxe_c4_path p = { .mtus = mtus, .mtu = 200 + random() % 9500,
				 .speed_mbps = speeds[random() % 6] };
	struct cxe_cpl_accept a = { 0 };
	unsigned int idx, hdr, mtu = p.mtu, scale = p.speed_mbps / 10000;
	u32 rcv_win = 256 * 1024, snd_win = 256 * 1024, snd;
	bool sorted = random() & 1;

	CHECK(CXE_C4_NMTUS == NMTUS);
	for (int i = 0; i < NMTUS; i++)
		mtus[i] = 88 + random() % 9600;
	for (int i = 1; sorted && i < NMTUS; i++)
		for (int j = i; j > 0 && mtus[j - 1] > mtus[j]; j--) {
			u16 t = mtus[j];

			mtus[j] = mtus[j - 1];
			mtus[j - 1] = t;
		}
	hdr = (req.ip_version == 4 ? 20 : 40) + 20 + (req.tstamp ? 12 : 0);
	if (req.peer_mss && mtu > req.peer_mss + hdr)
		mtu = req.peer_mss + hdr;
	cxgb4_best_aligned_mtu(mtus, hdr, mtu - hdr, 8, &idx);
	if (scale) {
		rcv_win *= scale;
		snd_win *= scale;
	}
	rcv_win = rcv_win < RCV_BUFSIZ_M << 10 ? rcv_win : RCV_BUFSIZ_M << 10;
	snd_win = snd_win < 512U * 1024 ? snd_win : 512U * 1024;

	snd = cxe_c4conn_accept_opts(&req, &p, &a);
	CHECK(a.mss_idx == idx);
	CHECK(a.rcv_win == rcv_win && a.wscale == cxgb_compute_wscale(rcv_win));
	CHECK(snd == snd_win);
	CHECK(a.tstamps == req.tstamp && a.sack == req.sack &&
	      a.ecn == (req.ece && req.cwr));
}

int main(int argc, char **argv)
{
	srandom(13);
	test_constants();
	for (int i = 0; i < 2000; i++) {
		golden_accept_rpl(CXE_CHIP_T5);
		golden_accept_rpl(CXE_CHIP_T6);
		golden_set_tcb();
		golden_flowc();
		golden_tx_data(CXE_CHIP_T5);
		golden_tx_data(CXE_CHIP_T6);
		golden_iso();
		golden_small();
		golden_accept_req(CXE_CHIP_T5, i & 1, i & 2);
		golden_accept_req(CXE_CHIP_T6, i & 1, i & 2);
		golden_establish();
		golden_iscsi();
		golden_model_rx();
		golden_model_tx(CXE_CHIP_T5);
		golden_model_tx(CXE_CHIP_T6);
		golden_conn();
		golden_ppod();
		golden_tagfmt();
		golden_fw4_ack();
		golden_model_conn();
		golden_accept_opts();
		golden_model_accept_req(CXE_CHIP_T5, i & 1);
		golden_model_accept_req(CXE_CHIP_T6, i & 1);
		golden_model_set_tcb_rpl();
	}
	printf("golden_cpl %s: %d checks against cxgb4's headers, %d failures\n",
	       argc > 1 ? argv[1] : "", checks, failures);
	return failures ? 1 : 0;
}
