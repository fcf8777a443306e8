// SPDX-License-Identifier: GPL-2.0-only
/*
 * User-space stand-in for the kernel's crc32c() (raw update, no inversion),
 * used only by the unit tests and fuzzers of kmod/cxgbit-ext/pdu/. The
 * kernel build uses lib/crc32c. Checked against RFC 3720 B.4 in test_pdu.c.
 */
#include "cxe_env.h"

static u32 table[256];

static void init_table(void)
{
	for (u32 i = 0; i < 256; i++) {
		u32 c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		table[i] = c;
	}
}

u32 cxe_crc32c(u32 crc, const void *buf, size_t len)
{
	const u8 *p = buf;

	if (!table[1])
		init_table();
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}
