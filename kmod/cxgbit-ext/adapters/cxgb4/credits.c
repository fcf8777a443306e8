// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: a connection's transmit credits; see credits.h.
 */
#include "credits.h"

int cxe_c4cred_init(struct cxe_c4cred *c, u32 wr_cred, u32 max_len16,
		    u32 snd_isn)
{
	const u32 abort16 = CXE_CPL_ABORT_REQ_LEN / 16;

	if (!c || !max_len16 || max_len16 > 0xff || wr_cred < abort16 ||
	    max_len16 > wr_cred - abort16)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->max = wr_cred - abort16;
	c->max_len16 = max_len16;
	c->avail = c->max;
	c->snd_una = snd_isn;
	return 0;
}

int cxe_c4cred_take(struct cxe_c4cred *c, u32 len16, bool want_compl,
		    bool *compl)
{
	if (!len16 || len16 > c->max_len16)
		return -EINVAL;
	if (len16 > c->avail || c->n == CXE_C4CRED_RING)
		return -EAGAIN;
	c->avail -= len16;
	c->unasked += len16;
	c->ring[(c->head + c->n++) % CXE_C4CRED_RING] = len16;
	c->taken++;
	/* see credits.h: a request that has to wait always has an ack coming */
	*compl = want_compl || c->unasked >= c->max / 2 ||
		 c->avail < c->max_len16;
	if (*compl)
		c->unasked = 0;
	return 0;
}

/* a before b in sequence space */
static bool seq_before(u32 a, u32 b)
{
	return (a - b) >> 31;	/* a - b "negative" modulo 2^32 */
}

int cxe_c4cred_ack(struct cxe_c4cred *c, const struct cxe_cpl_fw4_ack *a)
{
	u32 credits = a->credits;
	int done = 0;

	if (credits > cxe_c4cred_out(c) ||
	    ((a->flags & CXE_FW4_ACK_SEQVAL) && seq_before(a->snd_una, c->snd_una)))
		return -EPROTO;
	c->avail += credits;
	if (c->unasked > cxe_c4cred_out(c))
		c->unasked = cxe_c4cred_out(c);
	/* the oldest requests first; the chip may return part of one */
	while (credits) {
		u8 *held = &c->ring[c->head];

		if (credits < *held) {
			*held -= credits;
			break;
		}
		credits -= *held;
		c->head = (c->head + 1) % CXE_C4CRED_RING;
		c->n--;
		done++;
	}
	c->acked += done;
	if (a->flags & CXE_FW4_ACK_SEQVAL)
		c->snd_una = a->snd_una;
	return done;
}
