/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A model of the transmit side of a Chelsio T5/T6's iSCSI ULP, for one
 * offloaded connection: the work requests cxgb4 hands the chip in, the
 * bytes the chip puts on the wire out (README.md says what is modelled
 * and what is not). Pure code, as ulp_rx.h.
 *
 * FW_OFLD_TX_DATA_WR in ULP iSCSI mode carries one PDU (header, data,
 * padding): the chip inserts the header digest after the header and the
 * data digest after the padding, as the request's submode says (a data
 * digest only when there is data). FW_ISCSI_TX_DATA_WR with a
 * CPL_TX_DATA_ISO carries a Data-In template header and the data of
 * several PDUs: the chip cuts the data into PDUs of MPDU bytes, each with
 * a copy of the template whose DataSegmentLength, DataSN and Buffer
 * Offset it sets; the last PDU keeps the template's flags and status, the
 * others get F only where a burst_size of data ends, no S, no status,
 * StatSN 0xffffffff and no residual (what RFC 7143 asks of such PDUs; what
 * the chip writes there is not public).
 */
#ifndef CXE_MODEL_ULP_TX_H
#define CXE_MODEL_ULP_TX_H

#include "cxe_bhs.h"
#include "cpl.h"

struct cxe_model_tx {
	enum cxe_chip chip;
	u32 tid;
	u32 max_dlen;		/* data segment the chip sends, at most */
};

/*
 * One request: its bytes as cxgb4 writes them (header, ISO CPL, and the
 * payload when immediate), and the payload cxgb4 gathers when it is not
 * (NULL, 0 otherwise). The wire bytes are appended to out. Returns their
 * number; -EINVAL for a request the firmware would refuse or misread (a
 * field that disagrees with another or with the payload, another TID, a
 * length the chip cannot cut), -ENOSPC when out is too small.
 */
long cxe_model_tx_wr(const struct cxe_model_tx *m, const u8 *wr, u32 wr_len,
		     const u8 *gathered, u32 gathered_len, u8 *out,
		     size_t size);

/*
 * The credits of a connection's requests, on the chip's side: each
 * request the transmit model took holds its len16 credits until the chip
 * returns them in a CPL_FW4_ACK; it owes an ack once a request asked for
 * one (FW_WR_COMPL), for the credits up to that request. TCP is not
 * modelled: an ack says the peer has everything sent (snd_una).
 */
struct cxe_model_txcred {
	u32 tid;
	u32 held;		/* credits of requests taken, not yet returned */
	u32 owed;		/* of them, up to the last request that asked for an ack */
	u32 snd_nxt;		/* after the last byte sent */
};

/* snd_nxt: the first byte's sequence number (CPL_PASS_ESTABLISH's snd_isn) */
void cxe_model_txcred_init(struct cxe_model_txcred *m, u32 tid, u32 snd_nxt);
/* a request cxe_model_tx_wr() took (its bytes), which sent wire bytes */
void cxe_model_txcred_took(struct cxe_model_txcred *m, const u8 *wr, u32 wire);
/*
 * A CPL_FW4_ACK (CXE_CPL_FW4_ACK_LEN bytes into buf) returning credits of
 * the oldest requests: all that are owed, at least, when owed is true (at
 * most 255 in one ack: call again while owed), else up to credits of
 * those held. Returns the message's length, or 0 when there is nothing to
 * return.
 */
int cxe_model_txcred_ack(struct cxe_model_txcred *m, u8 *buf, u32 credits,
			 bool owed);

#endif /* CXE_MODEL_ULP_TX_H */
