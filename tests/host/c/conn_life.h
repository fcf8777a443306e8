/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A connection's life for the host tests and the fuzzer: the backend's
 * state machine (adapters/cxgb4/conn.c) and the model of the chip's
 * connection side (model/ulp_conn.c) joined as the device glue will join
 * them. Messages either way are built and parsed by cpl.c. CHECK()s what
 * must hold at every step (check.h); a refusal by the model, or a
 * protocol error from the state machine, counts in life.refused.
 */
#ifndef CXE_TEST_CONN_LIFE_H
#define CXE_TEST_CONN_LIFE_H

#include <stdio.h>
#include <string.h>
#include "cpl.h"
#include "conn.h"
#include "ulp_conn.h"
#include "check.h"

struct life {
	struct cxe_c4conn c;
	struct cxe_model_conn m;
	bool up, ended, tid_released, freed, timer;
	bool gone;		/* the adapter went away: no message either way */
	u32 data;		/* data requests the model took */
	u32 refused;		/* the model's refusals, or the state machine's */
};

static struct {
	u32 lives, steps, up, eof, reset, connecting_reset, crossed, advice;
	u32 timeouts, aborts, dropped, data, gone;
} st;

static void life_take(struct life *l, const u8 *msg, int len)
{
	CHECK(len > 0);
	if (len > 0 && cxe_model_conn_take(&l->m, msg, len)) {
		l->refused++;
		fprintf(stderr, "model refused: %s\n", l->m.why);
	}
}

static void life_send_flowc(struct life *l)
{
	struct cxe_fw_flowc f = { .tid = l->c.tid, .mss = 1460, .sndbuf = 65536 };
	u8 buf[CXE_FW_FLOWC_WR_MAX_LEN];

	life_take(l, buf, cxe_fw_flowc_wr(buf, sizeof(buf), &f));
}

/* what the glue does with the state machine's answer, in its order */
static void life_act(struct life *l, int what)
{
	u8 buf[64];

	CHECK(what >= 0);
	if (what < 0) {
		l->refused++;
		return;
	}
	/* a gone adapter's chip is sent nothing */
	CHECK(!l->gone || !(what & (CXE_C4_SEND_FLOWC | CXE_C4_SEND_ABORT_RPL |
				    CXE_C4_SEND_CLOSE | CXE_C4_SEND_ABORT)));
	if (what & CXE_C4_SEND_FLOWC)
		life_send_flowc(l);
	if (what & CXE_C4_SEND_ABORT_RPL)
		life_take(l, buf, cxe_cpl_abort_rpl(buf, sizeof(buf), l->c.tid, false));
	if (what & CXE_C4_SEND_CLOSE)
		life_take(l, buf, cxe_cpl_close_con_req(buf, sizeof(buf), l->c.tid, true));
	if (what & CXE_C4_SEND_ABORT) {
		st.aborts++;
		life_take(l, buf, cxe_cpl_abort_req(buf, sizeof(buf), l->c.tid, true));
	}
	if (what & CXE_C4_UP) {
		CHECK(!l->up);
		l->up = true;
		st.up++;
	}
	if (what & CXE_C4_END) {
		CHECK(l->up && !l->ended && !l->c.released);
		l->ended = true;
	}
	if (what & CXE_C4_ARM_TIMER)
		l->timer = true;
	if (what & CXE_C4_RELEASE_TID) {
		CHECK(!l->tid_released);
		l->tid_released = true;
		if (!l->gone && cxe_model_conn_release(&l->m)) {
			l->refused++;
			fprintf(stderr, "model refused: %s\n", l->m.why);
		}
	}
	if (what & CXE_C4_FREE) {
		/* once, after the TID, and after the PDU layer let go or never had it */
		CHECK(!l->freed && l->tid_released);
		CHECK(l->c.released || !l->up);
		/* a connection the PDU layer had was told of its end first */
		CHECK(!l->up || l->ended || l->c.released);
		l->freed = true;
	}
}

/* the chip's next message through cpl.c's parsers into the state machine */
static bool life_deliver(struct life *l)
{
	u8 buf[CXE_MODEL_CONN_MSG];
	u32 len = cxe_model_conn_next(&l->m, buf);
	struct cxe_cpl_established e;
	struct cxe_cpl_conn c = { .tid = l->c.tid };
	int what = -1;

	if (!len)
		return false;
	switch (buf[0]) {
	case CXE_CPL_PASS_ESTABLISH:
		CHECK(cxe_cpl_parse_pass_establish(buf, len, &e) == (int)len);
		CHECK(e.tid == l->c.tid && e.snd_isn == l->m.snd_isn + 1);
		what = cxe_c4conn_established(&l->c);
		break;
	case CXE_CPL_PEER_CLOSE:
		CHECK(cxe_cpl_parse_peer_close(buf, len, &c) == (int)len);
		if (l->c.state == CXE_C4CONN_ABORTING)
			st.crossed++;
		else
			st.eof++;
		what = cxe_c4conn_peer_close(&l->c);
		break;
	case CXE_CPL_CLOSE_CON_RPL:
		CHECK(cxe_cpl_parse_close_con_rpl(buf, len, &c) == (int)len);
		if (l->c.state == CXE_C4CONN_ABORTING)
			st.crossed++;
		what = cxe_c4conn_close_rpl(&l->c);
		break;
	case CXE_CPL_ABORT_REQ_RSS:
		CHECK(cxe_cpl_parse_abort_req_rss(buf, len, &c) == (int)len);
		if (c.neg_adv)
			st.advice++;
		else if (l->c.state == CXE_C4CONN_CONNECTING)
			st.connecting_reset++;
		else if (l->c.state == CXE_C4CONN_ABORTING)
			st.crossed++;
		else
			st.reset++;
		what = cxe_c4conn_peer_abort(&l->c, c.neg_adv);
		break;
	case CXE_CPL_ABORT_RPL_RSS:
		CHECK(cxe_cpl_parse_abort_rpl_rss(buf, len, &c) == (int)len);
		what = cxe_c4conn_abort_rpl(&l->c);
		break;
	default:
		CHECK(!"a message the model does not send");
	}
	CHECK(c.tid == l->c.tid);
	life_act(l, what);
	return true;
}

static void life_send_data(struct life *l)
{
	struct cxe_fw_tx_data t = { .tid = l->c.tid, .plen = 48, .len16 = 5,
				    .immdlen = 48, .hcrc = true };
	u8 buf[CXE_FW_OFLD_TX_DATA_WR_LEN];
	int what = cxe_c4conn_tx_begin(&l->c);

	if (what == -EPIPE) {
		CHECK(!cxe_c4conn_may_send(&l->c));
		return;
	}
	life_act(l, what);
	life_take(l, buf, cxe_fw_ofld_tx_data_wr(buf, sizeof(buf), CXE_CHIP_T6, &t));
	l->data++;
	st.data++;
}

/* isn: the chip's initial sequence numbers, both ways */
static void life_start(struct life *l, u32 tid, u32 isn)
{
	struct cxe_cpl_accept a = { .tid = tid, .rcv_win = 256 * 1024 };
	u8 buf[CXE_CPL_PASS_ACCEPT_RPL_LEN];

	memset(l, 0, sizeof(*l));
	cxe_model_conn_init(&l->m, tid, isn, ~isn);
	life_take(l, buf, cxe_cpl_pass_accept_rpl(buf, sizeof(buf), CXE_CHIP_T6, &a));
	cxe_c4conn_init(&l->c, tid);
}

static bool life_over(const struct life *l)
{
	return l->freed && (l->m.released || l->gone);
}

/*
 * One step: r (0..99) picks who does what, x adds detail. A polite peer
 * never resets; late in a life nobody misbehaves and the PDU layer lets
 * go, so that every life can end.
 */
static void life_step(struct life *l, u32 r, u32 x, bool polite, bool late)
{
	bool patient = polite || late;

	if (l->gone && r < 63)
		return;		/* the chip is no more: nothing comes from it */
	if (r < 30) {
		life_deliver(l);
	} else if (r < 40) {
		cxe_model_conn_ack(&l->m);
	} else if (r < 47) {
		cxe_model_conn_fin(&l->m);
	} else if (r < 57) {
		cxe_model_conn_ack_fin(&l->m);
	} else if (r < 60) {
		if (!patient)
			cxe_model_conn_reset(&l->m, x & 1 ? 20 : 30 + x % 5);
	} else if (r < 63) {
		if (!patient)
			cxe_model_conn_advice(&l->m, 35 + x % 3);
	} else if (r < 78) {
		if (l->up && !l->c.released)
			life_send_data(l);
	} else if (r < 84) {
		if (l->up && !l->c.released)
			life_act(l, cxe_c4conn_close(&l->c));
	} else if (r < 86) {
		/* the PDU layer's abort, or the listener's going away */
		if ((l->up && !l->c.released) ||
		    (l->c.state == CXE_C4CONN_CONNECTING && x % 4 == 0))
			life_act(l, cxe_c4conn_abort(&l->c));
	} else if (r < 93) {
		/* the PDU layer lets go once it heard of the end, or at will */
		if (l->up && !l->c.released && (l->ended || patient || x % 4 == 0))
			life_act(l, cxe_c4conn_release(&l->c));
	} else if (r == 93 && x % 64 == 0 && !l->gone) {
		/* the adapter goes away (cxgb4's DETACH), at any point */
		l->gone = true;
		st.gone++;
		life_act(l, cxe_c4conn_gone(&l->c));
		CHECK(l->c.state == CXE_C4CONN_DONE && !cxe_c4conn_may_send(&l->c));
	} else if (l->timer && (late || x % (polite ? 20 : 3) == 0)) {
		l->timer = false;
		if (l->c.state == CXE_C4CONN_CLOSING)
			st.timeouts++;
		life_act(l, cxe_c4conn_timeout(&l->c));
	}
}

#endif /* CXE_TEST_CONN_LIFE_H */
