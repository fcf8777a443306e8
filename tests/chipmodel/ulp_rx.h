/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A model of the receive side of a Chelsio T5/T6's iSCSI ULP, for one
 * offloaded connection: the TCP payload in, the CPL messages the chip
 * hands its upper-layer driver out (README.md says what is modelled and
 * what is not). Pure code (the module's pdu/cxe_env.h), so that it runs
 * in user-space tests against the backend's receive assembler and can
 * stand below the backend in a kernel.
 *
 * It frames PDUs by their own lengths, checks and strips digests and
 * padding, places a Data-Out's data straight into the buffer the page pod
 * of its TTT names (ops->ppod and ops->place), and hands the rest up:
 * - T5: CPL_ISCSI_HDR when the header is in, CPL_ISCSI_DATA with the data
 *   segment unless placed, CPL_RX_ISCSI_DDP with the status;
 * - T6: CPL_ISCSI_DATA unless placed, then CPL_RX_ISCSI_CMP with the
 *   header and the status. A placed Data-Out without the F bit and
 *   without errors is not handed up while the next PDU is a placed
 *   Data-Out of the same TTT and ITT without errors that follows it
 *   (its Buffer Offset where the first's data ends, the next DataSN):
 *   the completion of the later one stands for both. Any other PDU, or cxe_model_rx_flush()
 *   (the end of a receive batch), hands up the one held back first.
 */
#ifndef CXE_MODEL_ULP_RX_H
#define CXE_MODEL_ULP_RX_H

#include "cxe_bhs.h"
#include "cpl.h"

struct cxe_model_rx_ops {
	/* one message to the host: the CPL, then its payload; 0 to go on */
	int (*deliver)(void *ctx, const u8 *msg, u32 len);
	/*
	 * Whether the page pod this TTT names is valid for this ITT and
	 * covers bytes [off, off + len) of its buffer: the Data-Out's data
	 * is then placed, piece by piece as it arrives, through place();
	 * else it is handed up.
	 */
	bool (*ppod)(void *ctx, u32 ttt, u32 itt, u32 off, u32 len);
	/* len bytes of placed data, at byte off of the pod's buffer */
	int (*place)(void *ctx, u32 ttt, u32 itt, u32 off, const u8 *buf,
		     u32 len);
};

enum cxe_model_rx_state {
	CXE_MRX_BHS,
	CXE_MRX_AHS,
	CXE_MRX_HDIG,
	CXE_MRX_DATA,
	CXE_MRX_PAD,
	CXE_MRX_DDIG,
	CXE_MRX_DEAD,
};

/* Longest message the model builds before its payload */
#define CXE_MODEL_CPL_MAX	24
#define CXE_MODEL_HDR_MAX	(CXE_BHS_LEN + CXE_MAX_AHS_LEN)

struct cxe_model_rx {
	enum cxe_chip chip;
	u32 tid;
	bool hdigest;		/* the connection's digests, changeable */
	bool ddigest;		/* between PDUs (set by CPL_SET_TCB_FIELD) */
	u32 max_dlen;		/* data segment the chip takes, at most */
	u32 seq;		/* TCP sequence number of the next byte */

	enum cxe_model_rx_state state;
	u32 have;		/* bytes of the current unit */
	u32 pdu_seq;
	u32 hdr_len;
	u32 dlen;
	u32 crc;		/* data digest so far */
	bool hcrc_err;
	bool dcrc_err;
	bool pad_err;
	bool place;		/* the data is placed, not handed up */
	u8 dig[CXE_DIGEST_LEN];
	u8 hdr[CXE_MODEL_HDR_MAX];
	/* the data message under construction: CPL, then max_dlen bytes */
	u8 *data_msg;

	/* T6: the completion held back, and whose it is */
	bool held;
	u32 held_ttt;
	u32 held_itt;
	u32 held_end;		/* Buffer Offset after its data */
	u32 held_datasn;
	u32 held_len;
	u8 held_msg[CXE_MODEL_CPL_MAX + CXE_MODEL_HDR_MAX];
};

/* Bytes of data_msg the model needs for max_dlen */
#define CXE_MODEL_DATA_MSG_LEN(max_dlen) (CXE_CPL_ISCSI_DATA_LEN + (max_dlen))

/* data_msg: CXE_MODEL_DATA_MSG_LEN(max_dlen) bytes the model keeps using */
void cxe_model_rx_init(struct cxe_model_rx *m, enum cxe_chip chip, u32 tid,
		       u32 isn, u32 max_dlen, u8 *data_msg);

/*
 * Take len bytes of the TCP payload. Returns 0, what ops->deliver or
 * ops->place returned when not 0, or -EMSGSIZE for a data segment above
 * max_dlen (the model then takes nothing more: the chip would abort).
 */
int cxe_model_rx_feed(struct cxe_model_rx *m, const u8 *buf, size_t len,
		      const struct cxe_model_rx_ops *ops, void *ctx);

/*
 * Bytes the model takes before the current PDU is complete, or before its
 * BHS is when its length is not known yet (0 once it stopped). A caller
 * that feeds no more than this at a time gets at most one PDU completed
 * per feed (two on a T6: a completion held back goes first).
 */
u32 cxe_model_rx_want(const struct cxe_model_rx *m);

/*
 * The receive window a message the chip hands up takes, which the driver
 * gives back with CPL_RX_DATA_ACK. A T5 charges every byte it takes off
 * the wire (its CPL_RX_ISCSI_DDP carries the PDU's length on the wire,
 * which mainline cxgbit gives back): 0 here. A T6 charges only what it
 * hands up, the header in CPL_RX_ISCSI_CMP and the data in
 * CPL_ISCSI_DATA (their length fields): mainline cxgbit gives back those
 * alone, so a T6 does not charge placed data, digests or padding.
 */
u32 cxe_model_rx_charge(enum cxe_chip chip, const u8 *msg, u32 len);

/* The end of a receive batch: hand up a completion held back */
int cxe_model_rx_flush(struct cxe_model_rx *m,
		       const struct cxe_model_rx_ops *ops, void *ctx);

/*
 * The messages, as the chip lays them out (cpl.c has the fields); each
 * returns its length, the CPL's alone: the payload goes after it.
 */
u32 cxe_model_cpl_iscsi_hdr(u8 *b, u32 tid, u32 seq, u16 pdu_len, bool ddp,
			    u16 hdr_len);
u32 cxe_model_cpl_iscsi_data(u8 *b, u32 tid, u32 seq, u16 len);
u32 cxe_model_cpl_rx_iscsi_ddp(u8 *b, u32 tid, u32 seq, u16 pdu_len,
			       u32 ulp_crc, u32 ddpvld);
u32 cxe_model_cpl_rx_iscsi_cmp(u8 *b, u32 tid, u32 seq, u16 pdu_len,
			       bool ddp, u16 hdr_len, u32 ulp_crc, u32 ddpvld);

/* ddpvld bits (cpl.c) */
#define CXE_MODEL_DDPVLD_DDP	BIT(16)
#define CXE_MODEL_DDPVLD_PAD	BIT(19)
#define CXE_MODEL_DDPVLD_HCRC	BIT(20)
#define CXE_MODEL_DDPVLD_DCRC	BIT(21)

#endif /* CXE_MODEL_ULP_RX_H */
