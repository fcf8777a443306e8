// SPDX-License-Identifier: GPL-2.0-only
/*
 * Burst segmentation planner. Pure code: see cxe_env.h and cxe_seg.h.
 */
#include "cxe_seg.h"

static bool cxe_seg_valid(const struct cxe_seg_burst *b)
{
	return b->len && b->max_pdu && (u64)b->offset + b->len <= 0x100000000ull;
}

u32 cxe_seg_count(const struct cxe_seg_burst *b)
{
	if (!cxe_seg_valid(b))
		return 0;
	return (u32)(((u64)b->len + b->max_pdu - 1) / b->max_pdu);
}

CXE_EXPORT(cxe_seg_count);

bool cxe_seg_pdu(const struct cxe_seg_burst *b, u32 idx, struct cxe_seg_pdu *out)
{
	u32 n = cxe_seg_count(b);
	u64 start;

	if (idx >= n)
		return false;
	start = (u64)idx * b->max_pdu;
	out->offset = b->offset + (u32)start;
	out->len = idx == n - 1 ? b->len - (u32)start : b->max_pdu;
	out->datasn = b->datasn + idx;
	out->final = idx == n - 1;
	out->status = out->final && b->status;
	return true;
}

CXE_EXPORT(cxe_seg_pdu);

void cxe_seg_datain_hdr(u8 *bhs, const u8 *tmpl, const struct cxe_seg_pdu *pdu)
{
	memcpy(bhs, tmpl, CXE_BHS_LEN);
	if (pdu->status) {
		bhs[1] |= CXE_FLAG_FINAL;
	} else {
		bhs[1] = pdu->final ? CXE_FLAG_FINAL : 0;
		bhs[3] = 0;				/* status */
		cxe_put_be32(bhs + 24, CXE_RSVD_TAG);	/* StatSN */
		cxe_put_be32(bhs + 44, 0);		/* residual count */
	}
	cxe_bhs_set_dlen(bhs, pdu->len);
	cxe_put_be32(bhs + 36, pdu->datasn);
	cxe_put_be32(bhs + 40, pdu->offset);
}

CXE_EXPORT(cxe_seg_datain_hdr);
