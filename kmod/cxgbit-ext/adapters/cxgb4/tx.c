// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: the work requests that send PDUs. Pure code, see tx.h.
 */
#include "tx.h"

/*
 * 8-byte units a gather list of n entries takes (cxgb4's ulptx_sgl: the
 * first entry in the 16-byte head, then pairs of entries in 24 bytes)
 */
static u32 cxe_c4tx_sgl_flits(u32 n)
{
	n--;
	return 3 * n / 2 + (n & 1) + 2;
}

/*
 * The parts every request shares: whether cxgb4 puts the payload in the
 * request (it does when the whole skb fits, is_ofld_imm()), and so the
 * immediate length and the credits; the chip sends wire bytes.
 */
static int cxe_c4tx_head(void *buf, size_t size, const struct cxe_c4tx_conn *c,
			 struct cxe_fw_tx_data *t, u32 head_len, u32 payload,
			 u32 wire, u32 sgl_entries, struct cxe_c4tx_wr *wr)
{
	u32 imm = head_len - CXE_FW_OFLD_TX_DATA_WR_LEN;
	u32 bytes;

	if (!sgl_entries || sgl_entries > 255)
		return -EINVAL;
	wr->imm = head_len + payload <= CXE_C4TX_IMM_MAX;
	if (wr->imm) {
		imm += payload;
		bytes = head_len + payload;
	} else {
		bytes = head_len + 8 * cxe_c4tx_sgl_flits(sgl_entries);
	}
	t->tid = c->tid;
	t->plen = wire;
	t->immdlen = imm;
	t->len16 = (bytes + 15) / 16;
	wr->head_len = head_len;
	wr->payload = payload;
	wr->wire = wire;
	wr->len16 = t->len16;
	return cxe_fw_ofld_tx_data_wr(buf, size, c->chip, t);
}

int cxe_c4tx_pdu(void *buf, size_t size, const struct cxe_c4tx_conn *c,
		 u32 hdr_len, u32 dlen, u32 sgl_entries, bool compl,
		 struct cxe_c4tx_wr *wr)
{
	/* no data, no data digest (as the chip inserts one only then) */
	struct cxe_fw_tx_data t = {
		.hcrc = c->hcrc,
		.dcrc = c->dcrc && dlen,
		.compl = compl,
	};
	u32 payload = hdr_len + dlen + cxe_pad_len(dlen);
	u32 wire = payload + (t.hcrc ? CXE_DIGEST_LEN : 0) +
		   (t.dcrc ? CXE_DIGEST_LEN : 0);

	if (hdr_len < CXE_BHS_LEN || dlen > CXE_MAX_DLEN)
		return -EINVAL;
	return cxe_c4tx_head(buf, size, c, &t, CXE_FW_OFLD_TX_DATA_WR_LEN,
			     payload, wire, sgl_entries, wr);
}

/* PDUs an ISO slice takes, or 1: PDU by PDU */
static u32 cxe_c4tx_per_slice(const struct cxe_seg_burst *b,
			      const struct cxe_cxgb4_limits *l)
{
	u32 k;

	if (!l->max_iso_burst || b->max_pdu % 4 || b->len % 4)
		return 1;
	k = l->max_iso_burst / b->max_pdu;
	return k < 2 ? 1 : k;
}

bool cxe_c4tx_slice(const struct cxe_seg_burst *b, const u8 *tmpl,
		    const struct cxe_cxgb4_limits *l, u32 idx,
		    struct cxe_c4tx_slice *s)
{
	u32 n = cxe_seg_count(b), k = cxe_c4tx_per_slice(b, l);
	struct cxe_seg_pdu first, last;

	if (!n || (b->max_pdu > l->max_send_dlen && b->len > l->max_send_dlen))
		return false;
	if (idx >= (n + k - 1) / k)
		return false;
	s->first = idx * k;
	s->npdu = n - s->first < k ? n - s->first : k;
	if (!cxe_seg_pdu(b, s->first, &first) ||
	    !cxe_seg_pdu(b, s->first + s->npdu - 1, &last))
		return false;
	s->offset = first.offset;
	s->len = last.offset + last.len - first.offset;
	s->iso = s->npdu > 1;
	/*
	 * the last PDU's header; for ISO, from the first PDU on, no length,
	 * and no F: the chip sets it for a last slice (cxe_c4tx_iso()), as
	 * mainline's drivers ask for it
	 */
	cxe_seg_datain_hdr(s->tmpl, tmpl, &last);
	if (s->iso) {
		s->tmpl[1] &= ~CXE_FLAG_FINAL;
		cxe_bhs_set_dlen(s->tmpl, 0);
		cxe_put_be32(s->tmpl + 36, first.datasn);
		cxe_put_be32(s->tmpl + 40, first.offset);
	}
	return true;
}

/*
 * The ISO CPL: PDUs of max_pdu bytes of data (MPDU), the slice one burst
 * for the F bit (its PDUs times MPDU, as mainline cxgbit gives it), the
 * header and data the payload holds, Data-In (pdu_type 2), and the
 * template's DataSN and Buffer Offset taken as they are (offsets 0).
 */
int cxe_c4tx_iso(void *buf, size_t size, const struct cxe_c4tx_conn *c,
		 const struct cxe_seg_burst *b, const struct cxe_c4tx_slice *s,
		 u32 sgl_entries, bool compl, struct cxe_c4tx_wr *wr)
{
	struct cxe_fw_tx_data t = {
		.iso = true,
		.hcrc = c->hcrc,
		.dcrc = c->dcrc,
		.compl = compl,
	};
	struct cxe_cpl_iso iso = {
		.first = s->first == 0,
		.last = s->first + s->npdu == cxe_seg_count(b),
		.hcrc = c->hcrc,
		.dcrc = c->dcrc,
		.pdu_type = 2,
		.mpdu = b->max_pdu,
		.burst_size = s->npdu * b->max_pdu,
		.len = CXE_BHS_LEN + s->len,
	};
	u32 digests = (c->hcrc ? CXE_DIGEST_LEN : 0) +
		      (c->dcrc ? CXE_DIGEST_LEN : 0);
	u32 payload = CXE_BHS_LEN + s->len;
	u32 wire = payload + (s->npdu - 1) * CXE_BHS_LEN + s->npdu * digests;
	int ret;

	if (!s->iso || size < CXE_C4TX_HEAD_MAX)
		return -EINVAL;
	ret = cxe_c4tx_head(buf, size, c, &t, CXE_C4TX_HEAD_MAX, payload,
			    wire, sgl_entries, wr);
	if (ret < 0)
		return ret;
	ret = cxe_cpl_tx_data_iso((u8 *)buf + CXE_FW_OFLD_TX_DATA_WR_LEN,
				  size - CXE_FW_OFLD_TX_DATA_WR_LEN, &iso);
	return ret < 0 ? ret : CXE_C4TX_HEAD_MAX;
}
