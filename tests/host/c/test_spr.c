// SPDX-License-Identifier: GPL-2.0-only
/*
 * The agent channel's lines (pdu/cxe_spr.c): what the module writes reads
 * back as the agent sends it, and every malformed line is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cxe_spr.h"

static char buf[CXE_SPR_LINE_MAX + 2];

static int parse(const char *text, struct cxe_spr_msg *m)
{
	size_t n = strlen(text);

	memcpy(buf, text, n + 1);
	return cxe_spr_parse(buf, n, m);
}

static const struct cxe_spr_nexus nx = {
	.target = "iqn.2026-11.org.cxgbit-ext:gw",
	.tpgt = 2,
	.lun = 7,
	.initiator = "iqn.1994-05.com.redhat:node-a",
	.isid = { 0x23, 0x3d, 0x00, 0x00, 0x00, 0x01 },
};

static void test_out_reads_back_as_apply(void)
{
	static char line[CXE_SPR_LINE_MAX], again[CXE_SPR_LINE_MAX + 16];
	u8 cdb[CXE_SPR_CDB_LEN] = { 0x5f, 0x01, 0x05, 0, 0, 0, 0, 0, 24, 0 };
	u8 param[CXE_SPR_PARAM_MAX];
	struct cxe_spr_msg m;
	u32 plen;
	int n, i;

	for (plen = 0; plen <= CXE_SPR_PARAM_MAX; plen += plen < 64 ? 1 : 509) {
		for (i = 0; i < (int)plen; i++)
			param[i] = (u8)(i * 37 + plen);
		n = cxe_spr_format_out(line, sizeof(line), 99, &nx, cdb, param, plen);
		CHECK(n > 0 && line[n - 1] == '\n' && !strncmp(line, "out 99 ", 7));
		/* the agent answers with the same fields after "apply <tag>" */
		snprintf(again, sizeof(again), "apply 12345%s", line + 6);
		CHECK(!parse(again, &m));
		CHECK(m.verb == CXE_SPR_APPLY && m.tag == 12345);
		CHECK(!strcmp(m.nx.target, nx.target) && !strcmp(m.nx.initiator, nx.initiator));
		CHECK(m.nx.tpgt == 2 && m.nx.lun == 7);
		CHECK(!memcmp(m.nx.isid, nx.isid, CXE_SPR_ISID_LEN));
		CHECK(!memcmp(m.cdb, cdb, CXE_SPR_CDB_LEN));
		CHECK(m.plen == plen && (!plen || !memcmp(m.param, param, plen)));
	}
	CHECK(cxe_spr_format_out(line, 40, 1, &nx, cdb, param, 24) == -ENOSPC);
}

static void test_run_fail_done(void)
{
	struct cxe_spr_msg m;
	char line[64];

	CHECK(!parse("run 5 18446744073709551615\n", &m));
	CHECK(m.verb == CXE_SPR_RUN && m.id == 5 && m.tag == ~0ULL);
	CHECK(!parse("fail 0", &m) && m.verb == CXE_SPR_FAIL && m.id == 0);
	CHECK(cxe_spr_format_done(line, sizeof(line), 7, 0) == 9 && !strcmp(line, "done 7 0\n"));
	CHECK(cxe_spr_format_done(line, sizeof(line), 7, 18) > 0 && !strcmp(line, "done 7 18\n"));
	CHECK(cxe_spr_format_done(line, sizeof(line), 8, -1) > 0 && !strcmp(line, "done 8 gone\n"));
	CHECK(cxe_spr_format_done(line, 6, 8, 0) == -ENOSPC);
}

static void test_serve_and_hold(void)
{
	struct cxe_spr_msg m;

	CHECK(!parse("serve iqn.2026-11.org.x:t\n", &m));
	CHECK(m.verb == CXE_SPR_SERVE && !strcmp(m.nx.target, "iqn.2026-11.org.x:t"));
	CHECK(!parse("hold iqn.2026-11.org.x:t", &m));
	CHECK(m.verb == CXE_SPR_HOLD && !strcmp(m.nx.target, "iqn.2026-11.org.x:t"));
}

/* What a held TPG serves: the commands LIO serves while transitioning */
static void test_held_allows(void)
{
	u8 cdb[16] = { 0 };
	int op, allowed = 0;

	cdb[0] = 0x12;
	CHECK(cxe_spr_held_allows(cdb));	/* INQUIRY */
	cdb[0] = 0xa0;
	CHECK(cxe_spr_held_allows(cdb));	/* REPORT LUNS */
	cdb[0] = 0x03;
	CHECK(cxe_spr_held_allows(cdb));	/* REQUEST SENSE */
	cdb[0] = 0xa3;
	cdb[1] = 0x0a;
	CHECK(cxe_spr_held_allows(cdb));	/* REPORT TARGET PORT GROUPS */
	cdb[1] = 0xea;				/* the service action's 5 bits */
	CHECK(cxe_spr_held_allows(cdb));
	cdb[1] = 0x0c;				/* REPORT SUPPORTED OPERATION CODES */
	CHECK(!cxe_spr_held_allows(cdb));
	cdb[1] = 0;
	/* TEST UNIT READY, READ, WRITE, PERSISTENT RESERVE IN/OUT, ... held */
	for (op = 0; op < 256; op++) {
		cdb[0] = (u8)op;
		allowed += cxe_spr_held_allows(cdb);
	}
	CHECK(allowed == 3);
	cdb[0] = 0x00;
	CHECK(!cxe_spr_held_allows(cdb));
	cdb[0] = 0x5e;
	CHECK(!cxe_spr_held_allows(cdb));
	cdb[0] = 0x5f;
	CHECK(!cxe_spr_held_allows(cdb));
}

static void test_malformed_lines_are_refused(void)
{
	static const char *const bad[] = {
		"", "\n", "run", "run 5", "run 5 6 7", "run  5 6", "run 5 6 ", " run 5 6",
		"run -5 6", "run 05 6", "run 5x 6", "run 18446744073709551616 1",
		"fail", "fail 1 2", "stop 1", "RUN 1 2",
		"apply 1 iqn.a 1 0 iqn.b 233d00000001 5f010500000000001800",
		"apply 1 iqn.a 65536 0 iqn.b 233d00000001 5f010500000000001800 -",
		"apply 1 iqn.a 1 0 iqn.b 233d0000001 5f010500000000001800 -",
		"apply 1 iqn.a 1 0 iqn.b 233d00000001 5f0105000000000018 -",
		"apply 1 iqn.a 1 0 iqn.b 233d00000001 5f010500000000001800 abc",
		"apply 1 iqn.a 1 0 iqn.b 233d00000001 5f010500000000001800 zz",
		"apply 1 iqn.a 1 0 iqn.b 233d00000001 5f010500000000001800 - x",
		"apply 1 iqn.a\t1 0 iqn.b 233d00000001 5f010500000000001800 -",
		"apply 1 iqn.a 1 0 iqn.\x7f 233d00000001 5f010500000000001800 -",
		"run 1 2\nrun 3 4",
		"serve", "serve ", "hold", "serve iqn.a 1", "serve iqn.a ", "Serve iqn.a",
		"serve iqn.\x7f", "hold  iqn.a",
	};
	static char name[CXE_SPR_NAME_MAX + 1], line[CXE_SPR_LINE_MAX + 64];
	struct cxe_spr_msg m;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(bad[i], &m);

		CHECK(rc == -EINVAL);
		if (rc != -EINVAL)
			fprintf(stderr, "  accepted: \"%s\"\n", bad[i]);
	}
	memcpy(buf, "run 1 2", 8);
	buf[3] = '\0';
	CHECK(cxe_spr_parse(buf, 7, &m) == -EINVAL);	/* a NUL inside */
	/* a name of 223 characters is one, of 224 is not */
	memset(name, 'n', CXE_SPR_NAME_MAX - 1);
	snprintf(line, sizeof(line), "apply 1 %s 1 0 iqn.b 233d00000001 5f010500000000001800 -", name);
	CHECK(!parse(line, &m) && strlen(m.nx.target) == CXE_SPR_NAME_MAX - 1);
	name[CXE_SPR_NAME_MAX - 1] = 'n';
	snprintf(line, sizeof(line), "apply 1 %s 1 0 iqn.b 233d00000001 5f010500000000001800 -", name);
	CHECK(parse(line, &m) == -EINVAL);
}

int main(void)
{
	test_out_reads_back_as_apply();
	test_run_fail_done();
	test_serve_and_hold();
	test_held_allows();
	test_malformed_lines_are_refused();
	printf("test_spr: %d checks, %d failures\n", checks, failures);
	return failures != 0;
}
