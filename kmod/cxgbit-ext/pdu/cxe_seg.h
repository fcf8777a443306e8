/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Burst segmentation planner: one Data-In burst (a range of the command's
 * buffer) becomes the PDUs an adapter emits, each with its DataSN, Buffer
 * Offset and F/S bits. Pure code: see cxe_env.h.
 */
#ifndef CXE_SEG_H
#define CXE_SEG_H

#include "cxe_bhs.h"

struct cxe_seg_burst {
	u32 offset;		/* Buffer Offset of the first byte */
	u32 len;		/* bytes in the burst */
	u32 max_pdu;		/* initiator's MaxRecvDataSegmentLength */
	u32 datasn;		/* DataSN of the first PDU */
	bool status;		/* last PDU carries status (S bit) */
};

struct cxe_seg_pdu {
	u32 offset;
	u32 len;
	u32 datasn;
	bool final;		/* F: last PDU of the burst */
	bool status;		/* S: status in this PDU */
};

/* Number of PDUs the burst becomes; 0 for an empty or invalid burst. */
u32 cxe_seg_count(const struct cxe_seg_burst *b);

/*
 * PDU number idx (0-based) of the burst; returns false when idx is out of
 * range or the burst is invalid (max_pdu 0, or offset + len past 2^32).
 */
bool cxe_seg_pdu(const struct cxe_seg_burst *b, u32 idx, struct cxe_seg_pdu *out);

/*
 * The BHS of one Data-In PDU of a burst, from the burst's template: the
 * header the last PDU carries (with S, status, StatSN and residual when
 * the burst ends the command with status). Other PDUs get F only at the
 * end of the burst, no S/O/U bits, no status, StatSN 0xffffffff and no
 * residual. DataSegmentLength, DataSN and Buffer Offset come from pdu.
 */
void cxe_seg_datain_hdr(u8 *bhs, const u8 *tmpl, const struct cxe_seg_pdu *pdu);

#endif /* CXE_SEG_H */
