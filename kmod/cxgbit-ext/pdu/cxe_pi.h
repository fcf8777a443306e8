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
 * own over the whole data. Pure code: see cxe_env.h.
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

struct cxe_pi_gen {
	u32	block;		/* bytes per logical block, a power of 2 */
	u32	len;		/* bytes of data the tuples cover: whole blocks */
	u32	next;		/* the data's bytes from 0 fed so far, in order */
	u32	idx;		/* the block at next */
	u32	ref;		/* type 1: the reference tag of block 0 */
	u16	crc;		/* the guard of the block at next, so far */
	bool	set_ref;	/* type 1 */
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
 * Bytes [pos, pos + len) of the data, as they are placed. Each block
 * they complete has its tuple written, in the window map gives for it.
 * Returns the blocks completed.
 */
u32 cxe_pi_gen_feed(struct cxe_pi_gen *g, u32 pos, const u8 *buf, u32 len,
		    cxe_pi_map_t map, void *ctx);

/* Every tuple was made as the data went by */
static inline bool cxe_pi_gen_done(const struct cxe_pi_gen *g)
{
	return !g->broken && g->next == g->len;
}

#endif /* CXE_PI_H */
