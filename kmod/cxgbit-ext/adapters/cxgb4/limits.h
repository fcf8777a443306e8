/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgb4 backend: what one Chelsio adapter can do for iSCSI PDUs, from what
 * cxgb4 reports of it. Pure C (see pdu/cxe_env.h), unit-tested in user
 * space (tests/host/c/test_cxgb4_limits.c).
 */
#ifndef CXE_CXGB4_LIMITS_H
#define CXE_CXGB4_LIMITS_H

#include "cpl.h"

/* Of struct cxgb4_lld_info and the host: what the limits depend on */
struct cxe_cxgb4_hw {
	enum cxe_chip	chip;
	u32		iscsi_iolen;	/* largest iSCSI PDU the chip takes, whole */
	u32		fw_vers;	/* firmware version, cxgb4's encoding */
	u32		page_size;	/* the host's */
	u32		max_frags;	/* pages one transmit gather list holds */
	bool		ddp;		/* page pods set up for the adapter */
};

/*
 * Each limit (the meaning of struct cxe_limits' fields, adapter.h) and
 * what set it, one word: "iolen" (the chip's I/O length less a PDU's
 * other bytes), "t5" (the T5's largest PDU), "t6" (16 KiB of data per PDU
 * on a T6), "frags" (one transmit gather list), "firmware" (no ISO before
 * 1.13.43.0), "iso_len" (an ISO burst's 16-bit length), "no_ppm" (no page
 * pods: no placement), "ddp_min" (shorter windows are not worth a tag).
 */
struct cxe_cxgb4_limits {
	u32		max_recv_dlen;
	u32		max_send_dlen;
	u32		max_iso_burst;	/* 0: no ISO */
	u32		ddp_min_len;	/* CXE_CXGB4_NEVER: no DDP */
	u32		ddp_align;
	const char	*recv_by;
	const char	*send_by;
	const char	*iso_by;
	const char	*ddp_by;
};

/* A PDU's bytes other than data: BHS, the AHS the chip allows, 2 digests */
#define CXE_CXGB4_PDU_OVERHEAD	(48 + 256 + 8)
#define CXE_CXGB4_T5_MAX_PDU	16224
#define CXE_CXGB4_T6_MAX_DLEN	16384
#define CXE_CXGB4_ISO_FW	0x10d2b00
#define CXE_CXGB4_ISO_MAX	65535
/*
 * What FW_FLOWC_WR declares as the largest payload of the flow's transmit
 * requests: mainline cxgbit's values, with and without ISO.
 */
#define CXE_CXGB4_TXPLEN_ISO	65535
#define CXE_CXGB4_TXPLEN	16384
#define CXE_CXGB4_DDP_MIN	512
#define CXE_CXGB4_NEVER		0xffffffffU	/* CXE_NO_LIMIT, adapter.h */

/* 0, or -EINVAL for what no adapter reports (a PDU with no room for data) */
int cxe_cxgb4_limits(const struct cxe_cxgb4_hw *hw, struct cxe_cxgb4_limits *l);

#endif /* CXE_CXGB4_LIMITS_H */
