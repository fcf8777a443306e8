// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: direct data placement through page pods. A DDP tag (the
 * TTT of a task's R2Ts: one tag per task, as mainline keeps one) names
 * the pods of its task's buffer in the adapter's pod memory (cpl.h's tag
 * format: the first pod's index above a colour, the generation the device
 * gave that pod when it was taken, so that a TTT of an earlier tag never
 * names pods written for a later one). The pods describe the whole
 * buffer, written once at the task's first R2T and named again by each
 * later one, so that the chip places a Data-Out's byte at its Buffer
 * Offset as it reads it; a buffer whose pages the chip cannot all take
 * gets pods to its first R2T's end only, and each R2T beyond them a tag
 * of its own. The glue still checks each Data-Out against the windows of
 * the R2Ts the tag went out with (ddp_check) before the PDU layer takes
 * it.
 *
 * Fencing (adapter.h): a tag's pods are cleared, through a write on the
 * connection's flow whose ack says the chip carried it out (cm.c), when
 * the last byte of its only R2T arrived and its pods name nothing after
 * it, when the task is released and when the connection is; only then do
 * the pods and the pages' mappings go back. A clear that is not confirmed
 * aborts the connection first (cxe_c4_ddp_clear()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/wait.h>

#include "../../cxgbit_ext.h"
#include "../../pdu/cxe_ddp.h"
#include "dev.h"

/* no tag: the reserved TTT, which no tag format takes for one with pods */
#define CXE_C4_NOTAG		0xffffffffU
/* how long a fence waits for the chip to end a connection it aborts */
#define CXE_C4_FENCE_WAIT	(10 * HZ)

static struct cxe_c4c *cxe_c4c(struct cxe_conn *c)
{
	return container_of(c, struct cxe_c4c, c);
}

/*
 * At accept: the lock (TTTs without pods are counted under it), and the
 * table when the connection places; 0 or -ENOMEM
 */
int cxe_c4_ddp_init(struct cxe_c4c *cc, bool place)
{
	spin_lock_init(&cc->ddp_lock);
	init_waitqueue_head(&cc->ddp_wq);
	if (!place)
		return 0;
	cc->ddp = kcalloc(CXE_C4_DDP_SLOTS, sizeof(*cc->ddp), GFP_KERNEL);
	return cc->ddp ? 0 : -ENOMEM;
}

/*
 * The pages' mappings undone, the pages let go (unless kept) and the
 * lists of them freed
 */
static void cxe_c4_ddp_unmap_pages(struct cxe_c4dev *d, u64 *addrs,
				   struct page **pages, u32 n, bool keep)
{
	u32 i;

	for (i = 0; i < n; i++) {
		d->ops->unmap_page(d, addrs[i]);
		if (!keep)
			put_page(pages[i]);
	}
	kvfree(addrs);
	kvfree(pages);
}

/*
 * Pods [idx, idx + n) on the chip, three to a ULP_TX_MEM_WRITE as mainline
 * writes them: the tag's h over the buffer's pages (addrs), or cleared
 * when h is NULL. 0, or the first error.
 */
static int cxe_c4_ddp_pods(struct cxe_c4c *cc, u32 idx, u32 n,
			   const struct cxe_ppod_hdr *h, const u64 *addrs,
			   u32 npages)
{
	struct cxe_c4dev *d = cc->t->dev;
	u8 wr[CXE_ULP_MEM_WRITE_MAX_LEN];
	u32 done, k, addr;
	int len = 0;

	for (done = 0; done < n && len >= 0; done += k) {
		k = min_t(u32, n - done, CXE_PPOD_IMM_MAX);
		addr = d->ppod_base + ((idx + done) << CXE_PPOD_SHIFT);
		if (h)
			len = cxe_ulp_ppod_write(wr, sizeof(wr), addr, h, addrs,
						 npages, done, k);
		else
			len = cxe_ulp_ppod_clear(wr, sizeof(wr), addr,
						 cc->t->tid, k);
		if (len >= 0)
			len = cxe_c4tid_ulptx(cc->t, wr, len);
	}
	return len < 0 ? len : 0;
}

/*
 * One clear of n pods from idx: 0, or the write's error while the chip
 * still reads them (one that went away or was reset since the SYN reads
 * none again, so its clear holds: dev.h)
 */
static int cxe_c4_ddp_clear_once(struct cxe_c4c *cc, u32 idx, u32 n)
{
	int len;

	if (cxe_c4tid_chip_done(cc->t))
		return 0;
	len = cxe_c4_ddp_pods(cc, idx, n, NULL, NULL, 0);
	return len && !cxe_c4tid_chip_done(cc->t) ? len : 0;
}

/*
 * n pods from idx made invalid on the chip. True when the chip reads them
 * cleared: they may go back. A clear the chip did not confirm (no ack, a
 * reset meanwhile) aborts the connection; once the chip is done with it
 * (it places nothing more for it) the clear goes again, ahead of the
 * TID's release (cm.c's cxe_c4tid_ulptx()). If the chip never ends the
 * connection, the pods stay taken for good. An adapter that went away
 * (dev.h) reads no pod again: its pods are cleared whatever became of the
 * writes, which fail from the moment its device stops taking calls, a
 * little before the glue hears it is gone.
 */
static bool cxe_c4_ddp_clear(struct cxe_c4c *cc, u32 idx, u32 n)
{
	int len = cxe_c4_ddp_clear_once(cc, idx, n);

	if (!len)
		return true;
	pr_warn("%pISpc: a page pod clear was not confirmed (%d): aborting the connection\n",
		&cc->c.peer, len);
	/* placement stops when the chip is done with the connection */
	cxe_c4tid_do(cc->t, cxe_c4conn_abort);
	if (!wait_event_timeout(cc->t->wq,
				READ_ONCE(cc->t->st.state) == CXE_C4CONN_DONE,
				CXE_C4_FENCE_WAIT)) {
		if (cxe_c4tid_chip_done(cc->t))
			return true;
		pr_err("%pISpc: the chip did not end the connection: it may still place into a released task's pages, %u pods lost\n",
		       &cc->c.peer, n);
		return false;
	}
	len = cxe_c4_ddp_clear_once(cc, idx, n);
	if (len)
		pr_err("%pISpc: the page pod clear did not go (%d): %u pods lost\n",
		       &cc->c.peer, len, n);
	return !len;
}

/* A tag out of the table (its copy): pods cleared, then everything back */
static void cxe_c4_ddp_end(struct cxe_c4c *cc, const struct cxe_c4ddp *s)
{
	struct cxe_c4dev *d = cc->t->dev;

	bool keep;

	if (!cxe_c4_ddp_clear(cc, s->pod_idx, s->pods))
		return;
	cxe_c4dev_pods_put(d, s->pod_idx, s->pods);
	/*
	 * cxgb4 tells its upper drivers of a detach, and of a function
	 * reset, while the chip still runs, and stops it later without
	 * telling them: until then the chip may still place into the
	 * pages the pods name. They are kept from the page allocator for
	 * good (their mapping undone: behind an IOMMU the chip's writes
	 * fault), never handed back while LIO frees the task's buffer.
	 */
	keep = cxe_c4tid_chip_done(cc->t);
	if (keep)
		pr_warn_ratelimited("%pISpc: %u pages of a task kept: the chip of adapter %s may place into them until cxgb4 stops it\n",
				    &cc->c.peer, s->npages, d->name);
	cxe_c4_ddp_unmap_pages(d, s->addrs, s->pages, s->npages, keep);
}

/*
 * The bus addresses of the buffer's pages up to byte end, and where the
 * buffer starts in its first page. The pods name whole pages: every
 * entry after the first starts a page, every one before the last ends
 * one. NULL when the list is not so, or on a mapping or memory failure.
 */
static u64 *cxe_c4_ddp_map_pages(struct cxe_c4dev *d,
				 const struct cxe_data *win, u32 end,
				 u32 *npages, u32 *page_off,
				 struct page ***pagesp)
{
	struct scatterlist *sg;
	u32 pos = 0, n = 0, max, i;
	struct page **pages;
	u64 *addrs;

	if (!win->sgl || !win->nents)
		return NULL;
	*page_off = win->sgl->offset & ~PAGE_MASK;
	max = DIV_ROUND_UP(*page_off + end, PAGE_SIZE);
	addrs = kvmalloc_array(max, sizeof(*addrs), GFP_KERNEL);
	pages = kvmalloc_array(max, sizeof(*pages), GFP_KERNEL);
	if (!addrs || !pages) {
		kvfree(addrs);
		kvfree(pages);
		return NULL;
	}
	for_each_sg(win->sgl, sg, win->nents, i) {
		u32 off = sg->offset & ~PAGE_MASK, left = sg->length;
		struct page *pg = nth_page(sg_page(sg), sg->offset >> PAGE_SHIFT);

		if ((i && off) || (pos + left < end && (off + left) & ~PAGE_MASK))
			goto fail;
		for (; left && pos < end; pg = nth_page(pg, 1)) {
			u32 k = min_t(u32, left, PAGE_SIZE - off);

			if (n == max || d->ops->map_page(d, pg, &addrs[n]))
				goto fail;
			/* held while the chip may place into it */
			get_page(pg);
			pages[n++] = pg;
			pos += k;
			left -= k;
			off = 0;
		}
		if (pos >= end)
			break;
	}
	if (pos < end)
		goto fail;
	*npages = n;
	*pagesp = pages;
	return addrs;
fail:
	cxe_c4_ddp_unmap_pages(d, addrs, pages, n, false);
	return NULL;
}

/* The buffer's bytes: its scatterlist's */
static u32 cxe_c4_ddp_buf_len(const struct cxe_data *win)
{
	struct scatterlist *sg;
	u64 len = 0;
	u32 i;

	for_each_sg(win->sgl, sg, win->nents, i)
		len += sg->length;
	return min_t(u64, len, U32_MAX);
}

/*
 * The pods of slot s's tag, written to the chip before its first R2T goes
 * out: over the whole buffer, or to the window's end when the chip cannot
 * take all of its pages (s->cover_end says which). The tag, or
 * CXE_C4_NOTAG when it gets none (pods or pages the chip cannot take, a
 * device error).
 */
static u32 cxe_c4_ddp_map(struct cxe_c4c *cc, struct cxe_c4ddp *s,
			  const struct cxe_data *win)
{
	struct cxe_c4dev *d = cc->t->dev;
	u32 end = cxe_c4_ddp_buf_len(win), npages, page_off, color;
	struct page **pages = NULL;
	struct cxe_ppod_hdr h;
	u64 *addrs = NULL;
	int idx;

	if (end > win->offset + win->len)
		addrs = cxe_c4_ddp_map_pages(d, win, end, &npages, &page_off,
					     &pages);
	if (!addrs) {
		end = win->offset + win->len;
		addrs = cxe_c4_ddp_map_pages(d, win, end, &npages, &page_off,
					     &pages);
	}
	if (!addrs)
		return CXE_C4_NOTAG;
	s->cover_end = end;
	s->pods = cxe_ppod_count(page_off, end);
	idx = cxe_c4dev_pods_get(d, s->pods, &color);
	if (idx < 0) {
		cxe_c4_ddp_unmap_pages(d, addrs, pages, npages, false);
		return CXE_C4_NOTAG;
	}
	h = (struct cxe_ppod_hdr) {
		.tid = cc->t->tid,
		.tag = cxe_ppod_tag(idx, color),
		.max_offset = end,
		.page_offset = page_off,
	};
	s->pod_idx = idx;
	s->addrs = addrs;
	s->pages = pages;
	s->npages = npages;
	if (cxe_c4_ddp_pods(cc, idx, s->pods, &h, addrs, npages)) {
		/* what was written goes: a clear that fails aborts */
		cxe_c4_ddp_end(cc, s);
		return CXE_C4_NOTAG;
	}
	return h.tag;
}

/*
 * The task's live tag whose pods name the window, its windows widened to
 * take this one in (ddp_lock held); NULL when it has none
 */
static struct cxe_c4ddp *cxe_c4_ddp_again(struct cxe_c4c *cc,
					  struct cxe_task *task, u32 itt,
					  const struct cxe_data *win)
{
	u32 end = win->offset + win->len, i;
	struct cxe_c4ddp *s;

	lockdep_assert_held(&cc->ddp_lock);
	for (i = 0; i < CXE_C4_DDP_SLOTS; i++) {
		s = &cc->ddp[i];
		if (s->owner != task || s->busy || s->itt != itt ||
		    end > s->cover_end)
			continue;
		end = max(end, s->offset + s->len);
		s->offset = min(s->offset, win->offset);
		s->len = end - s->offset;
		s->r2ts++;
		return s;
	}
	return NULL;
}

u32 cxe_c4_ddp_reserve(struct cxe_conn *c, struct cxe_task *task, u32 itt,
		       const struct cxe_data *win, bool place)
{
	struct cxe_c4c *cc = cxe_c4c(c);
	struct cxe_c4ddp *s = NULL;
	u32 i, tag;

	spin_lock_bh(&cc->ddp_lock);
	s = place && cc->ddp ? cxe_c4_ddp_again(cc, task, itt, win) : NULL;
	if (s) {
		/* a later R2T of the task: the pods name its window already */
		tag = s->ttt;
		spin_unlock_bh(&cc->ddp_lock);
		return tag;
	}
	for (i = 0; place && cc->ddp && i < CXE_C4_DDP_SLOTS; i++) {
		if (cc->ddp[i].owner)
			continue;
		s = &cc->ddp[i];
		/* the task's from now on: a release waits for it */
		s->owner = task;
		s->busy = true;
		s->ttt = CXE_C4_NOTAG;
		task->ddp_live++;
		break;
	}
	spin_unlock_bh(&cc->ddp_lock);
	if (s) {
		tag = cxe_c4_ddp_map(cc, s, win);
		spin_lock_bh(&cc->ddp_lock);
		if (tag != CXE_C4_NOTAG) {
			s->itt = itt;
			s->ttt = tag;
			s->offset = win->offset;
			s->len = win->len;
			s->r2ts = 1;
			s->done_to = win->offset;
		} else {
			s->owner = NULL;
			task->ddp_live--;
		}
		s->busy = false;
		spin_unlock_bh(&cc->ddp_lock);
		wake_up_all(&cc->ddp_wq);
		if (tag != CXE_C4_NOTAG)
			return tag;
	} else if (place && cc->ddp) {
		pr_warn_ratelimited("%pISpc: all %u DDP tags in use\n",
				    &c->peer, CXE_C4_DDP_SLOTS);
	}
	/* no placement for this R2T: a distinct TTT LIO alone checks */
	spin_lock_bh(&cc->ddp_lock);
	tag = cxe_ppod_tag_noddp(&cc->t->dev->tagfmt, ++cc->noddp_gen);
	spin_unlock_bh(&cc->ddp_lock);
	return tag;
}

/* The live tag ttt of itt, ddp_lock held */
static struct cxe_c4ddp *cxe_c4_ddp_slot(struct cxe_c4c *cc, u32 ttt, u32 itt)
{
	struct cxe_c4ddp *s;
	u32 i;

	lockdep_assert_held(&cc->ddp_lock);
	if (!cc->ddp || !cxe_ppod_tag_ddp(&cc->t->dev->tagfmt, ttt))
		return NULL;
	for (i = 0; i < CXE_C4_DDP_SLOTS; i++) {
		s = &cc->ddp[i];
		if (s->owner && !s->busy && s->ttt == ttt)
			return s->itt == itt ? s : NULL;
	}
	return NULL;
}

/*
 * A live slot's tag ends (ddp_lock held): busy from here, matching no
 * TTT, its pods to clear (a copy in *done), until cxe_c4_ddp_ended()
 */
static void cxe_c4_ddp_ending(struct cxe_c4ddp *s, struct cxe_c4ddp *done)
{
	s->busy = true;
	s->ttt = CXE_C4_NOTAG;
	*done = *s;
}

/* Its pods cleared (the fence), the slot is free and its task owes it no more */
static void cxe_c4_ddp_ended(struct cxe_c4c *cc, struct cxe_c4ddp *s,
			     const struct cxe_c4ddp *done)
{
	cxe_c4_ddp_end(cc, done);
	spin_lock_bh(&cc->ddp_lock);
	s->owner->ddp_live--;
	s->owner = NULL;
	s->busy = false;
	spin_unlock_bh(&cc->ddp_lock);
	wake_up_all(&cc->ddp_wq);
}

/*
 * May a Data-Out be taken by its TTT? A TTT without pods, always (LIO
 * checks it); one with pods, only as a live tag of this ITT, inside the
 * windows of the R2Ts it went out with. The last byte of a tag's only R2T
 * ends it when its pods name nothing after that byte; a tag later R2Ts
 * may still carry, or did carry (their sequences need not come in
 * order), lives until its task is released.
 */
bool cxe_c4_ddp_check(struct cxe_conn *c, u32 ttt, u32 itt, u32 off, u32 len,
		      bool final)
{
	struct cxe_c4c *cc = cxe_c4c(c);
	struct cxe_c4ddp *s, done;
	bool ok, end = false;

	if (!cxe_ppod_tag_ddp(&cc->t->dev->tagfmt, ttt))
		return true;
	spin_lock_bh(&cc->ddp_lock);
	s = cxe_c4_ddp_slot(cc, ttt, itt);
	ok = s && cxe_ddp_in_window(s->offset, s->len, off, len);
	if (ok && final && s->r2ts == 1 && off + len == s->cover_end &&
	    off + len == s->offset + s->len) {
		cxe_c4_ddp_ending(s, &done);
		end = true;
	}
	spin_unlock_bh(&cc->ddp_lock);
	if (end)
		cxe_c4_ddp_ended(cc, s, &done);
	return ok;
}

/* Whether a slot of task (of any task when NULL) is busy */
static bool cxe_c4_ddp_busy(struct cxe_c4c *cc, struct cxe_task *task)
{
	bool busy = false;
	u32 i;

	spin_lock_bh(&cc->ddp_lock);
	for (i = 0; !busy && i < CXE_C4_DDP_SLOTS; i++)
		busy = cc->ddp[i].owner && cc->ddp[i].busy &&
		       (!task || cc->ddp[i].owner == task);
	spin_unlock_bh(&cc->ddp_lock);
	return busy;
}

/*
 * Every live tag of task (of every task when NULL) ended, each cleared
 * on the chip; then, while a slot of it is busy (being set up by the TX
 * thread, or ended by the RX thread), wait and go again.
 */
static void cxe_c4_ddp_end_all(struct cxe_c4c *cc, struct cxe_task *task)
{
	struct cxe_c4ddp done;
	bool end;
	u32 i;

	for (;;) {
		for (i = 0; i < CXE_C4_DDP_SLOTS; i++) {
			struct cxe_c4ddp *s = &cc->ddp[i];

			spin_lock_bh(&cc->ddp_lock);
			end = s->owner && !s->busy && (!task || s->owner == task);
			if (end)
				cxe_c4_ddp_ending(s, &done);
			spin_unlock_bh(&cc->ddp_lock);
			if (end)
				cxe_c4_ddp_ended(cc, s, &done);
		}
		if (!cxe_c4_ddp_busy(cc, task))
			return;
		wait_event(cc->ddp_wq, !cxe_c4_ddp_busy(cc, task));
	}
}

/*
 * The task's tags still live, each cleared on the chip before this
 * returns (the fence), tags being set up or ended by another thread
 * waited for. Without a table (the connection released, or one that
 * never placed) they were fenced by conn_release.
 */
void cxe_c4_ddp_release(struct cxe_conn *c, struct cxe_task *task)
{
	struct cxe_c4c *cc = cxe_c4c(c);

	if (cc->ddp)
		cxe_c4_ddp_end_all(cc, task);
	/* tags of a connection released before this one (ERL 2) died there */
	task->ddp_live = 0;
}

/* conn_release, before the TID goes back: every tag left is fenced */
void cxe_c4_ddp_exit(struct cxe_c4c *cc)
{
	if (!cc->ddp)
		return;
	cxe_c4_ddp_end_all(cc, NULL);
	kfree(cc->ddp);
	cc->ddp = NULL;
}

/*
 * A Data-Out the chip placed, handed up. On a T6 one completion stands
 * for the placed Data-Outs of its R2T before it that were never handed
 * up (rx.h), which stands_for says (bytes on the wire between it and the
 * last PDU handed up): the PDU layer is told so (CXE_RX_RANGE), from
 * where the tag's data last handed up ended. Without such bytes a
 * Data-Out that begins further on leaves a gap nobody sent: it is handed
 * up as it is, for the PDU layer to refuse, as is one of no live tag.
 */
void cxe_c4_ddp_placed(struct cxe_c4c *cc, const struct cxe_c4rx_pdu *pdu,
		       bool stands_for, u32 *flags)
{
	u32 itt = cxe_get_be32(pdu->hdr + 16), ttt = cxe_get_be32(pdu->hdr + 20);
	u32 off = cxe_get_be32(pdu->hdr + 40), end = off + pdu->dlen;
	struct cxe_c4ddp *s;
	u32 start = off;

	spin_lock_bh(&cc->ddp_lock);
	s = cxe_c4_ddp_slot(cc, ttt, itt);
	if (s && stands_for && off > s->done_to) {
		start = s->done_to;
		*flags |= CXE_RX_RANGE;
		cc->c.rx_range_start = start;
	}
	if (s && end > s->done_to)
		s->done_to = end;
	spin_unlock_bh(&cc->ddp_lock);
	cxe_cstat(&cc->c, CXE_STAT_BYTES_PLACED, end - start);
}
