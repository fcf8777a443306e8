/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A model of a Chelsio T5/T6's page pod memory: what ULP_TX_MEM_WRITE
 * requests write there, and where the chip places a byte of a Data-Out
 * by the pods its tag names (README.md says what is modelled and what is
 * not). Pure code, as ulp_rx.h.
 *
 * A tag names its pods by index (the pod at base + idx * 64 and those
 * after it); byte off of the task's buffer lies page_offset + off bytes
 * into the buffer's pages, four pages to a pod. The chip places it only
 * when the pod is valid, for the connection and the tag of the Data-Out,
 * and off is below the pod's max_offset. The fifth address of a pod is
 * the next pod's first page (a PDU that crosses into the next pod is
 * placed by it), so the two must agree.
 */
#ifndef CXE_MODEL_PPOD_H
#define CXE_MODEL_PPOD_H

#include "cpl.h"

struct cxe_model_ppm {
	u8 *mem;		/* size bytes: the pod region */
	u32 base;		/* its byte address in adapter memory */
	u32 size;		/* a whole number of pods */
};

/*
 * One ULP_TX_MEM_WRITE request of wr_len bytes into the pod region.
 * Returns the number of pods written; -EINVAL for a request the firmware
 * would refuse or misread (a length that disagrees with another, another
 * command, data that is not whole pods, an address outside the region).
 */
int cxe_model_ppm_write(struct cxe_model_ppm *m, const u8 *wr, u32 wr_len);

/*
 * The bus address the chip writes byte off of a Data-Out's buffer to,
 * for connection tid and a tag naming pod idx (the tag as the pods hold
 * it). -ENOENT when the pods do not let the chip place it there (not
 * valid, another connection or tag, off at or past max_offset, no page),
 * -EIO when a pod's fifth address is not the next pod's first.
 */
int cxe_model_ppm_locate(const struct cxe_model_ppm *m, u32 idx, u32 tid,
			 u32 tag, u32 off, u64 *addr);

#endif
