/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A model of the server table of a Chelsio T5/T6: the servers cxgb4 asks
 * the chip to open and remove (cxgb4_create_server(), cxgb4_remove_server()
 * by STID) and the answers the chip owes for them, in the order it sends
 * them. Pure code, as ulp_rx.h.
 *
 * An open finds a server table of cap entries: beyond it the answer is
 * CPL_ERR_TCAM_FULL, as a chip whose table is full answers. It refuses
 * (-EPROTO, why says why) what would leave the chip and the driver
 * disagreeing about an STID:
 *  - an STID beyond the table it models;
 *  - an open of an STID that has a server, or an answer still on its way;
 *  - a removal of an STID with no server, or with an answer on its way.
 * Not modelled: the request messages themselves (cxgb4 builds them), the
 * filter region and IPv6 STIDs taking two entries, an answer that never
 * comes (the test stands a wait's end in for it).
 */
#ifndef CXE_MODEL_ULP_LSN_H
#define CXE_MODEL_ULP_LSN_H

#include "cpl.h"

#define CXE_MODEL_LSN_STIDS	16
#define CXE_MODEL_LSN_QLEN	(2 * CXE_MODEL_LSN_STIDS)

struct cxe_model_lsn {
	u32 cap;		/* servers the table holds */
	u32 servers;		/* servers open now */
	bool open[CXE_MODEL_LSN_STIDS];
	u32 owed[CXE_MODEL_LSN_STIDS];	/* answers on their way, by STID */
	const char *why;	/* the last refusal */
	u8 q[CXE_MODEL_LSN_QLEN][CXE_CPL_PASS_OPEN_RPL_LEN];
	u32 head, n;
};

void cxe_model_lsn_init(struct cxe_model_lsn *m, u32 cap);

/* cxgb4_create_server() and cxgb4_remove_server(): 0, or -EPROTO */
int cxe_model_lsn_open(struct cxe_model_lsn *m, u32 stid);
int cxe_model_lsn_remove(struct cxe_model_lsn *m, u32 stid);

/* the next answer into buf (its length), or 0 when none is on its way */
int cxe_model_lsn_next(struct cxe_model_lsn *m, u8 *buf, u32 size);

#endif /* CXE_MODEL_ULP_LSN_H */
