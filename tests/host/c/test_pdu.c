// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of kmod/cxgbit-ext/pdu/ in user space: CRC32C digests against
 * RFC 3720 B.4, the RX stream parser fed whole, byte by byte and in random
 * splits, digest errors, malformed streams, the burst segmentation planner,
 * the DDP tag maths and the T10-PI generator.
 */
#include <stdio.h>
#include <stdlib.h>
#include "pdugen.h"
#include "cxe_seg.h"
#include "cxe_ddp.h"
#include "cxe_pi.h"
#include "check.h"

static void check_vector(const u8 *buf, size_t len, const u8 want[4])
{
	u8 got[4];

	cxe_put_le32(got, cxe_digest(buf, len));
	CHECK(memcmp(got, want, 4) == 0);
}

static void test_rfc3720_b4(void)
{
	static const u8 read_cmd[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
		0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	u8 buf[32];

	memset(buf, 0, 32);
	check_vector(buf, 32, (const u8[]){ 0xaa, 0x36, 0x91, 0x8a });
	memset(buf, 0xff, 32);
	check_vector(buf, 32, (const u8[]){ 0x43, 0xab, 0xa8, 0x62 });
	for (int i = 0; i < 32; i++)
		buf[i] = i;
	check_vector(buf, 32, (const u8[]){ 0x4e, 0x79, 0xdd, 0x46 });
	for (int i = 0; i < 32; i++)
		buf[i] = 31 - i;
	check_vector(buf, 32, (const u8[]){ 0x5c, 0xdb, 0x3f, 0x11 });
	check_vector(read_cmd, 48, (const u8[]){ 0x56, 0x3a, 0x96, 0xd9 });
	/* incremental update equals one shot */
	for (int i = 0; i < 32; i++)
		buf[i] = i;
	CHECK(~cxe_crc32c(cxe_crc32c(~0u, buf, 13), buf + 13, 19) ==
	      cxe_digest(buf, 32));
}

static void test_framing(void)
{
	CHECK(cxe_pad_len(0) == 0 && cxe_pad_len(1) == 3 && cxe_pad_len(4) == 0 &&
	      cxe_pad_len(4095) == 1);
	CHECK(cxe_pdu_wire_len(0, 0, false, false) == 48);
	CHECK(cxe_pdu_wire_len(0, 0, true, true) == 52);	/* no data digest without data */
	CHECK(cxe_pdu_wire_len(8, 5, true, true) == 48 + 8 + 4 + 8 + 4);
	CHECK(cxe_pdu_wire_len(0, CXE_MAX_DLEN, false, false) == 48 + 0x1000000);
}

/* Between PDUs: the parser has seen nothing of the next one */
static bool rx_at_boundary(const struct cxe_rx *rx)
{
	return rx->state == CXE_RX_HDR && rx->have == 0;
}

struct stream {
	u8 *buf;
	u32 len;
	struct gen_pdu *pdus;
	u32 n;
};

static void make_stream(struct stream *s, u32 n, u32 max_dlen, bool hd, bool dd)
{
	u32 cap = 0;

	s->pdus = calloc(n, sizeof(*s->pdus));
	s->n = n;
	for (u32 i = 0; i < n; i++) {
		gen_random(&s->pdus[i], max_dlen);
		cap += cxe_pdu_wire_len(s->pdus[i].hdr_len - CXE_BHS_LEN,
					s->pdus[i].dlen, hd, dd);
	}
	s->buf = malloc(cap);
	s->len = 0;
	for (u32 i = 0; i < n; i++)
		s->len += gen_wire(&s->pdus[i], hd, dd, s->buf + s->len);
	CHECK(s->len == cap);
}

static void free_stream(struct stream *s)
{
	for (u32 i = 0; i < s->n; i++)
		free(s->pdus[i].data);
	free(s->pdus);
	free(s->buf);
}

/* split: 0 = whole, 1 = byte by byte, 2 = random chunks */
static void feed_and_compare(const struct stream *s, u32 max_dlen, bool hd,
			     bool dd, int split)
{
	struct cxe_rx rx;
	struct rec r = { 0 };
	u32 pos = 0;
	bool ok = true;

	cxe_rx_init(&rx, max_dlen);
	rx.hdigest = hd;
	rx.ddigest = dd;
	while (pos < s->len) {
		u32 n = split == 0 ? s->len : split == 1 ? 1 : 1 + rnd(3000);

		if (n > s->len - pos)
			n = s->len - pos;
		if (cxe_rx_feed(&rx, s->buf + pos, n, &rec_ops, &r) != (long)n) {
			ok = false;
			break;
		}
		pos += n;
	}
	CHECK(ok);
	CHECK(rx_at_boundary(&rx));
	CHECK(!r.order_error);
	CHECK(r.n == s->n);
	for (u32 i = 0; i < r.n && i < s->n; i++) {
		const struct gen_pdu *g = &s->pdus[i];
		const struct rec_pdu *p = &r.pdus[i];

		CHECK(p->done && p->hstatus == 0 && p->dstatus == 0);
		CHECK(p->hdr_len == g->hdr_len && !memcmp(p->hdr, g->hdr, g->hdr_len));
		CHECK(p->got == g->dlen && !memcmp(p->data, g->data, g->dlen));
	}
	rec_free(&r);
}

static void test_parser_streams(void)
{
	for (int dig = 0; dig < 4; dig++) {
		bool hd = dig & 1, dd = dig & 2;

		for (u32 max = 1; max <= 262144; max *= 8) {
			struct stream s;

			make_stream(&s, 40, max, hd, dd);
			for (int split = 0; split < 3; split++)
				feed_and_compare(&s, max, hd, dd, split);
			free_stream(&s);
		}
	}
}

static long feed_all(struct cxe_rx *rx, const u8 *buf, u32 len, struct rec *r)
{
	return cxe_rx_feed(rx, buf, len, &rec_ops, r);
}

static void test_digest_errors(void)
{
	struct gen_pdu g;
	struct cxe_rx rx;
	struct rec r = { 0 };
	u8 wire[2 * 8192];
	u32 n;

	srandom(7);
	do {
		gen_random(&g, 4096);
		if (!g.dlen)
			free(g.data);
	} while (!g.dlen);
	n = gen_wire(&g, true, true, wire);

	/* bad data digest: header fine, PDU reported with the data error */
	wire[n - 1] ^= 0x01;
	cxe_rx_init(&rx, 8192);
	rx.hdigest = rx.ddigest = true;
	CHECK(feed_all(&rx, wire, n, &r) == (long)n);
	CHECK(r.n == 1 && r.pdus[0].hstatus == 0 &&
	      r.pdus[0].dstatus == CXE_RX_DDIGEST_ERR);
	wire[n - 1] ^= 0x01;
	rec_free(&r);

	/* bad header digest: reported on the header */
	wire[g.hdr_len] ^= 0x80;
	cxe_rx_init(&rx, 8192);
	rx.hdigest = rx.ddigest = true;
	feed_all(&rx, wire, n, &r);
	CHECK(r.n == 1 && (r.pdus[0].hstatus & CXE_RX_HDIGEST_ERR));
	wire[g.hdr_len] ^= 0x80;
	rec_free(&r);

	/* a flipped payload bit is a data digest error too */
	wire[g.hdr_len + 4] ^= 0x10;
	cxe_rx_init(&rx, 8192);
	rx.hdigest = rx.ddigest = true;
	feed_all(&rx, wire, n, &r);
	CHECK(r.n == 1 && r.pdus[0].dstatus == CXE_RX_DDIGEST_ERR);
	rec_free(&r);
	free(g.data);
}

static void test_malformed(void)
{
	u8 bhs[CXE_BHS_LEN] = { 0 };
	struct cxe_rx rx;
	struct rec r = { 0 };

	/* DataSegmentLength above MaxRecvDataSegmentLength: stream dead */
	bhs[0] = CXE_OP_SCSI_CMD;
	cxe_bhs_set_dlen(bhs, 8193);
	cxe_rx_init(&rx, 8192);
	CHECK(feed_all(&rx, bhs, sizeof(bhs), &r) == -CXE_RX_E2BIG);
	CHECK(r.n == 0);
	CHECK(feed_all(&rx, bhs, 1, &r) == -EPIPE);

	/* exactly the limit is fine */
	cxe_bhs_set_dlen(bhs, 0);
	cxe_rx_init(&rx, 8192);
	CHECK(feed_all(&rx, bhs, sizeof(bhs), &r) == (long)sizeof(bhs));
	CHECK(r.n == 1 && r.pdus[0].done);
	rec_free(&r);

	/* a target opcode from the initiator */
	bhs[0] = CXE_OP_DATA_IN;
	cxe_rx_init(&rx, 8192);
	CHECK(feed_all(&rx, bhs, sizeof(bhs), &r) == -CXE_RX_EBADOP);
	CHECK(r.n == 0);

	/*
	 * A BHS that cannot start a PDU is refused once its 48 bytes are in,
	 * not after an AHS the peer may never send (the garbage a port
	 * scanner or a confused client sends must not hold the connection).
	 */
	bhs[0] = CXE_OP_DATA_IN;
	bhs[4] = 64;					/* 256 bytes of AHS announced */
	cxe_rx_init(&rx, 8192);
	CHECK(feed_all(&rx, bhs, sizeof(bhs), &r) == -CXE_RX_EBADOP);
	bhs[0] = CXE_OP_SCSI_CMD;
	cxe_bhs_set_dlen(bhs, 8193);
	cxe_rx_init(&rx, 8192);
	CHECK(feed_all(&rx, bhs, sizeof(bhs), &r) == -CXE_RX_E2BIG);
	CHECK(r.n == 0);
	/* with header digests the BHS is not trusted before its digest */
	cxe_rx_init(&rx, 8192);
	rx.hdigest = true;
	CHECK(feed_all(&rx, bhs, sizeof(bhs), &r) == (long)sizeof(bhs));
	CHECK(r.n == 0);
	/*
	 * In the login phase only a Login Request, without AHS, may come:
	 * any other PDU is refused at its BHS, whatever it announces.
	 */
	cxe_bhs_set_dlen(bhs, 0);
	cxe_rx_init(&rx, 8192);
	rx.login = true;
	CHECK(feed_all(&rx, bhs, sizeof(bhs), &r) == -CXE_RX_EBADOP);
	CHECK(r.n == 0);
	CHECK(cxe_bhs_opcode(rx.hdr) == CXE_OP_SCSI_CMD && rx.hdr_len == CXE_BHS_LEN);
	bhs[4] = 0;
	cxe_rx_init(&rx, 8192);
	rx.login = true;
	CHECK(feed_all(&rx, bhs, sizeof(bhs), &r) == -CXE_RX_EBADOP);
	bhs[0] = CXE_OP_LOGIN_REQ;
	bhs[4] = 1;
	cxe_rx_init(&rx, 8192);
	rx.login = true;
	CHECK(feed_all(&rx, bhs, sizeof(bhs), &r) == -CXE_RX_EBADOP);
	bhs[4] = 0;
	cxe_rx_init(&rx, 8192);
	rx.login = true;
	CHECK(feed_all(&rx, bhs, sizeof(bhs), &r) == (long)sizeof(bhs));
	CHECK(r.n == 1 && rx_at_boundary(&rx));
	rec_free(&r);
	memset(&r, 0, sizeof(r));

	/* cut mid-header: nothing handed up, not at a boundary */
	bhs[0] = CXE_OP_NOOP_OUT;
	cxe_rx_init(&rx, 8192);
	CHECK(feed_all(&rx, bhs, 20, &r) == 20);
	CHECK(r.n == 0 && !rx_at_boundary(&rx));
}

/* Fed in random chunks and resumed after every pause: the same PDUs. */
static void test_pause(void)
{
	for (int dig = 0; dig < 4; dig++) {
		bool hd = dig & 1, dd = dig & 2;
		struct stream s;
		struct cxe_rx rx;
		struct rec r = { 0 };
		u32 pos = 0, feeds = 0, data_pdus = 0, pauses = 0;
		bool ok = true;

		make_stream(&s, 60, 20000, hd, dd);
		cxe_rx_init(&rx, 20000);
		rx.hdigest = hd;
		rx.ddigest = dd;
		while (pos < s.len) {
			u32 n = 1 + rnd(5000);
			long ret;

			if (n > s.len - pos)
				n = s.len - pos;
			ret = cxe_rx_feed(&rx, s.buf + pos, n, &pause_ops, &r);
			if (ret < 0 || ret > (long)n) {
				ok = false;
				break;
			}
			/* a pause is flagged even when it falls on the last byte */
			if (ret < (long)n)
				CHECK(rx.paused);
			pauses += rx.paused;
			pos += ret;
			feeds++;
		}
		CHECK(ok);
		CHECK(pauses >= s.n);
		CHECK(rx_at_boundary(&rx) && !r.order_error && r.n == s.n);
		for (u32 i = 0; i < r.n && i < s.n; i++) {
			CHECK(r.pdus[i].done && r.pdus[i].got == s.pdus[i].dlen &&
			      !memcmp(r.pdus[i].data, s.pdus[i].data, s.pdus[i].dlen));
			data_pdus += s.pdus[i].dlen != 0;
		}
		/* a pause after each header with data, and after each PDU */
		CHECK(feeds >= s.n + data_pdus);
		rec_free(&r);
		free_stream(&s);
	}
}

/*
 * The consumer takes the data itself, in pieces of any size, from the
 * stream's bytes (as the software adapter copies a socket buffer's pages
 * straight into a command's), the rest fed: the same PDUs, the data digest
 * checked over the bytes it took, a bad byte among them reported, and a
 * take beyond the segment refused.
 */
static void take_data(struct cxe_rx *rx, struct rec *r, const u8 *p, u32 n,
		      bool corrupt)
{
	struct rec_pdu *pdu = &r->pdus[r->n - 1];
	u32 crc = rx->crc;
	/* the take ends the PDU: done, and with it the consumer's pause */
	bool ends = n == cxe_rx_data_left(rx) && !cxe_pad_len(rx->dlen) &&
		    !rx->ddigest;
	u8 tmp[5000];
	long ret;

	memcpy(tmp, p, n);
	if (corrupt)
		tmp[n / 2] ^= 0x40;
	memcpy(pdu->data + pdu->got, tmp, n);
	pdu->got += n;
	if (rx->ddigest)
		crc = cxe_crc32c(crc, tmp, n);
	ret = cxe_rx_data_took(rx, n, crc, &pause_ops, r);
	CHECK(ret == (long)n);
	CHECK(rx->paused == ends && pdu->done == ends);
}

static void test_data_took(void)
{
	for (int dig = 0; dig < 4; dig++) {
		bool hd = dig & 1, dd = dig & 2;
		struct stream s;
		struct cxe_rx rx;
		struct rec r = { 0 };
		u32 pos = 0, took = 0, bad = 0;
		long ret;

		make_stream(&s, 60, 20000, hd, dd);
		cxe_rx_init(&rx, 20000);
		rx.hdigest = hd;
		rx.ddigest = dd;
		CHECK(cxe_rx_data_left(&rx) == 0);
		while (pos < s.len) {
			u32 left = cxe_rx_data_left(&rx);

			if (left && rnd(4)) {
				u32 n = 1 + rnd(left < 4999 ? left : 4999);
				/* a third of the PDUs get a bad byte (digests on) */
				bool corrupt = dd && r.n % 3 == 0 && n == left;

				take_data(&rx, &r, s.buf + pos, n, corrupt);
				bad += corrupt;
				took += n;
				pos += n;
				continue;
			}
			ret = cxe_rx_feed(&rx, s.buf + pos, 1 + rnd(5000 < s.len - pos ?
						    5000 : s.len - pos), &pause_ops, &r);
			if (ret < 0)
				break;
			pos += ret;
		}
		CHECK(pos == s.len && rx_at_boundary(&rx));
		CHECK(took > 0 && r.n == s.n && !r.order_error);
		for (u32 i = 0; i < r.n && i < s.n; i++) {
			bool was_bad = r.pdus[i].dstatus & CXE_RX_DDIGEST_ERR;

			CHECK(r.pdus[i].done && r.pdus[i].got == s.pdus[i].dlen);
			CHECK(!r.pdus[i].hstatus);
			if (!was_bad)
				CHECK(!memcmp(r.pdus[i].data, s.pdus[i].data,
					      s.pdus[i].dlen));
			bad -= was_bad;
		}
		CHECK(bad == 0);	/* each bad byte taken was reported */
		rec_free(&r);

		/* a consumer that lost the stream kills the parser */
		cxe_rx_init(&rx, 20000);
		cxe_rx_kill(&rx);
		CHECK(cxe_rx_feed(&rx, s.buf, s.len, &pause_ops, &r) == -EPIPE);
		CHECK(r.n == 0);

		/* a take past the segment, or of nothing: the stream is dead */
		for (int over = 0; over < 2; over++) {
			cxe_rx_init(&rx, 20000);
			rx.hdigest = hd;
			rx.ddigest = dd;
			pos = 0;
			while (!cxe_rx_data_left(&rx) && pos < s.len) {
				ret = cxe_rx_feed(&rx, s.buf + pos, s.len - pos,
						  &pause_ops, &r);
				CHECK(ret >= 0);
				pos += ret;
			}
			CHECK(cxe_rx_data_left(&rx) > 0);
			ret = cxe_rx_data_took(&rx, over ? cxe_rx_data_left(&rx) + 1 : 0,
					       0, &pause_ops, &r);
			CHECK(ret == -EINVAL && rx.state == CXE_RX_DEAD);
			CHECK(cxe_rx_data_left(&rx) == 0);
			rec_free(&r);
		}
		free_stream(&s);
	}
}

/*
 * Paused after a header, its data segment taken by someone else: the
 * parser goes on with the next PDU; it refuses to skip anywhere else.
 */
static void test_skip_data(void)
{
	for (int dig = 0; dig < 4; dig++) {
		bool hd = dig & 1, dd = dig & 2;
		struct stream s;
		struct cxe_rx rx;
		struct rec r = { 0 };
		u32 pos = 0, skipped = 0;
		long ret;

		make_stream(&s, 30, 9000, hd, dd);
		cxe_rx_init(&rx, 9000);
		rx.hdigest = hd;
		rx.ddigest = dd;
		CHECK(!cxe_rx_skip_data(&rx));	/* at a PDU boundary */
		while (pos < s.len) {
			ret = cxe_rx_feed(&rx, s.buf + pos, s.len - pos, &pause_ops, &r);
			if (ret <= 0)
				break;
			pos += ret;
			/* every other PDU with data: paused after its header */
			if (rx.state == CXE_RX_DATA && r.n % 2) {
				u32 wire = cxe_rx_data_wire_len(&rx);

				CHECK(cxe_rx_skip_data(&rx));
				r.pdus[r.n - 1].done = true;
				r.pdus[r.n - 1].got = cxe_bhs_dlen(r.pdus[r.n - 1].hdr);
				pos += wire;
				skipped++;
			}
		}
		CHECK(pos == s.len && rx_at_boundary(&rx));
		CHECK(skipped > 0 && r.n == s.n && !r.order_error);
		for (u32 i = 0; i < r.n && i < s.n; i++) {
			CHECK(!memcmp(r.pdus[i].hdr, s.pdus[i].hdr, s.pdus[i].hdr_len));
			if (!(i % 2 == 0 && s.pdus[i].dlen))
				CHECK(!memcmp(r.pdus[i].data, s.pdus[i].data, s.pdus[i].dlen));
		}
		rec_free(&r);
		free_stream(&s);
	}
}

/* key=value pairs of a Login data segment, whole pairs only */
static void test_keys_have(void)
{
	static const u8 keys[] = "InitiatorName=iqn.x\0SessionType=Discovery\0AuthMethod=None";
	u32 len = sizeof(keys) - 1;	/* the last pair has no NUL: cut off */

	CHECK(cxe_keys_have(keys, len, "SessionType", "Discovery"));
	CHECK(cxe_keys_have(keys, len, "InitiatorName", "iqn.x"));
	CHECK(!cxe_keys_have(keys, len, "SessionType", "Normal"));
	CHECK(!cxe_keys_have(keys, len, "SessionType", "Disc"));	/* a prefix */
	CHECK(!cxe_keys_have(keys, len, "Type", "Discovery"));	/* a suffix */
	CHECK(!cxe_keys_have(keys, len, "AuthMethod", "None"));	/* cut off */
	CHECK(cxe_keys_have(keys, len + 1, "AuthMethod", "None"));
	CHECK(!cxe_keys_have(keys, 25, "SessionType", "Discovery")); /* cut mid-pair */
	CHECK(!cxe_keys_have(keys, 0, "InitiatorName", "iqn.x"));
	CHECK(!cxe_keys_have((const u8 *)"\0\0", 2, "", ""));
	CHECK(cxe_keys_have((const u8 *)"=\0", 2, "", ""));
}

/* the first whole pair's value, as the login's TargetName is read */
static void test_keys_value(void)
{
	static const u8 keys[] = "TargetNameX=no\0TargetName=iqn.t\0TargetName=iqn.u\0TargetName=cut";
	u32 len = sizeof(keys) - 1, vlen = 99;
	const u8 *v;

	v = cxe_keys_value(keys, len, "TargetName", &vlen);
	CHECK(v && vlen == 5 && !memcmp(v, "iqn.t", 5));
	CHECK(cxe_keys_have(keys, len, "TargetName", "iqn.u"));	/* a later pair */
	CHECK(!cxe_keys_have(keys, len, "TargetName", "cut"));	/* cut off */
	CHECK(!cxe_keys_value(keys, len, "Target", &vlen));	/* a prefix */
	CHECK(!cxe_keys_value(keys, 20, "TargetName", &vlen));	/* cut mid-pair */
	v = cxe_keys_value((const u8 *)"TargetName=\0", 12, "TargetName", &vlen);
	CHECK(v && vlen == 0);
}

/* a SCSI Command's data segment is write data: none without the W bit */
static void test_data_ok(void)
{
	u8 h[CXE_BHS_LEN] = { 0 };

	h[0] = CXE_OP_SCSI_CMD;
	h[1] = 0x80 | 0x40;				/* F, R: a READ */
	CHECK(cxe_bhs_data_ok(h));			/* no data segment */
	h[7] = 1;					/* one byte of "immediate data" */
	CHECK(!cxe_bhs_data_ok(h));
	h[1] = 0x80;					/* no data direction at all */
	CHECK(!cxe_bhs_data_ok(h));
	h[1] = 0x80 | CXE_CMD_WRITE;			/* a WRITE: immediate data */
	CHECK(cxe_bhs_data_ok(h));
	h[1] = 0x80 | 0x40 | CXE_CMD_WRITE;		/* bidirectional: LIO rejects it */
	CHECK(cxe_bhs_data_ok(h));
	h[0] = CXE_OP_NOOP_OUT;				/* ping data, no W bit there */
	h[1] = 0x80;
	CHECK(cxe_bhs_data_ok(h));
	h[0] = CXE_OP_SCSI_CMD | CXE_FLAG_IMMEDIATE;	/* the I bit is not the opcode */
	CHECK(!cxe_bhs_data_ok(h));
}

/* AHS segments: AHSLength >= 1, inside TotalAHSLength, filling it exactly */
static void test_ahs(void)
{
	u8 h[CXE_BHS_LEN + 64] = { 0 };
	u8 *ahs = h + CXE_BHS_LEN;

	CHECK(cxe_bhs_ahs_ok(h));			/* no AHS */
	h[4] = 1;					/* 4 bytes of AHS */
	ahs[0] = 0; ahs[1] = 1; ahs[2] = 1;		/* len 1: 3 + 1 = 4 */
	CHECK(cxe_bhs_ahs_ok(h));
	ahs[1] = 0;					/* AHSLength 0 */
	CHECK(!cxe_bhs_ahs_ok(h));
	ahs[1] = 2;					/* 3 + 2 -> 8 > 4 */
	CHECK(!cxe_bhs_ahs_ok(h));
	h[4] = 2;					/* 8 bytes: fits */
	CHECK(cxe_bhs_ahs_ok(h));
	h[4] = 3;					/* 12: 4 left over, too short */
	CHECK(!cxe_bhs_ahs_ok(h));
	ahs[8] = 0; ahs[9] = 1; ahs[10] = 2;		/* a second segment of 4 */
	CHECK(cxe_bhs_ahs_ok(h));
	h[4] = 1; ahs[0] = 0xff; ahs[1] = 0xff;	/* 65535: far past the AHS */
	CHECK(!cxe_bhs_ahs_ok(h));
	h[4] = 5; ahs[0] = 0; ahs[1] = 17;		/* 16-byte extended CDB + 1 */
	CHECK(cxe_bhs_ahs_ok(h));
}

/* a VARIABLE LENGTH CDB carries what its byte 7 claims: BHS 16 + extended CDB */
static void test_cdb(void)
{
	u8 h[CXE_BHS_LEN + 64] = { 0 };
	u8 *cdb = h + CXE_BHS_CDB_OFF, *ahs = h + CXE_BHS_LEN;

	h[0] = CXE_OP_SCSI_CMD;
	cdb[0] = 0x28;					/* READ(10): fits the BHS */
	CHECK(cxe_bhs_cdb_ok(h));
	cdb[0] = CXE_VARLEN_CDB; cdb[7] = 8;		/* 16 bytes: the BHS's */
	CHECK(cxe_bhs_cdb_ok(h));
	cdb[7] = 24;					/* READ(32), no AHS */
	CHECK(!cxe_bhs_cdb_ok(h));
	h[4] = 3; ahs[1] = 9; ahs[2] = CXE_AHS_EXT_CDB;	/* 8 more: 24 of 32 */
	CHECK(!cxe_bhs_cdb_ok(h));
	h[4] = 5; ahs[1] = 17;				/* 16 more: 32 */
	CHECK(cxe_bhs_cdb_ok(h));
	ahs[2] = 2;					/* not an extended CDB */
	CHECK(!cxe_bhs_cdb_ok(h));
	h[0] = CXE_OP_TEXT_REQ; cdb[7] = 24; h[4] = 0;	/* not a SCSI Command */
	CHECK(cxe_bhs_cdb_ok(h));
}

static void test_seg(void)
{
	struct cxe_seg_burst b = { .offset = 4096, .len = 10000, .max_pdu = 4096,
				   .datasn = 7, .status = true };
	struct cxe_seg_pdu p;
	u32 covered = 0;

	CHECK(cxe_seg_count(&b) == 3);
	for (u32 i = 0; cxe_seg_pdu(&b, i, &p); i++) {
		CHECK(p.offset == 4096 + covered && p.datasn == 7 + i);
		CHECK(p.final == (i == 2) && p.status == (i == 2));
		covered += p.len;
	}
	CHECK(covered == 10000);
	CHECK(cxe_seg_pdu(&b, 2, &p) && p.len == 10000 - 8192);
	CHECK(!cxe_seg_pdu(&b, 3, &p));

	/* exact multiple */
	b.len = 8192;
	CHECK(cxe_seg_count(&b) == 2 && cxe_seg_pdu(&b, 1, &p) && p.len == 4096);
	/* 1-byte burst, without status */
	b.len = 1;
	b.status = false;
	CHECK(cxe_seg_count(&b) == 1 && cxe_seg_pdu(&b, 0, &p));
	CHECK(p.len == 1 && p.final && !p.status && p.offset == 4096);
	/* invalid: empty, zero segment size, past 4 GiB */
	b.len = 0;
	CHECK(cxe_seg_count(&b) == 0 && !cxe_seg_pdu(&b, 0, &p));
	b.len = 1;
	b.max_pdu = 0;
	CHECK(cxe_seg_count(&b) == 0);
	b = (struct cxe_seg_burst){ .offset = 0xfffff000u, .len = 0x2000, .max_pdu = 512 };
	CHECK(cxe_seg_count(&b) == 0);
	/* DataSN wraps modulo 2^32 */
	b = (struct cxe_seg_burst){ .len = 3, .max_pdu = 1, .datasn = 0xffffffffu };
	CHECK(cxe_seg_pdu(&b, 1, &p) && p.datasn == 0);
	/* random bursts: PDUs tile the burst exactly, none above max_pdu */
	for (int t = 0; t < 10000; t++) {
		u32 sum = 0, n;

		b = (struct cxe_seg_burst){ .offset = rnd(1 << 20), .len = 1 + rnd(1 << 20),
					    .max_pdu = 1 + rnd(1 << 18), .datasn = random() };
		n = cxe_seg_count(&b);
		for (u32 i = 0; i < n; i++) {
			CHECK(cxe_seg_pdu(&b, i, &p));
			if (p.len == 0 || p.len > b.max_pdu || p.offset != b.offset + sum)
				CHECK(0);
			sum += p.len;
		}
		if (sum != b.len)
			CHECK(0);
	}
}

static void test_datain_hdr(void)
{
	u8 tmpl[CXE_BHS_LEN], bhs[CXE_BHS_LEN];
	struct cxe_seg_pdu mid = { .offset = 8192, .len = 8192, .datasn = 1 };
	struct cxe_seg_pdu end_of_burst = { .offset = 16384, .len = 100, .datasn = 2, .final = true };
	struct cxe_seg_pdu last = { .offset = 16484, .len = 3, .datasn = 3, .final = true, .status = true };

	memset(tmpl, 0xa5, sizeof(tmpl));
	tmpl[0] = CXE_OP_DATA_IN;
	tmpl[1] = CXE_FLAG_FINAL | CXE_DATAIN_STATUS | 0x02;	/* F, S, U */
	tmpl[3] = 0x02;						/* CHECK CONDITION */
	cxe_put_be32(tmpl + 24, 77);				/* StatSN */
	cxe_put_be32(tmpl + 44, 512);				/* residual */

	cxe_seg_datain_hdr(bhs, tmpl, &mid);
	CHECK(bhs[0] == CXE_OP_DATA_IN && bhs[1] == 0 && bhs[3] == 0);
	CHECK(cxe_get_be32(bhs + 24) == CXE_RSVD_TAG && cxe_get_be32(bhs + 44) == 0);
	CHECK(cxe_bhs_dlen(bhs) == 8192 && cxe_get_be32(bhs + 36) == 1 &&
	      cxe_get_be32(bhs + 40) == 8192);
	CHECK(!memcmp(bhs + 8, tmpl + 8, 16) && !memcmp(bhs + 28, tmpl + 28, 8));

	cxe_seg_datain_hdr(bhs, tmpl, &end_of_burst);
	CHECK(bhs[1] == CXE_FLAG_FINAL && cxe_bhs_dlen(bhs) == 100);

	cxe_seg_datain_hdr(bhs, tmpl, &last);
	CHECK(bhs[1] == tmpl[1] && bhs[3] == 0x02 && cxe_get_be32(bhs + 24) == 77);
	CHECK(cxe_get_be32(bhs + 44) == 512 && cxe_get_be32(bhs + 36) == 3 &&
	      cxe_get_be32(bhs + 40) == 16484 && cxe_bhs_dlen(bhs) == 3);
}

static void test_ddp(void)
{
	u32 gen = 0;

	CHECK(cxe_ddp_tag_idx(cxe_ddp_tag(5, 9)) == 5 && cxe_ddp_tag_gen(cxe_ddp_tag(5, 9)) == 9);
	/* the reserved tag is never produced, however generations advance */
	for (u32 i = 0; i < (CXE_DDP_GEN_MASK + 2); i++) {
		gen = cxe_ddp_next_gen(gen, CXE_DDP_MAX_TAGS - 1);
		if (cxe_ddp_tag(CXE_DDP_MAX_TAGS - 1, gen) == CXE_RSVD_TAG)
			CHECK(0);
	}
	CHECK(cxe_ddp_next_gen(3, 1) == 4);
	/* windows */
	CHECK(cxe_ddp_in_window(8192, 65536, 8192, 65536));
	CHECK(cxe_ddp_in_window(8192, 65536, 16384, 4096));
	CHECK(!cxe_ddp_in_window(8192, 65536, 4096, 4096));	/* before */
	CHECK(!cxe_ddp_in_window(8192, 65536, 73728 - 1, 2));	/* past the end */
	CHECK(!cxe_ddp_in_window(0, 0xffffffffu, 0xfffffff0u, 0x20));	/* wraps */
	CHECK(!cxe_ddp_in_window(0, 4096, 0, 0));		/* empty */
}

/* ---- T10 protection information -------------------------------------------- */

/* CRC-16 T10-DIF bit by bit: an oracle apart from the harness's table */
static u16 crc_t10dif_bitwise(const u8 *p, size_t len)
{
	u16 crc = 0;

	while (len--) {
		crc ^= (u16)(*p++ << 8);
		for (int k = 0; k < 8; k++)
			crc = crc & 0x8000 ? (u16)(crc << 1) ^ 0x8bb7 : (u16)(crc << 1);
	}
	return crc;
}

struct pi_buf {
	u8	prot[64 * CXE_PI_TUPLE_LEN];
	u32	tuples;		/* the buffer's */
	u32	maps;
	u32	win_max;	/* tuples per window (a page of the buffer) */
};

/* Windows of up to win_max tuples, as pages of a protection buffer are */
static bool pi_map(void *ctx, u32 idx, struct cxe_pi_win *w)
{
	struct pi_buf *b = ctx;
	u32 first = idx - idx % b->win_max;

	b->maps++;
	if (idx >= b->tuples)
		return false;
	w->t = b->prot + first * CXE_PI_TUPLE_LEN;
	w->first = first;
	w->end = first + b->win_max < b->tuples ? first + b->win_max : b->tuples;
	return true;
}

static void pi_buf_init(struct pi_buf *b, u32 tuples, u32 win_max)
{
	memset(b->prot, 0xa5, sizeof(b->prot));
	b->tuples = tuples;
	b->maps = 0;
	b->win_max = win_max;
}

static u32 be32_at(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

/* The tuples as SBC-4 says, block by block, with what type 3 leaves alone */
static bool pi_tuples_ok(const struct pi_buf *b, const u8 *data, u32 blocks,
			 u32 block, u64 lba, bool type1)
{
	for (u32 i = 0; i < blocks; i++) {
		const u8 *t = b->prot + i * CXE_PI_TUPLE_LEN;
		u16 guard = crc_t10dif_bitwise(data + (size_t)i * block, block);

		if (t[0] != guard >> 8 || t[1] != (guard & 0xff) || t[2] || t[3])
			return false;
		if (type1 ? be32_at(t + 4) != (u32)(lba + i) : be32_at(t + 4) != 0xa5a5a5a5u)
			return false;
	}
	return true;
}

static void test_pi(void)
{
	static const u8 check[] = "123456789";
	u32 block, blocks, pos, n, got;
	struct cxe_pi_gen g;
	struct pi_buf b;
	u8 *data;

	/* the CRC's check value (CRC-16/T10-DIF), and the table against bits */
	CHECK(cxe_crc_t10dif(0, check, 9) == 0xd0db);
	CHECK(crc_t10dif_bitwise(check, 9) == 0xd0db);
	data = malloc(64 * 4096);
	for (u32 i = 0; i < 64 * 4096; i++)
		data[i] = random();
	CHECK(cxe_crc_t10dif(cxe_crc_t10dif(0, data, 100), data + 100, 412) ==
	      crc_t10dif_bitwise(data, 512));

	/* pieces of every size, across block boundaries, both types */
	for (int round = 0; round < 200; round++) {
		bool type1 = round & 1;
		u64 lba = round == 7 ? 0xfffffffeull : (u64)random() << 8;

		block = round % 3 == 2 ? 4096 : 512;
		blocks = 1 + random() % (round % 3 == 2 ? 16 : 64);
		pi_buf_init(&b, blocks, 1 + random() % 16);
		CHECK(cxe_pi_gen_init(&g, block, blocks * block, blocks, lba, type1));
		for (pos = 0, got = 0; pos < blocks * block; pos += n) {
			n = 1 + random() % (round % 2 ? 3 * block : 700);
			if (n > blocks * block - pos)
				n = blocks * block - pos;
			got += cxe_pi_gen_feed(&g, pos, data + pos, n, pi_map, &b);
		}
		CHECK(got == blocks && cxe_pi_gen_done(&g));
		/* a window is mapped once, when its first tuple is due */
		CHECK(b.maps == (blocks + b.win_max - 1) / b.win_max);
		CHECK(pi_tuples_ok(&b, data, blocks, block, lba, type1));
	}

	/* a piece out of order stops it for good, a piece sent again too */
	pi_buf_init(&b, 8, 8);
	CHECK(cxe_pi_gen_init(&g, 512, 8 * 512, 8, 0, true));
	CHECK(cxe_pi_gen_feed(&g, 0, data, 1000, pi_map, &b) == 1);
	CHECK(cxe_pi_gen_feed(&g, 2000, data + 2000, 500, pi_map, &b) == 0);
	CHECK(cxe_pi_gen_feed(&g, 1000, data + 1000, 3096, pi_map, &b) == 0);
	CHECK(!cxe_pi_gen_done(&g));
	CHECK(cxe_pi_gen_init(&g, 512, 8 * 512, 8, 0, true));
	CHECK(cxe_pi_gen_feed(&g, 0, data, 1024, pi_map, &b) == 2);
	CHECK(cxe_pi_gen_feed(&g, 512, data + 512, 512, pi_map, &b) == 0);
	CHECK(!cxe_pi_gen_done(&g));

	/* fewer tuples than blocks (COMPARE AND WRITE): the first ones only */
	pi_buf_init(&b, 8, 3);
	CHECK(cxe_pi_gen_init(&g, 512, 16 * 512, 8, 40, true));
	CHECK(cxe_pi_gen_feed(&g, 0, data, 16 * 512, pi_map, &b) == 8);
	CHECK(cxe_pi_gen_done(&g));
	CHECK(pi_tuples_ok(&b, data, 8, 512, 40, true));
	CHECK(be32_at(b.prot + 8 * CXE_PI_TUPLE_LEN) == 0xa5a5a5a5u);

	/* no window for a tuple: it stops, and is not done */
	pi_buf_init(&b, 3, 2);
	CHECK(cxe_pi_gen_init(&g, 512, 8 * 512, 8, 0, true));
	CHECK(cxe_pi_gen_feed(&g, 0, data, 8 * 512, pi_map, &b) == 3);
	CHECK(!cxe_pi_gen_done(&g));

	/* a partial last block gets no tuple, and the data is whole without it */
	pi_buf_init(&b, 2, 2);
	CHECK(cxe_pi_gen_init(&g, 512, 1000, 2, 0, false));
	CHECK(cxe_pi_gen_feed(&g, 0, data, 1000, pi_map, &b) == 1 && cxe_pi_gen_done(&g));

	/* block sizes with no generator */
	CHECK(!cxe_pi_gen_init(&g, 520, 520, 1, 0, true));
	CHECK(!cxe_pi_gen_init(&g, 256, 512, 2, 0, true));
	CHECK(cxe_pi_gen_feed(&g, 0, data, 256, pi_map, &b) == 0 && !cxe_pi_gen_done(&g));
	free(data);
}

/*
 * The oracle for a read's check, block by block as sbc_dif_verify() goes:
 * an escaped application tag passes the block, then the guard, then the
 * reference tag, each if asked for. Returns the failure and its block.
 */
static enum cxe_pi_fail pi_verify_oracle(const u8 *prot, const u8 *data,
					 u32 blocks, u32 block, u32 ref0,
					 u8 asked, u32 *bad)
{
	for (u32 i = 0; i < blocks; i++) {
		const u8 *t = prot + i * CXE_PI_TUPLE_LEN;
		u16 guard = crc_t10dif_bitwise(data + (size_t)i * block, block);

		*bad = i;
		if (t[2] == 0xff && t[3] == 0xff)
			continue;
		if (asked & CXE_PI_CHECK_GUARD &&
		    (t[0] != guard >> 8 || t[1] != (guard & 0xff)))
			return CXE_PI_BAD_GUARD;
		if (asked & CXE_PI_CHECK_REF && be32_at(t + 4) != ref0 + i)
			return CXE_PI_BAD_REF;
	}
	*bad = blocks;
	return CXE_PI_OK;
}

static void test_pi_check(void)
{
	u32 block, blocks, pos, n, got, bad, want_bad;
	enum cxe_pi_fail want;
	struct cxe_pi_gen g;
	struct pi_buf b;
	int fails[3] = {};
	u8 *data;

	data = malloc(64 * 4096);
	for (u32 i = 0; i < 64 * 4096; i++)
		data[i] = random();
	for (int round = 0; round < 600; round++) {
		u32 ref0 = round == 5 ? 0xfffffffeu : (u32)random();
		u8 asked = round % 4;	/* none, guard, ref, both */

		block = round % 3 == 2 ? 4096 : 512;
		blocks = 1 + random() % (round % 3 == 2 ? 16 : 64);
		/* good tuples, made by the generator (checked above) */
		pi_buf_init(&b, blocks, 1 + random() % 16);
		CHECK(cxe_pi_gen_init(&g, block, blocks * block, blocks, ref0, true));
		CHECK(cxe_pi_gen_feed(&g, 0, data, blocks * block, pi_map, &b) == blocks);
		/* then spoilt: a field of a block, an escape before or on it */
		for (int k = round % 5; k < 3; k++) {
			u8 *t = b.prot + (random() % blocks) * CXE_PI_TUPLE_LEN;

			switch (random() % 4) {
			case 0: t[random() % 2] ^= 1 << random() % 8; break;
			case 1: t[4 + random() % 4] ^= 1 << random() % 8; break;
			case 2: t[2] = 0xff; t[3] = 0xff; break;
			default: t[2] ^= 0x10; break;	/* no check reads it */
			}
		}
		want = pi_verify_oracle(b.prot, data, blocks, block, ref0, asked,
					&want_bad);
		fails[want]++;
		b.maps = 0;
		CHECK(cxe_pi_chk_init(&g, block, blocks * block, blocks, ref0, asked));
		for (pos = 0, got = 0; pos < blocks * block; pos += n) {
			n = 1 + random() % (round % 2 ? 3 * block : 700);
			if (n > blocks * block - pos)
				n = blocks * block - pos;
			got += cxe_pi_gen_feed(&g, pos, data + pos, n, pi_map, &b);
		}
		CHECK(cxe_pi_chk_failed(&g, &bad) == want);
		CHECK(got == want_bad);
		if (want) {
			CHECK(bad == want_bad && !cxe_pi_gen_done(&g));
		} else {
			CHECK(cxe_pi_gen_done(&g));
		}
	}
	/* every outcome came up, so each branch above was taken */
	CHECK(fails[CXE_PI_OK] && fails[CXE_PI_BAD_GUARD] && fails[CXE_PI_BAD_REF]);

	/* a failure is an answer: nothing more is fed, and it is no gap */
	pi_buf_init(&b, 4, 4);
	CHECK(cxe_pi_gen_init(&g, 512, 4 * 512, 4, 9, true));
	CHECK(cxe_pi_gen_feed(&g, 0, data, 4 * 512, pi_map, &b) == 4);
	b.prot[CXE_PI_TUPLE_LEN + 7] ^= 1;
	CHECK(cxe_pi_chk_init(&g, 512, 4 * 512, 4, 9, CXE_PI_CHECK_GUARD | CXE_PI_CHECK_REF));
	CHECK(cxe_pi_gen_feed(&g, 0, data, 1536, pi_map, &b) == 1);
	CHECK(cxe_pi_gen_feed(&g, 1536, data + 1536, 512, pi_map, &b) == 0);
	CHECK(cxe_pi_chk_failed(&g, &bad) == CXE_PI_BAD_REF && bad == 1 && !g.broken);
	/* the tuples are read, never written */
	CHECK(b.prot[2] == 0 && b.prot[3] == 0 && be32_at(b.prot + 4) == 9);
	free(data);
}

/*
 * A read's digests made ahead (struct cxe_din) are taken PDU by PDU as the
 * burst planner cuts the read, the first CXE_DIN_CRCS of them, each once
 */
static void test_din(void)
{
	for (int round = 0; round < 2000; round++) {
		u32 total = 1 + random() % (round % 3 ? 300000 : 5000000);
		u32 mbl = 512 * (1 + random() % (round % 2 ? 8 : 1024));
		u32 mrdsl = 512 * (1 + random() % 512), idx = 0, crc, skip;
		struct cxe_din d = { .mbl = mbl, .mrdsl = mrdsl, .len = total };
		struct cxe_seg_pdu pdu;

		for (u32 i = 0; i < CXE_DIN_CRCS; i++)
			d.crc[i] = 1000 + i;
		d.n = CXE_DIN_CRCS;
		skip = round % 5 == 4 ? random() % 20 : ~0u;
		for (u32 off = 0; off < total; off += mbl) {
			struct cxe_seg_burst b = {
				.offset = off,
				.len = total - off < mbl ? total - off : mbl,
				.max_pdu = mrdsl,
			};

			for (u32 k = 0; cxe_seg_pdu(&b, k, &pdu); k++, idx++) {
				bool want = idx < CXE_DIN_CRCS && idx < skip;

				/* the cut ends where the planner's PDU ends */
				CHECK(cxe_din_pdu_end(&d, pdu.offset) == pdu.offset + pdu.len);
				if (idx == skip)
					continue;	/* sent otherwise: the rest too */
				crc = 0;
				CHECK(cxe_din_crc(&d, pdu.offset, pdu.len, &crc) == want);
				CHECK(crc == (want ? 1000 + idx : 0));
			}
		}
	}
	/* none made: none given */
	{
		struct cxe_din d = { .mbl = 512, .mrdsl = 512, .len = 512 };
		u32 crc = 7;

		CHECK(!cxe_din_crc(&d, 0, 512, &crc) && crc == 7);
	}
}

int main(void)
{
	srandom(1);
	test_rfc3720_b4();
	test_pause();
	test_ahs();
	test_cdb();
	test_data_ok();
	test_keys_have();
	test_keys_value();
	test_skip_data();
	test_data_took();
	test_framing();
	test_parser_streams();
	test_digest_errors();
	test_malformed();
	test_seg();
	test_datain_hdr();
	test_ddp();
	test_pi();
	test_pi_check();
	test_din();
	printf("test_pdu: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
