/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * T10 protection information (SBC-4 4.22, types 1 and 3) made as write
 * data goes by. Each logical block gets an 8-byte tuple: the guard, a
 * CRC-16 T10-DIF of the block; the application tag, 0; in type 1 the
 * reference tag, the block's LBA (low 32 bits); in type 3 it is left as
 * it was. These are the tuples LIO's core inserts on a write
 * (sbc_dif_generate()): a transport that declares TARGET_PROT_DOUT_INSERT
 * makes them itself, and the core skips its own pass over the data.
 *
 * The generator follows a task's data from its first byte on, in order,
 * the guard of the block in hand carried from one piece to the next; a
 * piece anywhere else (data sent again in recovery, or out of order) stops
 * it for good, and whoever fed it then makes the tuples in a pass of its
 * own over the whole data.
 *
 * The same walk checks a read's tuples (cxe_pi_chk_init()) as LIO's core
 * does before it strips them (sbc_dif_verify()): a block whose application
 * tag is the escape 0xffff is not checked; else its guard, then its
 * reference tag, each where the command asks for it. The first block that
 * fails ends the walk, with which check failed: the sense LIO gives names
 * the check and that block's LBA. Pure code: see cxe_env.h.
 */
#ifndef CXE_PI_H
#define CXE_PI_H

#include "cxe_env.h"

#define CXE_PI_TUPLE_LEN	8

/*
 * Where tuples go: those of blocks [first, end) of the data, the first at
 * t (a piece of the protection buffer, as its user maps it)
 */
struct cxe_pi_win {
	u8	*t;
	u32	first;
	u32	end;
};

/*
 * The window that holds block idx's tuple, into *w; false when there is
 * none (the buffer ends, or cannot be mapped): the generator stops.
 */
typedef bool (*cxe_pi_map_t)(void *ctx, u32 idx, struct cxe_pi_win *w);

/* What a read's tuples are checked for (LIO's prot_checks) */
#define CXE_PI_CHECK_GUARD	0x1
#define CXE_PI_CHECK_REF	0x2

/* The check a read's block failed first: the sense LIO answers with */
enum cxe_pi_fail {
	CXE_PI_OK,
	CXE_PI_BAD_GUARD,	/* LOGICAL BLOCK GUARD CHECK FAILED, 10h/01h */
	CXE_PI_BAD_REF,		/* LOGICAL BLOCK REFERENCE TAG CHECK FAILED, 10h/03h */
};

#define CXE_PI_APP_ESCAPE	0xffff

struct cxe_pi_gen {
	u32	block;		/* bytes per logical block, a power of 2 */
	u32	len;		/* bytes of data the tuples cover: whole blocks */
	u32	next;		/* the data's bytes from 0 fed so far, in order */
	u32	idx;		/* the block at next; the failed one, once failed */
	u32	ref;		/* the reference tag of block 0 */
	u16	crc;		/* the guard of the block at next, so far */
	bool	set_ref;	/* making: type 1; checking: CXE_PI_CHECK_REF */
	bool	check;		/* the tuples are checked, not made */
	u8	checks;		/* CXE_PI_CHECK_* */
	u8	fail;		/* enum cxe_pi_fail */
	bool	broken;		/* a piece came out of order, or no window */
	struct cxe_pi_win win;	/* the last one mapped */
};

/*
 * A block's tuple at t: guard, application tag 0, and with set_ref the
 * reference tag (type 3's is left as it was), big-endian
 */
static inline void cxe_pi_tuple(u8 *t, u16 guard, u32 ref, bool set_ref)
{
	t[0] = guard >> 8;
	t[1] = guard & 0xff;
	t[2] = 0;
	t[3] = 0;
	if (!set_ref)
		return;
	t[4] = ref >> 24;
	t[5] = ref >> 16 & 0xff;
	t[6] = ref >> 8 & 0xff;
	t[7] = ref & 0xff;
}

/*
 * A generator for data_len bytes of blocks of block bytes, at most
 * tuples of them (the protection buffer's size: LIO makes tuples for the
 * first of a command's blocks only when its buffer is smaller, as for
 * COMPARE AND WRITE), the first one's LBA lba; set_ref for type 1. False
 * when block is not a power of 2 of at least 512 bytes: nothing can be fed.
 */
bool cxe_pi_gen_init(struct cxe_pi_gen *g, u32 block, u32 data_len,
		     u32 tuples, u64 lba, bool set_ref);

/*
 * A checker of the tuples of data_len bytes of a read, as
 * cxe_pi_gen_init() takes them but for: ref0, the reference tag block 0
 * must have (type 1: its LBA's low 32 bits), and checks, CXE_PI_CHECK_*
 * (the reference tag checked only with CXE_PI_CHECK_REF: never in type 3).
 */
bool cxe_pi_chk_init(struct cxe_pi_gen *g, u32 block, u32 data_len,
		     u32 tuples, u32 ref0, u8 checks);

/*
 * Bytes [pos, pos + len) of the data, as they are placed (or, checking,
 * as they are read). Each block they complete has its tuple written, or
 * checked, in the window map gives for it. Returns the blocks completed
 * (and checked good).
 */
u32 cxe_pi_gen_feed(struct cxe_pi_gen *g, u32 pos, const u8 *buf, u32 len,
		    cxe_pi_map_t map, void *ctx);

/* Every tuple was made, or checked good, as the data went by */
static inline bool cxe_pi_gen_done(const struct cxe_pi_gen *g)
{
	return !g->broken && !g->fail && g->next == g->len;
}

/*
 * Checking: the check that failed first (CXE_PI_OK: none so far), and in
 * *block the block it failed on, from 0.
 */
static inline enum cxe_pi_fail cxe_pi_chk_failed(const struct cxe_pi_gen *g,
						 u32 *block)
{
	*block = g->idx;
	return (enum cxe_pi_fail)g->fail;
}

/*
 * A read's data digests, made by the PDU layer in the pass that checks the
 * read's T10-PI before any of its data is sent, for an adapter that
 * computes digests in software to send instead of reading the data again.
 * They follow the cut LIO and the burst planner (cxe_seg.h) share at ERL
 * 0: bursts of MaxBurstLength from offset 0, each in PDUs of
 * MaxRecvDataSegmentLength; the first CXE_DIN_CRCS PDUs have one.
 */
#define CXE_DIN_CRCS	16

struct cxe_din {
	u32	crc[CXE_DIN_CRCS];	/* CRC32C of a PDU's data: not padded, not inverted */
	u32	mbl;
	u32	mrdsl;
	u32	len;		/* the read's data; 0: no digests */
	u32	at;		/* where the PDU of crc[next] begins */
	u8	n;		/* digests made */
	u8	next;
};

/* Where the PDU of the cut that begins at byte at of the data ends */
u32 cxe_din_pdu_end(const struct cxe_din *d, u32 at);

/*
 * The digest of the PDU of data [off, off + len) into *crc, if it was made
 * and it is the next PDU of the cut. Each is given once, in order: a PDU
 * sent again, or cut otherwise, is the sender's to digest.
 */
bool cxe_din_crc(struct cxe_din *d, u32 off, u32 len, u32 *crc);

#endif /* CXE_PI_H */
