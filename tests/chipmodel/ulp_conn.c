// SPDX-License-Identifier: GPL-2.0-only
/*
 * A model of the connection side of a Chelsio T5/T6 for one TID; see
 * conn.h and README.md.
 */
#include "cxe_bhs.h"
#include "ulp_conn.h"

void cxe_model_conn_init(struct cxe_model_conn *m, u32 tid, u32 snd_isn,
			 u32 rcv_isn)
{
	memset(m, 0, sizeof(*m));
	m->tid = tid;
	m->snd_isn = snd_isn;
	m->rcv_isn = rcv_isn;
}

static int refuse(struct cxe_model_conn *m, const char *why)
{
	m->why = why;
	return -EPROTO;
}

/* a message to the driver: opcode/TID, then the rest zero but for what the caller sets */
static u8 *queue(struct cxe_model_conn *m, u8 opcode, u32 len)
{
	u32 i = (m->head + m->n) % CXE_MODEL_CONN_QLEN;
	u8 *p = m->q[i];

	memset(p, 0, CXE_MODEL_CONN_MSG);
	cxe_put_be32(p, (u32)opcode << 24 | m->tid);
	m->qlen[i] = len;
	m->n++;
	return p;
}

static bool room(const struct cxe_model_conn *m)
{
	/* one place kept for the reply to an abort of ours */
	return m->n < CXE_MODEL_CONN_QLEN - 1;
}

/* the connection still runs TCP: neither reset nor closed both ways */
static bool live(const struct cxe_model_conn *m)
{
	return m->accepted && !m->peer_reset && !m->abort_in &&
	       !(m->fin_acked && m->peer_fin);
}

int cxe_model_conn_take(struct cxe_model_conn *m, const u8 *msg, u32 len)
{
	u8 op, cpl = 0;
	u32 tid;

	if (len < 8)
		return refuse(m, "shorter than a work request header");
	op = msg[0];
	if (op == CXE_FW_TP_WR) {
		if (len < 24)
			return refuse(m, "TP work request without its CPL");
		cpl = msg[16];
		tid = cxe_get_be32(msg + 16) & 0xffffff;
		if ((cxe_get_be32(msg + 4) >> 8 & CXE_CPL_TID_MAX) != tid)
			return refuse(m, "work request's flow is not its CPL's TID");
	} else {
		tid = cxe_get_be32(msg + 4) >> 8 & CXE_CPL_TID_MAX;
	}
	if (tid != m->tid)
		return refuse(m, "another TID");
	if (m->released)
		return refuse(m, "a message for a released TID");

	if (cpl == CXE_CPL_PASS_ACCEPT_RPL) {
		if (m->accepted)
			return refuse(m, "a second accept reply");
		m->accepted = true;
		return 0;
	}
	if (!m->accepted)
		return refuse(m, "a message before the accept reply");
	/* page pods: see cxe_model_conn_flow_live() */
	if (op == CXE_FW_ULPTX_WR) {
		if (cxe_model_conn_flow_live(m) && !m->flowc)
			return refuse(m, "first work request is not FW_FLOWC_WR");
		return 0;
	}
	if (m->abort_in && cpl != CXE_CPL_ABORT_RPL)
		return refuse(m, "a message after our abort");
	if (op == CXE_FW_FLOWC_WR) {
		if (m->flowc)
			return refuse(m, "a second FW_FLOWC_WR");
		m->flowc = true;
		return 0;
	}
	/* not on the connection's transmit queue: no FW_FLOWC_WR needed */
	if (cpl == CXE_CPL_SET_TCB_FIELD || cpl == CXE_CPL_RX_DATA_ACK) {
		if (!m->established)
			return refuse(m, "a TCB change before the connection is up");
		return 0;
	}
	if (!m->flowc)
		return refuse(m, "first work request is not FW_FLOWC_WR");
	if (cpl == CXE_CPL_ABORT_RPL) {
		if (!m->rpl_owed)
			return refuse(m, "an abort reply for no reset");
		m->rpl_owed--;
		return 0;
	}
	if (cpl == CXE_CPL_ABORT_REQ) {
		/* the chip answers even when the connection is over */
		m->abort_in = true;
		queue(m, CXE_CPL_ABORT_RPL_RSS, CXE_CPL_ABORT_RPL_RSS_LEN);
		return 0;
	}
	if (cpl == CXE_CPL_CLOSE_CON_REQ) {
		if (!m->established)
			return refuse(m, "a close before the connection is up");
		if (m->fin_in)
			return refuse(m, "a second close");
		m->fin_in = true;
		if (m->peer_reset)
			m->dropped++;
		return 0;
	}
	if (op != CXE_FW_OFLD_TX_DATA_WR && op != CXE_FW_ISCSI_TX_DATA_WR)
		return refuse(m, "a request the model does not know");
	if (!m->established)
		return refuse(m, "data before the connection is up");
	if (m->fin_in)
		return refuse(m, "data after our close");
	if (m->peer_reset)
		m->dropped++;
	return 0;
}

bool cxe_model_conn_flow_live(const struct cxe_model_conn *m)
{
	return m->established && !m->fin_in && !m->abort_in && !m->peer_reset;
}

bool cxe_model_conn_ack(struct cxe_model_conn *m)
{
	u8 *p;

	if (!m->accepted || m->established || !live(m) || !room(m))
		return false;
	m->established = true;
	p = queue(m, CXE_CPL_PASS_ESTABLISH, CXE_CPL_PASS_ESTABLISH_LEN);
	/* the sequence numbers after the SYNs: each way's first byte of data */
	cxe_put_be32(p + 16, m->snd_isn + 1);
	cxe_put_be32(p + 20, m->rcv_isn + 1);
	return true;
}

bool cxe_model_conn_fin(struct cxe_model_conn *m)
{
	if (!m->established || m->peer_fin || !live(m) || !room(m))
		return false;
	m->peer_fin = true;
	cxe_put_be32(queue(m, CXE_CPL_PEER_CLOSE, CXE_CPL_PEER_CLOSE_LEN) + 4,
		     m->rcv_isn + 2);
	return true;
}

bool cxe_model_conn_ack_fin(struct cxe_model_conn *m)
{
	u8 *p;

	if (!m->fin_in || m->fin_acked || !live(m) || !room(m))
		return false;
	m->fin_acked = true;
	p = queue(m, CXE_CPL_CLOSE_CON_RPL, CXE_CPL_CLOSE_CON_RPL_LEN);
	cxe_put_be32(p + 8, m->snd_isn + 2);
	cxe_put_be32(p + 12, m->rcv_isn + 1 + m->peer_fin);
	return true;
}

static bool abort_req_rss(struct cxe_model_conn *m, u8 status)
{
	if (!live(m) || !room(m))
		return false;
	queue(m, CXE_CPL_ABORT_REQ_RSS, CXE_CPL_ABORT_REQ_RSS_LEN)[7] = status;
	return true;
}

bool cxe_model_conn_reset(struct cxe_model_conn *m, u8 status)
{
	if (status >= CXE_CPL_ERR_RTX_NEG_ADVICE &&
	    status <= CXE_CPL_ERR_KEEPALV_NEG_ADVICE)
		return false;
	if (!abort_req_rss(m, status))
		return false;
	m->peer_reset = true;
	m->rpl_owed++;
	return true;
}

bool cxe_model_conn_advice(struct cxe_model_conn *m, u8 status)
{
	if (status < CXE_CPL_ERR_RTX_NEG_ADVICE ||
	    status > CXE_CPL_ERR_KEEPALV_NEG_ADVICE)
		return false;
	return abort_req_rss(m, status);
}

u32 cxe_model_conn_next(struct cxe_model_conn *m, u8 *buf)
{
	u32 len;

	if (!m->n)
		return 0;
	len = m->qlen[m->head];
	memcpy(buf, m->q[m->head], len);
	m->head = (m->head + 1) % CXE_MODEL_CONN_QLEN;
	m->n--;
	return len;
}

bool cxe_model_conn_over(const struct cxe_model_conn *m)
{
	return m->accepted && !m->n && !m->rpl_owed &&
	       (m->abort_in || m->peer_reset || (m->fin_acked && m->peer_fin));
}

int cxe_model_conn_release(struct cxe_model_conn *m)
{
	if (m->released)
		return refuse(m, "the TID released twice");
	if (!cxe_model_conn_over(m))
		return refuse(m, m->n ? "TID released with messages for it to come" :
			      m->rpl_owed ? "TID released owing an abort reply" :
			      "TID released while the connection runs");
	m->released = true;
	return 0;
}

static void put_be16(u8 *p, u16 v)
{
	p[0] = v >> 8 & 0xff;
	p[1] = v & 0xff;
}

/*
 * CPL_PASS_ACCEPT_REQ (cpl.c's parser has the layout): hdr_len holds the
 * three header lengths where the chip puts them (they moved on T6) and RX
 * channel 0; no VLAN, port 0, MAC index 0. The TCP options byte has
 * timestamps in bit 7 and SACK in bit 6; a peer that offered no window
 * scaling gets 15 in the scale field, which the chip's drivers (chtls)
 * read as none offered. The headers carry what a SYN's do, with no
 * checksum and no MAC addresses (the model does not know them; no driver
 * reads them).
 */
#define SYN_ETH_LEN	14
#define SYN_TCP_LEN	20
#define SYN_NO_WSCALE	15

int cxe_model_accept_req(u8 *buf, u32 size, enum cxe_chip chip,
			 const struct cxe_model_syn *s)
{
	u32 ip_len, len, hl;
	u8 *ip, *tcp;

	if (!buf || !s || (s->ip_version != 4 && s->ip_version != 6) ||
	    (s->wscale_ok && s->peer_wscale > 14) || s->tid > 0xffffff ||
	    s->stid > 0xffffff ||
	    (chip != CXE_CHIP_T5 && chip != CXE_CHIP_T6))
		return -EINVAL;
	ip_len = s->ip_version == 4 ? 20 : 40;
	len = CXE_CPL_PASS_ACCEPT_REQ_LEN + SYN_ETH_LEN + ip_len + SYN_TCP_LEN;
	if (size < len)
		return -ENOSPC;
	memset(buf, 0, len);
	cxe_put_be32(buf, (u32)CXE_CPL_PASS_ACCEPT_REQ << 24 | s->tid);
	put_be16(buf + 6, SYN_ETH_LEN + ip_len + SYN_TCP_LEN);
	if (chip == CXE_CHIP_T5)
		hl = SYN_ETH_LEN << 26 | ip_len << 16 | SYN_TCP_LEN << 10;
	else
		hl = SYN_ETH_LEN << 24 | ip_len << 14 | SYN_TCP_LEN << 8;
	cxe_put_be32(buf + 8, hl);
	cxe_put_be32(buf + 16, (u32)s->tos << 24 | s->stid);
	put_be16(buf + 20, s->peer_mss);
	buf[22] = s->wscale_ok ? s->peer_wscale : SYN_NO_WSCALE;
	buf[23] = (s->tstamp ? 0x80 : 0) | (s->sack ? 0x40 : 0);

	ip = buf + CXE_CPL_PASS_ACCEPT_REQ_LEN;
	put_be16(ip + 12, s->ip_version == 4 ? 0x0800 : 0x86dd);
	ip += SYN_ETH_LEN;
	if (s->ip_version == 4) {
		ip[0] = 0x45;
		ip[1] = s->tos;
		put_be16(ip + 2, 20 + SYN_TCP_LEN);
		ip[6] = 0x40;		/* DF */
		ip[8] = 64;
		ip[9] = 6;		/* TCP */
		memcpy(ip + 12, s->peer_ip, 4);
		memcpy(ip + 16, s->local_ip, 4);
	} else {
		cxe_put_be32(ip, 6U << 28 | (u32)s->tos << 20);
		put_be16(ip + 4, SYN_TCP_LEN);
		ip[6] = 6;		/* TCP */
		ip[7] = 64;
		memcpy(ip + 8, s->peer_ip, 16);
		memcpy(ip + 24, s->local_ip, 16);
	}
	tcp = ip + ip_len;
	put_be16(tcp, s->peer_port);
	put_be16(tcp + 2, s->local_port);
	cxe_put_be32(tcp + 4, s->peer_isn);
	tcp[12] = SYN_TCP_LEN / 4 << 4;
	tcp[13] = 0x02 | (s->ece ? 0x40 : 0) | (s->cwr ? 0x80 : 0);
	put_be16(tcp + 14, s->window);
	return len;
}

/*
 * CPL_SET_TCB_RPL (16 bytes): opcode/TID ; reserved(16), cookie in bits
 * 5..7 of its byte, status ; oldval, 0 here (the model keeps no TCB).
 */
u32 cxe_model_set_tcb_rpl(u8 *buf, u32 tid, u8 cookie, u8 status)
{
	memset(buf, 0, CXE_CPL_SET_TCB_RPL_LEN);
	cxe_put_be32(buf, (u32)CXE_CPL_SET_TCB_RPL << 24 | (tid & 0xffffff));
	buf[6] = (cookie & 7) << 5;
	buf[7] = status;
	return CXE_CPL_SET_TCB_RPL_LEN;
}
