// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext perf: native micro-benchmark of the pure PDU code (host, no VM).
 *
 * The same kmod/cxgbit-ext/pdu/ sources the module builds, compiled with -O2
 * for this CPU, timed against the two costs they cannot beat: memcpy and a
 * plain CRC32C. The CRC32C here is the SSE4.2 crc32 instruction, one stream
 * of 8-byte steps, which is what the kernel's crc32c-intel does for short
 * buffers (for long ones it interleaves three streams and is faster still),
 * so "digest + placement" below is an upper bound on what the module pays.
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

struct result {
	const char *name;
	double ns_per_op;
	double bytes_per_op;
	const char *unit;	/* what one op is */
};

static struct result results[32];
static int n_results;

#define MIN_SECONDS 0.3

/* Run fn until MIN_SECONDS have passed (at least 3 rounds); ns per op. */
static double timeit(void (*fn)(void *), void *arg, u64 ops_per_call)
{
	u64 calls = 0;
	double t0, t;

	fn(arg);		/* warm caches and page tables */
	t0 = now();
	do {
		fn(arg);
		calls++;
		t = now();
	} while (t - t0 < MIN_SECONDS || calls < 3);
	return (t - t0) * 1e9 / (double)(calls * ops_per_call);
}

static void record(const char *name, double ns, double bytes, const char *unit)
{
	results[n_results++] = (struct result){ name, ns, bytes, unit };
	printf("%-44s %10.1f ns/%-6s", name, ns, unit);
	if (bytes > 0)
		printf(" %8.2f GB/s %8.3f ns/byte", bytes / ns, ns / bytes);
	printf("\n");
}

/* ---- plain baselines over a 64 KiB buffer ---- */

#define CHUNK (64 * 1024)
static u8 *src, *dst;
static size_t seg_len;

static void do_memcpy(void *a)
{
	(void)a;
	memcpy(dst, src, seg_len);
	sink += dst[seg_len - 1];
}

static void do_crc(void *a)
{
	(void)a;
	sink += cxe_crc32c(~0u, src, seg_len);
}

/* digest + placement: what the soft adapter does per data segment */
static void do_digest_place(void *a)
{
	u32 crc;

	(void)a;
	memcpy(dst, src, seg_len);
	crc = cxe_data_digest_finish(cxe_crc32c(~0u, dst, seg_len), seg_len);
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

static int b_data(void *ctx, u32 off, const u8 *buf, u32 len)
{
	(void)ctx;
	memcpy(dst + off, buf, len);
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

static void do_rx(void *a)
{
	struct cxe_rx rx;
	size_t off = 0;
	u32 pdus = 0;

	(void)a;
	cxe_rx_init(&rx, 1 << 24);
	rx.hdigest = rx.ddigest = rx_digests;
	while (off < stream_len) {
		size_t n = stream_len - off < CHUNK ? stream_len - off : CHUNK;

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
	char name[64];
	FILE *out;

	if (!__builtin_cpu_supports("sse4.2")) {
		fprintf(stderr, "bench: this CPU has no SSE4.2 crc32\n");
		return 1;
	}
	src = aligned_alloc(4096, 1 << 24);
	dst = aligned_alloc(4096, 1 << 24);
	if (!src || !dst)
		return 1;
	for (u32 i = 0; i < 1 << 24; i++)
		src[i] = (u8)(i * 2654435761u >> 24);
	memset(dst, 0, 1 << 24);

	for (u32 i = 0; i < 3; i++) {
		seg_len = sizes[i];
		snprintf(name, sizeof(name), "memcpy %u B", sizes[i]);
		record(strdup(name), timeit(do_memcpy, NULL, 1), seg_len, "op");
		snprintf(name, sizeof(name), "crc32c (SSE4.2) %u B", sizes[i]);
		record(strdup(name), timeit(do_crc, NULL, 1), seg_len, "op");
		snprintf(name, sizeof(name), "digest + placement %u B", sizes[i]);
		record(strdup(name), timeit(do_digest_place, NULL, 1), seg_len, "op");
	}
	for (int d = 0; d < 2; d++) {
		for (u32 i = 0; i < 3; i++) {
			u32 pdus = (1 << 23) / sizes[i];

			build_stream(sizes[i], pdus, d);
			snprintf(name, sizeof(name), "RX parse+place %u B PDUs, digests %s",
				 sizes[i], d ? "on" : "off");
			record(strdup(name), timeit(do_rx, NULL, pdus),
			       (double)stream_len / pdus, "PDU");
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
		fprintf(out, "{\n \"note\": \"ns per op on the host CPU, -O2; crc32c = SSE4.2 crc32, 1 stream\",\n \"results\": [\n");
		for (int i = 0; i < n_results; i++)
			fprintf(out, "  {\"name\": \"%s\", \"ns_per_op\": %.2f, \"unit\": \"%s\", \"bytes_per_op\": %.0f, \"gb_per_s\": %.3f}%s\n",
				results[i].name, results[i].ns_per_op, results[i].unit,
				results[i].bytes_per_op,
				results[i].bytes_per_op > 0 ? results[i].bytes_per_op / results[i].ns_per_op : 0.0,
				i + 1 < n_results ? "," : "");
		fprintf(out, " ]\n}\n");
		fclose(out);
	}
	return sink == 0xdeadbeef;
}
