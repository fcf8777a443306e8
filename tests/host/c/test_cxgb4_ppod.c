// SPDX-License-Identifier: GPL-2.0-only
/*
 * Page pods in user space: the backend's ULP_TX_MEM_WRITE requests
 * (kmod/cxgbit-ext/adapters/cxgb4/cpl.c, cxe_ulp_ppod_write) written into
 * the model of the chip's pod memory (tests/chipmodel/ppod.c), then
 * every byte of the buffer located as the chip would place a Data-Out,
 * against the page list the pods were made from. The builder's refusals
 * first; then random buffers (1 to 80 pages, any start in the first page,
 * any length in the last), written in requests of at most three pods as
 * mainline cxgbit writes them, over pods of earlier buffers; every other
 * one cleared again (cxe_ulp_ppod_clear), after which none of its bytes is
 * located.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpl.h"
#include "ppod.h"
#include "check.h"

#define PAGE		4096U
#define POD_SPACE	1024		/* pods in the modelled region */
#define BASE		0x20000		/* its address in adapter memory */
#define MAX_PAGES	80

static u32 rnd(u32 n)
{
	return (u32)random() % n;
}

static u64 rnd_page(void)
{
	return ((u64)random() << 31 ^ (u64)random()) << 12 & 0xffffffffff000ULL;
}

static void test_refusals(void)
{
	struct cxe_ppod_hdr h = { .tid = 7, .tag = 0x40, .max_offset = 9000 };
	u64 pages[3] = { 0x1000, 0x5000, 0x9000 };
	u8 buf[CXE_ULP_MEM_WRITE_MAX_LEN + 16];

	/* one pod: 40 bytes of request, 64 of pod, padded to 112 */
	CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, &h, pages, 3, 0, 1) == 112);
	/* one byte short: refused, the buffer left as it was */
	memset(buf, 0xa5, sizeof(buf));
	CHECK(cxe_ulp_ppod_write(buf, 111, BASE, &h, pages, 3, 0, 1) == -ENOSPC);
	CHECK(buf[0] == 0xa5 && buf[110] == 0xa5);
	/* three pages make one pod: a second is not the buffer's */
	CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, &h, pages, 3, 0, 2) == -EINVAL);
	CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, &h, pages, 3, 1, 1) == -EINVAL);
	CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, &h, pages, 3, 0xffffffff, 1) == -EINVAL);
	CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, &h, pages, 3, 0, 0) == -EINVAL);
	/* not immediate any more past three pods */
	{
		u64 many[16] = { 0 };

		CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, &h, many, 16, 0, 3) == CXE_ULP_MEM_WRITE_MAX_LEN);
		CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, &h, many, 16, 0, 4) == -EINVAL);
	}
	/* a page that is not page-aligned, an address not 32-byte aligned */
	pages[1] |= 0x200;
	CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, &h, pages, 3, 0, 1) == -EINVAL);
	pages[1] &= ~0x200ULL;
	CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE + 16, &h, pages, 3, 0, 1) == -EINVAL);
	/* the tag as pods hold it has bits 30..31 clear; the start is in the first page */
	h.tag = 0x40000040;
	CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, &h, pages, 3, 0, 1) == -EINVAL);
	h.tag = 0x40;
	h.page_offset = PAGE;
	CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, &h, pages, 3, 0, 1) == -EINVAL);
	h.page_offset = 0;
	h.tid = CXE_CPL_TID_MAX + 1;
	CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, &h, pages, 3, 0, 1) == -EINVAL);
	CHECK(cxe_ulp_ppod_write(buf, sizeof(buf), BASE, NULL, pages, 3, 0, 1) == -EINVAL);
	CHECK(cxe_ppod_count(0, 1) == 1 && cxe_ppod_count(0, 4 * PAGE) == 1 &&
	      cxe_ppod_count(1, 4 * PAGE) == 2 && cxe_ppod_count(4095, 2) == 1 &&
	      cxe_ppod_count(4095, 16 * PAGE + 2) == 5);
}

/* the model takes what the builder writes, and refuses it changed */
/*
 * The tag format: the index above a 6-bit colour, as wide as the chip's
 * tag mask allows, its top bit the one that says a tag names no pods
 */
static void test_tags(void)
{
	struct cxe_ppod_tagfmt f, g;
	u8 wr[CXE_ULP_MEM_WRITE_MAX_LEN];
	u32 n, t, seen[64];

	CHECK(cxe_ppod_tag(5, 3) == (5U << 6 | 3));
	CHECK(cxe_ppod_tag(5, 67) == (5U << 6 | 3));
	/* a mask 22 bits wide: 15 index bits, the no-pods bit 21 */
	CHECK(cxe_ppod_tagfmt_init(&f, 1U << 21) == 0);
	CHECK(f.idx_bits == 15 && f.noddp == 1U << 21 && cxe_ppod_tag_max_idx(&f) == 32768);
	CHECK(cxe_ppod_tagfmt_init(&g, 0x3fffff) == 0 && g.idx_bits == f.idx_bits && g.noddp == f.noddp);
	CHECK(cxe_ppod_tag_idx(&f, cxe_ppod_tag(32767, 63)) == 32767);
	CHECK(cxe_ppod_tag_ddp(&f, cxe_ppod_tag(32767, 63)));
	CHECK(!cxe_ppod_tag_ddp(&f, 1U << 21) && !cxe_ppod_tag_ddp(&f, 1U << 30));
	CHECK(!cxe_ppod_tag_ddp(&f, 0xffffffff));
	/* masks no format fits: no index bit, or the page size selector's bits */
	CHECK(cxe_ppod_tagfmt_init(&g, 0) == -EINVAL);
	CHECK(cxe_ppod_tagfmt_init(&g, 0x7f) == -EINVAL);
	CHECK(cxe_ppod_tagfmt_init(&g, 0xff) == 0 && g.idx_bits == 1 && g.noddp == 0x80);
	CHECK(cxe_ppod_tagfmt_init(&g, 0x3fffffff) == 0 && g.idx_bits == 23 && g.noddp == 1U << 29);
	CHECK(cxe_ppod_tagfmt_init(&g, 0x40000000) == -EINVAL);
	CHECK(cxe_ppod_tagfmt_init(&g, 0xffffffff) == -EINVAL);
	/* tags without pods: the bit set, distinct, never the reserved TTT */
	for (n = 0; n < 64; n++) {
		t = cxe_ppod_tag_noddp(&f, n * 0x1234567);
		CHECK(t & f.noddp && !cxe_ppod_tag_ddp(&f, t) && t != 0xffffffff);
		seen[n] = t;
		for (u32 k = 0; k < n; k++)
			CHECK(seen[k] != t);
	}
	CHECK(cxe_ppod_tag_noddp(&f, 0) == f.noddp);
	CHECK(cxe_ppod_tag_noddp(&f, 1) == (f.noddp | 1));
	CHECK(cxe_ppod_tag_noddp(&f, 1U << 21) == (1U << 22 | f.noddp));
	CHECK(cxe_ppod_tag_noddp(&f, CXE_PPOD_NODDP_TAGS) == cxe_ppod_tag_noddp(&f, 0));
	CHECK(cxe_ppod_tag_noddp(&g, CXE_PPOD_NODDP_TAGS - 1) != 0xffffffff);
	CHECK(cxe_ppod_tag_noddp(&g, 0xffffffff) != 0xffffffff);
	/* a clear: 0 or more than three pods, an unaligned address, a bad TID */
	CHECK(cxe_ulp_ppod_clear(wr, sizeof(wr), BASE, 1, 0) == -EINVAL);
	CHECK(cxe_ulp_ppod_clear(wr, sizeof(wr), BASE, 1, CXE_PPOD_IMM_MAX + 1) == -EINVAL);
	CHECK(cxe_ulp_ppod_clear(wr, sizeof(wr), BASE + 16, 1, 1) == -EINVAL);
	CHECK(cxe_ulp_ppod_clear(wr, sizeof(wr), BASE, CXE_CPL_TID_MAX + 1, 1) == -EINVAL);
	CHECK(cxe_ulp_ppod_clear(wr, 100, BASE, 1, 3) == -ENOSPC);
}

static void test_model_refusals(u8 *mem)
{
	struct cxe_model_ppm m = { .mem = mem, .base = BASE, .size = POD_SPACE * CXE_PPOD_LEN };
	struct cxe_ppod_hdr h = { .tid = 9, .tag = 0x80, .max_offset = 3 * PAGE };
	u64 pages[3] = { 0x1000, 0x5000, 0x9000 }, at;
	u8 wr[CXE_ULP_MEM_WRITE_MAX_LEN], bad[sizeof(wr)];
	int len = cxe_ulp_ppod_write(wr, sizeof(wr), BASE + 64, &h, pages, 3, 0, 1);

	CHECK(cxe_model_ppm_write(&m, wr, len) == 1);
	CHECK(cxe_model_ppm_locate(&m, 1, 9, 0x80, PAGE + 5, &at) == 0 && at == 0x5005);
	/* the same request asking for its ack (the glue always asks): the same write */
	memcpy(bad, wr, len);
	cxe_wr_ask_compl(bad);
	CHECK(memcmp(bad, wr, len) != 0 && cxe_model_ppm_write(&m, bad, len) == 1);
	CHECK(cxe_model_ppm_locate(&m, 1, 9, 0x80, PAGE + 5, &at) == 0 && at == 0x5005);
	/* another connection, another tag, past the buffer, another pod */
	CHECK(cxe_model_ppm_locate(&m, 1, 8, 0x80, 0, &at) == -ENOENT);
	CHECK(cxe_model_ppm_locate(&m, 1, 9, 0xc0, 0, &at) == -ENOENT);
	CHECK(cxe_model_ppm_locate(&m, 1, 9, 0x80, 3 * PAGE, &at) == -ENOENT);
	CHECK(cxe_model_ppm_locate(&m, POD_SPACE, 9, 0x80, 0, &at) == -ENOENT);
	for (int i = 0; i < len; i++) {
		/*
		 * bytes 8..15 of the WR header are not read; an address is
		 * another (valid) address; the pods are data, but for their
		 * connection (below)
		 */
		if ((i >= 8 && i < 16) || (i >= 29 && i < 32) || i >= 40)
			continue;
		memcpy(bad, wr, len);
		bad[i] ^= 0x10;
		CHECK(cxe_model_ppm_write(&m, bad, len) == -EINVAL);
	}
	/* a pod for another connection than the request's flow */
	memcpy(bad, wr, len);
	bad[40 + 3] ^= 1;
	CHECK(cxe_model_ppm_write(&m, bad, len) == -EINVAL);
	/* outside the region */
	len = cxe_ulp_ppod_write(wr, sizeof(wr), BASE - 64, &h, pages, 3, 0, 1);
	CHECK(cxe_model_ppm_write(&m, wr, len) == -EINVAL);
	len = cxe_ulp_ppod_write(wr, sizeof(wr), BASE + POD_SPACE * CXE_PPOD_LEN, &h, pages, 3, 0, 1);
	CHECK(cxe_model_ppm_write(&m, wr, len) == -EINVAL);
	memset(mem, 0, POD_SPACE * CXE_PPOD_LEN);
}

int main(int argc, char **argv)
{
	unsigned int seed = argc > 1 ? (unsigned int)atoi(argv[1]) : 1;
	u8 *mem = calloc(POD_SPACE, CXE_PPOD_LEN);
	struct cxe_model_ppm m = { .mem = mem, .base = BASE, .size = POD_SPACE * CXE_PPOD_LEN };
	unsigned int buffers = 0, requests = 0, located = 0, crossings = 0, cleared = 0;

	srandom(seed);
	test_refusals();
	test_tags();
	test_model_refusals(mem);

	for (int round = 0; round < 400; round++) {
		u32 npages = 1 + rnd(MAX_PAGES), off0 = rnd(PAGE), tid = rnd(CXE_CPL_TID_MAX + 1);
		u32 len = (npages - 1) * PAGE - off0 + 1 + rnd(PAGE);
		u32 npods, idx, tag;
		struct cxe_ppod_hdr h;
		u64 pages[MAX_PAGES], at;
		bool ok = true;

		if (len > npages * PAGE - off0)
			len = npages * PAGE - off0;
		npods = cxe_ppod_count(off0, len);
		idx = rnd(POD_SPACE - npods + 1);
		tag = (idx << CXE_PPOD_SHIFT | rnd(64)) & 0x3fffffff;
		h = (struct cxe_ppod_hdr){ .tid = tid, .tag = tag, .max_offset = len, .page_offset = off0 };
		for (u32 i = 0; i < npages; i++)
			pages[i] = rnd_page();
		CHECK(npods == (npages + CXE_PPOD_PAGES - 1) / CXE_PPOD_PAGES);

		/* as cxgbit_ddp_set_map: three pods to a request */
		for (u32 first = 0; first < npods; first += CXE_PPOD_IMM_MAX) {
			u32 n = npods - first < CXE_PPOD_IMM_MAX ? npods - first : CXE_PPOD_IMM_MAX;
			u8 wr[CXE_ULP_MEM_WRITE_MAX_LEN];
			int wl = cxe_ulp_ppod_write(wr, sizeof(wr), BASE + ((idx + first) << CXE_PPOD_SHIFT),
						    &h, pages, npages, first, n);

			CHECK(wl > 0 && wl <= CXE_ULP_MEM_WRITE_MAX_LEN && wl % 16 == 0);
			CHECK(cxe_model_ppm_write(&m, wr, wl) == (int)n);
			requests++;
		}
		/* every byte of a page's first and last 2, and 64 anywhere */
		for (u32 k = 0; k < npages * 4 + 64; k++) {
			u32 o;

			if (k < npages * 4) {
				u32 in = (k % 4) < 2 ? k % 4 : PAGE - 4 + k % 4;

				if ((u64)(k / 4) * PAGE + in < off0)
					continue;
				o = (k / 4) * PAGE + in - off0;
			} else {
				o = rnd(len);
			}
			if (o >= len)
				continue;
			if (cxe_model_ppm_locate(&m, idx, tid, tag, o, &at) ||
			    at != pages[(off0 + o) / PAGE] + (off0 + o) % PAGE) {
				ok = false;
				break;
			}
			located++;
			crossings += (off0 + o) / PAGE % CXE_PPOD_PAGES == 0 && (off0 + o) >= 4 * PAGE;
		}
		CHECK(ok);
		/* nothing past the buffer, nothing for another connection or tag */
		CHECK(cxe_model_ppm_locate(&m, idx, tid, tag, len, &at) == -ENOENT);
		CHECK(cxe_model_ppm_locate(&m, idx, tid ^ 1, tag, 0, &at) == -ENOENT);
		CHECK(cxe_model_ppm_locate(&m, idx, tid, tag ^ 1, 0, &at) == -ENOENT);
		if (!ok) {
			fprintf(stderr, "  round %d: %u pages from %u, %u bytes, pods %u..%u\n",
				round, npages, off0, len, idx, idx + npods - 1);
			break;
		}
		/* every other buffer's pods cleared: no byte of it is placed */
		if (round % 2) {
			for (u32 first = 0; first < npods; first += CXE_PPOD_IMM_MAX) {
				u32 n = npods - first < CXE_PPOD_IMM_MAX ? npods - first : CXE_PPOD_IMM_MAX;
				u8 wr[CXE_ULP_MEM_WRITE_MAX_LEN];
				int wl = cxe_ulp_ppod_clear(wr, sizeof(wr),
							    BASE + ((idx + first) << CXE_PPOD_SHIFT), tid, n);

				CHECK(wl > 0 && wl <= CXE_ULP_MEM_WRITE_MAX_LEN && wl % 16 == 0);
				CHECK(cxe_model_ppm_write(&m, wr, wl) == (int)n);
			}
			for (u32 o = 0; o < len; o += 1 + rnd(PAGE))
				CHECK(cxe_model_ppm_locate(&m, idx, tid, tag, o, &at) == -ENOENT);
			cleared++;
		}
		buffers++;
	}
	/* the fifth address must be the next pod's first: break one */
	{
		struct cxe_ppod_hdr h = { .tid = 3, .tag = 0x40, .max_offset = 8 * PAGE };
		u64 pages[8], at;
		u8 wr[CXE_ULP_MEM_WRITE_MAX_LEN];
		int wl;

		for (int i = 0; i < 8; i++)
			pages[i] = (u64)(i + 1) << 20;
		wl = cxe_ulp_ppod_write(wr, sizeof(wr), BASE, &h, pages, 8, 0, 2);
		CHECK(cxe_model_ppm_write(&m, wr, wl) == 2);
		CHECK(cxe_model_ppm_locate(&m, 0, 3, 0x40, 4 * PAGE, &at) == 0 && at == pages[4]);
		mem[24 + 8 * CXE_PPOD_PAGES + 6] ^= 0x10;
		CHECK(cxe_model_ppm_locate(&m, 0, 3, 0x40, 4 * PAGE, &at) == -EIO);
	}
	CHECK(buffers == 400 && crossings > 0 && cleared == 200);
	printf("test_cxgb4_ppod: seed %u, %u buffers in %u requests, %u bytes located (%u at a pod's first page), %u cleared\n",
	       seed, buffers, requests, located, crossings, cleared);
	printf("test_cxgb4_ppod: %d checks, %d failures\n", checks, failures);
	free(mem);
	return failures != 0;
}
