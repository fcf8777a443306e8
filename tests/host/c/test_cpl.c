// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of kmod/cxgbit-ext/adapters/cxgb4/cpl.c in user space: each
 * builder's fields at their byte offsets, T5 against T6, the length it
 * returns and its refusals (buffer one byte short and left untouched,
 * arguments that do not fit); each parser on hand-made messages, on every
 * truncation and on a wrong opcode; the PASS_ACCEPT_REQ 4-tuple for IPv4
 * and IPv6 on both chips. The backend's own requests read back as the
 * chip model takes them, and the model's CPL_PASS_ACCEPT_REQ and
 * CPL_SET_TCB_RPL (model/ulp_conn.c) through the parsers. The golden test
 * checks the same messages against cxgb4's own headers.
 */
#include <stdio.h>
#include <stdlib.h>
#include "cpl.h"
#include "ulp_conn.h"
#include "check.h"

static u32 be32(const u8 *p, unsigned int off)
{
	return (u32)p[off] << 24 | (u32)p[off + 1] << 16 |
	       (u32)p[off + 2] << 8 | p[off + 3];
}

static u64 be64(const u8 *p, unsigned int off)
{
	return (u64)be32(p, off) << 32 | be32(p, off + 4);
}

static void set32(u8 *p, unsigned int off, u32 v)
{
	p[off] = v >> 24;
	p[off + 1] = v >> 16;
	p[off + 2] = v >> 8;
	p[off + 3] = v;
}

static void set16(u8 *p, unsigned int off, u16 v)
{
	p[off] = v >> 8;
	p[off + 1] = v;
}

/* a TP work request carrying a CPL of cpl_len bytes, for tid */
static void check_tp_wr(const u8 *p, unsigned int cpl_len, u8 op, u32 tid)
{
	CHECK(p[0] == CXE_FW_TP_WR);
	CHECK((be32(p, 0) & 0xff) == cpl_len - 16);
	CHECK(be32(p, 4) == (tid << 8 | (cpl_len + 15) / 16));
	CHECK(be64(p, 8) == 0);
	CHECK(p[16] == op);
	CHECK((be32(p, 16) & 0xffffff) == tid);
}

/* one byte short: -ENOSPC and nothing written; NULL: -EINVAL */
#define CHECK_SHORT(call_with_size, want_len) do {			\
	u8 *_b = buf;							\
	memset(buf, 0xa5, sizeof(buf));					\
	{								\
		size_t size = (want_len) - 1;				\
		CHECK((call_with_size) == -ENOSPC);			\
	}								\
	for (size_t _i = 0; _i < sizeof(buf); _i++)			\
		if (_b[_i] != 0xa5) {					\
			CHECK(!"short buffer was written");		\
			break;						\
		}							\
} while (0)

static void test_accept_rpl(void)
{
	struct cxe_cpl_accept a = {
		.tid = 0x12345, .iss = 0xdeadbeef, .rcv_win = 256 * 1024,
		.l2t_idx = 0xabc, .rss_qid = 0x155, .mss_idx = 9,
		.tx_chan = 2, .smac_idx = 0x7e, .tos = 0xb8, .wscale = 7,
		.tstamps = true, .sack = true, .ecn = false,
	};
	u8 buf[64], t5[64];
	u32 opt2;
	u64 opt0;

	memset(buf, 0xee, sizeof(buf));
	CHECK(cxe_cpl_pass_accept_rpl(buf, sizeof(buf), CXE_CHIP_T5, &a) ==
	      CXE_CPL_PASS_ACCEPT_RPL_LEN);
	check_tp_wr(buf, 40, CXE_CPL_PASS_ACCEPT_RPL, a.tid);
	opt2 = be32(buf, 20);
	opt0 = be64(buf, 24);
	CHECK(be32(buf, 32) == 0xdeadbeef);
	CHECK(be32(buf, 36) == 0 && be64(buf, 40) == 0);
	CHECK(buf[48] == 0xee);		/* nothing past the message */
	CHECK((opt0 >> 60) == 9);			/* MSS index */
	CHECK((opt0 >> 50 & 0xf) == 7);			/* window scale */
	CHECK(opt0 & 1ULL << 48);			/* TCAM bypass */
	CHECK((opt0 >> 36 & 0xfff) == 0xabc);		/* L2T index */
	CHECK((opt0 >> 28 & 0xff) == 0x7e);		/* SMAC */
	CHECK((opt0 >> 22 & 0x3f) == 0xb8 >> 2);	/* DSCP */
	CHECK((opt0 >> 12 & 0x3ff) == 256);		/* KiB */
	CHECK((opt0 >> 8 & 0xf) == 2);			/* ULP iSCSI */
	CHECK((opt0 >> 2 & 3) == 2);			/* TX channel */
	CHECK((opt2 & 0x3ff) == 0x155 && opt2 & BIT(10));
	CHECK(opt2 & BIT(29) && opt2 & BIT(30) && opt2 & BIT(28));
	CHECK(!(opt2 & BIT(27)) && !(opt2 & BIT(20)));	/* no ECN, T5 */
	CHECK(opt2 & BIT(31) && opt2 & BIT(18));
	CHECK((opt2 >> 14 & 3) == 2);			/* NewReno */
	memcpy(t5, buf, sizeof(t5));

	/* T6: same message but RX_FC_DISABLE */
	CHECK(cxe_cpl_pass_accept_rpl(buf, sizeof(buf), CXE_CHIP_T6, &a) ==
	      CXE_CPL_PASS_ACCEPT_RPL_LEN);
	CHECK(be32(buf, 20) == (opt2 | BIT(20)));
	CHECK(!memcmp(buf, t5, 20) && !memcmp(buf + 24, t5 + 24, 24));

	/* window clamped to 10 bits of KiB; no scale, no scale enable */
	a.rcv_win = 64 << 20;
	a.wscale = 0;
	a.ecn = true;
	CHECK(cxe_cpl_pass_accept_rpl(buf, sizeof(buf), CXE_CHIP_T5, &a) > 0);
	CHECK((be64(buf, 24) >> 12 & 0x3ff) == 0x3ff);
	CHECK(!(be32(buf, 20) & BIT(28)) && be32(buf, 20) & BIT(27));

	CHECK_SHORT(cxe_cpl_pass_accept_rpl(buf, size, CXE_CHIP_T5, &a),
		    CXE_CPL_PASS_ACCEPT_RPL_LEN);
	CHECK(cxe_cpl_pass_accept_rpl(buf, sizeof(buf), 4, &a) == -EINVAL);
	CHECK(cxe_cpl_pass_accept_rpl(NULL, 64, CXE_CHIP_T5, &a) == -EINVAL);
	CHECK(cxe_cpl_pass_accept_rpl(buf, 64, CXE_CHIP_T5, NULL) == -EINVAL);
	a.mss_idx = 16;
	CHECK(cxe_cpl_pass_accept_rpl(buf, 64, CXE_CHIP_T5, &a) == -EINVAL);
	a.mss_idx = 0;
	a.rss_qid = 0x400;
	CHECK(cxe_cpl_pass_accept_rpl(buf, 64, CXE_CHIP_T5, &a) == -EINVAL);
	a.rss_qid = 0;
	a.wscale = 15;
	CHECK(cxe_cpl_pass_accept_rpl(buf, 64, CXE_CHIP_T5, &a) == -EINVAL);
	a.wscale = 0;
	a.tid = CXE_CPL_TID_MAX + 1;
	CHECK(cxe_cpl_pass_accept_rpl(buf, 64, CXE_CHIP_T5, &a) == -EINVAL);
	a.tid = CXE_CPL_TID_MAX;
	CHECK(cxe_cpl_pass_accept_rpl(buf, 64, CXE_CHIP_T5, &a) == 48);
}

static void test_set_tcb(void)
{
	struct cxe_cpl_tcb_field f = {
		.tid = 77, .reply_qid = 0x2abc, .no_reply = true, .cookie = 5,
		.word = 31, .mask = 0x0123456789abcdefULL,
		.val = 0xfedcba9876543210ULL,
	};
	u8 buf[64];

	CHECK(cxe_cpl_set_tcb_field(buf, sizeof(buf), &f) ==
	      CXE_CPL_SET_TCB_FIELD_LEN);
	check_tp_wr(buf, 40, CXE_CPL_SET_TCB_FIELD, 77);
	CHECK(be32(buf, 20) == ((0x8000U | 0x2abc) << 16 | (5 << 5 | 31)));
	CHECK(be64(buf, 24) == f.mask && be64(buf, 32) == f.val);
	CHECK(be64(buf, 40) == 0);
	CHECK_SHORT(cxe_cpl_set_tcb_field(buf, size, &f),
		    CXE_CPL_SET_TCB_FIELD_LEN);
	f.word = 32;
	CHECK(cxe_cpl_set_tcb_field(buf, sizeof(buf), &f) == -EINVAL);
	f.word = 0;
	f.cookie = 8;
	CHECK(cxe_cpl_set_tcb_field(buf, sizeof(buf), &f) == -EINVAL);
	f.cookie = 0;
	f.reply_qid = 0x4000;
	CHECK(cxe_cpl_set_tcb_field(buf, sizeof(buf), &f) == -EINVAL);

	for (int h = 0; h < 2; h++)
		for (int d = 0; d < 2; d++) {
			CHECK(cxe_cpl_set_tcb_submode(buf, sizeof(buf), 9, 3,
						      h, d) == 48);
			CHECK(be32(buf, 20) == 3U << 16);	/* reply wanted */
			CHECK(be64(buf, 24) == 0x30);
			CHECK(be64(buf, 32) == (u64)(h | d << 1) << 4);
		}
	for (u8 i = 0; i < 4; i++) {
		CHECK(cxe_cpl_set_tcb_pgidx(buf, sizeof(buf), 9, 3, i) == 48);
		CHECK(be64(buf, 24) == 0x300 && be64(buf, 32) == (u64)i << 8);
	}
	CHECK(cxe_cpl_set_tcb_pgidx(buf, sizeof(buf), 9, 3, 4) == -EINVAL);
}

static void test_flowc(void)
{
	struct cxe_fw_flowc f = {
		.tid = 0x1234, .pf = 4, .vf = 0, .channel = 1, .port = 1,
		.iqid = 0x345, .snd_nxt = 1000, .rcv_nxt = 2000,
		.sndbuf = 256 * 1024, .mss = 1448, .txdataplen_max = 65536,
	};
	static const u8 base[9] = { 0, 1, 2, 3, 4, 5, 6, 7, 8 };
	const u32 vals[9] = { 4 << 8, 1, 1, 0x345, 1000, 2000, 256 * 1024,
			      1448, 65536 };
	u8 buf[CXE_FW_FLOWC_WR_MAX_LEN + 16];
	int len;

	len = cxe_fw_flowc_wr(buf, sizeof(buf), &f);
	CHECK(len == 80);
	CHECK(be32(buf, 0) == ((u32)CXE_FW_FLOWC_WR << 24 | 9));
	CHECK(be32(buf, 4) == (0x1234U << 8 | 5));
	for (int i = 0; i < 9; i++) {
		CHECK(buf[8 + 8 * i] == base[i]);
		CHECK(!buf[9 + 8 * i] && !buf[10 + 8 * i] && !buf[11 + 8 * i]);
		CHECK(be32(buf, 12 + 8 * i) == vals[i]);
	}
	f.rcv_scale = 7;		/* 10 parameters: 88 -> 96 bytes */
	len = cxe_fw_flowc_wr(buf, sizeof(buf), &f);
	CHECK(len == 96 && (be32(buf, 0) & 0xff) == 10);
	CHECK(buf[80] == 14 && be32(buf, 84) == 7 && be64(buf, 88) == 0);
	f.dcb = true;
	f.dcb_prio = 3;
	len = cxe_fw_flowc_wr(buf, sizeof(buf), &f);
	CHECK(len == 96 && (be32(buf, 4) & 0xff) == 6);
	CHECK(buf[88] == 12 && be32(buf, 92) == 3);
	f.ulp_mode = true;
	len = cxe_fw_flowc_wr(buf, sizeof(buf), &f);
	CHECK(len == CXE_FW_FLOWC_WR_MAX_LEN && (be32(buf, 0) & 0xff) == 12);
	CHECK(buf[96] == 15 && be32(buf, 100) == 2 && be64(buf, 104) == 0);
	CHECK_SHORT(cxe_fw_flowc_wr(buf, size, &f), CXE_FW_FLOWC_WR_MAX_LEN);
	f.tid = CXE_CPL_TID_MAX + 1;
	CHECK(cxe_fw_flowc_wr(buf, sizeof(buf), &f) == -EINVAL);
}

static void test_tx_data(void)
{
	struct cxe_fw_tx_data t = {
		.tid = 0x4321, .plen = 8192 + 48, .immdlen = 48, .len16 = 9,
		.compl = true,
	};
	u8 buf[32];
	u32 flags;

	CHECK(cxe_fw_ofld_tx_data_wr(buf, sizeof(buf), CXE_CHIP_T5, &t) == 16);
	CHECK(be32(buf, 0) == (0x0bU << 24 | BIT(21) | 48));
	CHECK(be32(buf, 4) == (0x4321U << 8 | 9));
	CHECK(be32(buf, 8) == 8192 + 48);
	flags = be32(buf, 12);
	/* T5 without digests: forced, ULP mode iSCSI, submode 0, shove */
	CHECK(flags == (BIT(29) | BIT(13) | 2 << 10));
	t.hcrc = true;
	CHECK(cxe_fw_ofld_tx_data_wr(buf, sizeof(buf), CXE_CHIP_T5, &t) == 16);
	CHECK(be32(buf, 12) == (BIT(29) | 2 << 10 | 1 << 6));
	t.dcrc = true;
	t.iso = true;
	t.compl = false;
	CHECK(cxe_fw_ofld_tx_data_wr(buf, sizeof(buf), CXE_CHIP_T6, &t) == 16);
	CHECK(be32(buf, 0) == (0x45U << 24 | 48));
	CHECK(be32(buf, 12) == (BIT(29) | BIT(20) | 2 << 10 | 0xb << 6));
	CHECK_SHORT(cxe_fw_ofld_tx_data_wr(buf, size, CXE_CHIP_T6, &t), 16);
	CHECK(cxe_fw_ofld_tx_data_wr(buf, sizeof(buf), 7, &t) == -EINVAL);
}

static void test_iso(void)
{
	struct cxe_cpl_iso i = {
		.first = true, .last = false, .hcrc = true, .dcrc = false,
		.pdu_type = 2, .mpdu = 8190, .burst_size = 65535,
		.len = 65535 + 8 * 48, .datasn_offset = 3,
		.buffer_offset = 4096, .seglen_offset = 0x123456,
	};
	u8 buf[48];

	CHECK(cxe_cpl_tx_data_iso(buf, sizeof(buf), &i) == 32);
	CHECK(be32(buf, 0) == (0x1fU << 24 | BIT(23) | BIT(20) | 2 << 16));
	CHECK(buf[4] == 0 && buf[5] == 0);
	CHECK(buf[6] == 0x08 && buf[7] == 0x00);	/* 8190 / 4 rounded up */
	CHECK(be32(buf, 8) == 16384);			/* 65535 / 4 rounded up */
	CHECK(be32(buf, 12) == 65535 + 8 * 48);
	CHECK(be32(buf, 16) == 0x123456);
	CHECK(be32(buf, 20) == 3 && be32(buf, 24) == 4096);
	CHECK(be32(buf, 28) == 0);
	i.first = false;
	i.last = true;
	i.hcrc = false;
	i.dcrc = true;
	i.immediate = true;
	CHECK(cxe_cpl_tx_data_iso(buf, sizeof(buf), &i) == 32);
	CHECK(be32(buf, 0) == (0x1fU << 24 | BIT(22) | BIT(19) | BIT(18) |
			       2 << 16));
	CHECK_SHORT(cxe_cpl_tx_data_iso(buf, size, &i), 32);
	i.pdu_type = 4;
	CHECK(cxe_cpl_tx_data_iso(buf, sizeof(buf), &i) == -EINVAL);
	i.pdu_type = 0;
	i.mpdu = 0;
	CHECK(cxe_cpl_tx_data_iso(buf, sizeof(buf), &i) == -EINVAL);
	i.mpdu = 4 * 0xffff + 1;
	CHECK(cxe_cpl_tx_data_iso(buf, sizeof(buf), &i) == -EINVAL);
	i.mpdu = 4 * 0xffff;
	CHECK(cxe_cpl_tx_data_iso(buf, sizeof(buf), &i) == 32);
	i.seglen_offset = 0x1000000;
	CHECK(cxe_cpl_tx_data_iso(buf, sizeof(buf), &i) == -EINVAL);
}

static void test_small(void)
{
	struct cxe_cpl_rx_ack a = {
		.tid = 5, .credits = 65536, .set_dack = true, .dack_mode = 3,
	};
	u8 buf[48];

	CHECK(cxe_cpl_rx_data_ack(buf, sizeof(buf), &a) == 32);
	check_tp_wr(buf, 24, CXE_CPL_RX_DATA_ACK, 5);
	CHECK(be32(buf, 20) == (BIT(31) | 3U << 29 | 65536));
	CHECK(be64(buf, 24) == 0);
	a.set_dack = false;
	a.dack_mode = 0;
	a.force_ack = true;
	CHECK(cxe_cpl_rx_data_ack(buf, sizeof(buf), &a) == 32);
	CHECK(be32(buf, 20) == (BIT(28) | 65536));
	CHECK_SHORT(cxe_cpl_rx_data_ack(buf, size, &a), 32);
	a.credits = 0x10000000;
	CHECK(cxe_cpl_rx_data_ack(buf, sizeof(buf), &a) == -EINVAL);
	a.credits = 1;
	a.dack_mode = 1;		/* a mode without set_dack */
	CHECK(cxe_cpl_rx_data_ack(buf, sizeof(buf), &a) == -EINVAL);

	CHECK(cxe_cpl_close_con_req(buf, sizeof(buf), 6, false) == 32);
	check_tp_wr(buf, 24, CXE_CPL_CLOSE_CON_REQ, 6);
	CHECK(be32(buf, 20) == 0 && be64(buf, 24) == 0);
	/* the ack asked for: bit 21 of the first word, nothing else moves */
	CHECK(cxe_cpl_close_con_req(buf, sizeof(buf), 6, true) == 32);
	CHECK(be32(buf, 0) == ((u32)CXE_FW_TP_WR << 24 | 1U << 21 | 8));
	CHECK(be32(buf, 16) == ((u32)CXE_CPL_CLOSE_CON_REQ << 24 | 6));
	CHECK_SHORT(cxe_cpl_close_con_req(buf, size, 6, false), 32);

	CHECK(cxe_cpl_abort_req(buf, sizeof(buf), 7, true) == 32);
	check_tp_wr(buf, 32, CXE_CPL_ABORT_REQ, 7);
	CHECK(buf[25] == 0 && be32(buf, 20) == 0 && be32(buf, 28) == 0);
	CHECK(cxe_cpl_abort_req(buf, sizeof(buf), 7, false) == 32);
	CHECK(buf[25] == 1);
	CHECK(cxe_cpl_abort_rpl(buf, sizeof(buf), 8, false) == 32);
	check_tp_wr(buf, 32, CXE_CPL_ABORT_RPL, 8);
	CHECK(buf[25] == 1);
	CHECK_SHORT(cxe_cpl_abort_rpl(buf, size, 8, false), 32);
	CHECK(cxe_cpl_abort_req(buf, sizeof(buf), CXE_CPL_TID_MAX + 1, 1) ==
	      -EINVAL);
}

/* every truncation and a wrong opcode of a valid message are refused */
typedef int (*parse_fn)(const void *buf, size_t len, void *out);

static void check_refusals(parse_fn fn, u8 *msg, size_t len, size_t cpl_len)
{
	u8 out[256];
	u8 op = msg[0];

	CHECK(fn(msg, len, out) == (int)cpl_len);
	for (size_t n = 0; n < cpl_len; n++) {
		u8 *copy = malloc(n ? n : 1);	/* exact size: ASan sees overreads */

		memcpy(copy, msg, n);
		CHECK(fn(copy, n, out) == -EBADMSG);
		free(copy);
	}
	for (int o = 0; o < 256; o++) {
		msg[0] = o;
		if (o != op)
			CHECK(fn(msg, len, out) == -EBADMSG);
	}
	msg[0] = op;
	CHECK(fn(NULL, len, out) == -EBADMSG);
	CHECK(fn(msg, len, NULL) == -EBADMSG);
}

#define REFUSALS(fn, msg, len, cpl_len) \
	check_refusals((parse_fn)(fn), msg, len, cpl_len)

static void cpl_head(u8 *m, u8 op, u32 tid)
{
	set32(m, 0, (u32)op << 24 | tid);
}

/* a SYN after the CPL: returns the message length */
static size_t make_accept_req(u8 *m, enum cxe_chip chip, bool v6, bool vlan)
{
	u32 eth = vlan ? 18 : 14, ip = v6 ? 40 : 20, tcp = 32, hl;
	u8 *iph = m + 24 + eth, *tcph = iph + ip;

	memset(m, 0, 24 + eth + ip + tcp);
	cpl_head(m, CXE_CPL_PASS_ACCEPT_REQ, 0xabcdef);
	set16(m, 6, eth + ip + tcp);
	if (chip == CXE_CHIP_T5)
		hl = eth << 26 | ip << 16 | tcp << 10;
	else
		hl = eth << 24 | ip << 14 | tcp << 8;
	set32(m, 8, hl | 2);
	set16(m, 12, 0x0064);
	set16(m, 14, 3 << 12 | 1 << 9 | 0x1a5);
	set32(m, 16, 0x10U << 24 | 0x77);
	set16(m, 20, 1460);
	m[22] = 9;
	m[23] = 0xc0;
	if (v6) {
		iph[0] = 0x60;
		for (int i = 0; i < 16; i++) {
			iph[8 + i] = 0x20 + i;		/* source: the peer */
			iph[24 + i] = 0x40 + i;
		}
	} else {
		iph[0] = 0x45;
		memcpy(iph + 12, "\x0a\x00\x00\x01", 4);
		memcpy(iph + 16, "\x0a\x00\x00\x02", 4);
	}
	set16(tcph, 0, 51000);
	set16(tcph, 2, 3260);
	tcph[12] = (tcp / 4) << 4;
	tcph[13] = 0xc2;			/* CWR ECE SYN */
	return 24 + eth + ip + tcp;
}

static void test_accept_req(void)
{
	struct cxe_cpl_accept_req r;
	u8 m[160];
	size_t len;

	for (int c = 0; c < 2; c++)
		for (int v = 0; v < 4; v++) {
			enum cxe_chip chip = c ? CXE_CHIP_T6 : CXE_CHIP_T5;
			bool v6 = v & 1, vlan = v & 2;

			len = make_accept_req(m, chip, v6, vlan);
			CHECK(cxe_cpl_parse_pass_accept_req(m, len, chip, &r) ==
			      24);
			CHECK(r.tid == 0xabcdef && r.stid == 0x77 && r.tos == 0x10);
			CHECK(r.rx_chan == 2 && r.intf == 3 && r.xact_match);
			CHECK(r.mac_idx == 0x1a5 && r.vlan == 0x64);
			CHECK(r.peer_mss == 1460 && r.peer_wscale == 9);
			CHECK(r.sack && r.tstamp && r.ece && r.cwr);
			CHECK(r.eth_len == (vlan ? 18 : 14) && r.tcp_len == 32);
			CHECK(r.ip_version == (v6 ? 6 : 4));
			CHECK(r.peer_port == 51000 && r.local_port == 3260);
			if (v6)
				CHECK(r.peer_ip[0] == 0x20 && r.local_ip[15] == 0x4f);
			else
				CHECK(!memcmp(r.peer_ip, "\x0a\x00\x00\x01", 4) &&
				      !memcmp(r.local_ip, "\x0a\x00\x00\x02", 4));
			/* the SYN must reach the TCP ports and flags */
			for (size_t n = 0; n < len - 12; n++)
				CHECK(cxe_cpl_parse_pass_accept_req(m, n, chip,
								    &r) ==
				      -EBADMSG);
			/* the other chip's field layout reads other lengths */
			CHECK(cxe_cpl_parse_pass_accept_req(m, len, c ?
					CXE_CHIP_T5 : CXE_CHIP_T6, &r) ==
			      -EBADMSG ||
			      r.eth_len != (vlan ? 18 : 14));
		}
	len = make_accept_req(m, CXE_CHIP_T5, false, false);
	m[24 + 14] = 0x55;			/* IP version 5 */
	CHECK(cxe_cpl_parse_pass_accept_req(m, len, CXE_CHIP_T5, &r) ==
	      -EBADMSG);
	m[24 + 14] = 0x46;			/* IHL 24 > ip_len 20 */
	CHECK(cxe_cpl_parse_pass_accept_req(m, len, CXE_CHIP_T5, &r) ==
	      -EBADMSG);
	len = make_accept_req(m, CXE_CHIP_T5, true, false);
	m[24 + 14] = 0x45;			/* IPv4 version, IPv6 length */
	CHECK(cxe_cpl_parse_pass_accept_req(m, len, CXE_CHIP_T5, &r) == 24);
	m[24 + 14] = 0x60;
	set32(m, 8, 14 << 26 | 24 << 16 | 32 << 10);	/* IPv6 in 24 bytes */
	CHECK(cxe_cpl_parse_pass_accept_req(m, len, CXE_CHIP_T5, &r) ==
	      -EBADMSG);
	set32(m, 8, 12 << 26 | 40 << 16 | 32 << 10);	/* Ethernet 12 */
	CHECK(cxe_cpl_parse_pass_accept_req(m, len, CXE_CHIP_T5, &r) ==
	      -EBADMSG);
	set32(m, 8, 14 << 26 | 40 << 16 | 16 << 10);	/* TCP 16 */
	CHECK(cxe_cpl_parse_pass_accept_req(m, len, CXE_CHIP_T5, &r) ==
	      -EBADMSG);
	set32(m, 8, 31 << 26 | 0x3ff << 16 | 63 << 10);	/* past the end */
	CHECK(cxe_cpl_parse_pass_accept_req(m, len, CXE_CHIP_T5, &r) ==
	      -EBADMSG);
	len = make_accept_req(m, CXE_CHIP_T5, false, false);
	CHECK(cxe_cpl_parse_pass_accept_req(m, len, 3, &r) == -EBADMSG);
	CHECK(cxe_cpl_parse_pass_accept_req(m, len, CXE_CHIP_T5, NULL) ==
	      -EBADMSG);
	m[0] = CXE_CPL_PASS_ESTABLISH;
	CHECK(cxe_cpl_parse_pass_accept_req(m, len, CXE_CHIP_T5, &r) ==
	      -EBADMSG);
}

static void test_establish(void)
{
	struct cxe_cpl_established e;
	u8 m[24] = { 0 };

	cpl_head(m, CXE_CPL_PASS_ESTABLISH, 99);
	set32(m, 8, 0x28U << 24 | 0x33);
	set16(m, 12, 0x0102);
	set16(m, 14, 0xa7e0);		/* mss 10, wscale 7, ts, sack, ws ok */
	set32(m, 16, 1000);
	set32(m, 20, 2000);
	CHECK(cxe_cpl_parse_pass_establish(m, sizeof(m), &e) == 24);
	CHECK(e.tid == 99 && e.stid == 0x33 && e.tos == 0x28);
	CHECK(e.mac_idx == 0x102 && e.tcp_opt == 0xa7e0);
	CHECK(e.mss_idx == 10 && e.snd_wscale == 7);
	CHECK(e.tstamp && e.sack && e.wscale_ok);
	CHECK(e.snd_isn == 1000 && e.rcv_isn == 2000);
	set16(m, 14, 0x0010);
	CHECK(cxe_cpl_parse_pass_establish(m, sizeof(m), &e) == 24);
	CHECK(!e.tstamp && !e.sack && !e.wscale_ok && !e.mss_idx);
	REFUSALS(cxe_cpl_parse_pass_establish, m, sizeof(m), 24);
}

static void test_iscsi(void)
{
	struct cxe_cpl_iscsi_pdu p;
	u8 m[24 + 48] = { 0 };

	cpl_head(m, CXE_CPL_ISCSI_HDR, 3);
	set16(m, 4, 0x8000 | 8240);
	set16(m, 6, 48);
	set32(m, 8, 0x11223344);
	set16(m, 12, 0);
	m[15] = 0;
	CHECK(cxe_cpl_parse_iscsi_hdr(m, 16 + 48, &p) == 16);
	CHECK(p.tid == 3 && p.ddp && p.pdu_len == 8240 && p.len == 48);
	CHECK(p.seq == 0x11223344);
	REFUSALS(cxe_cpl_parse_iscsi_hdr, m, 16 + 48, 16);
	set16(m, 6, 47);		/* shorter than a BHS */
	CHECK(cxe_cpl_parse_iscsi_hdr(m, 16 + 48, &p) == -EBADMSG);

	memset(m, 0, sizeof(m));
	cpl_head(m, CXE_CPL_ISCSI_DATA, 3);
	set16(m, 6, 8192);
	set32(m, 8, 0x11223374);
	m[15] = 0x5a;
	/* the payload may lie in later fragments: only the CPL is read */
	CHECK(cxe_cpl_parse_iscsi_data(m, 16, &p) == 16);
	CHECK(p.len == 8192 && p.seq == 0x11223374 && p.status == 0x5a);
	REFUSALS(cxe_cpl_parse_iscsi_data, m, 16, 16);

	memset(m, 0, sizeof(m));
	cpl_head(m, CXE_CPL_RX_ISCSI_DDP, 3);
	set16(m, 6, 8240);
	set32(m, 8, 0x11223344);
	set32(m, 12, 0x11225374);
	set32(m, 16, 0xcafef00d);
	set32(m, 20, BIT(16) | BIT(21));
	CHECK(cxe_cpl_parse_rx_iscsi_ddp(m, 24, &p) == 24);
	CHECK(p.len == 8240 && p.ulp_crc == 0xcafef00d);
	CHECK(p.ddp_report == 0x11225374);
	CHECK(p.st.ddp && p.st.dcrc_err && !p.st.hcrc_err && !p.st.pad_err);
	CHECK(!p.st.other && p.st.raw == (BIT(16) | BIT(21)));
	REFUSALS(cxe_cpl_parse_rx_iscsi_ddp, m, 24, 24);

	memset(m, 0, sizeof(m));
	cpl_head(m, CXE_CPL_RX_ISCSI_CMP, 3);
	set16(m, 4, 0x8000 | 65535 % 0x8000);
	set16(m, 6, 48);
	set32(m, 8, 0x55);
	set32(m, 16, 0x01020304);
	set32(m, 20, BIT(19) | BIT(20) | BIT(3));
	CHECK(cxe_cpl_parse_rx_iscsi_cmp(m, sizeof(m), &p) == 24);
	CHECK(p.ddp && p.len == 48 && p.seq == 0x55 && p.ulp_crc == 0x01020304);
	CHECK(!p.st.ddp && p.st.pad_err && p.st.hcrc_err && !p.st.dcrc_err);
	CHECK(p.st.other);
	REFUSALS(cxe_cpl_parse_rx_iscsi_cmp, m, sizeof(m), 24);
	set16(m, 6, 0);
	CHECK(cxe_cpl_parse_rx_iscsi_cmp(m, sizeof(m), &p) == -EBADMSG);

	for (u32 bits = 0; bits < 16; bits++) {
		struct cxe_cpl_iscsi_status st;
		u32 v = (bits & 1 ? BIT(16) : 0) | (bits & 2 ? BIT(19) : 0) |
			(bits & 4 ? BIT(20) : 0) | (bits & 8 ? BIT(21) : 0);

		cxe_cpl_iscsi_status(v, &st);
		CHECK(st.ddp == !!(bits & 1) && st.pad_err == !!(bits & 2));
		CHECK(st.hcrc_err == !!(bits & 4) && st.dcrc_err == !!(bits & 8));
		CHECK(!st.other && st.raw == v);
	}
}

static void test_conn(void)
{
	struct cxe_cpl_fw4_ack a;
	struct cxe_cpl_conn c;
	struct cxe_cpl_tcb_rpl t;
	struct cxe_cpl_listen_rpl l;
	u8 m[24] = { 0 };

	cpl_head(m, CXE_CPL_FW4_ACK, 0x10);
	m[4] = 9;
	m[7] = CXE_FW4_ACK_SEQVAL | CXE_FW4_ACK_FLOWC;
	set32(m, 8, 5000);
	set32(m, 12, 4000);
	CHECK(cxe_cpl_parse_fw4_ack(m, 24, &a) == 24);
	CHECK(a.tid == 0x10 && a.credits == 9 && a.flags == 5);
	CHECK(a.snd_nxt == 5000 && a.snd_una == 4000);
	REFUSALS(cxe_cpl_parse_fw4_ack, m, 24, 24);

	memset(m, 0, sizeof(m));
	cpl_head(m, CXE_CPL_PEER_CLOSE, 0x11);
	set32(m, 4, 777);
	CHECK(cxe_cpl_parse_peer_close(m, 8, &c) == 8);
	CHECK(c.tid == 0x11 && c.rcv_nxt == 777);
	REFUSALS(cxe_cpl_parse_peer_close, m, 8, 8);

	memset(m, 0, sizeof(m));
	cpl_head(m, CXE_CPL_CLOSE_CON_RPL, 0x12);
	m[7] = 0;
	set32(m, 8, 10);
	set32(m, 12, 20);
	CHECK(cxe_cpl_parse_close_con_rpl(m, 16, &c) == 16);
	CHECK(c.tid == 0x12 && c.snd_nxt == 10 && c.rcv_nxt == 20);
	REFUSALS(cxe_cpl_parse_close_con_rpl, m, 16, 16);

	for (int s = 0; s < 256; s++) {
		memset(m, 0, sizeof(m));
		cpl_head(m, CXE_CPL_ABORT_REQ_RSS, 0x13);
		m[7] = s;
		CHECK(cxe_cpl_parse_abort_req_rss(m, 8, &c) == 8);
		CHECK(c.tid == 0x13 && c.status == s);
		CHECK(c.neg_adv == (s >= 35 && s <= 37));
	}
	REFUSALS(cxe_cpl_parse_abort_req_rss, m, 8, 8);

	memset(m, 0, sizeof(m));
	cpl_head(m, CXE_CPL_ABORT_RPL_RSS, 0x14);
	m[7] = 42;
	CHECK(cxe_cpl_parse_abort_rpl_rss(m, 8, &c) == 8);
	CHECK(c.tid == 0x14 && c.status == 42 && !c.neg_adv);
	REFUSALS(cxe_cpl_parse_abort_rpl_rss, m, 8, 8);

	memset(m, 0, sizeof(m));
	cpl_head(m, CXE_CPL_SET_TCB_RPL, 0x15);
	m[6] = 6 << 5;
	m[7] = 1;
	set32(m, 8, 0x01234567);
	set32(m, 12, 0x89abcdef);
	CHECK(cxe_cpl_parse_set_tcb_rpl(m, 16, &t) == 16);
	CHECK(t.tid == 0x15 && t.cookie == 6 && t.status == 1);
	CHECK(t.oldval == 0x0123456789abcdefULL);
	REFUSALS(cxe_cpl_parse_set_tcb_rpl, m, 16, 16);

	CHECK(cxe_cpl_opcode(m, 1) == CXE_CPL_SET_TCB_RPL);
	CHECK(cxe_cpl_opcode(m, 0) == -EBADMSG);

	/* a server's answers: the STID where a connection's TID is */
	memset(m, 0, sizeof(m));
	cpl_head(m, CXE_CPL_PASS_OPEN_RPL, 0x4567);
	m[7] = 3;
	CHECK(cxe_cpl_parse_pass_open_rpl(m, 8, &l) == 8);
	CHECK(l.stid == 0x4567 && l.status == 3);
	REFUSALS(cxe_cpl_parse_pass_open_rpl, m, 8, 8);
	CHECK(cxe_cpl_parse_close_listsrv_rpl(m, 8, &l) == -EBADMSG);
	cpl_head(m, CXE_CPL_CLOSE_LISTSRV_RPL, 0x4568);
	m[7] = 0;
	CHECK(cxe_cpl_parse_close_listsrv_rpl(m, 8, &l) == 8);
	CHECK(l.stid == 0x4568 && l.status == 0);
	REFUSALS(cxe_cpl_parse_close_listsrv_rpl, m, 8, 8);
	CHECK(cxe_cpl_opcode(NULL, 4) == -EBADMSG);
}

/* the backend's requests read back as the chip model takes them */
static void test_requests_back(void)
{
	struct cxe_cpl_tcb_field f = {
		.tid = 0x3abcde, .reply_qid = 0x2abc, .no_reply = true,
		.cookie = 5, .word = 31, .mask = 0x0123456789abcdefULL,
		.val = 0xfedcba9876543210ULL,
	}, g;
	struct cxe_cpl_rx_ack a = {
		.tid = 0x123456, .credits = 0x0fedcba, .set_dack = true,
		.dack_mode = 2, .force_ack = true,
	}, b;
	u8 buf[64], mask, val;

	CHECK(cxe_cpl_set_tcb_field(buf, sizeof(buf), &f) == 48);
	CHECK(cxe_cpl_parse_set_tcb_field(buf, 48, &g) == 40);
	CHECK(g.tid == f.tid && g.reply_qid == f.reply_qid && g.no_reply);
	CHECK(g.cookie == 5 && g.word == 31 && g.mask == f.mask &&
	      g.val == f.val);
	CHECK(!cxe_cpl_tcb_submode(&g, &mask, &val));	/* another word */
	REFUSALS(cxe_cpl_parse_set_tcb_field, buf, 48, 40);
	buf[16] = CXE_CPL_RX_DATA_ACK;			/* another CPL */
	CHECK(cxe_cpl_parse_set_tcb_field(buf, 48, &g) == -EBADMSG);
	buf[16] = CXE_CPL_SET_TCB_FIELD;
	buf[3] = 8;					/* immediate length */
	CHECK(cxe_cpl_parse_set_tcb_field(buf, 48, &g) == -EBADMSG);
	buf[3] = 24;
	set32(buf, 4, (0x3abcdf << 8) | 3);		/* flow id not the TID */
	CHECK(cxe_cpl_parse_set_tcb_field(buf, 48, &g) == -EBADMSG);

	for (int h = 0; h < 2; h++)
		for (int d = 0; d < 2; d++) {
			CHECK(cxe_cpl_set_tcb_submode(buf, sizeof(buf), 9, 3,
						      h, d) == 48);
			CHECK(cxe_cpl_parse_set_tcb_field(buf, 48, &g) == 40);
			CHECK(g.tid == 9 && g.reply_qid == 3 && !g.no_reply);
			CHECK(cxe_cpl_tcb_submode(&g, &mask, &val));
			CHECK(mask == 3 && val == (h | d << 1));
		}
	/* a write of the header digest bit alone */
	g.mask = (u64)CXE_ULP_CRC_HEADER << 4;
	g.val = ~0ULL;
	CHECK(cxe_cpl_tcb_submode(&g, &mask, &val));
	CHECK(mask == CXE_ULP_CRC_HEADER && val == CXE_ULP_CRC_HEADER);
	CHECK(cxe_cpl_set_tcb_pgidx(buf, sizeof(buf), 9, 3, 2) == 48);
	CHECK(cxe_cpl_parse_set_tcb_field(buf, 48, &g) == 40);
	CHECK(!cxe_cpl_tcb_submode(&g, &mask, &val));
	CHECK(!cxe_cpl_tcb_submode(NULL, &mask, &val));

	CHECK(cxe_cpl_rx_data_ack(buf, sizeof(buf), &a) == 32);
	CHECK(cxe_cpl_parse_rx_data_ack(buf, 32, &b) == 24);
	CHECK(b.tid == a.tid && b.credits == a.credits && b.set_dack &&
	      b.dack_mode == 2 && b.force_ack);
	REFUSALS(cxe_cpl_parse_rx_data_ack, buf, 32, 24);
	a.set_dack = false;
	a.dack_mode = 0;
	a.force_ack = false;
	CHECK(cxe_cpl_rx_data_ack(buf, sizeof(buf), &a) == 32);
	CHECK(cxe_cpl_parse_rx_data_ack(buf, 32, &b) == 24);
	CHECK(b.credits == a.credits && !b.set_dack && !b.force_ack);
	CHECK(cxe_cpl_close_con_req(buf, sizeof(buf), 0x123456, false) == 32);
	CHECK(cxe_cpl_parse_rx_data_ack(buf, 32, &b) == -EBADMSG);
}

/* the model's CPL_PASS_ACCEPT_REQ, field by field through the parser */
static void test_model_accept_req(void)
{
	struct cxe_cpl_accept_req r;
	u8 m[CXE_MODEL_ACCEPT_REQ_MAX + 8];

	for (int c = 0; c < 2; c++)
		for (int v = 0; v < 8; v++) {
			enum cxe_chip chip = c ? CXE_CHIP_T6 : CXE_CHIP_T5;
			bool v6 = v & 1, opts = v & 2, flags = v & 4;
			struct cxe_model_syn s = {
				.tid = 0xabcdef, .stid = 0x12345,
				.ip_version = v6 ? 6 : 4, .local_port = 3260,
				.peer_port = 51000, .peer_isn = 0xdeadbeef,
				.window = 64240, .peer_mss = 1460,
				.wscale_ok = opts, .peer_wscale = 7,
				.sack = opts, .tstamp = !opts, .ece = flags,
				.cwr = !flags, .tos = 0x48,
			};
			u32 len = 24 + 14 + (v6 ? 40 : 20) + 20;
			const u8 *ip = m + 24 + 14, *tcp = ip + (v6 ? 40 : 20);

			for (int i = 0; i < 16; i++) {
				s.local_ip[i] = 0x40 + i;
				s.peer_ip[i] = 0x20 + i;
			}
			memset(m, 0xa5, sizeof(m));
			CHECK(cxe_model_accept_req(m, len, chip, &s) == (int)len);
			CHECK(m[len] == 0xa5);
			CHECK(cxe_cpl_parse_pass_accept_req(m, len, chip, &r) == 24);
			CHECK(r.tid == 0xabcdef && r.stid == 0x12345 && r.tos == 0x48);
			CHECK(r.syn_len == len - 24);
			CHECK(r.eth_len == 14 && r.ip_len == (v6 ? 40 : 20) &&
			      r.tcp_len == 20);
			CHECK(r.rx_chan == 0 && r.intf == 0 && r.vlan == 0);
			CHECK(r.peer_mss == 1460);
			CHECK(r.peer_wscale == (opts ? 7 : 15));
			CHECK(r.sack == opts && r.tstamp == !opts);
			CHECK(r.ece == flags && r.cwr == !flags);
			CHECK(r.ip_version == (v6 ? 6 : 4));
			CHECK(!memcmp(r.local_ip, s.local_ip, v6 ? 16 : 4));
			CHECK(!memcmp(r.peer_ip, s.peer_ip, v6 ? 16 : 4));
			CHECK(r.local_port == 3260 && r.peer_port == 51000);
			/* a SYN: its flags, sequence number and window */
			CHECK((tcp[13] & 0x3f) == 0x02 && be32(tcp, 4) == 0xdeadbeef);
			CHECK((tcp[14] << 8 | tcp[15]) == 64240);
			if (v6)
				CHECK((be32(ip, 0) >> 20 & 0xff) == 0x48 && ip[6] == 6);
			else
				CHECK(ip[1] == 0x48 && ip[9] == 6 &&
				      (ip[2] << 8 | ip[3]) == 40);
			/* the other chip reads other lengths */
			CHECK(cxe_cpl_parse_pass_accept_req(m, len, c ?
					CXE_CHIP_T5 : CXE_CHIP_T6, &r) ==
			      -EBADMSG || r.eth_len != 14);
			/* one byte short: refused, nothing written */
			memset(m, 0xa5, sizeof(m));
			CHECK(cxe_model_accept_req(m, len - 1, chip, &s) == -ENOSPC);
			CHECK(m[0] == 0xa5 && m[len - 2] == 0xa5);
			s.ip_version = 5;
			CHECK(cxe_model_accept_req(m, sizeof(m), chip, &s) == -EINVAL);
			s.ip_version = 4;
			s.peer_wscale = 15;
			CHECK(cxe_model_accept_req(m, sizeof(m), chip, &s) ==
			      (opts ? -EINVAL : 24 + 14 + 20 + 20));
			CHECK(cxe_model_accept_req(m, sizeof(m), 3, &s) == -EINVAL);
		}
}

static void test_model_set_tcb_rpl(void)
{
	struct cxe_cpl_tcb_rpl t;
	u8 m[CXE_CPL_SET_TCB_RPL_LEN];

	for (u8 cookie = 0; cookie < 8; cookie++) {
		memset(m, 0xa5, sizeof(m));
		CHECK(cxe_model_set_tcb_rpl(m, 0x123456, cookie, cookie * 3) ==
		      CXE_CPL_SET_TCB_RPL_LEN);
		CHECK(cxe_cpl_parse_set_tcb_rpl(m, sizeof(m), &t) ==
		      CXE_CPL_SET_TCB_RPL_LEN);
		CHECK(t.tid == 0x123456 && t.cookie == cookie &&
		      t.status == cookie * 3 && t.oldval == 0);
	}
}

/* random messages of every length: no crash, only -EBADMSG or the CPL's length */
static void test_random(void)
{
	for (int i = 0; i < 20000; i++) {
		size_t len = random() % 128;
		u8 *m = malloc(len ? len : 1);
		struct cxe_cpl_accept_req r;
		struct cxe_cpl_iscsi_pdu p;
		int ret;

		for (size_t j = 0; j < len; j++)
			m[j] = random();
		if (len)
			m[0] = i & 1 ? CXE_CPL_PASS_ACCEPT_REQ : CXE_CPL_RX_ISCSI_CMP;
		ret = cxe_cpl_parse_pass_accept_req(m, len, i & 2 ? CXE_CHIP_T6 :
						    CXE_CHIP_T5, &r);
		CHECK(ret == -EBADMSG || ret == 24);
		ret = cxe_cpl_parse_rx_iscsi_cmp(m, len, &p);
		CHECK(ret == -EBADMSG || ret == 24);
		free(m);
	}
}

int main(void)
{
	srandom(1);
	test_accept_rpl();
	test_set_tcb();
	test_flowc();
	test_tx_data();
	test_iso();
	test_small();
	test_accept_req();
	test_establish();
	test_iscsi();
	test_conn();
	test_requests_back();
	test_model_accept_req();
	test_model_set_tcb_rpl();
	test_random();
	printf("test_cpl: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
