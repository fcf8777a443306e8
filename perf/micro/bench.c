// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext perf: native micro-benchmark of the pure PDU code (host, no VM).
 *
 * The same kmod/cxgbit-ext/pdu/ sources the module builds, compiled with -O2
 * for this CPU, timed against the two costs they cannot beat: memcpy and a
 * plain CRC32C; and the page clear every newly allocated buffer costs. The
 * CRC32C here is the SSE4.2 crc32 instruction, one stream of 8-byte steps,
 * which is what the kernel's crc32c-intel does for short buffers (for long
 * ones it interleaves three streams and is faster still), so "digest +
 * placement" below is an upper bound on what the module pays.
 *
 * Each figure is the minimum and the median of ROUNDS rounds. "hot" runs
 * over the same buffer every time (in cache); "cold" walks a region many
 * times the size of any cache, so each op reads data no cache holds. The
 * receive parse is fed in TCP-segment-sized pieces (MSS of MTU 1500 and
 * 9000, as an skb's share arrives) and places data into a list of 4 KiB
 * pages in shuffled order, as a command's scatterlist is.
 *
 *   bench [OUT.json]       prints a table; writes JSON when OUT is given
 */
#include <nmmintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cxe_bhs.h"
#include "cxe_rx.h"
#include "cxe_seg.h"

u32 cxe_crc32c(u32 crc, const void *buf, size_t len)
{
	const u8 *p = buf;
	u64 c = crc;

	for (; len >= 8; len -= 8, p += 8) {
		u64 v;

		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
	}
	for (; len; len--)
		c = _mm_crc32_u8((u32)c, *p++);
	return (u32)c;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile u32 sink;

struct timing {
	double min, median;	/* ns per op over the rounds */
};

struct result {
	const char *name;
	struct timing ns;
	double bytes_per_op;
	const char *unit;	/* what one op is */
};

static struct result results[64];
static int n_results;

#define ROUNDS		7
#define ROUND_SECONDS	0.05

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* ROUNDS rounds of fn, each at least ROUND_SECONDS (and 3 calls) long */
static struct timing timeit(void (*fn)(void *), void *arg, u64 ops_per_call)
{
	double ns[ROUNDS];

	fn(arg);		/* page tables, and the hot case's cache */
	for (int r = 0; r < ROUNDS; r++) {
		u64 calls = 0;
		double t0 = now(), t;

		do {
			fn(arg);
			calls++;
			t = now();
		} while (t - t0 < ROUND_SECONDS || calls < 3);
		ns[r] = (t - t0) * 1e9 / (double)(calls * ops_per_call);
	}
	qsort(ns, ROUNDS, sizeof(ns[0]), cmp_double);
	return (struct timing){ ns[0], ns[ROUNDS / 2] };
}

static void record(const char *name, struct timing t, double bytes, const char *unit)
{
	results[n_results++] = (struct result){ name, t, bytes, unit };
	printf("%-56s %9.1f / %9.1f ns/%-6s", name, t.min, t.median, unit);
	if (bytes > 0)
		printf(" %8.2f GB/s (median)", bytes / t.median);
	printf("\n");
}

/* ---- plain baselines, hot (one buffer) or cold (walking COLD bytes) ---- */

#define BUF	(1u << 24)
#define COLD	(1ul << 29)	/* far beyond any last-level cache */
static u8 *src, *dst, *cold_src, *cold_dst;
static size_t seg_len, cold_off;
static bool cold;

/* this op's source and destination */
static void op_bufs(u8 **s, u8 **d)
{
	if (!cold) {
		*s = src;
		*d = dst;
		return;
	}
	cold_off = cold_off + seg_len + seg_len > COLD ? 0 : cold_off + seg_len;
	*s = cold_src + cold_off;
	*d = cold_dst + cold_off;
}

static void do_memcpy(void *a)
{
	u8 *s, *d;

	(void)a;
	op_bufs(&s, &d);
	memcpy(d, s, seg_len);
	sink += d[seg_len - 1];
}

static void do_crc(void *a)
{
	u8 *s, *d;

	(void)a;
	op_bufs(&s, &d);
	sink += cxe_crc32c(~0u, s, seg_len);
}

/*
 * A buffer cleared as the kernel clears each page it hands out under
 * init_on_alloc (clear_page_erms: rep stosb): what a command's new data
 * buffer costs before any byte of it is used, and what the connection's
 * data buffer cache saves.
 */
static void do_clear(void *a)
{
	u8 *s, *d, *p;
	size_t n = seg_len;

	(void)a;
	op_bufs(&s, &d);
	p = d;
	asm volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(0) : "memory");
	sink += d[seg_len - 1];
}

/* digest + placement: what the soft adapter does per data segment */
static void do_digest_place(void *a)
{
	u8 *s, *d;
	u32 crc;

	(void)a;
	op_bufs(&s, &d);
	memcpy(d, s, seg_len);
	crc = cxe_data_digest_finish(cxe_crc32c(~0u, d, seg_len), seg_len);
	sink += crc;
}

/* ---- RX parse of a stream of Data-Out PDUs, placing the data ---- */

static u8 *stream;
static size_t stream_len;
static u32 stream_pdus;
static bool rx_digests;

static int b_header(void *ctx, const u8 *hdr, u32 hdr_len, int status)
{
	(void)ctx; (void)hdr_len;
	return status ? -EIO : (sink += hdr[0], 0);
}

/* the task's buffer: 4 KiB pages of dst in shuffled order */
#define PAGE	4096u
static u8 *pages[BUF / PAGE];

static void shuffle_pages(void)
{
	u32 n = BUF / PAGE, seed = 12345;

	for (u32 i = 0; i < n; i++)
		pages[i] = dst + (size_t)i * PAGE;
	for (u32 i = n - 1; i > 0; i--) {
		u32 j;
		u8 *t;

		seed = seed * 1103515245u + 12345u;
		j = seed % (i + 1);
		t = pages[i];
		pages[i] = pages[j];
		pages[j] = t;
	}
}

/* a data piece into the page list, split at page boundaries */
static int b_data(void *ctx, u32 off, const u8 *buf, u32 len)
{
	(void)ctx;
	while (len) {
		u32 in = off % PAGE, n = PAGE - in < len ? PAGE - in : len;

		memcpy(pages[(off / PAGE) % (BUF / PAGE)] + in, buf, n);
		off += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/* ctx counts the PDUs parsed */
static int b_done(void *ctx, int status)
{
	++*(u32 *)ctx;
	return status ? -EIO : 0;
}

static const struct cxe_rx_ops bench_ops = {
	.header = b_header, .data = b_data, .done = b_done,
};

static void build_stream(u32 dlen, u32 pdus, bool digests)
{
	size_t per = CXE_BHS_LEN + 4 + dlen + 4 + 4;
	size_t n = 0;

	free(stream);
	stream = calloc(pdus, per);
	if (!stream)
		exit(1);
	for (u32 i = 0; i < pdus; i++) {
		u8 *h = stream + n;

		memset(h, 0, CXE_BHS_LEN);
		h[0] = CXE_OP_DATA_OUT;
		h[1] = 0x80;
		cxe_bhs_set_dlen(h, dlen);
		cxe_put_be32(h + 16, 0x1234);	/* ITT */
		cxe_put_be32(h + 36, i);	/* DataSN */
		cxe_put_be32(h + 40, i * dlen);	/* Buffer Offset */
		n += CXE_BHS_LEN;
		if (digests) {
			cxe_put_le32(stream + n, cxe_digest(h, CXE_BHS_LEN));
			n += 4;
		}
		memcpy(stream + n, src, dlen);
		n += dlen;
		if (digests) {
			cxe_put_le32(stream + n, cxe_data_digest_finish(
				cxe_crc32c(~0u, src, dlen), dlen));
			n += 4;
		}
	}
	stream_len = n;
	stream_pdus = pdus;
	rx_digests = digests;
}

static size_t rx_chunk;	/* bytes per feed: one TCP segment's payload */

static void do_rx(void *a)
{
	struct cxe_rx rx;
	size_t off = 0;
	u32 pdus = 0;

	(void)a;
	cxe_rx_init(&rx, 1 << 24);
	rx.hdigest = rx.ddigest = rx_digests;
	while (off < stream_len) {
		size_t n = stream_len - off < rx_chunk ? stream_len - off : rx_chunk;

		if (cxe_rx_feed(&rx, stream + off, n, &bench_ops, &pdus) != (long)n) {
			fprintf(stderr, "bench: parser rejected the stream\n");
			exit(1);
		}
		off += n;
	}
	if (pdus != stream_pdus) {
		fprintf(stderr, "bench: parsed %u of %u PDUs\n", pdus,
			stream_pdus);
		exit(1);
	}
}

/* ---- Data-In segmentation planning ---- */

static struct cxe_seg_burst burst;

static void do_seg(void *a)
{
	u8 tmpl[CXE_BHS_LEN] = { CXE_OP_DATA_IN }, bhs[CXE_BHS_LEN];
	struct cxe_seg_pdu p;
	u32 n = cxe_seg_count(&burst);

	(void)a;
	for (u32 i = 0; i < n; i++) {
		if (!cxe_seg_pdu(&burst, i, &p))
			exit(1);
		cxe_seg_datain_hdr(bhs, tmpl, &p);
		sink += bhs[1];
	}
}

int main(int argc, char **argv)
{
	static const u32 sizes[] = { 4096, 8192, 65536 };
	static const u32 mss[] = { 1448, 8948 };	/* MTU 1500, 9000 */
	char name[80];
	FILE *out;

	if (!__builtin_cpu_supports("sse4.2")) {
		fprintf(stderr, "bench: this CPU has no SSE4.2 crc32\n");
		return 1;
	}
	src = aligned_alloc(4096, BUF);
	dst = aligned_alloc(4096, BUF);
	cold_src = aligned_alloc(4096, COLD);
	cold_dst = aligned_alloc(4096, COLD);
	if (!src || !dst || !cold_src || !cold_dst)
		return 1;
	for (u32 i = 0; i < BUF; i++)
		src[i] = (u8)(i * 2654435761u >> 24);
	memset(dst, 0, BUF);
	for (size_t i = 0; i < COLD; i += BUF) {
		memcpy(cold_src + i, src, BUF);
		memset(cold_dst + i, 0, BUF);
	}
	shuffle_pages();

	for (int c = 0; c < 2; c++) {
		cold = c;
		for (u32 i = 0; i < 3; i++) {
			const char *t = cold ? "cold" : "hot";

			seg_len = sizes[i];
			snprintf(name, sizeof(name), "memcpy %u B, %s", sizes[i], t);
			record(strdup(name), timeit(do_memcpy, NULL, 1), seg_len, "op");
			snprintf(name, sizeof(name), "crc32c (SSE4.2) %u B, %s", sizes[i], t);
			record(strdup(name), timeit(do_crc, NULL, 1), seg_len, "op");
			snprintf(name, sizeof(name), "digest + placement %u B, %s", sizes[i], t);
			record(strdup(name), timeit(do_digest_place, NULL, 1), seg_len, "op");
			snprintf(name, sizeof(name), "page clear (rep stosb) %u B, %s", sizes[i], t);
			record(strdup(name), timeit(do_clear, NULL, 1), seg_len, "op");
		}
	}
	cold = false;
	for (int d = 0; d < 2; d++) {
		for (u32 i = 0; i < 3; i++) {
			u32 pdus = (1 << 23) / sizes[i];

			build_stream(sizes[i], pdus, d);
			for (u32 m = 0; m < 2; m++) {
				rx_chunk = mss[m];
				snprintf(name, sizeof(name),
					 "RX parse+place %u B PDUs in %u B pieces, digests %s",
					 sizes[i], mss[m], d ? "on" : "off");
				record(strdup(name), timeit(do_rx, NULL, pdus),
				       (double)stream_len / pdus, "PDU");
			}
		}
	}
	for (u32 i = 0; i < 3; i++) {
		burst = (struct cxe_seg_burst){ .offset = 0, .len = 512 * 1024,
						.max_pdu = sizes[i], .status = true };
		snprintf(name, sizeof(name), "seg plan+hdr 512 KiB burst, %u B PDUs", sizes[i]);
		record(strdup(name), timeit(do_seg, NULL, cxe_seg_count(&burst)), 0, "PDU");
	}
	if (argc > 1) {
		out = fopen(argv[1], "w");
		if (!out) {
			perror(argv[1]);
			return 1;
		}
		fprintf(out, "{\n \"note\": \"ns per op on the host CPU, -O2, min and median of %d rounds; crc32c = SSE4.2 crc32, 1 stream\",\n \"results\": [\n",
			ROUNDS);
		for (int i = 0; i < n_results; i++)
			fprintf(out, "  {\"name\": \"%s\", \"ns_per_op\": %.2f, \"ns_min\": %.2f, \"unit\": \"%s\", \"bytes_per_op\": %.0f, \"gb_per_s\": %.3f}%s\n",
				results[i].name, results[i].ns.median,
				results[i].ns.min, results[i].unit,
				results[i].bytes_per_op,
				results[i].bytes_per_op > 0 ? results[i].bytes_per_op / results[i].ns.median : 0.0,
				i + 1 < n_results ? "," : "");
		fprintf(out, " ]\n}\n");
		fclose(out);
	}
	return sink == 0xdeadbeef;
}
