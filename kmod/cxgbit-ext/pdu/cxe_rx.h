/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * iSCSI receive stream parser: turns a TCP byte stream, fed in chunks of any
 * size, into PDUs. It checks lengths, verifies header and data digests and
 * hands each PDU's header and data to its consumer. It never buffers data:
 * payload goes straight from the caller's buffer to the consumer, which
 * places it (DDP) or copies it. Pure code: see cxe_env.h.
 */
#ifndef CXE_RX_H
#define CXE_RX_H

#include "cxe_bhs.h"

/* Per-PDU digest status handed to the consumer */
#define CXE_RX_HDIGEST_ERR	0x1
#define CXE_RX_DDIGEST_ERR	0x2

/* Fatal stream errors (negative returns of cxe_rx_feed) */
#define CXE_RX_EBADOP		EPROTO	/* opcode an initiator never sends */
#define CXE_RX_E2BIG		EMSGSIZE /* DataSegmentLength above the limit */

/*
 * The consumer. header and done return 0 to go on, a positive value to
 * pause right there (cxe_rx_feed then returns the bytes it consumed so
 * far, and the next feed resumes where it stopped), or a negative errno to
 * stop the stream. data returns 0 or a negative errno.
 */
struct cxe_rx_ops {
	/*
	 * A complete header (BHS + AHS) arrived; status has
	 * CXE_RX_HDIGEST_ERR when its digest failed (the caller must then
	 * treat the stream as lost: lengths in the header cannot be trusted).
	 * A pause here stops before the first byte of the data segment.
	 */
	int (*header)(void *ctx, const u8 *hdr, u32 hdr_len, int status);
	/* len bytes of the data segment at offset off within it */
	int (*data)(void *ctx, u32 off, const u8 *buf, u32 len);
	/* End of the PDU, status has CXE_RX_DDIGEST_ERR on a data digest error */
	int (*done)(void *ctx, int status);
};

enum cxe_rx_state {
	CXE_RX_HDR,
	CXE_RX_HDIG,
	CXE_RX_DATA,
	CXE_RX_PAD,
	CXE_RX_DDIG,
	CXE_RX_DEAD,
};

struct cxe_rx {
	/* configuration, changeable between PDUs (digests after login) */
	bool hdigest;
	bool ddigest;
	u32 max_dlen;		/* our MaxRecvDataSegmentLength */
	/*
	 * Login phase: only Login Requests, which carry no AHS, may come
	 * (RFC 7143 10.12); anything else is refused at its BHS.
	 */
	bool login;

	bool paused;		/* the last feed stopped at a consumer's pause */
	enum cxe_rx_state state;
	u32 have;		/* bytes of the current state's unit seen */
	u32 hdr_len;		/* BHS + AHS of the current PDU */
	u32 dlen;
	u32 crc;
	int status;
	u8 dig[CXE_DIGEST_LEN];
	u8 hdr[CXE_BHS_LEN + CXE_MAX_AHS_LEN];
};

void cxe_rx_init(struct cxe_rx *rx, u32 max_dlen);

/*
 * Consume up to len bytes. Returns the bytes consumed: len, or fewer when
 * a callback paused (rx->paused says so, also when the pause fell on the
 * last byte); or a negative errno when the stream is broken (the
 * parser then stays dead: the connection must be dropped). A negative
 * return from a consumer callback is passed back unchanged.
 */
long cxe_rx_feed(struct cxe_rx *rx, const u8 *buf, size_t len,
		 const struct cxe_rx_ops *ops, void *ctx);

/*
 * Paused after a header, before any of its data: the data segment, its pad
 * and its data digest were consumed by someone else (LIO discarding a
 * payload it refused). Go on with the next PDU; false (and nothing
 * changed) when the parser is not at that point. No done callback follows.
 */
bool cxe_rx_skip_data(struct cxe_rx *rx);

/*
 * A consumer that copies data itself, straight from where the stream's
 * bytes lie (a socket buffer's pages), rather than from the buffers it
 * feeds: in a data segment, the bytes of it still to come (0 elsewhere);
 * it may take up to that many, then says so with cxe_rx_data_took().
 */
u32 cxe_rx_data_left(const struct cxe_rx *rx);

/*
 * The consumer took the next n bytes of the data segment from the stream
 * (no data callback for them). With the data digest on, crc is rx->crc
 * carried over those bytes (cxe_crc32c(rx->crc, ...)), which the digest
 * then checks. Returns n, the PDU's done callback called (and a pause
 * flagged) when they ended a segment that has no pad and no digest; or a
 * negative errno, the parser then dead: n was 0 or more than
 * cxe_rx_data_left(), or done failed.
 */
long cxe_rx_data_took(struct cxe_rx *rx, u32 n, u32 crc,
		      const struct cxe_rx_ops *ops, void *ctx);

/*
 * The consumer lost the stream (bytes it took from it went wrong): the
 * parser is dead from now on, as after a fatal error of its own.
 */
void cxe_rx_kill(struct cxe_rx *rx);

/* Bytes the current PDU's data segment, pad and digest take on the wire. */
u32 cxe_rx_data_wire_len(const struct cxe_rx *rx);

#endif /* CXE_RX_H */
