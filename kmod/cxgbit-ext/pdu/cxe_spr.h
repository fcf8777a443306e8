/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgbit-ext pure protocol code: the lines of shared reservations' agent
 * channel (/dev/cxgbit_ext_pr, spr.c).
 *
 * The module writes, one line each:
 *   out <id> <target> <tpgt> <lun> <initiator> <isid> <cdb> <param>
 *	a PERSISTENT RESERVE OUT received here, waiting for the agent
 *   done <tag> <ret>
 *	what run or apply did: LIO's sense_reason_t, 0 for GOOD; "gone"
 *	for a run whose command was no longer waiting
 * The agent writes, one line per write():
 *   serve <target>	target's linked TPGs serve for the next
 *			CXE_SPR_LEASE_S seconds: the agent has applied the
 *			cluster's log and its watch of the log is live. It
 *			says so again every second or so while that holds.
 *			A TPG is held (serves only what
 *			cxe_spr_held_allows() lets by) from its link until
 *			then, and again once its lease runs out, on hold, or
 *			when the agent closes.
 *   hold <target>	target's linked TPGs are held
 *   run <id> <tag>	run request id's command now, on itself
 *   fail <id>		fail it (LOGICAL UNIT COMMUNICATION FAILURE)
 *   apply <tag> <target> <tpgt> <lun> <initiator> <isid> <cdb> <param>
 *			run that PERSISTENT RESERVE OUT through an internal
 *			I_T nexus of that initiator port and target port
 * <id>, <tag>, <tpgt> and <lun> are decimal; <isid> is 12 hex digits (the
 * six bytes as LIO prints them), <cdb> 20 (the 10-byte CDB), <param> the
 * parameter list in hex ("-" when empty). Names are iSCSI names: 1 to 223
 * printable ASCII characters without a space.
 */
#ifndef CXE_SPR_H
#define CXE_SPR_H

#include "cxe_env.h"

#define CXE_SPR_NAME_MAX	224	/* an iSCSI name's 223 bytes and a NUL */
#define CXE_SPR_CDB_LEN		10
#define CXE_SPR_ISID_LEN	6
#define CXE_SPR_PARAM_MAX	4096	/* the longest parameter list carried */
/* how long a serve holds: an agent that stops saying it is held soon */
#define CXE_SPR_LEASE_S		3
/* the longest line either side writes, newline included */
#define CXE_SPR_LINE_MAX	(2 * CXE_SPR_NAME_MAX + 2 * CXE_SPR_PARAM_MAX + 128)

enum cxe_spr_verb {
	CXE_SPR_RUN = 1,
	CXE_SPR_FAIL,
	CXE_SPR_APPLY,
	CXE_SPR_SERVE,
	CXE_SPR_HOLD,
};

struct cxe_spr_nexus {
	char	target[CXE_SPR_NAME_MAX];
	u16	tpgt;
	u64	lun;
	char	initiator[CXE_SPR_NAME_MAX];
	u8	isid[CXE_SPR_ISID_LEN];
};

struct cxe_spr_msg {
	enum cxe_spr_verb	verb;
	u64			id;	/* run, fail */
	u64			tag;	/* run, apply */
	struct cxe_spr_nexus	nx;	/* apply; serve and hold: target */
	u8			cdb[CXE_SPR_CDB_LEN];
	u32			plen;
	const u8		*param;	/* apply: decoded in place in the line */
};

/*
 * Parse one line of the agent: len bytes, an ending newline allowed, in a
 * buffer of at least len + 1 bytes. The line is changed (param points
 * into it). 0, or -EINVAL for anything malformed, with m unspecified.
 */
int cxe_spr_parse(char *line, size_t len, struct cxe_spr_msg *m);

/* An "out" line into buf: its length, or -ENOSPC. */
int cxe_spr_format_out(char *buf, size_t size, u64 id,
		       const struct cxe_spr_nexus *nx, const u8 *cdb,
		       const u8 *param, u32 plen);

/*
 * Whether a held TPG serves this command: what a path checker and ALUA's
 * handler ask (INQUIRY, REPORT LUNS, REQUEST SENSE, REPORT TARGET PORT
 * GROUPS), as LIO serves them in the ALUA transitioning state. Everything
 * else reads or changes the logical unit, whose reservations a held
 * gateway may not have yet.
 */
bool cxe_spr_held_allows(const u8 *cdb);

/* A "done" line (ret < 0: "gone"): its length, or -ENOSPC. */
int cxe_spr_format_done(char *buf, size_t size, u64 tag, int ret);

#endif /* CXE_SPR_H */
