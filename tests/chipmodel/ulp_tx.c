// SPDX-License-Identifier: GPL-2.0-only
/*
 * A model of the transmit side of a T5/T6's iSCSI ULP. Pure code, see
 * ulp_tx.h. Field positions as cpl.c writes them (and as golden_cpl
 * checks them against cxgb4's headers).
 */
#include "ulp_tx.h"

#define WR_LEN			16
#define ISO_LEN			32
#define TXD_T6_FORCE		BIT(20)
#define TXD_T5_FORCE		BIT(13)
#define TXD_ULPMODE(f)		((f) >> 10 & 0x7)	/* bit 13 is the T5 force */
#define TXD_SUBMODE(f)		((f) >> 6 & 0xf)
#define ULP_MODE_ISCSI		2
#define SUB_HCRC		0x1
#define SUB_DCRC		0x2
#define SUB_ISO			0x8
#define ISO_LAST		BIT(22)
#define ISO_HDRCRC		BIT(20)
#define ISO_PLDCRC		BIT(19)
#define ISO_IMMEDIATE		BIT(18)
#define ISO_SCSI(x)		((x) >> 16 & 3)
#define ISO_DATA_IN		2

static u16 get16(const u8 *p)
{
	return (u16)(p[0] << 8 | p[1]);
}

struct cxe_model_out {
	u8 *p;
	size_t size;
	size_t n;
};

static int cxe_model_put(struct cxe_model_out *o, const void *buf, u32 len)
{
	if (len > o->size - o->n)
		return -ENOSPC;
	memcpy(o->p + o->n, buf, len);
	o->n += len;
	return 0;
}

static int cxe_model_put_digest(struct cxe_model_out *o, u32 digest)
{
	u8 d[CXE_DIGEST_LEN];

	cxe_put_le32(d, digest);
	return cxe_model_put(o, d, sizeof(d));
}

/* One PDU on the wire: header, its digest, data and pad, their digest */
static int cxe_model_pdu(struct cxe_model_out *o, const u8 *hdr, u32 hdr_len,
			 const u8 *data, u32 dlen, bool hcrc, bool dcrc)
{
	static const u8 zeros[4];
	u32 crc = cxe_crc32c(~0u, data, dlen);
	int ret;

	ret = cxe_model_put(o, hdr, hdr_len);
	if (!ret && hcrc)
		ret = cxe_model_put_digest(o, cxe_digest(hdr, hdr_len));
	if (!ret && dlen)
		ret = cxe_model_put(o, data, dlen);
	if (!ret && dlen)
		ret = cxe_model_put(o, zeros, cxe_pad_len(dlen));
	if (!ret && dlen && dcrc)
		ret = cxe_model_put_digest(o, cxe_data_digest_finish(crc, dlen));
	return ret;
}

/* FW_OFLD_TX_DATA_WR: the payload is one PDU, padded */
static int cxe_model_one(const struct cxe_model_tx *m,
			 struct cxe_model_out *o, const u8 *pl, u32 len,
			 u32 submode)
{
	u32 hdr_len, dlen;

	if (len < CXE_BHS_LEN)
		return -EINVAL;
	hdr_len = CXE_BHS_LEN + cxe_bhs_ahs_len(pl);
	dlen = cxe_bhs_dlen(pl);
	if (dlen > m->max_dlen ||
	    len != hdr_len + dlen + cxe_pad_len(dlen))
		return -EINVAL;
	return cxe_model_pdu(o, pl, hdr_len, pl + hdr_len, dlen,
			     submode & SUB_HCRC, submode & SUB_DCRC);
}

/*
 * FW_ISCSI_TX_DATA_WR: a template and the data of several Data-Ins. The
 * F bit is the chip's: on a PDU that ends a burst, and on the last PDU of
 * a last slice. Mainline's drivers never send a template with F (cxgbit
 * sets only S on its last slice's; cxgb4i clears F and sets the last-slice
 * flag instead), so what the chip does with one is not known: refused.
 */
static int cxe_model_iso(const struct cxe_model_tx *m,
			 struct cxe_model_out *o, const u8 *iso,
			 const u8 *pl, u32 len, u32 submode)
{
	u32 op = cxe_get_be32(iso);
	u32 mpdu = get16(iso + 6) * 4, burst = cxe_get_be32(iso + 8) * 4;
	u32 datasn_off = cxe_get_be32(iso + 20);
	u32 buf_off = cxe_get_be32(iso + 24);
	u32 left, i, n;
	u8 hdr[CXE_BHS_LEN];
	int ret = 0;

	if (op >> 24 != CXE_CPL_TX_DATA_ISO || ISO_SCSI(op) != ISO_DATA_IN ||
	    op & ISO_IMMEDIATE || iso[5] ||
	    !!(op & ISO_HDRCRC) != !!(submode & SUB_HCRC) ||
	    !!(op & ISO_PLDCRC) != !!(submode & SUB_DCRC) ||
	    cxe_get_be32(iso + 12) != len || len <= CXE_BHS_LEN ||
	    !mpdu || mpdu > m->max_dlen || !burst || burst % mpdu ||
	    cxe_get_be32(iso + 16) & 0xffffff ||
	    cxe_bhs_opcode(pl) != CXE_OP_DATA_IN || cxe_bhs_ahs_len(pl) ||
	    pl[1] & CXE_FLAG_FINAL || (len - CXE_BHS_LEN) % 4)
		return -EINVAL;
	left = len - CXE_BHS_LEN;
	n = (left + mpdu - 1) / mpdu;
	for (i = 0; i < n && !ret; i++) {
		u32 dlen = left < mpdu ? left : mpdu;

		memcpy(hdr, pl, CXE_BHS_LEN);
		if (i + 1 < n) {
			hdr[1] = (i + 1) * mpdu % burst ? 0 : CXE_FLAG_FINAL;
			hdr[3] = 0;
			cxe_put_be32(hdr + 24, CXE_RSVD_TAG);
			cxe_put_be32(hdr + 44, 0);
		} else if (op & ISO_LAST) {
			hdr[1] |= CXE_FLAG_FINAL;
		}
		cxe_bhs_set_dlen(hdr, dlen);
		cxe_put_be32(hdr + 36, cxe_get_be32(pl + 36) + datasn_off + i);
		cxe_put_be32(hdr + 40, cxe_get_be32(pl + 40) + buf_off +
			     i * mpdu);
		ret = cxe_model_pdu(o, hdr, CXE_BHS_LEN,
				    pl + CXE_BHS_LEN + i * mpdu, dlen,
				    submode & SUB_HCRC, submode & SUB_DCRC);
		left -= dlen;
	}
	return ret;
}

long cxe_model_tx_wr(const struct cxe_model_tx *m, const u8 *wr, u32 wr_len,
		     const u8 *gathered, u32 gathered_len, u8 *out,
		     size_t size)
{
	struct cxe_model_out o = { .p = out, .size = size };
	u32 op, imm, flags, submode, cpl_len, pl_len, force;
	const u8 *pl;
	int ret;

	if (wr_len < WR_LEN)
		return -EINVAL;
	op = wr[0];
	imm = wr[3];
	flags = cxe_get_be32(wr + 12);
	submode = TXD_SUBMODE(flags);
	cpl_len = submode & SUB_ISO ? ISO_LEN : 0;
	force = m->chip == CXE_CHIP_T5 ? (submode & ~SUB_ISO ? 0 : TXD_T5_FORCE) :
					 TXD_T6_FORCE;
	if (op != (cpl_len ? CXE_FW_ISCSI_TX_DATA_WR : CXE_FW_OFLD_TX_DATA_WR) ||
	    cxe_get_be32(wr + 4) >> 8 != m->tid ||
	    TXD_ULPMODE(flags) != ULP_MODE_ISCSI ||
	    (flags & (TXD_T5_FORCE | TXD_T6_FORCE)) != force ||
	    imm < cpl_len || wr_len < WR_LEN + imm ||
	    (wr[7] & 0xff) * 16 < WR_LEN + imm)
		return -EINVAL;
	/* the payload: immediate after the CPL, or gathered, not both */
	if (imm > cpl_len) {
		if (gathered_len)
			return -EINVAL;
		pl = wr + WR_LEN + cpl_len;
		pl_len = imm - cpl_len;
	} else {
		pl = gathered;
		pl_len = gathered_len;
	}
	if (!pl || !pl_len)
		return -EINVAL;
	if (cpl_len)
		ret = cxe_model_iso(m, &o, wr + WR_LEN, pl, pl_len, submode);
	else
		ret = cxe_model_one(m, &o, pl, pl_len, submode);
	if (ret)
		return ret;
	/* the request's length on the wire must be what the chip sends */
	if (cxe_get_be32(wr + 8) != o.n)
		return -EINVAL;
	return o.n;
}

/* ---- credits ---- */

#define WR_COMPL		BIT(21)

void cxe_model_txcred_init(struct cxe_model_txcred *m, u32 tid, u32 snd_nxt)
{
	m->tid = tid;
	m->held = 0;
	m->owed = 0;
	m->snd_nxt = snd_nxt;
}

void cxe_model_txcred_took(struct cxe_model_txcred *m, const u8 *wr, u32 wire)
{
	m->held += wr[7];
	if (cxe_get_be32(wr) & WR_COMPL)
		m->owed = m->held;
	m->snd_nxt += wire;
}

/*
 * Layout (24 bytes): opcode/TID ; credits, 2 reserved, flags ; snd_nxt ;
 * snd_una ; 8 reserved. The chip acks with the sequence numbers valid.
 */
int cxe_model_txcred_ack(struct cxe_model_txcred *m, u8 *buf, u32 credits,
			 bool owed)
{
	u32 n = owed ? m->owed : credits;

	if (n > m->held)
		n = m->held;
	if (n > 0xff)
		n = 0xff;
	if (!n)
		return 0;
	m->held -= n;
	m->owed = m->owed > n ? m->owed - n : 0;
	memset(buf, 0, CXE_CPL_FW4_ACK_LEN);
	cxe_put_be32(buf, (u32)CXE_CPL_FW4_ACK << 24 | m->tid);
	buf[4] = n;
	buf[7] = CXE_FW4_ACK_SEQVAL;
	cxe_put_be32(buf + 8, m->snd_nxt);
	cxe_put_be32(buf + 12, m->snd_nxt);
	return CXE_CPL_FW4_ACK_LEN;
}
