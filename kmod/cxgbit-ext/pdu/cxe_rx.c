// SPDX-License-Identifier: GPL-2.0-only
/*
 * iSCSI receive stream parser. Pure code: see cxe_env.h and cxe_rx.h.
 */
#include "cxe_rx.h"

void cxe_rx_init(struct cxe_rx *rx, u32 max_dlen)
{
	memset(rx, 0, sizeof(*rx));
	rx->max_dlen = max_dlen;
	rx->state = CXE_RX_HDR;
}

static u32 cxe_min(u32 a, size_t b)
{
	return b < a ? (u32)b : a;
}

static long cxe_rx_die(struct cxe_rx *rx, int err)
{
	rx->state = CXE_RX_DEAD;
	return -err;
}

/*
 * A BHS that cannot start a PDU from an initiator (in this phase), or data
 * we never take.
 */
static int cxe_rx_check_bhs(const struct cxe_rx *rx)
{
	u8 op = cxe_bhs_opcode(rx->hdr);

	if (!cxe_opcode_from_initiator(op))
		return -CXE_RX_EBADOP;
	if (rx->login && (op != CXE_OP_LOGIN_REQ || cxe_bhs_ahs_len(rx->hdr)))
		return -CXE_RX_EBADOP;
	if (cxe_bhs_dlen(rx->hdr) > rx->max_dlen)
		return -CXE_RX_E2BIG;
	return 0;
}

/* The header is complete: check it, then move to what follows it. */
static int cxe_rx_header_done(struct cxe_rx *rx, const struct cxe_rx_ops *ops,
			      void *ctx)
{
	int ret;

	rx->dlen = cxe_bhs_dlen(rx->hdr);
	rx->have = 0;
	rx->crc = ~0u;
	if (rx->state == CXE_RX_HDR && rx->hdigest) {
		rx->state = CXE_RX_HDIG;
		return 0;
	}
	if (rx->status == 0) {
		ret = cxe_rx_check_bhs(rx);
		if (ret)
			return ret;
	}
	return ops->header(ctx, rx->hdr, rx->hdr_len, rx->status);
}

static int cxe_rx_pdu_done(struct cxe_rx *rx, const struct cxe_rx_ops *ops,
			   void *ctx)
{
	int status = rx->status;

	rx->state = CXE_RX_HDR;
	rx->have = 0;
	rx->status = 0;
	return ops->done(ctx, status);
}

/*
 * After the header (and its digest): data, or the end of the PDU. A pause
 * asked for by the header callback takes effect once the state is set.
 */
static int cxe_rx_after_header(struct cxe_rx *rx, const struct cxe_rx_ops *ops,
			       void *ctx)
{
	int ret = cxe_rx_header_done(rx, ops, ctx), done;

	if (ret < 0)
		return ret;
	if (rx->dlen) {
		rx->state = CXE_RX_DATA;
		return ret;
	}
	done = cxe_rx_pdu_done(rx, ops, ctx);
	return done ? done : ret;
}

bool cxe_rx_skip_data(struct cxe_rx *rx)
{
	if (rx->state != CXE_RX_DATA || rx->have)
		return false;
	rx->state = CXE_RX_HDR;
	rx->status = 0;
	return true;
}

/* n more bytes of the data segment are in: at its end, on to the pad */
static int cxe_rx_data_in(struct cxe_rx *rx, u32 n,
			  const struct cxe_rx_ops *ops, void *ctx)
{
	rx->have += n;
	if (rx->have < rx->dlen)
		return 0;
	rx->have = 0;
	rx->state = CXE_RX_PAD;
	if (!cxe_pad_len(rx->dlen))
		rx->state = rx->ddigest ? CXE_RX_DDIG : CXE_RX_HDR;
	return rx->state == CXE_RX_HDR ? cxe_rx_pdu_done(rx, ops, ctx) : 0;
}

u32 cxe_rx_data_left(const struct cxe_rx *rx)
{
	return rx->state == CXE_RX_DATA ? rx->dlen - rx->have : 0;
}

long cxe_rx_data_took(struct cxe_rx *rx, u32 n, u32 crc,
		      const struct cxe_rx_ops *ops, void *ctx)
{
	int ret;

	rx->paused = false;
	if (!n || n > cxe_rx_data_left(rx))
		return cxe_rx_die(rx, EINVAL);
	if (rx->ddigest)
		rx->crc = crc;
	ret = cxe_rx_data_in(rx, n, ops, ctx);
	if (ret < 0)
		return cxe_rx_die(rx, -ret);
	rx->paused = ret > 0;
	return n;
}

void cxe_rx_kill(struct cxe_rx *rx)
{
	cxe_rx_die(rx, EPIPE);
}

u32 cxe_rx_data_wire_len(const struct cxe_rx *rx)
{
	return rx->dlen + cxe_pad_len(rx->dlen) +
	       (rx->dlen && rx->ddigest ? CXE_DIGEST_LEN : 0);
}

/*
 * Collect a 4-byte digest that may arrive split; returns the bytes taken
 * and sets *wire once all four are in.
 */
static u32 cxe_rx_take_digest(struct cxe_rx *rx, const u8 *p, size_t left,
			      bool *complete, u32 *wire)
{
	u32 n = cxe_min(CXE_DIGEST_LEN - rx->have, left);

	memcpy(rx->dig + rx->have, p, n);
	rx->have += n;
	*complete = rx->have == CXE_DIGEST_LEN;
	if (*complete)
		*wire = cxe_get_le32(rx->dig);
	return n;
}

long cxe_rx_feed(struct cxe_rx *rx, const u8 *buf, size_t len,
		 const struct cxe_rx_ops *ops, void *ctx)
{
	size_t pos = 0;
	int ret = 0;

	rx->paused = false;
	if (rx->state == CXE_RX_DEAD)
		return -EPIPE;

	while (pos < len) {
		const u8 *p = buf + pos;
		size_t left = len - pos;
		u32 n, want, wire = 0;
		bool complete;

		switch (rx->state) {
		case CXE_RX_HDR:
			/* BHS first; once it is in, TotalAHSLength says how much more */
			want = rx->have < CXE_BHS_LEN ? CXE_BHS_LEN :
			       CXE_BHS_LEN + cxe_bhs_ahs_len(rx->hdr);
			n = cxe_min(want - rx->have, left);
			memcpy(rx->hdr + rx->have, p, n);
			rx->have += n;
			pos += n;
			if (rx->have == CXE_BHS_LEN && cxe_bhs_ahs_len(rx->hdr)) {
				/*
				 * AHS follows. Without a header digest the BHS
				 * is as trusted now as it will be: refuse it
				 * before waiting for an AHS that may not come
				 * (the refused BHS stays readable in hdr).
				 */
				if (!rx->hdigest) {
					rx->hdr_len = CXE_BHS_LEN;
					ret = cxe_rx_check_bhs(rx);
				}
				break;
			}
			if (rx->have < want)
				break;
			rx->hdr_len = rx->have;
			if (rx->hdigest)
				ret = cxe_rx_header_done(rx, ops, ctx);
			else
				ret = cxe_rx_after_header(rx, ops, ctx);
			break;
		case CXE_RX_HDIG:
			pos += cxe_rx_take_digest(rx, p, left, &complete, &wire);
			if (!complete)
				break;
			if (wire != cxe_digest(rx->hdr, rx->hdr_len))
				rx->status |= CXE_RX_HDIGEST_ERR;
			ret = cxe_rx_after_header(rx, ops, ctx);
			break;
		case CXE_RX_DATA:
			n = cxe_min(rx->dlen - rx->have, left);
			if (rx->ddigest)
				rx->crc = cxe_crc32c(rx->crc, p, n);
			ret = ops->data(ctx, rx->have, p, n);
			pos += n;
			if (!ret)
				ret = cxe_rx_data_in(rx, n, ops, ctx);
			else
				rx->have += n;
			break;
		case CXE_RX_PAD:
			/* the digest covers the pad bytes as sent */
			n = cxe_min(cxe_pad_len(rx->dlen) - rx->have, left);
			if (rx->ddigest)
				rx->crc = cxe_crc32c(rx->crc, p, n);
			rx->have += n;
			pos += n;
			if (rx->have < cxe_pad_len(rx->dlen))
				break;
			rx->have = 0;
			rx->state = CXE_RX_DDIG;
			if (!rx->ddigest)
				ret = cxe_rx_pdu_done(rx, ops, ctx);
			break;
		case CXE_RX_DDIG:
			pos += cxe_rx_take_digest(rx, p, left, &complete, &wire);
			if (!complete)
				break;
			if (wire != ~rx->crc)
				rx->status |= CXE_RX_DDIGEST_ERR;
			ret = cxe_rx_pdu_done(rx, ops, ctx);
			break;
		case CXE_RX_DEAD:
			return -EPIPE;
		}
		if (ret < 0)
			return cxe_rx_die(rx, -ret);
		if (ret > 0) {
			rx->paused = true;	/* by the consumer */
			return (long)pos;
		}
	}
	return (long)len;
}
