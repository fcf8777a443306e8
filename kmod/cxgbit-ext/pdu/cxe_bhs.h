/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * iSCSI Basic Header Segment layout (RFC 7143 section 11), digests and
 * padding. Pure code: see cxe_env.h.
 */
#ifndef CXE_BHS_H
#define CXE_BHS_H

#include "cxe_env.h"

#define CXE_BHS_LEN		48
#define CXE_DIGEST_LEN		4
#define CXE_MAX_AHS_LEN		(255 * 4)	/* TotalAHSLength is in words */
#define CXE_MAX_DLEN		0xffffff	/* DataSegmentLength is 24 bits */
#define CXE_RSVD_TAG		0xffffffffu

/* Opcodes an initiator sends (target RX) */
#define CXE_OP_NOOP_OUT		0x00
#define CXE_OP_SCSI_CMD		0x01
#define CXE_OP_TMF_REQ		0x02
#define CXE_OP_LOGIN_REQ	0x03
#define CXE_OP_TEXT_REQ		0x04
#define CXE_OP_DATA_OUT		0x05
#define CXE_OP_LOGOUT_REQ	0x06
#define CXE_OP_SNACK		0x10
/*
 * Data-In, the opcode of the template a burst is segmented from (LIO
 * builds it in the module; the unit tests and micro-benchmark build theirs)
 */
#define CXE_OP_DATA_IN		0x25

#define CXE_OPCODE_MASK		0x3f
#define CXE_FLAG_IMMEDIATE	0x40	/* byte 0 */
#define CXE_FLAG_FINAL		0x80	/* byte 1 */
#define CXE_DATAIN_STATUS	0x01	/* byte 1, Data-In S bit */
#define CXE_CMD_WRITE		0x20	/* byte 1, SCSI Command W bit */

/* a SCSI Command's CDB: 16 bytes in the BHS, the rest in an AHS of type 1 */
#define CXE_BHS_CDB_OFF		32
#define CXE_BHS_CDB_LEN		16
#define CXE_AHS_EXT_CDB		1
#define CXE_VARLEN_CDB		0x7f	/* VARIABLE LENGTH: 8 + byte 7 bytes */

static inline u32 cxe_get_be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static inline void cxe_put_be32(u8 *p, u32 v)
{
	p[0] = (v >> 24) & 0xff;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

static inline u32 cxe_get_le32(const u8 *p)
{
	return (u32)p[3] << 24 | (u32)p[2] << 16 | (u32)p[1] << 8 | p[0];
}

static inline void cxe_put_le32(u8 *p, u32 v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
}

static inline u8 cxe_bhs_opcode(const u8 *bhs)
{
	return bhs[0] & CXE_OPCODE_MASK;
}

/* TotalAHSLength in bytes */
static inline u32 cxe_bhs_ahs_len(const u8 *bhs)
{
	return (u32)bhs[4] * 4;
}

static inline u32 cxe_bhs_dlen(const u8 *bhs)
{
	return (u32)bhs[5] << 16 | (u32)bhs[6] << 8 | bhs[7];
}

static inline void cxe_bhs_set_dlen(u8 *bhs, u32 dlen)
{
	bhs[5] = (dlen >> 16) & 0xff;
	bhs[6] = (dlen >> 8) & 0xff;
	bhs[7] = dlen & 0xff;
}

/* Bytes of padding after a data segment of len bytes (to a 4-byte boundary) */
static inline u32 cxe_pad_len(u32 len)
{
	return (4 - (len & 3)) & 3;
}

bool cxe_opcode_from_initiator(u8 opcode);

/*
 * Are the AHS segments after the BHS well formed: each AHSLength at least
 * 1 (it counts the AHS-specific byte), each segment (4 bytes of length,
 * type and specific byte plus padding) inside TotalAHSLength, and together
 * filling it exactly? LIO copies AHSLength - 1 bytes of an extended CDB
 * without checking; the PDU layer refuses a header that fails this first.
 */
bool cxe_bhs_ahs_ok(const u8 *hdr);

/*
 * Does a SCSI Command carry the whole CDB its operation code claims: the
 * BHS's 16 bytes plus, when the first AHS is an extended CDB, its
 * AHSLength - 1? Only a VARIABLE LENGTH CDB (0x7f, 8 + its byte 7) can
 * claim more than 16, and LIO copies what it claims unchecked. Call it on
 * a header cxe_bhs_ahs_ok() accepted.
 */
bool cxe_bhs_cdb_ok(const u8 *hdr);

/*
 * May this header carry its data segment? A SCSI Command's data segment
 * is immediate data, write data (RFC 7143 section 3.2.4.2): a command
 * without the W bit has none, and the PDU layer refuses one before LIO
 * sees it. iscsit_setup_scsi_cmd() accepts a data segment on a READ: LIO
 * runs the READ, then handles the command as a WRITE, running it again or
 * asking for the rest of its data after it is freed (a NULL dereference
 * or a use-after-free). The fix in LIO itself is upstream/0003-*.patch
 * (upstream/README.md).
 */
bool cxe_bhs_data_ok(const u8 *hdr);

/*
 * Does a Login or Text data segment (key=value pairs, each ended by a NUL,
 * RFC 7143 section 6) hold exactly key=value? A pair cut off by the end of
 * the segment does not count.
 */
bool cxe_keys_have(const u8 *text, u32 len, const char *key, const char *value);

/*
 * The value of the first whole pair with this key (its length in *vlen,
 * no NUL counted), or NULL when there is none.
 */
const u8 *cxe_keys_value(const u8 *text, u32 len, const char *key, u32 *vlen);

/*
 * Bytes a whole PDU takes on the wire: BHS, AHS, optional header digest,
 * data, padding, optional data digest (only when there is data).
 */
u64 cxe_pdu_wire_len(u32 ahs_len, u32 dlen, bool hdigest, bool ddigest);

/* iSCSI CRC32C digest of a buffer: ~crc32c(~0, buf) as the wire value. */
u32 cxe_digest(const void *buf, size_t len);

/*
 * Data digest of a data segment and its padding (RFC 7143 11.1: the digest
 * covers the padding bytes, which are zero). crc is the running raw CRC
 * (start ~0) over the data bytes.
 */
u32 cxe_data_digest_finish(u32 crc, u32 dlen);

#endif /* CXE_BHS_H */
