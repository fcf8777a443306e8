// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cxgb4 backend's work requests (adapters/cxgb4/tx.c) through the
 * chip model's transmit side (tests/chipmodel/ulp_tx.c), against what the
 * software adapter sends for the same PDUs (pdu/: the wire form of each
 * PDU, and the segmentation planner for Data-In bursts).
 *
 * Random PDUs of every size up to the adapter's limit, and random Data-In
 * bursts (any offset, length, MaxRecvDataSegmentLength, DataSN, with and
 * without status), on both chips with each adapter's limits, digests off
 * and on: the bytes on the wire must be the same, request by request
 * within the limits, with ISO where the burst allows it.
 */
#include <assert.h>
#include "check.h"
#include "pdugen.h"
#include "cxe_seg.h"
#include "tx.h"
#include "ulp_tx.h"

#define WIRE_MAX	(1 << 20)
#define DATA_MAX	(256 * 1024)

static struct {
	u32 pdus, bursts, iso_slices, iso_pdus, imm, gathered;
} seen;

struct path {
	u8 *wire;
	u32 len;
};

static u8 data[DATA_MAX];

/* the request and its payload through the model, appended to p */
static void send_wr(const struct cxe_model_tx *m, struct path *p,
		    const u8 *head, const struct cxe_c4tx_wr *wr,
		    const u8 *hdr, u32 hdr_len, const u8 *d, u32 dlen)
{
	static u8 req[512], payload[DATA_MAX + 1200];
	long n;

	/* the skb: header, data, zero padding (what cxgb4 sends from) */
	memcpy(payload, hdr, hdr_len);
	memcpy(payload + hdr_len, d, dlen);
	memset(payload + hdr_len + dlen, 0, cxe_pad_len(dlen));
	CHECK(wr->payload == hdr_len + dlen + cxe_pad_len(dlen));
	memcpy(req, head, wr->head_len);
	if (wr->imm) {
		seen.imm++;
		memcpy(req + wr->head_len, payload, wr->payload);
		n = cxe_model_tx_wr(m, req, wr->head_len + wr->payload, NULL, 0,
				    p->wire + p->len, WIRE_MAX - p->len);
	} else {
		seen.gathered++;
		n = cxe_model_tx_wr(m, req, wr->head_len, payload, wr->payload,
				    p->wire + p->len, WIRE_MAX - p->len);
	}
	CHECK(n == (long)wr->wire);
	if (n > 0)
		p->len += n;
}

static void random_limits(enum cxe_chip chip, struct cxe_cxgb4_limits *l)
{
	struct cxe_cxgb4_hw hw = {
		.chip = chip,
		.iscsi_iolen = 8192 + rnd(12000),
		.fw_vers = rnd(3) ? 0x1100000 : 0x1000000,
		.page_size = 4096,
		.max_frags = 17,
	};

	assert(!cxe_cxgb4_limits(&hw, l));
}

static void check_pdu(const struct cxe_c4tx_conn *c,
		      const struct cxe_cxgb4_limits *l, struct path *ref,
		      struct path *chip)
{
	struct cxe_model_tx m = { c->chip, c->tid, l->max_send_dlen };
	struct gen_pdu g = { 0 };
	struct cxe_c4tx_wr wr;
	u8 head[CXE_C4TX_HEAD_MAX];
	u32 dlen = rnd(4) ? rnd(300) : rnd(l->max_send_dlen + 1);
	int n;

	/* a response of some kind: its header, any bytes of data */
	for (u32 i = 0; i < CXE_BHS_LEN; i++)
		g.hdr[i] = (u8)rnd(256);
	g.hdr[0] = 0x20 + rnd(8);
	g.hdr[4] = 0;
	g.hdr_len = CXE_BHS_LEN;
	g.dlen = dlen;
	g.data = data + rnd(DATA_MAX - dlen);
	cxe_bhs_set_dlen(g.hdr, dlen);
	ref->len += gen_wire(&g, c->hcrc, c->dcrc, ref->wire + ref->len);

	n = cxe_c4tx_pdu(head, sizeof(head), c, g.hdr_len, dlen,
			 1 + (dlen + 4095) / 4096 + 1, rnd(2), &wr);
	CHECK(n == CXE_FW_OFLD_TX_DATA_WR_LEN && wr.head_len == (u32)n);
	if (n > 0)
		send_wr(&m, chip, head, &wr, g.hdr, g.hdr_len, g.data, dlen);
	seen.pdus++;
}

static void check_burst(const struct cxe_c4tx_conn *c,
			const struct cxe_cxgb4_limits *l, struct path *ref,
			struct path *chip)
{
	struct cxe_model_tx m = { c->chip, c->tid, l->max_send_dlen };
	struct cxe_seg_burst b;
	struct cxe_seg_pdu pdu;
	struct cxe_c4tx_slice s;
	struct cxe_c4tx_wr wr;
	struct gen_pdu g = { 0 };
	u8 tmpl[CXE_BHS_LEN], head[CXE_C4TX_HEAD_MAX];
	u32 i, pdus = 0;
	int n;

	b.max_pdu = rnd(3) ? 512 * (1 + rnd(l->max_send_dlen / 512)) :
			     512 + rnd(l->max_send_dlen - 511);
	b.len = 1 + rnd(rnd(2) ? 4 * b.max_pdu : 20 * b.max_pdu);
	if (b.len > DATA_MAX)
		b.len = DATA_MAX;
	if (rnd(2))
		b.len &= ~3u;
	if (!b.len)
		b.len = 4;
	b.offset = rnd(2) ? 0 : rnd(1 << 20);
	b.datasn = rnd(1000);
	b.status = rnd(2);
	/* the burst's template: its last PDU's header, as LIO builds it */
	for (i = 0; i < CXE_BHS_LEN; i++)
		tmpl[i] = (u8)rnd(256);
	tmpl[0] = CXE_OP_DATA_IN;
	tmpl[1] = CXE_FLAG_FINAL | (b.status ? CXE_DATAIN_STATUS : 0);
	tmpl[4] = 0;

	/* the software adapter: the planner's PDUs */
	for (i = 0; cxe_seg_pdu(&b, i, &pdu); i++) {
		cxe_seg_datain_hdr(g.hdr, tmpl, &pdu);
		g.hdr_len = CXE_BHS_LEN;
		g.data = data + (pdu.offset - b.offset);
		g.dlen = pdu.len;
		ref->len += gen_wire(&g, c->hcrc, c->dcrc, ref->wire + ref->len);
	}

	/* the cxgb4 backend: slices, each ISO or PDU by PDU */
	for (i = 0; cxe_c4tx_slice(&b, tmpl, l, i, &s); i++) {
		const u8 *d = data + (s.offset - b.offset);

		CHECK(s.first == pdus);
		pdus += s.npdu;
		if (s.iso) {
			CHECK(s.len <= l->max_iso_burst);
			n = cxe_c4tx_iso(head, sizeof(head), c, &b, &s,
					 1 + (s.len + 4095) / 4096, false, &wr);
			CHECK(n == CXE_C4TX_HEAD_MAX);
			if (n > 0)
				send_wr(&m, chip, head, &wr, s.tmpl,
					CXE_BHS_LEN, d, s.len);
			seen.iso_slices++;
			seen.iso_pdus += s.npdu;
			continue;
		}
		CHECK(s.npdu == 1 && s.len <= l->max_send_dlen);
		n = cxe_c4tx_pdu(head, sizeof(head), c, CXE_BHS_LEN, s.len,
				 2 + (s.len + 4095) / 4096, false, &wr);
		CHECK(n == CXE_FW_OFLD_TX_DATA_WR_LEN);
		if (n > 0)
			send_wr(&m, chip, head, &wr, s.tmpl, CXE_BHS_LEN, d,
				s.len);
	}
	CHECK(pdus == cxe_seg_count(&b));
	seen.bursts++;
}

/* Requests the model must refuse: the fields it checks, one by one */
static void test_model_refusals(void)
{
	struct cxe_c4tx_conn c = { CXE_CHIP_T6, 42, true, true };
	struct cxe_model_tx m = { CXE_CHIP_T6, 42, 8192 };
	static u8 out[4096], req[512];
	u8 hdr[CXE_BHS_LEN] = { 0x21 };
	struct cxe_c4tx_wr wr;
	u32 len;

	cxe_bhs_set_dlen(hdr, 5);
	CHECK(cxe_c4tx_pdu(req, sizeof(req), &c, CXE_BHS_LEN, 5, 2, false,
			   &wr) == 16);
	memcpy(req + 16, hdr, CXE_BHS_LEN);
	memset(req + 16 + CXE_BHS_LEN, 'x', 8);
	len = 16 + wr.payload;
	CHECK(wr.imm && cxe_model_tx_wr(&m, req, len, NULL, 0, out,
					sizeof(out)) == 48 + 4 + 8 + 4);
	/* another TID, a payload also gathered, a short buffer, plen off */
	m.tid = 43;
	CHECK(cxe_model_tx_wr(&m, req, len, NULL, 0, out, sizeof(out)) == -EINVAL);
	m.tid = 42;
	CHECK(cxe_model_tx_wr(&m, req, len, hdr, 48, out, sizeof(out)) == -EINVAL);
	CHECK(cxe_model_tx_wr(&m, req, len, NULL, 0, out, 60) == -ENOSPC);
	req[11]++;
	CHECK(cxe_model_tx_wr(&m, req, len, NULL, 0, out, sizeof(out)) == -EINVAL);
	req[11]--;
	/* the T5's force bit on a T6 request, and on a T5 with digests */
	m.chip = CXE_CHIP_T5;
	CHECK(cxe_model_tx_wr(&m, req, len, NULL, 0, out, sizeof(out)) == -EINVAL);
	/* a data segment the payload does not hold */
	m.chip = CXE_CHIP_T6;
	req[16 + 7] = 9;
	CHECK(cxe_model_tx_wr(&m, req, len, NULL, 0, out, sizeof(out)) == -EINVAL);
}

/*
 * The F bit of an ISO request's PDUs, as both of mainline's drivers ask
 * for it: cxgbit's Data-In template (cxgbit_tx_datain_iso()) carries S
 * and the status but never F, and cxgb4i clears F from its template
 * (cxgbi_prep_iso_info()); each sets the CPL's last-slice flag where the
 * sequence ends instead. So F is the chip's to set on the last PDU of a
 * last slice, and a template that carries F is one no driver sends.
 */
static void test_iso_final_bit(void)
{
	struct cxe_c4tx_conn c = { CXE_CHIP_T5, 7, false, false };
	struct cxe_model_tx m = { CXE_CHIP_T5, 7, 16224 };
	/* a 16 KiB READ's Data-In at MaxRecvDataSegmentLength 16224 */
	struct cxe_seg_burst b = { .max_pdu = 16224, .len = 16384 };
	struct cxe_c4tx_slice s = { .npdu = 2, .len = 16384, .iso = true };
	static u8 out[2 * 16384], payload[CXE_BHS_LEN + 16384];
	u8 head[CXE_C4TX_HEAD_MAX];
	struct cxe_c4tx_wr wr;
	long n;

	s.tmpl[0] = CXE_OP_DATA_IN;
	s.tmpl[1] = CXE_DATAIN_STATUS;		/* mainline's: S, no F */
	s.tmpl[3] = 0;				/* GOOD */
	memcpy(payload, s.tmpl, CXE_BHS_LEN);
	memcpy(payload + CXE_BHS_LEN, data, 16384);
	CHECK(cxe_c4tx_iso(head, sizeof(head), &c, &b, &s, 5, false, &wr) ==
	      CXE_C4TX_HEAD_MAX);
	n = cxe_model_tx_wr(&m, head, wr.head_len, payload, wr.payload, out,
			    sizeof(out));
	CHECK(n == 2 * CXE_BHS_LEN + 16384);
	if (n != 2 * CXE_BHS_LEN + 16384)
		return;
	/* the first PDU: neither F nor S; the last: both, and its status */
	CHECK(out[1] == 0 && cxe_bhs_dlen(out) == 16224);
	CHECK(out[CXE_BHS_LEN + 16224 + 1] ==
	      (CXE_FLAG_FINAL | CXE_DATAIN_STATUS));
	CHECK(cxe_bhs_dlen(out + CXE_BHS_LEN + 16224) == 160);

	/* a template with F: refused */
	payload[1] |= CXE_FLAG_FINAL;
	CHECK(cxe_model_tx_wr(&m, head, wr.head_len, payload, wr.payload, out,
			      sizeof(out)) == -EINVAL);
}

int main(int argc, char **argv)
{
	unsigned int seed = argc > 1 ? (unsigned int)atoi(argv[1]) : 1;
	struct path ref = { .wire = malloc(WIRE_MAX) };
	struct path chip = { .wire = malloc(WIRE_MAX) };
	struct cxe_cxgb4_limits l;

	srandom(seed);
	for (u32 i = 0; i < DATA_MAX; i++)
		data[i] = (u8)rnd(256);
	test_model_refusals();
	test_iso_final_bit();
	for (int round = 0; round < 400; round++) {
		struct cxe_c4tx_conn c = {
			.chip = rnd(2) ? CXE_CHIP_T6 : CXE_CHIP_T5,
			.tid = rnd(CXE_CPL_TID_MAX + 1),
			.hcrc = rnd(2),
			.dcrc = rnd(2),
		};

		random_limits(c.chip, &l);
		ref.len = chip.len = 0;
		for (int k = 0; k < 4; k++) {
			if (rnd(2))
				check_pdu(&c, &l, &ref, &chip);
			else
				check_burst(&c, &l, &ref, &chip);
		}
		CHECK(ref.len == chip.len && !memcmp(ref.wire, chip.wire, ref.len));
		if (ref.len != chip.len || memcmp(ref.wire, chip.wire, ref.len)) {
			fprintf(stderr, "  round %d: T%d hd %d dd %d: %u bytes vs %u\n",
				round, c.chip, c.hcrc, c.dcrc, chip.len, ref.len);
			break;
		}
	}
	CHECK(seen.iso_slices && seen.imm && seen.gathered);
	printf("test_cxgb4_tx: seed %u, %u PDUs and %u bursts (%u ISO requests for %u PDUs), %u immediate and %u gathered requests\n",
	       seed, seen.pdus, seen.bursts, seen.iso_slices, seen.iso_pdus,
	       seen.imm, seen.gathered);
	printf("test_cxgb4_tx: %d checks, %d failures\n", checks, failures);
	free(ref.wire);
	free(chip.wire);
	return failures != 0;
}
