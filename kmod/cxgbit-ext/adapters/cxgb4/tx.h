/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgb4 backend: the work requests that send a connection's PDUs. Pure
 * code (pdu/cxe_env.h): it builds into the module with the backend and
 * into user-space tests.
 *
 * A PDU goes out as one FW_OFLD_TX_DATA_WR in ULP iSCSI mode: the request
 * head written here, then the payload (the header, the data, its padding)
 * as immediate data when it all fits in the request, else from a gather
 * list cxgb4 writes; the chip inserts the digests. A Data-In burst goes
 * out in slices: a slice of two PDUs or more is one FW_ISCSI_TX_DATA_WR
 * with a CPL_TX_DATA_ISO, whose payload is one template header and the
 * slice's data, and the chip cuts it into PDUs (ISO); anything else goes
 * PDU by PDU.
 */
#ifndef CXE_CXGB4_TX_H
#define CXE_CXGB4_TX_H

#include "../../pdu/cxe_seg.h"
#include "cpl.h"
#include "limits.h"

/* What one request is made of, for the caller's queue and credits */
struct cxe_c4tx_wr {
	u32 head_len;		/* bytes written into buf */
	u32 payload;		/* bytes of the skb after them */
	u32 wire;		/* bytes the chip sends for it */
	u8 len16;		/* credits: the request in 16-byte units */
	bool imm;		/* payload immediate (cxgb4 copies it in) */
};

/* The largest request whose payload cxgb4 sends immediate */
#define CXE_C4TX_IMM_MAX	(255 + CXE_FW_OFLD_TX_DATA_WR_LEN)
/* Head of any request: WR header and, for ISO, its CPL */
#define CXE_C4TX_HEAD_MAX	(CXE_FW_OFLD_TX_DATA_WR_LEN + \
				 CXE_CPL_TX_DATA_ISO_LEN)

/* The connection's side of a request */
struct cxe_c4tx_conn {
	enum cxe_chip chip;
	u32 tid;
	bool hcrc;		/* digests negotiated */
	bool dcrc;
};

/*
 * One PDU with hdr_len bytes of header and dlen of data, from a payload
 * that cxgb4 gathers from sgl_entries pieces (the header and each data
 * piece, the padding one more) when it is not immediate. Returns the head
 * length, or -EINVAL, -ENOSPC as cpl.h's builders.
 */
int cxe_c4tx_pdu(void *buf, size_t size, const struct cxe_c4tx_conn *c,
		 u32 hdr_len, u32 dlen, u32 sgl_entries, bool compl,
		 struct cxe_c4tx_wr *wr);

/* One slice of a Data-In burst */
struct cxe_c4tx_slice {
	u32 first;		/* index of its first PDU in the burst */
	u32 npdu;
	u32 offset;		/* Buffer Offset of its first byte */
	u32 len;
	bool iso;		/* one ISO request; else npdu requests */
	u8 tmpl[CXE_BHS_LEN];	/* ISO: the template header */
};

/*
 * Slice number idx of burst b, whose last PDU's header is tmpl (struct
 * cxe_burst's), within the adapter's limits l. ISO takes slices of up to
 * max_iso_burst bytes when each PDU's data is whole words (max_pdu and the
 * burst's length multiples of 4, no padding), PDUs no longer than
 * max_send_dlen; else each PDU is a slice of its own. The template is the
 * header of the slice's first PDU, with the F, S and status fields the
 * slice's last PDU carries and DataSegmentLength 0. False past the last
 * slice, or for a burst that breaks the limits (a PDU longer than
 * max_send_dlen: the negotiation should have clamped it).
 */
bool cxe_c4tx_slice(const struct cxe_seg_burst *b, const u8 *tmpl,
		    const struct cxe_cxgb4_limits *l, u32 idx,
		    struct cxe_c4tx_slice *s);

/*
 * The request of an ISO slice of burst b (max_pdu, and the burst's first
 * and last PDU to set the slice flags), its payload the template and the
 * slice's data from sgl_entries pieces.
 */
int cxe_c4tx_iso(void *buf, size_t size, const struct cxe_c4tx_conn *c,
		 const struct cxe_seg_burst *b, const struct cxe_c4tx_slice *s,
		 u32 sgl_entries, bool compl, struct cxe_c4tx_wr *wr);

#endif /* CXE_CXGB4_TX_H */
