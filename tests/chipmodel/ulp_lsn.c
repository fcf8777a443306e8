// SPDX-License-Identifier: GPL-2.0-only
/*
 * A model of a Chelsio T5/T6's server table; see ulp_lsn.h.
 */
#include "ulp_lsn.h"

#define CPL_ERR_TCAM_FULL	3

void cxe_model_lsn_init(struct cxe_model_lsn *m, u32 cap)
{
	memset(m, 0, sizeof(*m));
	m->cap = cap;
}

static int refuse(struct cxe_model_lsn *m, const char *why)
{
	m->why = why;
	return -EPROTO;
}

/* an answer on its way: opcode/STID ; 3 reserved, status */
static void answer(struct cxe_model_lsn *m, u8 op, u32 stid, u8 status)
{
	u8 *p = m->q[(m->head + m->n++) % CXE_MODEL_LSN_QLEN];

	memset(p, 0, CXE_CPL_PASS_OPEN_RPL_LEN);
	p[0] = op;
	p[1] = stid >> 16;
	p[2] = stid >> 8;
	p[3] = stid;
	p[7] = status;
	m->owed[stid]++;
}

int cxe_model_lsn_open(struct cxe_model_lsn *m, u32 stid)
{
	bool room;

	if (stid >= CXE_MODEL_LSN_STIDS)
		return refuse(m, "open: an STID beyond the table");
	if (m->open[stid] || m->owed[stid])
		return refuse(m, "open: the STID has a server or an answer on its way");
	room = m->servers < m->cap;
	if (room) {
		m->open[stid] = true;
		m->servers++;
	}
	answer(m, CXE_CPL_PASS_OPEN_RPL, stid, room ? 0 : CPL_ERR_TCAM_FULL);
	return 0;
}

int cxe_model_lsn_remove(struct cxe_model_lsn *m, u32 stid)
{
	if (stid >= CXE_MODEL_LSN_STIDS)
		return refuse(m, "remove: an STID beyond the table");
	if (!m->open[stid] || m->owed[stid])
		return refuse(m, "remove: no server, or an answer on its way");
	m->open[stid] = false;
	m->servers--;
	answer(m, CXE_CPL_CLOSE_LISTSRV_RPL, stid, 0);
	return 0;
}

int cxe_model_lsn_next(struct cxe_model_lsn *m, u8 *buf, u32 size)
{
	const u8 *p = m->q[m->head];
	u32 stid;

	if (!m->n || size < CXE_CPL_PASS_OPEN_RPL_LEN)
		return 0;
	memcpy(buf, p, CXE_CPL_PASS_OPEN_RPL_LEN);
	stid = (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
	m->owed[stid]--;
	m->head = (m->head + 1) % CXE_MODEL_LSN_QLEN;
	m->n--;
	return CXE_CPL_PASS_OPEN_RPL_LEN;
}
