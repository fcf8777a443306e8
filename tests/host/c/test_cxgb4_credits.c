// SPDX-License-Identifier: GPL-2.0-only
/*
 * Transmit credits in user space: the backend's ledger
 * (kmod/cxgbit-ext/adapters/cxgb4/credits.c) sending requests whose heads
 * cpl.c builds, and the chip's side in the transmit model
 * (tests/chipmodel/ulp_tx.c) returning their credits in
 * CPL_FW4_ACKs, which cpl.c parses. The refusals first; then two chips:
 * a lazy one that acks only what a request asked for, and only when the
 * sender waits (the sender must never wait with nothing asked for: that
 * connection would stall for good; asking at half the credits only, as
 * mainline does, stalled here with 12 credits, 2 of them out unasked and
 * a request of 11 waiting), and an eager one that returns random
 * credits at random times, often part of a request. Both sides must
 * agree on the credits out after every step, and every request must come
 * back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpl.h"
#include "credits.h"
#include "ulp_tx.h"
#include "check.h"

static u32 rnd(u32 n)
{
	return (u32)random() % n;
}

static struct cxe_cpl_fw4_ack ack_of(u32 tid, u8 credits, bool seqval, u32 una)
{
	struct cxe_cpl_fw4_ack a = {
		.tid = tid, .credits = credits,
		.flags = seqval ? CXE_FW4_ACK_SEQVAL : 0, .snd_una = una,
	};
	return a;
}

static void test_refusals(void)
{
	struct cxe_c4cred c;
	struct cxe_cpl_fw4_ack a;
	bool compl;

	/* an abort request's 2 credits are kept back */
	CHECK(cxe_c4cred_init(&c, 2, 1, 0) == -EINVAL);
	CHECK(cxe_c4cred_init(&c, 20, 19, 0) == -EINVAL);
	CHECK(cxe_c4cred_init(&c, 64, 0, 0) == -EINVAL);
	CHECK(cxe_c4cred_init(&c, 64, 31, 1000) == 0 && c.max == 62 && c.avail == 62);
	CHECK(cxe_c4cred_take(&c, 0, false, &compl) == -EINVAL);
	CHECK(cxe_c4cred_take(&c, 32, false, &compl) == -EINVAL);
	/* 32 free after it, the largest request fits: no need to ask */
	CHECK(cxe_c4cred_take(&c, 30, false, &compl) == 0 && !compl);
	/* the 31st unasked credit is half of 62: this one asks */
	CHECK(cxe_c4cred_take(&c, 1, false, &compl) == 0 && compl);
	/* none free after it, less than the largest request: ask */
	CHECK(cxe_c4cred_take(&c, 31, false, &compl) == 0 && compl);
	CHECK(cxe_c4cred_take(&c, 1, false, &compl) == -EAGAIN);
	/* more back than out, snd_una back: refused, nothing changed */
	a = ack_of(1, 63, false, 0);
	CHECK(cxe_c4cred_ack(&c, &a) == -EPROTO && c.avail == 0);
	a = ack_of(1, 1, true, 999);
	CHECK(cxe_c4cred_ack(&c, &a) == -EPROTO && c.avail == 0);
	/* part of the first request, then the rest of it and the second */
	a = ack_of(1, 20, true, 1500);
	CHECK(cxe_c4cred_ack(&c, &a) == 0 && c.avail == 20 && c.snd_una == 1500);
	a = ack_of(1, 11, false, 0);
	CHECK(cxe_c4cred_ack(&c, &a) == 2 && c.avail == 31 && c.snd_una == 1500);
	a = ack_of(1, 31, true, 1500);
	CHECK(cxe_c4cred_ack(&c, &a) == 1 && c.avail == 62 && c.n == 0);
}

struct run {
	struct cxe_c4cred c;
	struct cxe_model_txcred chip;
	u32 tid;
	u32 sent, acked, waits, asked, partial;
};

/* the chip acks; the ledger takes the ack (parsed from the chip's bytes) */
static bool chip_acks(struct run *r, u32 credits, bool owed)
{
	u8 msg[CXE_CPL_FW4_ACK_LEN];
	struct cxe_cpl_fw4_ack a;
	u32 before = r->c.n ? r->c.ring[r->c.head] : 0;
	int len = cxe_model_txcred_ack(&r->chip, msg, credits, owed), done;

	if (!len)
		return false;
	CHECK(cxe_cpl_parse_fw4_ack(msg, len, &a) == len && a.tid == r->tid);
	done = cxe_c4cred_ack(&r->c, &a);
	CHECK(done >= 0);
	if (done < 0)
		return false;
	r->acked += done;
	/* the ledger's own count of requests wholly acked, which a waiter reads */
	CHECK(r->c.acked == r->acked);
	r->partial += !done || (r->c.n && r->c.ring[r->c.head] != before && done);
	return true;
}

static void one_run(bool lazy, u32 wr_cred, u32 requests)
{
	struct run r = { .tid = 1 + rnd(CXE_CPL_TID_MAX) };
	u32 isn = (u32)random();

	CHECK(cxe_c4cred_init(&r.c, wr_cred, wr_cred - 2 < 20 ? wr_cred - 2 : 20, isn) == 0);
	cxe_model_txcred_init(&r.chip, r.tid, isn);
	while (r.sent < requests) {
		struct cxe_fw_tx_data t = { .tid = r.tid, .len16 = 1 + rnd(r.c.max_len16) };
		u8 wr[CXE_FW_OFLD_TX_DATA_WR_LEN];
		u32 wire = 48 + rnd(9000);
		bool compl;
		int ret = cxe_c4cred_take(&r.c, t.len16, rnd(64) == 0, &compl);

		if (ret == -EAGAIN) {
			r.waits++;
			/* waiting with nothing asked for: nothing would ever come back */
			if (!r.chip.owed) {
				CHECK(r.chip.owed);
				fprintf(stderr, "  stalled: %u of %u credits out, none asked for\n",
					cxe_c4cred_out(&r.c), r.c.max);
				return;
			}
			while (r.chip.owed)
				chip_acks(&r, 0, true);
			continue;
		}
		CHECK(ret == 0);
		t.compl = compl;
		t.plen = wire;
		CHECK(cxe_fw_ofld_tx_data_wr(wr, sizeof(wr), CXE_CHIP_T6, &t) == CXE_FW_OFLD_TX_DATA_WR_LEN);
		cxe_model_txcred_took(&r.chip, wr, wire);
		r.sent++;
		CHECK(r.c.taken == r.sent);
		r.asked += compl;
		if (!lazy && rnd(3) == 0)
			chip_acks(&r, 1 + rnd(r.chip.held + 1), false);
		if (r.chip.held != cxe_c4cred_out(&r.c)) {
			CHECK(r.chip.held == cxe_c4cred_out(&r.c));
			return;
		}
	}
	/* the rest comes back */
	while (chip_acks(&r, 0xff, false))
		;
	CHECK(r.acked == r.sent && r.c.avail == r.c.max && !r.c.n && !r.chip.held);
	CHECK(r.c.snd_una == r.chip.snd_nxt);
	printf("test_cxgb4_credits: %s chip, %u credits: %u requests, %u asked for an ack, %u waits, %u partial acks\n",
	       lazy ? "lazy" : "eager", r.c.max, r.sent, r.asked, r.waits, r.partial);
	if (lazy)
		CHECK(r.waits > 0);
	else
		CHECK(r.partial > 0);
}

int main(int argc, char **argv)
{
	unsigned int seed = argc > 1 ? (unsigned int)atoi(argv[1]) : 1;

	srandom(seed);
	test_refusals();
	one_run(true, 64, 20000);
	one_run(true, 3 + rnd(40), 20000);
	one_run(false, 64, 20000);
	one_run(false, 3 + rnd(400), 20000);
	printf("test_cxgb4_credits: seed %u, %d checks, %d failures\n", seed, checks, failures);
	return failures != 0;
}
