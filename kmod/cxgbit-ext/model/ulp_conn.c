// SPDX-License-Identifier: GPL-2.0-only
/*
 * A model of the connection side of a Chelsio T5/T6 for one TID; see
 * conn.h and README.md.
 */
#include "../pdu/cxe_bhs.h"
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
	if (op != CXE_FW_OFLD_TX_DATA_WR && op != CXE_FW_ISCSI_TX_DATA_WR &&
	    op != CXE_FW_ULPTX_WR)
		return refuse(m, "a request the model does not know");
	if (!m->established)
		return refuse(m, "data before the connection is up");
	if (m->fin_in)
		return refuse(m, "data after our close");
	if (m->peer_reset)
		m->dropped++;
	return 0;
}

bool cxe_model_conn_ack(struct cxe_model_conn *m)
{
	u8 *p;

	if (!m->accepted || m->established || !live(m) || !room(m))
		return false;
	m->established = true;
	p = queue(m, CXE_CPL_PASS_ESTABLISH, CXE_CPL_PASS_ESTABLISH_LEN);
	cxe_put_be32(p + 16, m->snd_isn);
	cxe_put_be32(p + 20, m->rcv_isn);
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
