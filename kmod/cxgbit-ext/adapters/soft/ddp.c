// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext software adapter: direct data placement. The tag table that
 * R2Ts' TTTs index (reserve, check each Data-Out against its window,
 * release), and the copy of received write data into the command's pages
 * (or through a bounce page when the ddp toggle is off). The tag maths is
 * in pdu/cxe_ddp.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <linux/uio.h>
#include <linux/skbuff.h>

#include "soft.h"
#include "pdu/cxe_env.h"

/* ---- placement ------------------------------------------------------------- */

/*
 * Write data lands in the command's pages by a walk of dst's scatterlist
 * that goes on from where the task's last piece ended (dst->walk: a task's
 * data arrives in order): placing a task's data is linear in its length,
 * where sg_pcopy_from_buffer() walks from the start of the list for each
 * piece, and a walk kept per connection would start over whenever another
 * task's PDU came between. Each piece is copied into an iterator over the
 * pages it covers, CXE_PLACE_BVECS at a time, by one call.
 */
#define CXE_PLACE_BVECS	16

static struct cxe_sg_pos *cxe_place_start(struct cxe_soft_conn *sc,
					  const struct cxe_data *dst, u32 pos)
{
	struct cxe_sg_pos *w = dst->walk ?: &sc->place;

	if (cxe_sg_pos_at(w, dst->sgl, dst->nents, pos))
		cxe_cstat(&sc->c, CXE_STAT_WALK_STARTS, 1);
	return w;
}

/*
 * The pages of the next (up to len) bytes from pos on, as bv[]; 0: past
 * the list. The walk goes on in a copy of *w, which the compiler keeps in
 * registers, and is stored back once.
 */
static u32 cxe_place_bvecs(struct cxe_sg_pos *w, u32 pos, u32 len,
			   struct bio_vec *bv, u32 *nbv)
{
	struct cxe_sg_pos walk = *w;
	u32 chunk = 0, i = 0, off, n;
	struct page *pg;

	while (chunk < len && i < CXE_PLACE_BVECS) {
		if (!cxe_sg_seek(&walk, pos + chunk)) {
			chunk = 0;
			break;
		}
		pg = cxe_sg_page(&walk, pos + chunk, &off, &n);
		n = min(n, len - chunk);
		bvec_set_page(&bv[i++], pg, n, off);
		chunk += n;
	}
	*w = walk;
	*nbv = i;
	return chunk;
}

/* Copy len bytes of buf to byte pos of dst's scatterlist (and dst->pi). */
int cxe_soft_place(struct cxe_soft_conn *sc, const struct cxe_data *dst,
		   u32 pos, const u8 *buf, u32 len)
{
	struct bio_vec bv[CXE_PLACE_BVECS] __uninitialized;	/* [0, nbv) set */
	struct cxe_sg_pos *w = cxe_place_start(sc, dst, pos);
	struct iov_iter iter;
	u32 nbv, chunk;

	for (; len; pos += chunk, buf += chunk, len -= chunk) {
		chunk = cxe_place_bvecs(w, pos, len, bv, &nbv);
		if (!chunk)
			return -EINVAL;
		iov_iter_bvec(&iter, ITER_DEST, bv, nbv, chunk);
		if (copy_to_iter(buf, chunk, &iter) != chunk)
			return -EFAULT;
		if (dst->pi)
			cxe_pi_placed(dst->pi, pos, buf, chunk);
	}
	return 0;
}

/*
 * Copy len bytes of skb from byte off on to byte pos of dst's scatterlist,
 * straight from the skb's pages, as stock TCP receive copies an skb into
 * its reader's buffers (skb_copy_datagram_iter()). With crc, its value is
 * carried over the bytes (CRC32C, no inversion) from the pages they went
 * to, while those are still in the cache: that is the CRC of the bytes
 * received because nothing else writes a command's pages while its data
 * is received (LIO discards the data of a command it refused through
 * data_taken, never into the pages) and a task's pages do not overlap.
 * dst->pi gets the bytes in the same pass (adapter.h).
 */
int cxe_soft_place_skb(struct cxe_soft_conn *sc, const struct cxe_data *dst,
		       u32 pos, const struct sk_buff *skb, u32 off, u32 len,
		       u32 *crc)
{
	struct bio_vec bv[CXE_PLACE_BVECS] __uninitialized;	/* [0, nbv) set */
	struct cxe_sg_pos *w = cxe_place_start(sc, dst, pos);
	struct iov_iter iter;
	u32 nbv, chunk, i, at;

	for (; len; pos += chunk, off += chunk, len -= chunk) {
		chunk = cxe_place_bvecs(w, pos, len, bv, &nbv);
		if (!chunk)
			return -EINVAL;
		iov_iter_bvec(&iter, ITER_DEST, bv, nbv, chunk);
		if (skb_copy_datagram_iter(skb, off, &iter, chunk))
			return -EFAULT;
		for (i = 0, at = pos; (crc || dst->pi) && i < nbv; i++) {
			u8 *va = kmap_local_page(bv[i].bv_page);

			if (crc)
				*crc = cxe_crc32c(*crc, va + bv[i].bv_offset,
						  bv[i].bv_len);
			if (dst->pi)
				cxe_pi_placed(dst->pi, at, va + bv[i].bv_offset,
					      bv[i].bv_len);
			at += bv[i].bv_len;
			kunmap_local(va);
		}
	}
	return 0;
}

/* DDP off: through the bounce page, as an adapter without placement does */
int cxe_soft_bounce(struct cxe_soft_conn *sc, const struct cxe_data *dst,
		    u32 off, const u8 *buf, u32 len)
{
	u32 n;
	int ret;

	for (; len; off += n, buf += n, len -= n) {
		n = min_t(u32, len, PAGE_SIZE);
		memcpy(sc->bounce, buf, n);
		ret = cxe_soft_place(sc, dst, dst->offset + off, sc->bounce, n);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- DDP tags -------------------------------------------------------------- */

u32 cxe_soft_ddp_reserve(struct cxe_conn *c, struct cxe_task *owner,
			 u32 itt, const struct cxe_data *win, bool place)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 i;

	spin_lock_bh(&sc->ddp_lock);
	for (i = 0; place && i < CXE_DDP_SLOTS; i++) {
		struct cxe_ddp_slot *s = &sc->ddp[i];

		if (s->owner)
			continue;
		s->owner = owner;
		s->itt = itt;
		s->gen = cxe_ddp_next_gen(s->gen, i);
		s->offset = win->offset;
		s->len = win->len;
		owner->ddp_live++;
		spin_unlock_bh(&sc->ddp_lock);
		return cxe_ddp_tag(i, s->gen);
	}
	/* no placement for this R2T: a distinct TTT LIO alone checks */
	sc->noddp_gen = cxe_ddp_next_gen(sc->noddp_gen, CXE_NODDP_IDX);
	i = cxe_ddp_tag(CXE_NODDP_IDX, sc->noddp_gen);
	spin_unlock_bh(&sc->ddp_lock);
	if (place)
		pr_warn_ratelimited("%pISpc: all %u DDP tags in use\n", &c->peer, CXE_DDP_SLOTS);
	return i;
}

/*
 * May a Data-Out be placed by its TTT? Only by a live slot of this ITT, of
 * the tag's generation, inside the R2T's window; the slot is freed when
 * the R2T's last byte arrives. False means a stale or forged TTT.
 */
bool cxe_soft_ddp_check(struct cxe_conn *c, u32 ttt, u32 itt, u32 off,
			u32 len, bool final)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 i = cxe_ddp_tag_idx(ttt);
	struct cxe_ddp_slot *s;
	bool ok;

	if (i == CXE_NODDP_IDX)
		return true;
	if (i >= CXE_DDP_SLOTS)
		return false;
	spin_lock_bh(&sc->ddp_lock);
	s = &sc->ddp[i];
	ok = s->owner && s->itt == itt && s->gen == cxe_ddp_tag_gen(ttt) &&
	     cxe_ddp_in_window(s->offset, s->len, off, len);
	if (ok && final && off + len == s->offset + s->len) {
		s->owner->ddp_live--;
		s->owner = NULL;
	}
	spin_unlock_bh(&sc->ddp_lock);
	return ok;
}

void cxe_soft_ddp_release(struct cxe_conn *c, struct cxe_task *owner)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 i;

	/*
	 * The fence (adapter.h): placement happens only in the RX thread,
	 * after ddp_check found the slot live under ddp_lock; a slot cleared
	 * here places nothing more. Tags counted in ddp_live but not in this
	 * table were a released connection's (a task that moved to this one
	 * at ERL 2): they died with that table.
	 */
	if (!sc->ddp) {
		owner->ddp_live = 0;	/* the connection is released */
		return;
	}
	spin_lock_bh(&sc->ddp_lock);
	for (i = 0; owner->ddp_live && i < CXE_DDP_SLOTS; i++)
		if (sc->ddp[i].owner == owner) {
			sc->ddp[i].owner = NULL;
			owner->ddp_live--;
		}
	owner->ddp_live = 0;
	spin_unlock_bh(&sc->ddp_lock);
}
