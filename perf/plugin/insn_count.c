// SPDX-License-Identifier: GPL-2.0
/*
 * cxgbit-ext perf: a QEMU TCG plugin that counts the guest instructions one
 * VM executes and keeps the running total in a file the guest can read.
 *
 *   qemu ... -plugin libinsn_count.so,out=/path/insn.count
 *
 * Counting is per translation block (each executed block adds its length),
 * so a block left early by an exception still counts in full; the error is
 * well under 1% for this kernel workload.  A writer thread rewrites the file
 * (20 decimal digits and a newline, in place) every 10 ms, so a reader sees
 * the count at most 10 ms old.  Built against the plugin API header of the
 * installed QEMU (scripts/perf-deps fetches it from Debian's qemu source).
 *
 * With prof=PREFIX it also counts per kernel translation block (by the
 * block's start address; every user-space block shares one slot), and dumps
 * on request: for each file PREFIX.req.LABEL the guest (or anyone) creates,
 * in LABEL order, the writer thread removes it and writes PREFIX.LABEL, one
 * "address count" line (hex, decimal) per block that ran since the previous
 * dump.  perf/profile.py maps the addresses to the guest's kallsyms.  The
 * table is filled by one TCG thread (testbed/run runs qemu with
 * tcg,thread=single) and only read by the writer thread.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static uint64_t insns;		/* bumped inline by the (single) TCG thread */
static int out_fd = -1;

/* prof=: counts per kernel block start address, open addressing */
#define PROF_SLOTS	(1u << 20)
#define KERNEL_BASE	0xffff800000000000ull
static const char *prof;
static uint64_t *prof_addr;	/* 0: free; 1: the user-space slot */
static uint64_t *prof_count;	/* bumped inline */
static uint64_t *prof_last;	/* counts at the previous dump */
static volatile int stopping;
static pthread_t writer;

static void write_count(void)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%020" PRIu64 "\n",
			 __atomic_load_n(&insns, __ATOMIC_RELAXED));

	if (pwrite(out_fd, buf, n, 0) != n)
		fprintf(stderr, "insn_count: write: %s\n", strerror(errno));
}

/* the slot of block start address a (the TCG thread only inserts) */
static uint64_t *prof_slot(uint64_t a)
{
	uint64_t key = a >= KERNEL_BASE ? a : 1;
	uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 44);
	uint32_t n;

	for (n = 0; n < PROF_SLOTS; n++, i = (i + 1) & (PROF_SLOTS - 1)) {
		uint64_t k = __atomic_load_n(&prof_addr[i], __ATOMIC_ACQUIRE);

		if (k == key)
			return &prof_count[i];
		if (!k) {
			__atomic_store_n(&prof_addr[i], key, __ATOMIC_RELEASE);
			return &prof_count[i];
		}
	}
	return NULL;	/* full: the block still counts in the total */
}

/* PREFIX.LABEL: every slot that moved since the last dump */
static void prof_dump(const char *label)
{
	char path[4096], tmp[4096 + 8];
	FILE *f;
	uint32_t i;

	snprintf(path, sizeof(path), "%s.%s", prof, label);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "insn_count: %s: %s\n", tmp, strerror(errno));
		return;
	}
	for (i = 0; i < PROF_SLOTS; i++) {
		uint64_t k = __atomic_load_n(&prof_addr[i], __ATOMIC_ACQUIRE);
		uint64_t c = __atomic_load_n(&prof_count[i], __ATOMIC_RELAXED);

		if (!k || c == prof_last[i])
			continue;
		fprintf(f, "%" PRIx64 " %" PRIu64 "\n", k, c - prof_last[i]);
		prof_last[i] = c;
	}
	if (fclose(f) || rename(tmp, path))
		fprintf(stderr, "insn_count: %s: %s\n", path, strerror(errno));
}

static int label_ok(const char *l)
{
	size_t i, n = strlen(l);

	if (!n || n > 63)
		return 0;
	for (i = 0; i < n; i++)
		if (!(isalnum((unsigned char)l[i]) || l[i] == '-' || l[i] == '_'))
			return 0;
	return 1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* every PREFIX.req.LABEL, oldest label first; bad ones are removed too */
static void prof_poll(void)
{
	char dir[4096], path[8192], *base, *names[64];
	size_t blen, n = 0, i;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s", prof);
	base = strrchr(dir, '/');
	if (!base)
		return;
	*base++ = 0;
	blen = strlen(base);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d)) && n < 64) {
		if (strncmp(e->d_name, base, blen) || strncmp(e->d_name + blen, ".req.", 5))
			continue;
		names[n] = strdup(e->d_name + blen + 5);
		if (names[n])
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_name);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s.req.%s", dir, base, names[i]);
		unlink(path);
		if (label_ok(names[i]))
			prof_dump(names[i]);
		free(names[i]);
	}
}

static void *writer_main(void *arg)
{
	const struct timespec tick = { .tv_nsec = 10 * 1000 * 1000 };

	(void)arg;
	while (!stopping) {
		write_count();
		if (prof)
			prof_poll();
		nanosleep(&tick, NULL);
	}
	return NULL;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t *slot;

	(void)id;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &insns,
						 qemu_plugin_tb_n_insns(tb));
	if (!prof)
		return;
	slot = prof_slot(qemu_plugin_tb_vaddr(tb));
	if (slot)
		qemu_plugin_register_vcpu_tb_exec_inline(tb,
							 QEMU_PLUGIN_INLINE_ADD_U64,
							 slot,
							 qemu_plugin_tb_n_insns(tb));
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
	stopping = 1;
	pthread_join(writer, NULL);
	write_count();
	close(out_fd);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *out = NULL;
	int i;

	if (!info->system_emulation) {
		fprintf(stderr, "insn_count: system emulation only\n");
		return -1;
	}
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			out = argv[i] + 4;
		else if (!strncmp(argv[i], "prof=", 5))
			prof = argv[i] + 5;
		else {
			fprintf(stderr, "insn_count: unknown option %s\n", argv[i]);
			return -1;
		}
	}
	if (!out) {
		fprintf(stderr, "insn_count: out=FILE is required\n");
		return -1;
	}
	if (prof) {
		prof_addr = calloc(PROF_SLOTS, sizeof(*prof_addr));
		prof_count = calloc(PROF_SLOTS, sizeof(*prof_count));
		prof_last = calloc(PROF_SLOTS, sizeof(*prof_last));
		if (!prof_addr || !prof_count || !prof_last) {
			fprintf(stderr, "insn_count: no memory for prof=\n");
			return -1;
		}
	}
	out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out_fd < 0) {
		fprintf(stderr, "insn_count: %s: %s\n", out, strerror(errno));
		return -1;
	}
	if (pthread_create(&writer, NULL, writer_main, NULL)) {
		close(out_fd);
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
