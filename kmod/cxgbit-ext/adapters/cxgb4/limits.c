// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: one adapter's limits for iSCSI PDUs (limits.h).
 *
 * The chip's own bounds, not a driver's habits: mainline cxgbit also caps
 * a PDU's data at 4 pages and uses that for receiving as well as sending;
 * only a send's gather list is bounded by pages (one page more than the
 * data for data that does not start on a page), received PDUs land in
 * the chip's free-list buffers.
 */
#include "limits.h"

static u32 cxe_min_by(u32 v, u32 bound, const char **by, const char *why)
{
	if (bound < v) {
		*by = why;
		return bound;
	}
	return v;
}

int cxe_cxgb4_limits(const struct cxe_cxgb4_hw *hw, struct cxe_cxgb4_limits *l)
{
	u32 pdu, frags_len;

	if ((hw->chip != CXE_CHIP_T5 && hw->chip != CXE_CHIP_T6) ||
	    hw->iscsi_iolen < CXE_CXGB4_PDU_OVERHEAD + 4 ||
	    !hw->page_size || hw->max_frags < 2)
		return -EINVAL;

	memset(l, 0, sizeof(*l));
	l->recv_by = "iolen";
	pdu = hw->iscsi_iolen - CXE_CXGB4_PDU_OVERHEAD;
	if (hw->chip == CXE_CHIP_T5)
		pdu = cxe_min_by(pdu, CXE_CXGB4_T5_MAX_PDU - CXE_CXGB4_PDU_OVERHEAD,
				 &l->recv_by, "t5");
	else
		pdu = cxe_min_by(pdu, CXE_CXGB4_T6_MAX_DLEN, &l->recv_by, "t6");
	/* data segments are whole words on the wire (padding) */
	l->max_recv_dlen = pdu & ~3U;

	l->send_by = l->recv_by;
	frags_len = (hw->max_frags - 1) * hw->page_size;
	l->max_send_dlen = cxe_min_by(l->max_recv_dlen, frags_len & ~3U,
				      &l->send_by, "frags");

	/* a burst is one gather list, its length a 16-bit field */
	if (hw->fw_vers < CXE_CXGB4_ISO_FW) {
		l->iso_by = "firmware";
	} else {
		l->iso_by = "iso_len";
		l->max_iso_burst = cxe_min_by(CXE_CXGB4_ISO_MAX & ~3U,
					      (hw->max_frags * hw->page_size) & ~3U,
					      &l->iso_by, "frags");
		/* fewer than two PDUs is not a burst worth the chip */
		if (l->max_iso_burst < 2 * l->max_send_dlen) {
			l->max_iso_burst = 0;
			l->iso_by = "frags";
		}
	}

	/* page pods map whole pages */
	l->ddp_align = hw->page_size;
	if (hw->ddp) {
		l->ddp_by = "ddp_min";
		l->ddp_min_len = CXE_CXGB4_DDP_MIN;
	} else {
		l->ddp_by = "no_ppm";
		l->ddp_min_len = CXE_CXGB4_NEVER;
	}
	return 0;
}
