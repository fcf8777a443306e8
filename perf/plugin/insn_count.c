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
 */
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

static void *writer_main(void *arg)
{
	const struct timespec tick = { .tv_nsec = 10 * 1000 * 1000 };

	(void)arg;
	while (!stopping) {
		write_count();
		nanosleep(&tick, NULL);
	}
	return NULL;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &insns,
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
		else {
			fprintf(stderr, "insn_count: unknown option %s\n", argv[i]);
			return -1;
		}
	}
	if (!out) {
		fprintf(stderr, "insn_count: out=FILE is required\n");
		return -1;
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
