/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgb4 backend: a connection's received iSCSI PDUs, assembled from the
 * CPL messages a T5/T6 hands up for them. Pure code (pdu/cxe_env.h): it
 * builds into the module with the backend and into user-space tests.
 *
 * With the connection in ULP iSCSI mode the chip frames PDUs itself,
 * checks (and strips) their digests and padding, and places solicited
 * write data by DDP. For each PDU it sends, in order:
 * - T5: CPL_ISCSI_HDR with the header, then CPL_ISCSI_DATA with the data
 *   segment unless DDP placed it, then CPL_RX_ISCSI_DDP with the status;
 * - T6: CPL_ISCSI_DATA with the data segment unless DDP placed it, then
 *   CPL_RX_ISCSI_CMP with the header and the status. For Data-Outs DDP
 *   placed, one CPL_RX_ISCSI_CMP may stand for several: it carries the
 *   header of the last and the earlier ones are never handed up.
 *
 * The assembler takes those messages one at a time and says when one
 * completes a PDU. It never touches data: a CPL_ISCSI_DATA's payload
 * stays with the caller, who keeps it until the PDU completes. A message
 * that does not fit the sequence above (or a header the chip should not
 * have let through) breaks the stream: -EPROTO, and the assembler takes
 * nothing more; the connection must be aborted. A header that failed its
 * digest is handed up flagged, and nothing after it is taken; on a T5 its
 * header comes before the status that says so, and one that breaks the
 * framing rules is refused before then: the connection goes either way.
 */
#ifndef CXE_CXGB4_RX_H
#define CXE_CXGB4_RX_H

#include "../../pdu/cxe_bhs.h"
#include "cpl.h"

/* What cxe_c4rx_msg() returns besides a negative errno */
#define CXE_C4RX_MORE	0	/* taken; the PDU is not complete yet */
#define CXE_C4RX_PDU	1	/* *pdu is a complete PDU */

/* A complete PDU, valid until the next message is given */
struct cxe_c4rx_pdu {
	const u8 *hdr;		/* BHS + AHS (the assembler's copy) */
	u32 hdr_len;
	u32 dlen;		/* DataSegmentLength */
	u32 seq;		/* TCP sequence number of its first byte */
	/*
	 * The data segment (dlen bytes, dlen > 0) is the payload of the
	 * CPL_ISCSI_DATA the caller kept, or was placed by DDP: then no
	 * data came, the PDU is a Data-Out, and on a T6 it also completes
	 * every earlier Data-Out of its R2T placed since the last one
	 * handed up (from there to this PDU's end, all placed).
	 */
	bool data;
	bool placed;
	bool hcrc_err;		/* header digest failed: lengths untrusted */
	bool dcrc_err;		/* data digest failed */
	bool pad_err;		/* padding bytes not zero */
};

enum cxe_c4rx_state {
	CXE_C4RX_IDLE,		/* between PDUs */
	CXE_C4RX_GOT_HDR,	/* T5: header taken, data or status next */
	CXE_C4RX_GOT_DATA,	/* data taken (after the header on a T5) */
	CXE_C4RX_DEAD,
};

struct cxe_c4rx {
	enum cxe_chip chip;
	u32 max_dlen;		/* our MaxRecvDataSegmentLength */
	/* T5: sequence number the next PDU starts at, once one was seen */
	bool seq_known;
	u32 rcv_nxt;

	enum cxe_c4rx_state state;
	u32 data_len;		/* the data message's length */
	u32 seq;
	u32 hdr_len;
	u8 hdr[CXE_BHS_LEN + CXE_MAX_AHS_LEN];
};

void cxe_c4rx_init(struct cxe_c4rx *rx, enum cxe_chip chip, u32 max_dlen);

/*
 * One received CPL_ISCSI_HDR, CPL_ISCSI_DATA, CPL_RX_ISCSI_DDP or
 * CPL_RX_ISCSI_CMP of len bytes (from its opcode on). A header message's
 * header follows the CPL in buf; a data message's payload is not read
 * (only the CPL). Returns CXE_C4RX_MORE, CXE_C4RX_PDU with *pdu filled, or
 * -EPROTO (also for a message the CPL parser refuses).
 */
int cxe_c4rx_msg(struct cxe_c4rx *rx, const void *buf, size_t len,
		 struct cxe_c4rx_pdu *pdu);

#endif /* CXE_CXGB4_RX_H */
