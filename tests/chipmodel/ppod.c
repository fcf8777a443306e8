// SPDX-License-Identifier: GPL-2.0-only
/*
 * Model of the page pod memory of a Chelsio T5/T6; see ppod.h.
 */
#include "ppod.h"

static u32 rd32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static u64 rd64(const u8 *p)
{
	return (u64)rd32(p) << 32 | rd32(p + 4);
}

/* offsets in a ULP_TX_MEM_WRITE request and in a pod (cpl.c writes them) */
#define WR_LEN16(w)		((w) & 0xff)
#define WR_COMPL		BIT(21)	/* it asks for an ack: nothing to the pods */
#define MEM_WRITE_CMD		(3U << 24 | BIT(23))	/* MEM_WRITE, immediate */
#define SC_IMM_CMD		(0x81U << 24)
#define MEM_WRITE_HDR		40
#define POD_VALID		BIT(24)
#define POD_TID_MASK		0xffffff
#define POD_ADDR		24	/* the five addresses */

/*
 * Refused besides what ppod.h says: any flag in the first word (atomic,
 * completion, immediate length: mainline sets none), and a valid pod for
 * another connection than the flow the request is sent on (mainline
 * sends a connection's pods on its own flow, which orders them before
 * the connection's later requests).
 */
int cxe_model_ppm_write(struct cxe_model_ppm *m, const u8 *wr, u32 wr_len)
{
	u32 dlen, addr, flow, i;

	if (!m || !wr || wr_len < MEM_WRITE_HDR || wr_len % 16 ||
	    (rd32(wr) & ~WR_COMPL) != (u32)CXE_FW_ULPTX_WR << 24 ||
	    WR_LEN16(rd32(wr + 4)) != wr_len / 16 ||
	    rd32(wr + 16) != MEM_WRITE_CMD ||
	    rd32(wr + 20) != (wr_len - 16) / 16 || rd32(wr + 32) != SC_IMM_CMD)
		return -EINVAL;
	flow = rd32(wr + 4) >> 8;
	dlen = rd32(wr + 24);
	addr = rd32(wr + 28);
	if (!dlen || dlen >> 27 || addr >> 27)
		return -EINVAL;
	dlen <<= 5;
	addr <<= 5;
	if (rd32(wr + 36) != dlen || dlen % CXE_PPOD_LEN ||
	    dlen > wr_len - MEM_WRITE_HDR ||
	    wr_len - MEM_WRITE_HDR - dlen >= 16)
		return -EINVAL;
	if (addr < m->base || addr - m->base > m->size ||
	    dlen > m->size - (addr - m->base) || (addr - m->base) % CXE_PPOD_LEN)
		return -EINVAL;
	for (i = 0; i < dlen; i += CXE_PPOD_LEN) {
		u32 w0 = rd32(wr + MEM_WRITE_HDR + i);

		if ((w0 & POD_VALID) && (w0 & POD_TID_MASK) != flow)
			return -EINVAL;
	}
	memcpy(m->mem + (addr - m->base), wr + MEM_WRITE_HDR, dlen);
	return dlen / CXE_PPOD_LEN;
}

/* pod n of the region, or NULL past its end */
static const u8 *pod_at(const struct cxe_model_ppm *m, u64 n)
{
	if (n >= m->size / CXE_PPOD_LEN)
		return NULL;
	return m->mem + n * CXE_PPOD_LEN;
}

static bool pod_for(const u8 *pod, u32 tid, u32 tag)
{
	u32 w0 = rd32(pod);

	return (w0 & POD_VALID) && (w0 & POD_TID_MASK) == tid &&
	       rd32(pod + 4) == tag;
}

int cxe_model_ppm_locate(const struct cxe_model_ppm *m, u32 idx, u32 tid,
			 u32 tag, u32 off, u64 *addr)
{
	const u8 *first = m ? pod_at(m, idx) : NULL;
	const u8 *pod, *prev;
	u64 pos, page;
	u32 slot;

	if (!first || !addr || !pod_for(first, tid, tag) ||
	    off >= rd32(first + 8))
		return -ENOENT;
	pos = (u64)rd32(first + 12) + off;
	page = pos >> CXE_PPOD_PAGE_SHIFT;
	slot = page % CXE_PPOD_PAGES;
	pod = pod_at(m, idx + page / CXE_PPOD_PAGES);
	/* every pod of the buffer holds its header: the chip checks each one */
	if (!pod || !pod_for(pod, tid, tag) || rd32(pod + 8) != rd32(first + 8))
		return -ENOENT;
	*addr = rd64(pod + POD_ADDR + 8 * slot);
	if (!*addr)
		return -ENOENT;
	if (slot == 0 && pod != first) {
		prev = pod - CXE_PPOD_LEN;
		if (rd64(prev + POD_ADDR + 8 * CXE_PPOD_PAGES) != *addr)
			return -EIO;
	}
	*addr += pos & ((1U << CXE_PPOD_PAGE_SHIFT) - 1);
	return 0;
}
