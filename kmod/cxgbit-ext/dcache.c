// SPDX-License-Identifier: GPL-2.0-only
/*
 * Data buffer cache: the pages of a READ's or WRITE's data, kept by the
 * connection from one command to the next.
 *
 * Why: LIO allocates every data command's buffer page by page and frees it
 * when the command ends. Where the kernel clears every page it hands out
 * (init_on_alloc, Debian's default), that is a page clear per 4 KiB of
 * data on top of the allocator, on every I/O: more than the transport's
 * own work at 4 KiB. A connection that keeps the buffers of its ended
 * commands and lends them to the next one of the same size pays neither.
 *
 * The rules, each here and nowhere else:
 * - Which commands: those whose buffer LIO itself leaves uncleared
 *   (transport_generic_new_cmd(): SCSI READ and WRITE, SCF_SCSI_DATA_CDB),
 *   except bidirectional ones and COMPARE AND WRITE, which LIO gives a
 *   second buffer of its own. A cached page has only ever held data of
 *   this connection's own commands.
 * - Only at ERL 0. Above it LIO's close does not wait for the
 *   connection's commands, and connection recovery (ERL 2) moves them to
 *   another connection, whose cache did not lend their buffers.
 * - Same shape as LIO's: data_length bytes in whole pages, the last one
 *   cut short (target_alloc_sgl()). The command owns it with
 *   SCF_PASSTHROUGH_SG_TO_MEM_NOALLOC, so LIO neither allocates nor frees
 *   it; cxe_dcache_return() (the transport's unmap) takes it back.
 * - A buffer goes back into the cache only when the connection is live
 *   and no one else holds a page of it (TCP keeps the pages of sent
 *   Data-In until they are acknowledged); else its pages are put.
 * - Once the receive loop has ended, LIO may unmap a command before its
 *   backend is done with it (iscsit_free_cmd() on a closing connection):
 *   from then on nothing is taken back, and every buffer, lent or cached,
 *   is freed with the connection, after LIO has waited for its commands.
 * - The cache holds at most data_cache_kib per connection, the buffers
 *   returned longest ago dropped first, so a change of I/O size does not
 *   leave it full of a size no longer used; and the kernel takes back any
 *   of it when it needs memory (a shrinker, cxe_dcache_scan()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <target/target_core_base.h>
#include <target/iscsi/iscsi_target_core.h>
#include <target/iscsi/iscsi_transport.h>

#include "core.h"

static unsigned int data_cache_kib = 4096;
module_param(data_cache_kib, uint, 0644);
MODULE_PARM_DESC(data_cache_kib,
		 "KiB of READ/WRITE data buffers each offloaded connection keeps for its next commands, read at login (0: none; default 4096)");

struct cxe_dbuf {
	struct list_head	node;	/* the lent list, or its size's free list */
	struct list_head	lru;	/* cached: the cache's return order */
	unsigned int		npages;
	struct scatterlist	sg[];
};

/* every connection's cache, for the shrinker; cxe_dcaches_lock, then dc->lock */
static LIST_HEAD(cxe_dcaches);
static DEFINE_SPINLOCK(cxe_dcaches_lock);

void cxe_dcache_init(struct cxe_dcache *dc)
{
	unsigned int i;

	spin_lock_init(&dc->lock);
	INIT_LIST_HEAD(&dc->lent);
	INIT_LIST_HEAD(&dc->lru);
	for (i = 0; i < CXE_DCACHE_MAX_PAGES; i++)
		INIT_LIST_HEAD(&dc->free[i]);
	dc->cap = READ_ONCE(data_cache_kib) / (PAGE_SIZE / SZ_1K);
	spin_lock(&cxe_dcaches_lock);
	list_add_tail(&dc->node, &cxe_dcaches);
	spin_unlock(&cxe_dcaches_lock);
}

/* KiB of idle buffers the cache holds now (the connections file) */
unsigned int cxe_dcache_kib(const struct cxe_dcache *dc)
{
	return READ_ONCE(dc->pages) * (PAGE_SIZE / SZ_1K);
}

static void cxe_dbuf_free(struct cxe_dbuf *b)
{
	unsigned int i;

	for (i = 0; i < b->npages; i++)
		put_page(sg_page(&b->sg[i]));
	kfree(b);
}

static struct cxe_dbuf *cxe_dbuf_alloc(unsigned int npages)
{
	struct cxe_dbuf *b;
	struct page *p;

	b = kmalloc(struct_size(b, sg, npages), GFP_KERNEL);
	if (!b)
		return NULL;
	sg_init_table(b->sg, npages);
	for (b->npages = 0; b->npages < npages; b->npages++) {
		p = alloc_page(GFP_KERNEL);
		if (!p) {
			cxe_dbuf_free(b);
			return NULL;
		}
		sg_set_page(&b->sg[b->npages], p, PAGE_SIZE, 0);
	}
	return b;
}

static bool cxe_dcache_wants(const struct iscsit_cmd *cmd)
{
	const struct se_cmd *se = &cmd->se_cmd;

	return !cmd->conn->sess->sess_ops->ErrorRecoveryLevel &&
	       (se->se_cmd_flags & SCF_SCSI_DATA_CDB) &&
	       !(se->se_cmd_flags & (SCF_BIDI | SCF_COMPARE_AND_WRITE |
				     SCF_PASSTHROUGH_SG_TO_MEM_NOALLOC)) &&
	       se->data_length && !cmd->sense_reason;
}

/*
 * Give a command set up by iscsit_setup_scsi_cmd() its data buffer from
 * the cache, or a new one the cache takes back later. Nothing when the
 * command is not one the cache serves, or no buffer can be had: LIO then
 * allocates it as for any command.
 */
void cxe_dcache_lend(struct cxe_conn *c, struct iscsit_cmd *cmd)
{
	struct cxe_dcache *dc = &c->dcache;
	struct cxe_task *task = iscsit_priv_cmd(cmd);
	struct se_cmd *se = &cmd->se_cmd;
	struct cxe_dbuf *b;
	unsigned int npages;

	if (!dc->cap || !cxe_dcache_wants(cmd))
		return;
	npages = DIV_ROUND_UP(se->data_length, PAGE_SIZE);
	if (npages > CXE_DCACHE_MAX_PAGES || npages > dc->cap)
		return;

	spin_lock(&dc->lock);
	b = list_first_entry_or_null(&dc->free[npages - 1], struct cxe_dbuf, node);
	if (b) {
		list_move(&b->node, &dc->lent);
		list_del(&b->lru);
		WRITE_ONCE(dc->pages, dc->pages - npages);
	}
	spin_unlock(&dc->lock);
	if (b) {
		cxe_cstat(c, CXE_STAT_DCACHE_HITS, 1);
	} else {
		b = cxe_dbuf_alloc(npages);
		if (!b)
			return;
		spin_lock(&dc->lock);
		list_add(&b->node, &dc->lent);
		spin_unlock(&dc->lock);
		cxe_cstat(c, CXE_STAT_DCACHE_MISSES, 1);
	}
	b->sg[npages - 1].length = se->data_length - (npages - 1) * PAGE_SIZE;
	se->t_data_sg = b->sg;
	se->t_data_nents = npages;
	se->se_cmd_flags |= SCF_PASSTHROUGH_SG_TO_MEM_NOALLOC;
	task->dbuf = b;
}

/* Does the cache hold the only reference to each page of b? */
static bool cxe_dbuf_idle(struct cxe_dbuf *b)
{
	unsigned int i;

	for (i = 0; i < b->npages; i++)
		if (page_ref_count(sg_page(&b->sg[i])) != 1)
			return false;
	return true;
}

/*
 * Move the buffers returned longest ago onto *drop until the cache holds
 * at most keep pages; the number of pages moved. dc->lock held.
 */
static unsigned long cxe_dcache_evict(struct cxe_dcache *dc, unsigned int keep,
				      struct list_head *drop)
{
	struct cxe_dbuf *old;
	unsigned long n = 0;

	while (dc->pages > keep) {
		old = list_first_entry(&dc->lru, struct cxe_dbuf, lru);
		list_del(&old->lru);
		list_move(&old->node, drop);
		WRITE_ONCE(dc->pages, dc->pages - old->npages);
		n += old->npages;
	}
	return n;
}

/* The command is done with its buffer: keep it for the next, or free it. */
void cxe_dcache_return(struct cxe_conn *c, struct cxe_task *task)
{
	struct cxe_dcache *dc = &c->dcache;
	struct cxe_dbuf *b = task->dbuf, *old;
	LIST_HEAD(drop);
	bool keep;

	if (!b)
		return;
	keep = cxe_dbuf_idle(b);
	spin_lock(&dc->lock);
	if (dc->closing) {
		/* the connection's free puts it, once LIO's wait is over */
		spin_unlock(&dc->lock);
		return;
	}
	task->dbuf = NULL;
	if (!keep) {
		list_move(&b->node, &drop);
	} else {
		list_move(&b->node, &dc->free[b->npages - 1]);
		list_add_tail(&b->lru, &dc->lru);
		WRITE_ONCE(dc->pages, dc->pages + b->npages);
		cxe_dcache_evict(dc, dc->cap, &drop);
	}
	spin_unlock(&dc->lock);
	list_for_each_entry_safe(b, old, &drop, node)
		cxe_dbuf_free(b);
}

/* The receive loop has ended: no buffer goes back from now on. */
void cxe_dcache_close(struct cxe_dcache *dc)
{
	spin_lock(&dc->lock);
	dc->closing = true;
	spin_unlock(&dc->lock);
}

/* With the connection, after LIO has waited for all its commands. */
void cxe_dcache_destroy(struct cxe_dcache *dc)
{
	struct cxe_dbuf *b, *n;
	unsigned int i;

	spin_lock(&cxe_dcaches_lock);
	list_del(&dc->node);
	spin_unlock(&cxe_dcaches_lock);
	list_for_each_entry_safe(b, n, &dc->lent, node)
		cxe_dbuf_free(b);
	for (i = 0; i < CXE_DCACHE_MAX_PAGES; i++)
		list_for_each_entry_safe(b, n, &dc->free[i], node)
			cxe_dbuf_free(b);
}

/* ---- the kernel takes idle buffers back when it needs memory ---- */

static unsigned long cxe_dcache_count(struct shrinker *sh,
				      struct shrink_control *sc)
{
	struct cxe_dcache *dc;
	unsigned long n = 0;

	spin_lock(&cxe_dcaches_lock);
	list_for_each_entry(dc, &cxe_dcaches, node)
		n += READ_ONCE(dc->pages);
	spin_unlock(&cxe_dcaches_lock);
	return n ?: SHRINK_EMPTY;
}

/* Up to nr_to_scan pages, the longest idle of each connection first. */
static unsigned long cxe_dcache_scan(struct shrinker *sh,
				     struct shrink_control *sc)
{
	struct cxe_dbuf *b, *n;
	struct cxe_dcache *dc;
	unsigned long freed = 0, want;
	LIST_HEAD(drop);

	spin_lock(&cxe_dcaches_lock);
	list_for_each_entry(dc, &cxe_dcaches, node) {
		if (freed >= sc->nr_to_scan)
			break;
		want = sc->nr_to_scan - freed;
		spin_lock(&dc->lock);
		freed += cxe_dcache_evict(dc, dc->pages > want ?
					  dc->pages - want : 0, &drop);
		spin_unlock(&dc->lock);
	}
	spin_unlock(&cxe_dcaches_lock);
	list_for_each_entry_safe(b, n, &drop, node)
		cxe_dbuf_free(b);
	return freed ?: SHRINK_STOP;
}

/*
 * Kernels from 6.7 allocate a shrinker (shrinker_alloc(), exported from
 * then on: Kbuild checks the export); earlier ones register one of ours.
 */
#ifdef CXE_HAVE_SHRINKER_ALLOC
static struct shrinker *cxe_dcache_shrinker;

int cxe_dcache_module_init(void)
{
	cxe_dcache_shrinker = shrinker_alloc(0, "cxgbit_ext-data-cache");
	if (!cxe_dcache_shrinker)
		return -ENOMEM;
	cxe_dcache_shrinker->count_objects = cxe_dcache_count;
	cxe_dcache_shrinker->scan_objects = cxe_dcache_scan;
	shrinker_register(cxe_dcache_shrinker);
	return 0;
}

void cxe_dcache_module_exit(void)
{
	shrinker_free(cxe_dcache_shrinker);
}
#else
static struct shrinker cxe_dcache_shrinker = {
	.count_objects	= cxe_dcache_count,
	.scan_objects	= cxe_dcache_scan,
	.seeks		= DEFAULT_SEEKS,
};

int cxe_dcache_module_init(void)
{
	return register_shrinker(&cxe_dcache_shrinker, "cxgbit_ext-data-cache");
}

void cxe_dcache_module_exit(void)
{
	unregister_shrinker(&cxe_dcache_shrinker);
}
#endif
