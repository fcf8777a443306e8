// SPDX-License-Identifier: GPL-2.0-only
/*
 * A model of the receive side of a T5/T6's iSCSI ULP. Pure code, see
 * ulp_rx.h.
 */
#include "ulp_rx.h"

static inline void put16(u8 *p, unsigned int off, u16 v)
{
	p[off] = v >> 8;
	p[off + 1] = v;
}

static inline void put32(u8 *p, unsigned int off, u32 v)
{
	cxe_put_be32(p + off, v);
}

#define PDU_DDP		0x8000
#define PDU_LEN_MASK	0x7fff

/* the first 16 bytes of CPL_ISCSI_HDR and CPL_RX_ISCSI_CMP */
static void cxe_model_hdr16(u8 *b, u8 op, u32 tid, u32 seq, u16 pdu_len,
			    bool ddp, u16 hdr_len)
{
	memset(b, 0, 16);
	put32(b, 0, (u32)op << 24 | (tid & 0xffffff));
	put16(b, 4, (pdu_len & PDU_LEN_MASK) | (ddp ? PDU_DDP : 0));
	put16(b, 6, hdr_len);
	put32(b, 8, seq);
}

u32 cxe_model_cpl_iscsi_hdr(u8 *b, u32 tid, u32 seq, u16 pdu_len, bool ddp,
			    u16 hdr_len)
{
	cxe_model_hdr16(b, CXE_CPL_ISCSI_HDR, tid, seq, pdu_len, ddp, hdr_len);
	return CXE_CPL_ISCSI_HDR_LEN;
}

u32 cxe_model_cpl_iscsi_data(u8 *b, u32 tid, u32 seq, u16 len)
{
	memset(b, 0, CXE_CPL_ISCSI_DATA_LEN);
	put32(b, 0, (u32)CXE_CPL_ISCSI_DATA << 24 | (tid & 0xffffff));
	put16(b, 6, len);
	put32(b, 8, seq);
	return CXE_CPL_ISCSI_DATA_LEN;
}

/* ddp_report: the chip's meaning is unknown; the model reports 0 */
u32 cxe_model_cpl_rx_iscsi_ddp(u8 *b, u32 tid, u32 seq, u16 pdu_len,
			       u32 ulp_crc, u32 ddpvld)
{
	memset(b, 0, CXE_CPL_RX_ISCSI_DDP_LEN);
	put32(b, 0, (u32)CXE_CPL_RX_ISCSI_DDP << 24 | (tid & 0xffffff));
	put16(b, 6, pdu_len);
	put32(b, 8, seq);
	put32(b, 16, ulp_crc);
	put32(b, 20, ddpvld);
	return CXE_CPL_RX_ISCSI_DDP_LEN;
}

u32 cxe_model_cpl_rx_iscsi_cmp(u8 *b, u32 tid, u32 seq, u16 pdu_len,
			       bool ddp, u16 hdr_len, u32 ulp_crc, u32 ddpvld)
{
	cxe_model_hdr16(b, CXE_CPL_RX_ISCSI_CMP, tid, seq, pdu_len, ddp,
			hdr_len);
	put32(b, 16, ulp_crc);
	put32(b, 20, ddpvld);
	return CXE_CPL_RX_ISCSI_CMP_LEN;
}

void cxe_model_rx_init(struct cxe_model_rx *m, enum cxe_chip chip, u32 tid,
		       u32 isn, u32 max_dlen, u8 *data_msg)
{
	memset(m, 0, sizeof(*m));
	m->chip = chip;
	m->tid = tid;
	m->seq = isn;
	m->max_dlen = max_dlen;
	m->data_msg = data_msg;
}

static u32 cxe_model_wire_len(const struct cxe_model_rx *m)
{
	u32 n = m->hdr_len + m->dlen + cxe_pad_len(m->dlen);

	if (m->hdigest)
		n += CXE_DIGEST_LEN;
	if (m->ddigest && m->dlen)
		n += CXE_DIGEST_LEN;
	return n;
}

static u32 cxe_model_ddpvld(const struct cxe_model_rx *m)
{
	return (m->place ? CXE_MODEL_DDPVLD_DDP : 0) |
	       (m->pad_err ? CXE_MODEL_DDPVLD_PAD : 0) |
	       (m->hcrc_err ? CXE_MODEL_DDPVLD_HCRC : 0) |
	       (m->dcrc_err ? CXE_MODEL_DDPVLD_DCRC : 0);
}

u32 cxe_model_rx_want(const struct cxe_model_rx *m)
{
	switch (m->state) {
	case CXE_MRX_DEAD:
		return 0;
	case CXE_MRX_BHS:
		return CXE_BHS_LEN - m->have;
	default:
		return cxe_model_wire_len(m) - (m->seq - m->pdu_seq);
	}
}

int cxe_model_rx_flush(struct cxe_model_rx *m,
		       const struct cxe_model_rx_ops *ops, void *ctx)
{
	if (!m->held)
		return 0;
	m->held = false;
	return ops->deliver(ctx, m->held_msg, m->held_len);
}

/*
 * The header is in (and its digest checked). Decide where the data goes:
 * a Data-Out whose TTT's page pod covers it is placed, unless its header
 * failed its digest (the chip trusts nothing in it). A T5 hands the
 * header up now.
 */
static int cxe_model_hdr_done(struct cxe_model_rx *m,
			      const struct cxe_model_rx_ops *ops, void *ctx)
{
	u8 *b = m->hdr;

	m->place = !m->hcrc_err && m->dlen &&
		   cxe_bhs_opcode(b) == CXE_OP_DATA_OUT &&
		   ops->ppod(ctx, cxe_get_be32(b + 20), cxe_get_be32(b + 16),
			     cxe_get_be32(b + 40), m->dlen);
	m->crc = ~0u;
	if (m->chip != CXE_CHIP_T5)
		return 0;
	cxe_model_cpl_iscsi_hdr(m->held_msg, m->tid, m->pdu_seq,
				cxe_model_wire_len(m), m->place, m->hdr_len);
	memcpy(m->held_msg + CXE_CPL_ISCSI_HDR_LEN, m->hdr, m->hdr_len);
	return ops->deliver(ctx, m->held_msg,
			    CXE_CPL_ISCSI_HDR_LEN + m->hdr_len);
}

/* A T6 completion that may wait for the next one of the same R2T */
static bool cxe_model_may_hold(const struct cxe_model_rx *m)
{
	return m->place && !m->hcrc_err && !m->dcrc_err && !m->pad_err &&
	       !(m->hdr[1] & CXE_FLAG_FINAL);
}

/* The PDU is all in: hand up its data (unless placed) and its status */
static int cxe_model_pdu_done(struct cxe_model_rx *m,
			      const struct cxe_model_rx_ops *ops, void *ctx)
{
	u32 ulp_crc = m->ddigest && m->dlen ? cxe_get_le32(m->dig) : 0;
	u32 ttt = cxe_get_be32(m->hdr + 20), itt = cxe_get_be32(m->hdr + 16);
	u32 datasn = cxe_get_be32(m->hdr + 36), off = cxe_get_be32(m->hdr + 40);
	u32 data_seq = m->pdu_seq + m->hdr_len + (m->hdigest ? 4 : 0);
	int ret;

	m->state = CXE_MRX_BHS;
	m->have = 0;
	/* a completion held back goes first, unless this one stands for it */
	if (m->held && !(m->place && !m->hcrc_err && !m->dcrc_err &&
			 !m->pad_err && m->held_ttt == ttt && m->held_itt == itt &&
			 m->held_end == off && m->held_datasn + 1 == datasn)) {
		ret = cxe_model_rx_flush(m, ops, ctx);
		if (ret)
			return ret;
	}
	if (!m->place && m->dlen) {
		cxe_model_cpl_iscsi_data(m->data_msg, m->tid, data_seq,
					 m->dlen);
		ret = ops->deliver(ctx, m->data_msg,
				   CXE_CPL_ISCSI_DATA_LEN + m->dlen);
		if (ret)
			return ret;
	}
	if (m->chip == CXE_CHIP_T5) {
		cxe_model_cpl_rx_iscsi_ddp(m->held_msg, m->tid, m->pdu_seq,
					   cxe_model_wire_len(m), ulp_crc,
					   cxe_model_ddpvld(m));
		return ops->deliver(ctx, m->held_msg, CXE_CPL_RX_ISCSI_DDP_LEN);
	}
	/* T6: this completion replaces one held back for the same R2T */
	cxe_model_cpl_rx_iscsi_cmp(m->held_msg, m->tid, m->pdu_seq,
				   cxe_model_wire_len(m), m->place,
				   m->hdr_len, ulp_crc, cxe_model_ddpvld(m));
	memcpy(m->held_msg + CXE_CPL_RX_ISCSI_CMP_LEN, m->hdr, m->hdr_len);
	m->held_len = CXE_CPL_RX_ISCSI_CMP_LEN + m->hdr_len;
	m->held_ttt = ttt;
	m->held_itt = itt;
	m->held_end = off + m->dlen;
	m->held_datasn = datasn;
	m->held = true;
	if (cxe_model_may_hold(m))
		return 0;
	return cxe_model_rx_flush(m, ops, ctx);
}

/* Bytes the current unit still needs */
static u32 cxe_model_need(const struct cxe_model_rx *m)
{
	switch (m->state) {
	case CXE_MRX_BHS:
		return CXE_BHS_LEN;
	case CXE_MRX_AHS:
		return m->hdr_len - CXE_BHS_LEN;
	case CXE_MRX_HDIG:
	case CXE_MRX_DDIG:
		return CXE_DIGEST_LEN;
	case CXE_MRX_DATA:
		return m->dlen;
	case CXE_MRX_PAD:
		return cxe_pad_len(m->dlen);
	default:
		return 0;
	}
}

/* After the header (and its digest) or the data, what comes next */
static int cxe_model_next(struct cxe_model_rx *m,
			  const struct cxe_model_rx_ops *ops, void *ctx)
{
	int ret;

	m->have = 0;
	switch (m->state) {
	case CXE_MRX_BHS:
		m->pdu_seq = m->seq - CXE_BHS_LEN;
		m->hdr_len = CXE_BHS_LEN + cxe_bhs_ahs_len(m->hdr);
		m->dlen = cxe_bhs_dlen(m->hdr);
		m->hcrc_err = false;
		m->dcrc_err = false;
		m->pad_err = false;
		if (m->dlen > m->max_dlen) {
			m->state = CXE_MRX_DEAD;
			return -EMSGSIZE;
		}
		if (m->hdr_len > CXE_BHS_LEN) {
			m->state = CXE_MRX_AHS;
			return 0;
		}
		fallthrough;
	case CXE_MRX_AHS:
		if (m->hdigest) {
			m->state = CXE_MRX_HDIG;
			return 0;
		}
		fallthrough;
	case CXE_MRX_HDIG:
		if (m->state == CXE_MRX_HDIG)
			m->hcrc_err = cxe_get_le32(m->dig) !=
				      cxe_digest(m->hdr, m->hdr_len);
		ret = cxe_model_hdr_done(m, ops, ctx);
		if (ret)
			return ret;
		if (!m->dlen)
			return cxe_model_pdu_done(m, ops, ctx);
		m->state = CXE_MRX_DATA;
		return 0;
	case CXE_MRX_DATA:
		if (cxe_pad_len(m->dlen)) {
			m->state = CXE_MRX_PAD;
			return 0;
		}
		fallthrough;
	case CXE_MRX_PAD:
		if (m->ddigest) {
			m->state = CXE_MRX_DDIG;
			return 0;
		}
		fallthrough;
	default:
		if (m->state == CXE_MRX_DDIG)
			m->dcrc_err = cxe_get_le32(m->dig) != ~m->crc;
		return cxe_model_pdu_done(m, ops, ctx);
	}
}

int cxe_model_rx_feed(struct cxe_model_rx *m, const u8 *buf, size_t len,
		      const struct cxe_model_rx_ops *ops, void *ctx)
{
	int ret;

	while (len) {
		u32 need = cxe_model_need(m), n;
		u8 *to;

		if (m->state == CXE_MRX_DEAD)
			return -EMSGSIZE;
		n = need - m->have;
		if (n > len)
			n = len;
		switch (m->state) {
		case CXE_MRX_BHS:
		case CXE_MRX_AHS:
			to = m->hdr + (m->state == CXE_MRX_AHS ? CXE_BHS_LEN : 0);
			memcpy(to + m->have, buf, n);
			break;
		case CXE_MRX_HDIG:
		case CXE_MRX_DDIG:
			memcpy(m->dig + m->have, buf, n);
			break;
		case CXE_MRX_DATA:
			m->crc = cxe_crc32c(m->crc, buf, n);
			if (!m->place) {
				memcpy(m->data_msg + CXE_CPL_ISCSI_DATA_LEN +
				       m->have, buf, n);
				break;
			}
			ret = ops->place(ctx, cxe_get_be32(m->hdr + 20),
					 cxe_get_be32(m->hdr + 16),
					 cxe_get_be32(m->hdr + 40) + m->have,
					 buf, n);
			if (ret)
				return ret;
			break;
		case CXE_MRX_PAD:
			/* the digest covers the padding as sent */
			for (u32 i = 0; i < n; i++)
				m->pad_err |= buf[i] != 0;
			m->crc = cxe_crc32c(m->crc, buf, n);
			break;
		default:
			break;
		}
		m->have += n;
		m->seq += n;
		buf += n;
		len -= n;
		if (m->have < need)
			continue;
		ret = cxe_model_next(m, ops, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

u32 cxe_model_rx_charge(enum cxe_chip chip, const u8 *msg, u32 len)
{
	if (chip != CXE_CHIP_T6 || len < 8)
		return 0;
	/* both carry their length at byte 6 */
	if (msg[0] != CXE_CPL_ISCSI_DATA && msg[0] != CXE_CPL_RX_ISCSI_CMP)
		return 0;
	return (u32)msg[6] << 8 | msg[7];
}
