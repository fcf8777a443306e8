// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: assembling received PDUs from the chip's CPL messages.
 * Pure code, see rx.h.
 */
#include "rx.h"

void cxe_c4rx_init(struct cxe_c4rx *rx, enum cxe_chip chip, u32 max_dlen)
{
	memset(rx, 0, sizeof(*rx));
	rx->chip = chip;
	rx->max_dlen = max_dlen;
}

static int cxe_c4rx_dead(struct cxe_c4rx *rx)
{
	rx->state = CXE_C4RX_DEAD;
	return -EPROTO;
}

/*
 * Take the header that follows a CPL_ISCSI_HDR or CPL_RX_ISCSI_CMP of
 * cpl_len bytes: exactly a BHS and the AHS it announces, of an opcode an
 * initiator sends and a data segment within our limit. The chip frames
 * PDUs by these very fields, so a header that breaks them means the
 * stream is not what we negotiated. One that failed its digest (hcrc) is
 * taken as it is, to be handed up flagged.
 */
static int cxe_c4rx_take_hdr(struct cxe_c4rx *rx, const u8 *buf, size_t len,
			     int cpl_len, const struct cxe_cpl_iscsi_pdu *p,
			     bool hcrc_err)
{
	const u8 *hdr = buf + cpl_len;

	if (p->len > sizeof(rx->hdr) || len - cpl_len < p->len)
		return -EPROTO;
	if (!hcrc_err &&
	    (p->len != CXE_BHS_LEN + cxe_bhs_ahs_len(hdr) ||
	     !cxe_opcode_from_initiator(cxe_bhs_opcode(hdr)) ||
	     cxe_bhs_dlen(hdr) > rx->max_dlen))
		return -EPROTO;
	memcpy(rx->hdr, hdr, p->len);
	rx->hdr_len = p->len;
	rx->seq = p->seq;
	return 0;
}

/*
 * The status message ends the PDU. Its data segment came in a data
 * message of exactly its length, or was placed; only a Data-Out's can be
 * (DDP follows an R2T's TTT; immediate and unsolicited data never are).
 */
static int cxe_c4rx_complete(struct cxe_c4rx *rx,
			     const struct cxe_cpl_iscsi_pdu *p,
			     struct cxe_c4rx_pdu *pdu)
{
	u32 dlen = cxe_bhs_dlen(rx->hdr);
	bool data = rx->state == CXE_C4RX_GOT_DATA;

	memset(pdu, 0, sizeof(*pdu));
	pdu->hdr = rx->hdr;
	pdu->hdr_len = rx->hdr_len;
	pdu->dlen = dlen;
	pdu->seq = rx->seq;
	pdu->hcrc_err = p->st.hcrc_err;
	pdu->dcrc_err = p->st.dcrc_err;
	pdu->pad_err = p->st.pad_err;
	rx->state = CXE_C4RX_IDLE;
	if (pdu->hcrc_err) {
		/* its lengths cannot be trusted, nor what follows */
		rx->state = CXE_C4RX_DEAD;
		return CXE_C4RX_PDU;
	}
	if (data && rx->data_len != dlen)
		return cxe_c4rx_dead(rx);
	if (!data && dlen) {
		if (!p->st.ddp || cxe_bhs_opcode(rx->hdr) != CXE_OP_DATA_OUT)
			return cxe_c4rx_dead(rx);
		pdu->placed = true;
	}
	pdu->data = data;
	return CXE_C4RX_PDU;
}

/*
 * T5: the status message's length is the PDU's on the wire, whence the
 * sequence number of the next PDU's header: the header, the data segment
 * and its padding (unless placed, still on the wire), and up to two
 * digests.
 */
static int cxe_c4rx_t5_seq(struct cxe_c4rx *rx,
			   const struct cxe_cpl_iscsi_pdu *p)
{
	u32 dlen = cxe_bhs_dlen(rx->hdr);
	u32 least = rx->hdr_len + dlen + cxe_pad_len(dlen);

	if (p->pdu_len < least || p->pdu_len > least + 2 * CXE_DIGEST_LEN)
		return -EPROTO;
	rx->rcv_nxt = rx->seq + p->pdu_len;
	rx->seq_known = true;
	return 0;
}

int cxe_c4rx_msg(struct cxe_c4rx *rx, const void *buf, size_t len,
		 struct cxe_c4rx_pdu *pdu)
{
	struct cxe_cpl_iscsi_pdu p;
	int op = cxe_cpl_opcode(buf, len);
	int n, ret;

	if (rx->state == CXE_C4RX_DEAD)
		return -EPROTO;
	switch (op) {
	case CXE_CPL_ISCSI_HDR:
		n = cxe_cpl_parse_iscsi_hdr(buf, len, &p);
		if (n < 0 || rx->chip != CXE_CHIP_T5 ||
		    rx->state != CXE_C4RX_IDLE ||
		    (rx->seq_known && p.seq != rx->rcv_nxt) ||
		    cxe_c4rx_take_hdr(rx, buf, len, n, &p, false))
			return cxe_c4rx_dead(rx);
		rx->state = CXE_C4RX_GOT_HDR;
		return CXE_C4RX_MORE;
	case CXE_CPL_ISCSI_DATA:
		n = cxe_cpl_parse_iscsi_data(buf, len, &p);
		if (n < 0 || !p.len)
			return cxe_c4rx_dead(rx);
		if (rx->chip == CXE_CHIP_T5 ? rx->state != CXE_C4RX_GOT_HDR ||
		    p.len != cxe_bhs_dlen(rx->hdr) : rx->state != CXE_C4RX_IDLE)
			return cxe_c4rx_dead(rx);
		rx->data_len = p.len;
		rx->state = CXE_C4RX_GOT_DATA;
		return CXE_C4RX_MORE;
	case CXE_CPL_RX_ISCSI_DDP:
		n = cxe_cpl_parse_rx_iscsi_ddp(buf, len, &p);
		if (n < 0 || rx->chip != CXE_CHIP_T5 ||
		    (rx->state != CXE_C4RX_GOT_HDR &&
		     rx->state != CXE_C4RX_GOT_DATA))
			return cxe_c4rx_dead(rx);
		ret = cxe_c4rx_complete(rx, &p, pdu);
		if (ret == CXE_C4RX_PDU && !pdu->hcrc_err &&
		    cxe_c4rx_t5_seq(rx, &p))
			return cxe_c4rx_dead(rx);
		return ret;
	case CXE_CPL_RX_ISCSI_CMP:
		n = cxe_cpl_parse_rx_iscsi_cmp(buf, len, &p);
		if (n < 0 || rx->chip != CXE_CHIP_T6 ||
		    (rx->state != CXE_C4RX_IDLE &&
		     rx->state != CXE_C4RX_GOT_DATA))
			return cxe_c4rx_dead(rx);
		if (cxe_c4rx_take_hdr(rx, buf, len, n, &p, p.st.hcrc_err))
			return cxe_c4rx_dead(rx);
		return cxe_c4rx_complete(rx, &p, pdu);
	default:
		return cxe_c4rx_dead(rx);
	}
}
