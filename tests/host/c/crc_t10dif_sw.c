// SPDX-License-Identifier: GPL-2.0-only
/*
 * User-space stand-in for the kernel's crc_t10dif_update() (CRC-16 with
 * polynomial 0x8bb7, not reflected, initial value as given), used only by
 * the unit tests of kmod/cxgbit-ext/pdu/. The kernel build uses
 * lib/crc-t10dif. Checked against the CRC's check value and a bitwise
 * computation in test_pdu.c.
 */
#include "cxe_env.h"

static u16 table[256];

static void init_table(void)
{
	for (u32 i = 0; i < 256; i++) {
		u16 c = i << 8;

		for (int k = 0; k < 8; k++)
			c = c & 0x8000 ? (u16)(c << 1) ^ 0x8bb7 : (u16)(c << 1);
		table[i] = c;
	}
}

u16 cxe_crc_t10dif(u16 crc, const void *buf, size_t len)
{
	const u8 *p = buf;

	if (!table[1])
		init_table();
	while (len--)
		crc = (u16)(crc << 8) ^ table[(crc >> 8) ^ *p++];
	return crc;
}
