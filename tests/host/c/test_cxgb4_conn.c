// SPDX-License-Identifier: GPL-2.0-only
/*
 * The life of an offloaded connection in user space: the backend's state
 * machine (kmod/cxgbit-ext/adapters/cxgb4/conn.c) against the model of
 * the chip's connection side (tests/chipmodel/conn.c). Every message
 * the backend sends is built by cpl.c and taken by the model, which
 * refuses what the firmware would refuse; every message the model sends
 * is parsed by cpl.c and fed to the state machine.
 *
 * First each rule on its own: a scripted life for each way a connection
 * ends, the state machine's refusals and the model's, and the options an
 * accept chooses on the MTU table cxgb4 gives an adapter (golden_cpl
 * compares them with mainline's on random tables). Then random lives:
 * the peer (ACK, FIN, ack of our FIN, reset, negative advice), the PDU
 * layer (data, close, abort, release), the close timer and the delivery
 * of the chip's messages interleaved at random, so that messages cross
 * (a peer's close or reset on its way while we abort). In each, the
 * model never refuses, the TID is released once and only when the chip
 * is done with it, the PDU layer is given the connection at most once and
 * told of its end once before letting go, the connection is freed once
 * after both, and every life ends once the peer stops misbehaving.
 */
#include <stdlib.h>
#include "conn_life.h"

static u32 rnd(u32 n)
{
	return (u32)random() % n;
}

/* ---- each rule on its own ---- */

#define ALL(l) while (life_deliver(l))

static void test_scripted(void)
{
	struct life l;

	/* we close first (logout), the peer acks and closes */
	life_start(&l, 7, rnd(1U << 31));
	CHECK(cxe_model_conn_ack(&l.m));
	ALL(&l);
	CHECK(l.up && l.c.state == CXE_C4CONN_UP);
	life_send_data(&l);
	life_act(&l, cxe_c4conn_close(&l.c));
	CHECK(l.timer && !cxe_c4conn_may_send(&l.c));
	CHECK(cxe_model_conn_ack_fin(&l.m) && cxe_model_conn_fin(&l.m));
	ALL(&l);
	CHECK(l.ended && l.tid_released && !l.freed && !l.refused);
	life_act(&l, cxe_c4conn_release(&l.c));
	CHECK(life_over(&l) && !l.refused);

	/* the peer closes first; our FIN goes when the PDU layer lets go */
	life_start(&l, 8, rnd(1U << 31));
	CHECK(cxe_model_conn_ack(&l.m));
	ALL(&l);
	CHECK(cxe_model_conn_fin(&l.m));
	ALL(&l);
	CHECK(l.ended && cxe_c4conn_may_send(&l.c));
	life_send_data(&l);
	life_act(&l, cxe_c4conn_release(&l.c));
	CHECK(l.m.fin_in && !l.m.abort_in && !l.freed);
	CHECK(cxe_model_conn_ack_fin(&l.m));
	ALL(&l);
	CHECK(life_over(&l) && !l.refused);

	/* released without a close: aborted, as mainline does without a logout */
	life_start(&l, 9, rnd(1U << 31));
	CHECK(cxe_model_conn_ack(&l.m));
	ALL(&l);
	life_act(&l, cxe_c4conn_release(&l.c));
	CHECK(l.m.abort_in && !l.freed);
	ALL(&l);
	CHECK(life_over(&l) && !l.refused);

	/* reset before it is up: the PDU layer never hears of it */
	life_start(&l, 10, rnd(1U << 31));
	CHECK(cxe_model_conn_reset(&l.m, 20));
	ALL(&l);
	CHECK(!l.up && life_over(&l) && !l.refused && l.m.flowc);

	/* the peer resets while we abort: both answered, TID after both */
	life_start(&l, 11, rnd(1U << 31));
	CHECK(cxe_model_conn_ack(&l.m));
	ALL(&l);
	CHECK(cxe_model_conn_reset(&l.m, 20));
	life_act(&l, cxe_c4conn_abort(&l.c));
	CHECK(l.ended && !l.tid_released);
	CHECK(life_deliver(&l) && !l.tid_released && l.m.rpl_owed == 0);
	CHECK(life_deliver(&l) && l.tid_released && !l.freed);
	life_act(&l, cxe_c4conn_release(&l.c));
	CHECK(life_over(&l) && !l.refused);

	/* a close the peer never completes is aborted by the timer */
	life_start(&l, 12, rnd(1U << 31));
	CHECK(cxe_model_conn_ack(&l.m));
	ALL(&l);
	life_act(&l, cxe_c4conn_close(&l.c));
	life_act(&l, cxe_c4conn_release(&l.c));
	CHECK(!l.m.abort_in);
	life_act(&l, cxe_c4conn_timeout(&l.c));
	CHECK(l.m.abort_in);
	ALL(&l);
	CHECK(life_over(&l) && !l.refused);

	/* negative advice changes nothing */
	life_start(&l, 13, rnd(1U << 31));
	CHECK(cxe_model_conn_ack(&l.m));
	CHECK(cxe_model_conn_advice(&l.m, CXE_CPL_ERR_PERSIST_NEG_ADVICE));
	CHECK(!cxe_model_conn_advice(&l.m, 20) && !cxe_model_conn_reset(&l.m, 36));
	ALL(&l);
	CHECK(l.c.state == CXE_C4CONN_UP && !l.ended && !l.refused);

	/*
	 * The adapter goes (DETACH) under a live connection with our FIN
	 * out: over at once, the PDU layer told, nothing sent; it lets go
	 * later and the connection is freed. Under one still connecting:
	 * freed at once (the PDU layer never had it).
	 */
	life_start(&l, 14, rnd(1U << 31));
	CHECK(cxe_model_conn_ack(&l.m));
	ALL(&l);
	life_act(&l, cxe_c4conn_close(&l.c));
	l.gone = true;
	CHECK(cxe_c4conn_gone(&l.c) == (CXE_C4_END | CXE_C4_RELEASE_TID));
	l.ended = l.tid_released = true;
	CHECK(cxe_c4conn_tx_begin(&l.c) == -EPIPE && cxe_c4conn_gone(&l.c) == 0);
	CHECK(cxe_c4conn_timeout(&l.c) == 0 && cxe_c4conn_abort(&l.c) == 0);
	CHECK(cxe_c4conn_established(&l.c) == -EPROTO);
	CHECK(cxe_c4conn_release(&l.c) == CXE_C4_FREE);
	cxe_c4conn_init(&l.c, 15);
	CHECK(cxe_c4conn_gone(&l.c) == (CXE_C4_RELEASE_TID | CXE_C4_FREE));
}

static void test_conn_refusals(void)
{
	struct cxe_c4conn c;

	cxe_c4conn_init(&c, 1);
	CHECK(cxe_c4conn_close(&c) == -EINVAL);
	CHECK(cxe_c4conn_release(&c) == -EINVAL);
	CHECK(cxe_c4conn_peer_close(&c) == -EPROTO);
	CHECK(cxe_c4conn_close_rpl(&c) == -EPROTO);
	CHECK(cxe_c4conn_abort_rpl(&c) == -EPROTO);
	CHECK(cxe_c4conn_tx_begin(&c) == -EPIPE);
	CHECK(cxe_c4conn_established(&c) == CXE_C4_UP);
	CHECK(cxe_c4conn_established(&c) == -EPROTO);
	CHECK(cxe_c4conn_close_rpl(&c) == -EPROTO);
	CHECK(cxe_c4conn_abort_rpl(&c) == -EPROTO);
	CHECK(cxe_c4conn_peer_close(&c) == CXE_C4_END);
	CHECK(cxe_c4conn_peer_close(&c) == -EPROTO);
	CHECK(cxe_c4conn_close_rpl(&c) == -EPROTO);
	CHECK(cxe_c4conn_tx_begin(&c) == CXE_C4_SEND_FLOWC);
	CHECK(cxe_c4conn_tx_begin(&c) == 0);
	CHECK(cxe_c4conn_close(&c) == (CXE_C4_SEND_CLOSE | CXE_C4_ARM_TIMER));
	CHECK(cxe_c4conn_close(&c) == 0);
	CHECK(cxe_c4conn_tx_begin(&c) == -EPIPE);
	CHECK(cxe_c4conn_close_rpl(&c) == (CXE_C4_RELEASE_TID));
	CHECK(cxe_c4conn_peer_abort(&c, false) == -EPROTO);
	CHECK(cxe_c4conn_peer_abort(&c, true) == -EPROTO);
	CHECK(cxe_c4conn_release(&c) == CXE_C4_FREE);
	CHECK(cxe_c4conn_release(&c) == -EINVAL);
}

static void test_model_refusals(void)
{
	struct cxe_model_conn m;
	struct cxe_fw_tx_data t = { .tid = 5, .plen = 48, .len16 = 5, .immdlen = 48 };
	struct cxe_fw_flowc f = { .tid = 5 };
	struct cxe_cpl_accept a = { .tid = 5 };
	u8 acc[CXE_CPL_PASS_ACCEPT_RPL_LEN], data[CXE_FW_OFLD_TX_DATA_WR_LEN];
	u8 flowc[CXE_FW_FLOWC_WR_MAX_LEN], close[32], abort[32], rpl[32], msg[32];
	u8 pods[CXE_ULP_MEM_WRITE_MAX_LEN];
	int fl, pl;

	CHECK(cxe_cpl_pass_accept_rpl(acc, sizeof(acc), CXE_CHIP_T5, &a) > 0);
	CHECK(cxe_fw_ofld_tx_data_wr(data, sizeof(data), CXE_CHIP_T5, &t) > 0);
	fl = cxe_fw_flowc_wr(flowc, sizeof(flowc), &f);
	CHECK(cxe_cpl_close_con_req(close, sizeof(close), 5, true) > 0);
	CHECK(cxe_cpl_abort_req(abort, sizeof(abort), 5, true) > 0);
	CHECK(cxe_cpl_abort_rpl(rpl, sizeof(rpl), 5, false) > 0);
	pl = cxe_ulp_ppod_clear(pods, sizeof(pods), 0x100000, 5, 2);
	CHECK(pl > 0);

	cxe_model_conn_init(&m, 5, 100, 200);
	CHECK(cxe_model_conn_take(&m, flowc, fl) == -EPROTO);	/* before accept */
	CHECK(cxe_model_conn_take(&m, acc, sizeof(acc)) == 0);
	CHECK(cxe_model_conn_take(&m, acc, sizeof(acc)) == -EPROTO);
	CHECK(cxe_model_conn_take(&m, close, 32) == -EPROTO);	/* no FLOWC */
	CHECK(cxe_model_conn_take(&m, data, sizeof(data)) == -EPROTO);
	CHECK(cxe_model_conn_take(&m, flowc, fl) == 0);
	CHECK(cxe_model_conn_take(&m, flowc, fl) == -EPROTO);
	CHECK(cxe_model_conn_take(&m, data, sizeof(data)) == -EPROTO);	/* not up */
	CHECK(cxe_model_conn_take(&m, close, 32) == -EPROTO);
	CHECK(cxe_model_conn_take(&m, rpl, 32) == -EPROTO);	/* no reset */
	CHECK(cxe_model_conn_release(&m) == -EPROTO);
	CHECK(cxe_model_conn_ack(&m) && !cxe_model_conn_ack(&m));
	CHECK(cxe_model_conn_release(&m) == -EPROTO);
	CHECK(cxe_model_conn_next(&m, msg) == CXE_CPL_PASS_ESTABLISH_LEN);
	CHECK(!cxe_model_conn_ack_fin(&m));		/* no FIN of ours */
	CHECK(cxe_model_conn_take(&m, data, sizeof(data)) == 0);
	/* pods hold credits while the flow takes requests ... */
	CHECK(cxe_model_conn_take(&m, pods, pl) == 0 && cxe_model_conn_flow_live(&m));
	CHECK(cxe_model_conn_take(&m, close, 32) == 0);
	CHECK(cxe_model_conn_take(&m, close, 32) == -EPROTO);
	CHECK(cxe_model_conn_take(&m, data, sizeof(data)) == -EPROTO);
	/* ... and are still taken after our FIN, holding none */
	CHECK(cxe_model_conn_take(&m, pods, pl) == 0 && !cxe_model_conn_flow_live(&m));
	CHECK(cxe_model_conn_ack_fin(&m) && !cxe_model_conn_ack_fin(&m));
	CHECK(cxe_model_conn_release(&m) == -EPROTO);	/* peer's FIN to come */
	CHECK(cxe_model_conn_fin(&m) && !cxe_model_conn_fin(&m));
	CHECK(!cxe_model_conn_reset(&m, 20));	/* closed both ways */
	CHECK(cxe_model_conn_release(&m) == -EPROTO);	/* messages to come */
	CHECK(cxe_model_conn_next(&m, msg) && cxe_model_conn_next(&m, msg));
	CHECK(cxe_model_conn_release(&m) == 0);
	CHECK(cxe_model_conn_release(&m) == -EPROTO);
	CHECK(cxe_model_conn_take(&m, rpl, 32) == -EPROTO);	/* released */
	CHECK(cxe_model_conn_take(&m, pods, pl) == -EPROTO);

	/* after our abort only abort replies; after a peer reset, one reply */
	cxe_model_conn_init(&m, 5, 100, 200);
	CHECK(cxe_model_conn_take(&m, acc, sizeof(acc)) == 0);
	CHECK(cxe_model_conn_take(&m, flowc, fl) == 0);
	CHECK(cxe_model_conn_ack(&m) && cxe_model_conn_reset(&m, 20));
	CHECK(cxe_model_conn_take(&m, data, sizeof(data)) == 0 && m.dropped == 1);
	CHECK(cxe_model_conn_take(&m, abort, 32) == 0);
	CHECK(cxe_model_conn_take(&m, data, sizeof(data)) == -EPROTO);
	/* a clear after the peer's reset and our abort: taken, no credits, not dropped */
	CHECK(cxe_model_conn_take(&m, pods, pl) == 0 && m.dropped == 1);
	CHECK(!cxe_model_conn_flow_live(&m));
	CHECK(cxe_model_conn_take(&m, abort, 32) == -EPROTO);
	CHECK(cxe_model_conn_take(&m, rpl, 32) == 0);
	CHECK(cxe_model_conn_take(&m, rpl, 32) == -EPROTO);
	while (cxe_model_conn_next(&m, msg))
		;
	CHECK(cxe_model_conn_release(&m) == 0);

	/* another TID */
	cxe_model_conn_init(&m, 6, 100, 200);
	CHECK(cxe_model_conn_take(&m, acc, sizeof(acc)) == -EPROTO);
	CHECK(cxe_model_conn_take(&m, acc, 7) == -EPROTO);
}

/* ---- accept options, on the MTU table cxgb4 gives an adapter ---- */

static void test_accept_opts(void)
{
	/* the firmware's table with cxgb4's 1488 in place of 1492 */
	static const u16 mtus[CXE_C4_NMTUS] = {
		88, 88, 256, 512, 576, 1024, 1280, 1488, 1500, 2002, 2048,
		4096, 4352, 8192, 9000, 9600,
	};
	struct cxe_c4_path p = { .mtus = mtus, .mtu = 1500, .speed_mbps = 10000 };
	struct cxe_cpl_accept_req req = { .ip_version = 4, .peer_mss = 1460 };
	struct cxe_cpl_established e = { .mss_idx = 7 };
	struct cxe_cpl_accept a;

	/* 1500 leaves 1460 bytes, 1488 leaves 1448 = 181 * 8 */
	CHECK(cxe_c4conn_accept_opts(&req, &p, &a) == 256 * 1024);
	CHECK(a.mss_idx == 7 && a.rcv_win == 256 * 1024 && a.wscale == 3);
	CHECK(cxe_c4conn_emss(mtus, &e, false) == 1448);
	/* with timestamps 1500 leaves 1448 itself */
	req.tstamp = true;
	CHECK(cxe_c4conn_accept_opts(&req, &p, &a) && a.mss_idx == 8 && a.tstamps);
	e.mss_idx = 8;
	e.tstamp = true;
	CHECK(cxe_c4conn_emss(mtus, &e, false) == 1448);
	/* IPv6 without timestamps: 1440 */
	req.tstamp = false;
	req.ip_version = 6;
	CHECK(cxe_c4conn_accept_opts(&req, &p, &a) && a.mss_idx == 8);
	/* the peer's MSS bounds the path: 536 + 40 = 576 */
	req.ip_version = 4;
	req.peer_mss = 536;
	CHECK(cxe_c4conn_accept_opts(&req, &p, &a) && a.mss_idx == 4);
	/* jumbo path, 100 Gb/s: windows at their caps */
	req.peer_mss = 8960;
	p.mtu = 9000;
	p.speed_mbps = 100000;
	CHECK(cxe_c4conn_accept_opts(&req, &p, &a) == 512 * 1024);
	CHECK(a.mss_idx == 14 && a.rcv_win == 1023 * 1024 && a.wscale == 4);
	/* a 1 Gb/s port keeps the 10 Gb/s windows */
	p.speed_mbps = 1000;
	CHECK(cxe_c4conn_accept_opts(&req, &p, &a) == 256 * 1024 &&
	      a.rcv_win == 256 * 1024);
	/* below every entry: the first; a tiny entry: 128 bytes at least */
	p.mtu = 60;
	req.peer_mss = 0;
	CHECK(cxe_c4conn_accept_opts(&req, &p, &a) && a.mss_idx == 0);
	e.mss_idx = 0;
	CHECK(cxe_c4conn_emss(mtus, &e, true) == 128);
	/* ECN only when the SYN asked with both flags */
	req.ece = true;
	CHECK(cxe_c4conn_accept_opts(&req, &p, &a) && !a.ecn);
	req.cwr = true;
	CHECK(cxe_c4conn_accept_opts(&req, &p, &a) && a.ecn);
}

/* FW_FLOWC_WR's RCV_SCALE: what CPL_PASS_ESTABLISH says TCP agreed */
static void test_rcv_scale(void)
{
	struct cxe_cpl_established e = { 0 };
	u8 msg[CXE_CPL_PASS_ESTABLISH_LEN] = { CXE_CPL_PASS_ESTABLISH };

	/* scaling agreed, the peer's shift 9: tcp_opt bit 5, bits 8..11 */
	msg[14] = 9;
	msg[15] = 1 << 5;
	CHECK(cxe_cpl_parse_pass_establish(msg, sizeof(msg), &e) > 0);
	CHECK(cxe_c4conn_rcv_scale(&e) == 9);
	/* not agreed: none, whatever the shift field holds */
	msg[15] = 0;
	CHECK(cxe_cpl_parse_pass_establish(msg, sizeof(msg), &e) > 0);
	CHECK(cxe_c4conn_rcv_scale(&e) == 0);
}

/* ---- random lives ---- */

static void one_life(u32 tid)
{
	/* half the peers never reset: their lives end only by closes */
	bool polite = rnd(2);
	struct life l;
	u32 step;

	life_start(&l, tid, rnd(1U << 31));
	st.lives++;
	for (step = 0; step < 5000 && !life_over(&l) && !l.refused; step++) {
		st.steps++;
		life_step(&l, rnd(100), rnd(1U << 30), polite, step > 300);
	}
	if (!life_over(&l) || l.refused)
		fprintf(stderr, "life %u: %s after %u steps, state %d, model: "
			"acc %d est %d fin_in %d fin_acked %d peer_fin %d reset %d "
			"abort %d owed %u queued %u\n", tid,
			l.refused ? "refused" : "not over", step, l.c.state,
			l.m.accepted, l.m.established, l.m.fin_in, l.m.fin_acked,
			l.m.peer_fin, l.m.peer_reset, l.m.abort_in, l.m.rpl_owed,
			l.m.n);
	CHECK(life_over(&l) && !l.refused);
	/* the PDU layer heard of the end of every connection it had and kept */
	CHECK(!l.up || l.ended || l.c.released);
	st.dropped += l.m.dropped;
}

int main(int argc, char **argv)
{
	u32 seed = argc > 1 ? strtoul(argv[1], NULL, 0) : 1;

	srandom(seed);
	test_scripted();
	test_conn_refusals();
	test_model_refusals();
	test_accept_opts();
	test_rcv_scale();
	for (u32 i = 0; i < 20000; i++)
		one_life(1 + i % CXE_CPL_TID_MAX);
	printf("test_cxgb4_conn (seed %u): %u lives in %u steps: %u up, %u ended "
	       "by the peer's close and %u by its reset, %u reset while "
	       "connecting, %u crossed our abort, %u negative advice, %u close "
	       "timeouts, %u aborts of ours, %u data requests (%u dropped after a "
	       "reset), %u adapters gone; %d checks, %d failures\n", seed,
	       st.lives, st.steps, st.up, st.eof, st.reset, st.connecting_reset,
	       st.crossed, st.advice, st.timeouts, st.aborts, st.data,
	       st.dropped, st.gone, checks, failures);
	return failures ? 1 : 0;
}
