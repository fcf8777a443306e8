// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the cxgb4 backend's receive assembler
 * (adapters/cxgb4/rx.c), fed by arbitrary messages and by the chip
 * model on an arbitrary TCP stream; and the chip model's transmit side
 * on arbitrary work requests. The first byte picks the chip, the
 * digests and the feed. Messages are given in buffers of exactly their
 * length (ASan sees a read past one). Whatever the input: the assembler
 * returns MORE, PDU or -EPROTO, a PDU's header is a BHS and its AHS
 * within the assembler, and once it refused it refuses everything; the
 * transmit model sends no more than its buffer or refuses the request;
 * the pod memory model takes a request into its region or refuses it, and
 * locates a byte in a page a pod names or says it cannot; the credit
 * ledger, on any sequence of requests and acks, keeps the credits its
 * requests hold equal to those out, and an ack it refuses changes nothing;
 * a connection's life (conn_life.h), on any sequence of the peer's, the
 * PDU layer's and the timer's doings, never sends the chip model what it
 * refuses, keeps every rule conn_life.h checks, and ends once everyone
 * behaves.
 */
#include <stdint.h>
#include <stdlib.h>
#include "rx.h"
#include "ulp_rx.h"
#include "ulp_tx.h"
#include "ppod.h"
#include "credits.h"
#include "conn_life.h"

#define MAX_DLEN	4096

static struct cxe_c4rx rx;
static bool refused;

static int take(const u8 *m, u32 len)
{
	struct cxe_c4rx_pdu pdu;
	u8 *copy = malloc(len ? len : 1);
	int ret;

	if (!copy)
		abort();
	memcpy(copy, m, len);
	ret = cxe_c4rx_msg(&rx, copy, len, &pdu);
	free(copy);
	if (ret != CXE_C4RX_MORE && ret != CXE_C4RX_PDU && ret != -EPROTO)
		abort();
	if (refused && ret != -EPROTO)
		abort();
	refused |= ret == -EPROTO;
	if (ret == CXE_C4RX_PDU &&
	    (pdu.hdr != rx.hdr || pdu.hdr_len > sizeof(rx.hdr) ||
	     (!pdu.hcrc_err && pdu.hdr_len != CXE_BHS_LEN +
	      cxe_bhs_ahs_len(pdu.hdr)) ||
	     (pdu.placed && pdu.data)))
		abort();
	return ret < 0 ? ret : 0;
}

static int deliver(void *ctx, const u8 *m, u32 len)
{
	(void)ctx;
	return take(m, len);
}

static bool ppod(void *ctx, u32 ttt, u32 itt, u32 off, u32 len)
{
	(void)ctx;
	(void)itt;
	(void)off;
	return ttt & 1 && len <= MAX_DLEN;
}

static u8 placed[MAX_DLEN];

static int place(void *ctx, u32 ttt, u32 itt, u32 off, const u8 *buf,
		 u32 len)
{
	(void)ctx;
	(void)ttt;
	(void)itt;
	memcpy(placed + off % MAX_DLEN / 2, buf, len > MAX_DLEN / 2 ? MAX_DLEN / 2 : len);
	return 0;
}

static const struct cxe_model_rx_ops ops = {
	.deliver = deliver,
	.ppod = ppod,
	.place = place,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u8 data_msg[CXE_MODEL_DATA_MSG_LEN(MAX_DLEN)];
	enum cxe_chip chip;
	struct cxe_model_rx m;

	if (size < 1)
		return 0;
	chip = data[0] & 1 ? CXE_CHIP_T6 : CXE_CHIP_T5;
	if ((data[0] & 48) == 32) {
		/* requests (a byte with the top bit: its credits) and acks (4 bytes) */
		static struct cxe_c4cred c, was;
		u32 held, i;

		if (cxe_c4cred_init(&c, 3 + data[0] % 64 * 4, 1 + data[0] % 17, 0))
			return 0;
		for (i = 1; i < size;) {
			bool compl;

			if (data[i] & 0x80) {
				int ret = cxe_c4cred_take(&c, data[i++] & 0x1f, false, &compl);

				if (ret && ret != -EAGAIN && ret != -EINVAL)
					abort();
			} else if (i + 4 <= size) {
				struct cxe_cpl_fw4_ack a = {
					.credits = data[i + 1], .flags = data[i] & 1,
					.snd_una = (u32)data[i + 2] << 24 | (u32)data[i + 3] << 8,
				};

				was = c;
				if (cxe_c4cred_ack(&c, &a) < 0 && memcmp(&c, &was, sizeof(c)))
					abort();
				i += 4;
			} else {
				break;
			}
			held = 0;
			for (u32 k = 0; k < c.n; k++)
				held += c.ring[(c.head + k) % CXE_C4CRED_RING];
			if (c.avail > c.max || held != cxe_c4cred_out(&c) || c.n > CXE_C4CRED_RING)
				abort();
		}
		return 0;
	}
	if ((data[0] & 48) == 48) {
		/* a pod memory write (exactly its bytes), then a lookup */
		static u8 mem[16 * CXE_PPOD_LEN];
		struct cxe_model_ppm pm = { mem, 0x1000, sizeof(mem) };
		u8 *wr = malloc(size - 1 ? size - 1 : 1);
		u64 at;
		int n;

		if (!wr)
			abort();
		memcpy(wr, data + 1, size - 1);
		n = cxe_model_ppm_write(&pm, wr, size - 1);
		if (n != -EINVAL && (n < 1 || n > 16))
			abort();
		n = cxe_model_ppm_locate(&pm, data[0] >> 6, size > 8 ? data[5] : 0,
					 size > 8 ? data[6] : 0, size, &at);
		if (n && n != -ENOENT && n != -EIO)
			abort();
		free(wr);
		return 0;
	}
	if ((data[0] & 0xf0) == 0xc0) {
		/* a life: two bytes a step, then everyone behaves */
		static struct life l;
		u32 i;

		life_start(&l, 1 + data[0] % 16, size);
		for (i = 1; i + 2 <= size && !l.refused; i += 2)
			life_step(&l, data[i] % 100, data[i + 1], data[0] & 1, false);
		for (i = 0; i < 1000 && !life_over(&l) && !l.refused; i++)
			life_step(&l, i % 100, 0, true, true);
		if (!life_over(&l) || l.refused || failures)
			abort();
		return 0;
	}
	if (data[0] & 16) {
		/* a request, then what cxgb4 would gather, split at data[1] */
		static u8 out[1 << 17];
		struct cxe_model_tx t = { chip, 1, MAX_DLEN };
		size_t cut = size > 2 ? data[1] % (size - 1) : 0;
		u8 *wr = malloc(cut ? cut : 1);
		long n;

		if (!wr)
			abort();
		memcpy(wr, data + 2, cut);
		n = cxe_model_tx_wr(&t, wr, cut, data + 2 + cut,
				    size > 2 + cut ? size - 2 - cut : 0, out,
				    sizeof(out));
		free(wr);
		if (n != -EINVAL && n != -ENOSPC && (n < 0 || n > (long)sizeof(out)))
			abort();
		return 0;
	}
	cxe_c4rx_init(&rx, chip, MAX_DLEN);
	refused = false;
	if (data[0] & 2) {
		/* messages, each after its 2-byte length */
		for (size_t i = 1; i + 2 <= size;) {
			u32 len = (u32)data[i] << 8 | data[i + 1];

			i += 2;
			if (len > size - i)
				len = size - i;
			take(data + i, len);
			i += len;
		}
		return 0;
	}
	/* a TCP stream through the chip model */
	cxe_model_rx_init(&m, chip, 1, 0, MAX_DLEN, data_msg);
	m.hdigest = data[0] & 4;
	m.ddigest = data[0] & 8;
	if (!cxe_model_rx_feed(&m, data + 1, size - 1, &ops, NULL))
		cxe_model_rx_flush(&m, &ops, NULL);
	return 0;
}
