// SPDX-License-Identifier: GPL-2.0-only
/*
 * iSCSI BHS helpers, digests and padding. Pure code: see cxe_env.h.
 */
#include "cxe_bhs.h"

bool cxe_opcode_from_initiator(u8 opcode)
{
	switch (opcode) {
	case CXE_OP_NOOP_OUT:
	case CXE_OP_SCSI_CMD:
	case CXE_OP_TMF_REQ:
	case CXE_OP_LOGIN_REQ:
	case CXE_OP_TEXT_REQ:
	case CXE_OP_DATA_OUT:
	case CXE_OP_LOGOUT_REQ:
	case CXE_OP_SNACK:
		return true;
	default:
		return false;
	}
}

CXE_EXPORT(cxe_opcode_from_initiator);

u64 cxe_pdu_wire_len(u32 ahs_len, u32 dlen, bool hdigest, bool ddigest)
{
	u64 len = CXE_BHS_LEN + (u64)ahs_len;

	if (hdigest)
		len += CXE_DIGEST_LEN;
	if (dlen) {
		len += (u64)dlen + cxe_pad_len(dlen);
		if (ddigest)
			len += CXE_DIGEST_LEN;
	}
	return len;
}

u32 cxe_digest(const void *buf, size_t len)
{
	return ~cxe_crc32c(~0u, buf, len);
}

u32 cxe_data_digest_finish(u32 crc, u32 dlen)
{
	static const u8 zeros[4];
	u32 pad = cxe_pad_len(dlen);

	if (pad)
		crc = cxe_crc32c(crc, zeros, pad);
	return ~crc;
}

/* an AHS segment's AHSLength (bytes 0-1): its specific byte and data */
static u32 cxe_ahs_len(const u8 *ahs)
{
	return (u32)ahs[0] << 8 | ahs[1];
}

bool cxe_bhs_ahs_ok(const u8 *hdr)
{
	u32 total = cxe_bhs_ahs_len(hdr), off = 0;

	while (off < total) {
		const u8 *ahs = hdr + CXE_BHS_LEN + off;
		u32 len, seg;

		if (total - off < 4)
			return false;
		len = cxe_ahs_len(ahs);
		seg = (3 + len + 3) & ~3u;
		if (!len || seg > total - off)
			return false;
		off += seg;
	}
	return true;
}

bool cxe_bhs_cdb_ok(const u8 *hdr)
{
	const u8 *cdb = hdr + CXE_BHS_CDB_OFF, *ahs = hdr + CXE_BHS_LEN;
	u32 have = CXE_BHS_CDB_LEN;

	if (cxe_bhs_opcode(hdr) != CXE_OP_SCSI_CMD || cdb[0] != CXE_VARLEN_CDB)
		return true;
	if (cxe_bhs_ahs_len(hdr) && ahs[2] == CXE_AHS_EXT_CDB)
		have += cxe_ahs_len(ahs) - 1;
	return 8u + cdb[7] <= have;
}

bool cxe_bhs_data_ok(const u8 *hdr)
{
	return cxe_bhs_opcode(hdr) != CXE_OP_SCSI_CMD || !cxe_bhs_dlen(hdr) ||
	       (hdr[1] & CXE_CMD_WRITE);
}

const u8 *cxe_keys_value(const u8 *text, u32 len, const char *key, u32 *vlen)
{
	size_t klen = strlen(key);
	u32 i = 0;

	while (i < len) {
		const u8 *pair = text + i;
		const u8 *end = memchr(pair, '\0', len - i);

		if (!end)
			return NULL;	/* cut off: not a pair */
		if ((size_t)(end - pair) > klen && !memcmp(pair, key, klen) &&
		    pair[klen] == '=') {
			*vlen = end - pair - klen - 1;
			return pair + klen + 1;
		}
		i += end - pair + 1;
	}
	return NULL;
}

bool cxe_keys_have(const u8 *text, u32 len, const char *key, const char *value)
{
	size_t want = strlen(value);
	const u8 *v;
	u32 off = 0, vlen;

	while ((v = cxe_keys_value(text + off, len - off, key, &vlen))) {
		if (vlen == want && !memcmp(v, value, want))
			return true;
		off = v + vlen + 1 - text;	/* past the pair's NUL */
	}
	return false;
}
