// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: the life of an offloaded connection; see conn.h.
 */
#include "conn.h"

void cxe_c4conn_init(struct cxe_c4conn *c, u32 tid)
{
	memset(c, 0, sizeof(*c));
	c->tid = tid;
	c->state = CXE_C4CONN_CONNECTING;
}

/* a message on the TID: the first one is preceded by FW_FLOWC_WR */
static int sending(struct cxe_c4conn *c, int what)
{
	if (!c->flowc_sent) {
		c->flowc_sent = true;
		what |= CXE_C4_SEND_FLOWC;
	}
	return what;
}

/* the receive side is over: a PDU layer still waiting on it is told once */
static int end(struct cxe_c4conn *c)
{
	if (!c->given || c->ended || c->released)
		return 0;
	c->ended = true;
	return CXE_C4_END;
}

/* the chip is done with the TID */
static int done(struct cxe_c4conn *c)
{
	int what = end(c) | CXE_C4_RELEASE_TID;

	c->state = CXE_C4CONN_DONE;
	if (c->released || !c->given)
		what |= CXE_C4_FREE;
	return what;
}

static int send_close(struct cxe_c4conn *c)
{
	c->fin_sent = true;
	c->state = CXE_C4CONN_CLOSING;
	return sending(c, CXE_C4_SEND_CLOSE) | CXE_C4_ARM_TIMER;
}

static int send_abort(struct cxe_c4conn *c)
{
	c->reset = true;
	c->state = CXE_C4CONN_ABORTING;
	return sending(c, CXE_C4_SEND_ABORT) | end(c);
}

int cxe_c4conn_established(struct cxe_c4conn *c)
{
	if (c->state == CXE_C4CONN_ABORTING && !c->given)
		return 0;	/* sent before the chip took our abort */
	if (c->state != CXE_C4CONN_CONNECTING)
		return -EPROTO;
	c->state = CXE_C4CONN_UP;
	c->given = true;
	return CXE_C4_UP;
}

int cxe_c4conn_peer_close(struct cxe_c4conn *c)
{
	switch (c->state) {
	case CXE_C4CONN_UP:
		c->peer_fin = true;
		c->state = CXE_C4CONN_CLOSING;
		return end(c);
	case CXE_C4CONN_CLOSING:
		if (c->peer_fin)
			return -EPROTO;
		c->peer_fin = true;
		return c->fin_acked ? done(c) : end(c);
	case CXE_C4CONN_ABORTING:
		return 0;	/* sent before the chip took our abort */
	default:
		return -EPROTO;
	}
}

int cxe_c4conn_close_rpl(struct cxe_c4conn *c)
{
	if (c->state == CXE_C4CONN_ABORTING)
		return 0;	/* as above */
	if (c->state != CXE_C4CONN_CLOSING || !c->fin_sent || c->fin_acked)
		return -EPROTO;
	c->fin_acked = true;
	return c->peer_fin ? done(c) : 0;
}

int cxe_c4conn_peer_abort(struct cxe_c4conn *c, bool neg_adv)
{
	int what;

	if (c->state == CXE_C4CONN_DONE)
		return -EPROTO;
	if (neg_adv)
		return 0;
	what = sending(c, CXE_C4_SEND_ABORT_RPL);
	if (c->state == CXE_C4CONN_ABORTING)
		return what;	/* our abort's reply is still to come */
	c->reset = true;
	return what | done(c);
}

int cxe_c4conn_abort_rpl(struct cxe_c4conn *c)
{
	if (c->state != CXE_C4CONN_ABORTING)
		return -EPROTO;
	return done(c);
}

int cxe_c4conn_close(struct cxe_c4conn *c)
{
	switch (c->state) {
	case CXE_C4CONN_CONNECTING:
		return -EINVAL;
	case CXE_C4CONN_UP:
		return send_close(c);
	case CXE_C4CONN_CLOSING:
		return c->fin_sent ? 0 : send_close(c);
	default:
		return 0;
	}
}

int cxe_c4conn_abort(struct cxe_c4conn *c)
{
	if (c->state == CXE_C4CONN_ABORTING || c->state == CXE_C4CONN_DONE)
		return 0;
	return send_abort(c);
}

/*
 * The adapter went away under the connection (cxgb4's DETACH): its chip
 * sends nothing more and takes nothing, so the connection is over as if
 * reset, without a message either way
 */
int cxe_c4conn_gone(struct cxe_c4conn *c)
{
	if (c->state == CXE_C4CONN_DONE)
		return 0;
	c->reset = true;
	return done(c);
}

/*
 * The PDU layer lets go: a connection it did not close is aborted (as
 * mainline does without a logout), one the peer closed gets our FIN, and
 * a close or abort under way is waited for.
 */
int cxe_c4conn_release(struct cxe_c4conn *c)
{
	if (!c->given || c->released)
		return -EINVAL;
	c->released = true;
	switch (c->state) {
	case CXE_C4CONN_UP:
		return send_abort(c);
	case CXE_C4CONN_CLOSING:
		return c->fin_sent ? 0 : send_close(c);
	case CXE_C4CONN_DONE:
		return CXE_C4_FREE;
	default:
		return 0;
	}
}

int cxe_c4conn_timeout(struct cxe_c4conn *c)
{
	return c->state == CXE_C4CONN_CLOSING ? send_abort(c) : 0;
}

bool cxe_c4conn_may_send(const struct cxe_c4conn *c)
{
	return c->state == CXE_C4CONN_UP ||
	       (c->state == CXE_C4CONN_CLOSING && !c->fin_sent);
}

int cxe_c4conn_tx_begin(struct cxe_c4conn *c)
{
	if (!cxe_c4conn_may_send(c))
		return -EPIPE;
	return sending(c, 0);
}

/* ---- accept options ---- */

#define WIN_PER_10G		(256U * 1024)
#define RCV_WIN_MAX		(1023U * 1024)	/* opt0's 10-bit KiB field */
#define SND_WIN_MAX		(512U * 1024)
#define WSCALE_MAX		14
#define EMSS_MIN		128

static u32 hdr_bytes(bool ipv6, bool tstamp)
{
	/* IP, TCP, and the timestamp option rounded to 4 bytes */
	return (ipv6 ? 40 : 20) + 20 + (tstamp ? 12 : 0);
}

u8 cxe_c4_mtu_idx(const u16 *mtus, u32 hdr, u32 mtu)
{
	u8 i = 0;

	while (i + 1 < CXE_C4_NMTUS && mtus[i + 1] <= mtu)
		i++;
	if (((mtus[i] - hdr) & 7) && i && !((mtus[i - 1] - hdr) & 7))
		i--;
	return i;
}

u32 cxe_c4conn_accept_opts(const struct cxe_cpl_accept_req *req,
			   const struct cxe_c4_path *p,
			   struct cxe_cpl_accept *a)
{
	u32 hdr = hdr_bytes(req->ip_version == 6, req->tstamp);
	u32 scale = p->speed_mbps / 10000 ? p->speed_mbps / 10000 : 1;
	u32 mtu = p->mtu, snd_win;

	if (req->peer_mss && mtu > req->peer_mss + hdr)
		mtu = req->peer_mss + hdr;
	a->mss_idx = cxe_c4_mtu_idx(p->mtus, hdr, mtu);
	a->rcv_win = WIN_PER_10G * scale < RCV_WIN_MAX ? WIN_PER_10G * scale :
							  RCV_WIN_MAX;
	a->wscale = 0;
	while (a->wscale < WSCALE_MAX && (65535U << a->wscale) < a->rcv_win)
		a->wscale++;
	a->tstamps = req->tstamp;
	a->sack = req->sack;
	a->ecn = req->ece && req->cwr;
	a->tos = req->tos;
	snd_win = WIN_PER_10G * scale;
	return snd_win < SND_WIN_MAX ? snd_win : SND_WIN_MAX;
}

u8 cxe_c4conn_rcv_scale(const struct cxe_cpl_established *e)
{
	return e->wscale_ok ? e->snd_wscale : 0;
}

u32 cxe_c4conn_emss(const u16 *mtus, const struct cxe_cpl_established *e,
		    bool ipv6)
{
	u32 hdr = hdr_bytes(ipv6, e->tstamp);
	u32 mtu = mtus[e->mss_idx % CXE_C4_NMTUS];

	return mtu > hdr + EMSS_MIN ? mtu - hdr : EMSS_MIN;
}
