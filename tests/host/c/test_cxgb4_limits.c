// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of kmod/cxgbit-ext/adapters/cxgb4/limits.c in user space:
 * each limit and the word for what set it, on T5 and T6, at the chip's
 * bounds and one step either side, and for every I/O length a chip may
 * report, the invariants the PDU layer relies on.
 */
#include <stdio.h>
#include <string.h>
#include "limits.h"
#include "check.h"

static struct cxe_cxgb4_hw hw(enum cxe_chip chip, u32 iolen)
{
	struct cxe_cxgb4_hw h = {
		.chip = chip, .iscsi_iolen = iolen, .fw_vers = CXE_CXGB4_ISO_FW,
		.page_size = 4096, .max_frags = 17, .ddp = true,
	};
	return h;
}

static bool is(const char *a, const char *b)
{
	return a && !strcmp(a, b);
}

static void test_t6(void)
{
	struct cxe_cxgb4_hw h = hw(CXE_CHIP_T6, 16384 + CXE_CXGB4_PDU_OVERHEAD);
	struct cxe_cxgb4_limits l;

	/* exactly 16 KiB of data: the I/O length allows it, so does the T6 */
	CHECK(cxe_cxgb4_limits(&h, &l) == 0);
	CHECK(l.max_recv_dlen == 16384 && is(l.recv_by, "iolen"));
	h.iscsi_iolen++;
	CHECK(cxe_cxgb4_limits(&h, &l) == 0);
	CHECK(l.max_recv_dlen == 16384 && is(l.recv_by, "t6"));
	/* beyond cxgbit's 4 pages: sends bounded by 16 pages, not 4 */
	CHECK(l.max_send_dlen == 16384 && is(l.send_by, "t6"));
	CHECK(l.max_iso_burst == 65532 && is(l.iso_by, "iso_len"));
	CHECK(l.ddp_min_len == 512 && l.ddp_align == 4096 && is(l.ddp_by, "ddp_min"));

	/* an I/O length that is not whole words: the data segment rounds down */
	h.iscsi_iolen = 8191 + CXE_CXGB4_PDU_OVERHEAD;
	CHECK(cxe_cxgb4_limits(&h, &l) == 0);
	CHECK(l.max_recv_dlen == 8188 && is(l.recv_by, "iolen"));
	CHECK(l.max_send_dlen == 8188);
}

static void test_t5(void)
{
	struct cxe_cxgb4_hw h = hw(CXE_CHIP_T5, CXE_CXGB4_T5_MAX_PDU);
	struct cxe_cxgb4_limits l;

	CHECK(cxe_cxgb4_limits(&h, &l) == 0);
	CHECK(l.max_recv_dlen == CXE_CXGB4_T5_MAX_PDU - CXE_CXGB4_PDU_OVERHEAD);
	CHECK(is(l.recv_by, "iolen"));
	h.iscsi_iolen = 65536;
	CHECK(cxe_cxgb4_limits(&h, &l) == 0);
	CHECK(l.max_recv_dlen == 15912 && is(l.recv_by, "t5"));
	CHECK(l.max_send_dlen == 15912 && is(l.send_by, "t5"));
}

static void test_frags_firmware_ppm(void)
{
	struct cxe_cxgb4_hw h = hw(CXE_CHIP_T6, 65536);
	struct cxe_cxgb4_limits l;

	/* 3 pages of gather list: 2 of data (it may not start on a page) */
	h.max_frags = 3;
	CHECK(cxe_cxgb4_limits(&h, &l) == 0);
	CHECK(l.max_recv_dlen == 16384 && l.max_send_dlen == 8192);
	CHECK(is(l.send_by, "frags"));
	/* a 12 KiB burst holds one 8 KiB PDU and a bit: no ISO */
	CHECK(l.max_iso_burst == 0 && is(l.iso_by, "frags"));

	h.max_frags = 9;
	CHECK(cxe_cxgb4_limits(&h, &l) == 0);
	CHECK(l.max_iso_burst == 36864 && is(l.iso_by, "frags"));

	h = hw(CXE_CHIP_T6, 65536);
	h.fw_vers = CXE_CXGB4_ISO_FW - 1;
	CHECK(cxe_cxgb4_limits(&h, &l) == 0);
	CHECK(l.max_iso_burst == 0 && is(l.iso_by, "firmware"));

	h = hw(CXE_CHIP_T6, 65536);
	h.ddp = false;
	h.page_size = 65536;
	CHECK(cxe_cxgb4_limits(&h, &l) == 0);
	CHECK(l.ddp_min_len == CXE_CXGB4_NEVER && is(l.ddp_by, "no_ppm"));
	CHECK(l.ddp_align == 65536);
}

static void test_refused(void)
{
	struct cxe_cxgb4_hw h = hw(CXE_CHIP_T6, CXE_CXGB4_PDU_OVERHEAD + 3);
	struct cxe_cxgb4_limits l;

	memset(&l, 0x5a, sizeof(l));
	CHECK(cxe_cxgb4_limits(&h, &l) == -EINVAL);
	CHECK(((unsigned char *)&l)[0] == 0x5a);	/* untouched */
	h.iscsi_iolen++;
	CHECK(cxe_cxgb4_limits(&h, &l) == 0 && l.max_recv_dlen == 4);
	h = hw(4, 65536);
	CHECK(cxe_cxgb4_limits(&h, &l) == -EINVAL);
	h = hw(CXE_CHIP_T6, 65536);
	h.max_frags = 1;
	CHECK(cxe_cxgb4_limits(&h, &l) == -EINVAL);
	h = hw(CXE_CHIP_T6, 65536);
	h.page_size = 0;
	CHECK(cxe_cxgb4_limits(&h, &l) == -EINVAL);
}

/* what the PDU layer relies on, for every I/O length a chip may report */
static void test_invariants(void)
{
	static const enum cxe_chip chips[] = { CXE_CHIP_T5, CXE_CHIP_T6 };
	struct cxe_cxgb4_limits l;
	struct cxe_cxgb4_hw h;
	unsigned int bad = 0;

	for (int c = 0; c < 2; c++) {
		for (u32 io = CXE_CXGB4_PDU_OVERHEAD + 4; io <= 70000; io++) {
			for (u32 frags = 2; frags <= 18; frags += 8) {
				h = hw(chips[c], io);
				h.max_frags = frags;
				if (cxe_cxgb4_limits(&h, &l)) {
					bad++;
					continue;
				}
				bad += l.max_recv_dlen % 4 || l.max_send_dlen % 4 ||
				       l.max_iso_burst % 4;
				bad += l.max_recv_dlen + CXE_CXGB4_PDU_OVERHEAD > io;
				bad += l.max_send_dlen > l.max_recv_dlen;
				bad += l.max_send_dlen > (frags - 1) * 4096;
				bad += chips[c] == CXE_CHIP_T5 &&
				       l.max_recv_dlen + CXE_CXGB4_PDU_OVERHEAD >
				       CXE_CXGB4_T5_MAX_PDU;
				bad += l.max_recv_dlen > CXE_CXGB4_T6_MAX_DLEN;
				bad += l.max_iso_burst &&
				       (l.max_iso_burst < 2 * l.max_send_dlen ||
					l.max_iso_burst > CXE_CXGB4_ISO_MAX ||
					l.max_iso_burst > frags * 4096);
				bad += !l.recv_by || !l.send_by || !l.iso_by ||
				       !l.ddp_by;
			}
		}
	}
	CHECK(bad == 0);
}

int main(void)
{
	test_t6();
	test_t5();
	test_frags_firmware_ppm();
	test_refused();
	test_invariants();
	printf("test_cxgb4_limits: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
