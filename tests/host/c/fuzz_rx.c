// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the RX stream parser on arbitrary bytes. The first byte
 * picks digests and the MaxRecvDataSegmentLength; the rest is fed in chunks
 * whose sizes come from the input too; bit 7 of the first byte makes the
 * consumer pause after every header and PDU, as the kernel's does, and the
 * feed resume from where it stopped. Whatever the input, the parser must
 * not touch memory it does not own, must hand up data in order and within
 * the announced length, and must stay dead after an error. Bit 6 makes the
 * consumer take data segments itself (cxe_rx_data_took), as the kernel's
 * does when it copies them straight from a socket buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include "pdugen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cxe_rx rx;
	struct rec r = { 0 };
	const struct cxe_rx_ops *ops;
	size_t pos = 1;
	long ret = 0;

	if (size < 2)
		return 0;
	cxe_rx_init(&rx, 512u << (data[0] >> 4 & 0x7));
	rx.hdigest = data[0] & 1;
	rx.ddigest = data[0] & 2;
	rx.login = data[0] & 4;
	ops = data[0] & 0x80 ? &pause_ops : &rec_ops;
	while (pos < size) {
		size_t n = 1 + data[pos] % 97;

		if (n > size - pos)
			n = size - pos;
		if (data[0] & 0x40 && cxe_rx_data_left(&rx) && r.n) {
			u32 left = cxe_rx_data_left(&rx);
			struct rec_pdu *p = &r.pdus[r.n - 1];

			if (n > left)
				n = left;
			rec_data(&r, p->got, data + pos, n);
			ret = cxe_rx_data_took(&rx, n, cxe_crc32c(rx.crc, data + pos, n),
					       ops, &r);
			if (ret != (long)n)
				abort();
			pos += n;
			continue;
		}
		ret = cxe_rx_feed(&rx, data + pos, n, ops, &r);
		if (ret < 0) {
			if (cxe_rx_feed(&rx, data, 1, ops, &r) != -EPIPE)
				abort();
			break;
		}
		/* only a pausing consumer may leave bytes unconsumed */
		if (ret > (long)n || (ret != (long)n && ops == &rec_ops))
			abort();
		pos += ret;
	}
	if (r.order_error)
		abort();
	for (u32 i = 0; i < r.n; i++)
		if (cxe_bhs_dlen(r.pdus[i].hdr) > rx.max_dlen && !r.pdus[i].hstatus)
			abort();
	rec_free(&r);
	return 0;
}
