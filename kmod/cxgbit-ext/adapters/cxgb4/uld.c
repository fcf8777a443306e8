// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: the Chelsio T5/T6 adapters the cxgb4 driver runs, taken
 * as cxgb4's upper-layer driver for iSCSI target offload (the
 * CXGB4_ULD_ISCSIT slot, the in-tree cxgbit's: cxgbit_ext.ko, which this
 * module needs, keeps that module from loading, as cxgb4_register_uld()
 * checks nothing).
 *
 * What is here: the ULD registration, the adapters cxgb4 attaches and
 * detaches with their state, given to the device glue (dev.h) with what
 * it asks of them done through cxgb4 and libcxgb (servers, the path and
 * L2T entry of an accepted connection, its messages, its TID's release),
 * and the chip's messages handed to it; its page pods through libcxgb's
 * pod manager, shared with cxgb4i as cxgbit shares it. None of this has
 * run on a Chelsio adapter: a real one serves portals only when the
 * module is loaded with cxgb4_hw=1 (docs/cxgb4.md).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-mapping.h>
#include <linux/if_vlan.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/xarray.h>
#include <net/dst.h>
#include <net/ipv6.h>
#include <net/neighbour.h>

#include "cxgb4.h"
#include "cxgb4_uld.h"
#include "clip_tbl.h"	/* after cxgb4.h: it takes struct adapter */
#include "l2t.h"
#include "libcxgb_cm.h"
#include "libcxgb_ppm.h"
/* their layout in the kernel's own cxgb4.ko, asserted (cxgb4-layout) */
#include "kernel_layout.h"

#include "../../cxgbit_ext.h"
#include "conn.h"
#include "dev.h"

static bool cxgb4_hw;
module_param(cxgb4_hw, bool, 0444);
MODULE_PARM_DESC(cxgb4_hw,
		 "serve offloaded portals on Chelsio T5/T6 adapters through code never run on Chelsio hardware (default: no)");

/*
 * What a connection the device accepted holds of cxgb4's, from
 * accept_path to release_tid: the L2T entry toward its peer (the accept
 * reply goes out through it, then nothing else does), its queues, and
 * for IPv6 its local address's entry in the CLIP table
 */
struct cxe_c4real_tid {
	struct l2t_entry	*l2t;
	u16			txq;		/* the port's first offload queue */
	u16			ctrlq;		/* the port's control queue */
	bool			replied;
	bool			ipv6;
	bool			lost;		/* to a reset of the chip */
	struct in6_addr		local6;
	struct rcu_head		rcu;
};

/*
 * One Chelsio adapter cxgb4 attached to us, from add to DETACH (or our
 * unload): the glue's device (dev.h), what cxgb4 told us of it, and the
 * connections it accepted (TID -> struct cxe_c4real_tid)
 */
struct cxe_c4real {
	struct cxe_c4dev	d;
	struct cxgb4_lld_info	lldi;
	char			kind[4];
	struct xarray		tids;		/* TID -> struct cxe_c4real_tid */
	/* STID -> the address of an IPv6 server in the CLIP table */
	struct xarray		stid6;
	bool			detached;	/* cxgb4 is done with it */
	atomic_t		calls;		/* calls into cxgb4 under way */
	/*
	 * libcxgb's pod manager of the adapter with a reference, NULL when
	 * it places nothing or since DETACH (under ppm_lock)
	 */
	spinlock_t		ppm_lock;
	struct cxgbi_ppm	*ppm;
};

static struct cxe_c4real *to_real(struct cxe_c4dev *d)
{
	return container_of(d, struct cxe_c4real, d);
}

/*
 * Once cxgb4 has detached the adapter its tables and queues are freed.
 * Every call into cxgb4 for it is made between cxe_c4real_enter() and
 * cxe_c4real_leave(), from any context: none starts once DETACH began,
 * and DETACH returns to cxgb4 only when those under way have ended. A
 * call refused so fails (or, for a release, forgets), which the glue
 * takes as a request that did not go.
 */
static bool cxe_c4real_enter(struct cxe_c4dev *d)
{
	struct cxe_c4real *r = to_real(d);

	atomic_inc(&r->calls);
	smp_mb__after_atomic();	/* against DETACH's store, then read */
	if (!READ_ONCE(r->detached))
		return true;
	if (atomic_dec_and_test(&r->calls))
		wake_up_var(&r->calls);
	return false;
}

static void cxe_c4real_leave(struct cxe_c4dev *d)
{
	struct cxe_c4real *r = to_real(d);

	if (atomic_dec_and_test(&r->calls))
		wake_up_var(&r->calls);
}

/* DETACH: no call into cxgb4 starts from now on, those under way end */
static void cxe_c4real_quiesce(struct cxe_c4real *r)
{
	WRITE_ONCE(r->detached, true);
	smp_mb();	/* against cxe_c4real_enter()'s count, then read */
	wait_var_event(&r->calls, !atomic_read(&r->calls));
}

/* An IPv6 address of ours into the adapter's CLIP table (0), and out */
static int cxe_c4real_clip_get(struct cxe_c4real *r, const struct in6_addr *a)
{
	return cxgb4_clip_get(r->lldi.ports[0], (const u32 *)a->s6_addr, 1);
}

static void cxe_c4real_clip_put(struct cxe_c4real *r, const struct in6_addr *a)
{
	cxgb4_clip_release(r->lldi.ports[0], (const u32 *)a->s6_addr, 1);
}

static int cxe_c4real_alloc_stid(struct cxe_c4dev *d, int family)
{
	int stid;

	if (!cxe_c4real_enter(d))
		return -ENODEV;
	stid = cxgb4_alloc_stid(to_real(d)->lldi.tids, family, d);
	cxe_c4real_leave(d);
	return stid < 0 ? -ENOSPC : stid;
}

/*
 * The STID settled (no server on it, no answer owed): an IPv6 server's
 * address leaves the CLIP table then, as mainline lets it go after the
 * removal's answer. Any context.
 */
static void cxe_c4real_free_stid(struct cxe_c4dev *d, u32 stid, int family)
{
	struct cxe_c4real *r = to_real(d);
	struct in6_addr *a = NULL;

	if (family == AF_INET6)
		a = xa_erase_bh(&r->stid6, stid);
	if (cxe_c4real_enter(d)) {
		if (a)
			cxe_c4real_clip_put(r, a);
		cxgb4_free_stid(r->lldi.tids, stid, family);
		cxe_c4real_leave(d);
	}
	kfree(a);
}

/*
 * An IPv6 server's address (not a wildcard's) goes into the adapter's
 * CLIP table first, as mainline puts it, and stays there until the
 * STID settles (free_stid), whatever becomes of the request.
 */
static int cxe_c4real_create_server6(struct cxe_c4real *r, u32 stid,
				     const struct sockaddr_in6 *sin6)
{
	struct in6_addr *a;
	int ret;

	if (!ipv6_addr_any(&sin6->sin6_addr)) {
		a = kmemdup(&sin6->sin6_addr, sizeof(*a), GFP_KERNEL);
		if (!a)
			return -ENOMEM;
		if (cxe_c4real_clip_get(r, a)) {
			kfree(a);
			return -ENOSPC;
		}
		ret = xa_insert_bh(&r->stid6, stid, a, GFP_KERNEL);
		if (ret) {
			cxe_c4real_clip_put(r, a);
			kfree(a);
			return ret;
		}
	}
	return cxgb4_create_server6(r->lldi.ports[0], stid, &sin6->sin6_addr,
				    sin6->sin6_port, r->lldi.rxq_ids[0]);
}

/* The server's answer comes on our first receive queue */
static int cxe_c4real_create_server(struct cxe_c4dev *d, u32 stid,
				    const struct sockaddr_storage *addr)
{
	const struct sockaddr_in *sin = (const void *)addr;
	struct cxe_c4real *r = to_real(d);
	int ret;

	if (addr->ss_family != AF_INET && addr->ss_family != AF_INET6)
		return -EAFNOSUPPORT;
	if (!cxe_c4real_enter(d))
		return -ENODEV;
	if (addr->ss_family == AF_INET6)
		ret = cxe_c4real_create_server6(r, stid, (const void *)addr);
	else
		ret = cxgb4_create_server(r->lldi.ports[0], stid,
					  sin->sin_addr.s_addr, sin->sin_port,
					  0, r->lldi.rxq_ids[0]);
	cxe_c4real_leave(d);
	return ret > 0 ? net_xmit_errno(ret) : ret;
}

static int cxe_c4real_remove_server(struct cxe_c4dev *d, u32 stid, bool ipv6)
{
	struct cxe_c4real *r = to_real(d);
	int ret;

	if (!cxe_c4real_enter(d))
		return -ENODEV;
	ret = cxgb4_remove_server(r->lldi.ports[0], stid, r->lldi.rxq_ids[0],
				  ipv6);
	cxe_c4real_leave(d);
	return ret > 0 ? net_xmit_errno(ret) : ret;
}

static bool cxe_c4real_has_port(struct cxe_c4dev *d,
				const struct net_device *nd)
{
	struct cxe_c4real *r = to_real(d);
	u32 i;

	for (i = 0; i < r->lldi.nports; i++)
		if (r->lldi.ports[i] == nd)
			return true;
	return false;
}

/* The port under a VLAN device; bonds are not offloaded (as mainline) */
static struct net_device *cxe_c4real_port(struct net_device *nd)
{
	if (nd->priv_flags & IFF_BONDING)
		return NULL;
	return is_vlan_dev(nd) ? vlan_dev_real_dev(nd) : nd;
}

/*
 * The route toward the peer through one of the adapter's ports (libcxgb's
 * lookup, which only answers for the adapter's own ports), the L2T entry
 * of its next hop, and the queues of that port, as mainline takes them;
 * for IPv6 the local address into the CLIP table. A peer on this host (a
 * loopback route) is not offloaded, nor one whose route needs a scope (a
 * link-local address). The TID is the device's from here to release_tid.
 */
static int cxe_c4real_path(struct cxe_c4dev *d,
			   const struct cxe_cpl_accept_req *r,
			   struct cxe_c4_path *p, struct cxe_cpl_accept *a)
{
	struct cxe_c4real *cr = to_real(d);
	struct cxe_c4real_tid *rt;
	struct net_device *port;
	struct dst_entry *dst;
	struct neighbour *n;
	bool v6 = r->ip_version == 6;
	__be32 local, peer;
	u8 ip6[2][16];
	u32 idx, step;
	int ret;

	if (v6) {
		memcpy(ip6[0], r->local_ip, 16);
		memcpy(ip6[1], r->peer_ip, 16);
		dst = cxgb_find_route6(&cr->lldi, cxe_c4real_port, ip6[0],
				       ip6[1], htons(r->local_port),
				       htons(r->peer_port), r->tos, 0);
	} else {
		memcpy(&local, r->local_ip, 4);
		memcpy(&peer, r->peer_ip, 4);
		dst = cxgb_find_route(&cr->lldi, cxe_c4real_port, local, peer,
				      htons(r->local_port),
				      htons(r->peer_port), r->tos);
	}
	if (!dst)
		return -ENETUNREACH;
	rt = kzalloc(sizeof(*rt), GFP_KERNEL);
	n = dst_neigh_lookup(dst, v6 ? (const void *)ip6[1] : &peer);
	ret = -ENETUNREACH;
	if (!rt || !n || n->dev->flags & IFF_LOOPBACK)
		goto out;
	port = cxe_c4real_port(n->dev);
	if (!port)
		goto out;
	if (!(READ_ONCE(n->nud_state) & NUD_VALID))
		neigh_event_send(n, NULL);
	ret = -ENOMEM;
	rt->l2t = cxgb4_l2t_get(cr->lldi.l2t, n, port, 0);
	if (!rt->l2t)
		goto out;
	idx = cxgb4_port_idx(port);
	step = max_t(u32, cr->lldi.ntxq / cr->lldi.nports, 1);
	rt->txq = idx * step;
	rt->ctrlq = idx;
	step = max_t(u32, cr->lldi.nrxq / cr->lldi.nports, 1);
	a->rss_qid = cr->lldi.rxq_ids[min_t(u32, idx * step, cr->lldi.nrxq - 1)];
	a->l2t_idx = rt->l2t->idx;
	a->tx_chan = cxgb4_port_chan(port);
	a->smac_idx = ((struct port_info *)netdev_priv(port))->smt_idx;
	p->mtus = cr->lldi.mtus;
	p->mtu = dst_mtu(dst);
	p->speed_mbps = ((struct port_info *)netdev_priv(port))->link_cfg.speed;
	p->pf = cr->lldi.pf;
	/* as cxgbit: with DCB, the flow's priority is its VLAN's, 0 untagged */
	p->dcb = IS_ENABLED(CONFIG_CHELSIO_T4_DCB);
	if (rt->l2t->vlan != VLAN_NONE)
		p->dcb_prio = (rt->l2t->vlan & VLAN_PRIO_MASK) >> VLAN_PRIO_SHIFT;
	if (v6) {
		memcpy(rt->local6.s6_addr, ip6[0], 16);
		if (cxe_c4real_clip_get(cr, &rt->local6)) {
			cxgb4_l2t_release(rt->l2t);
			ret = -ENOSPC;
			goto out;
		}
		rt->ipv6 = true;
	}
	ret = xa_insert_bh(&cr->tids, r->tid, rt, GFP_KERNEL);
	if (ret) {
		if (v6)
			cxe_c4real_clip_put(cr, &rt->local6);
		cxgb4_l2t_release(rt->l2t);
		goto out;
	}
	cxgb4_insert_tid(cr->lldi.tids, cr, r->tid, v6 ? AF_INET6 : AF_INET);
	rt = NULL;
out:
	if (n)
		neigh_release(n);
	dst_release(dst);
	kfree(rt);
	return ret;
}

static int cxe_c4real_accept_path(struct cxe_c4dev *d,
				  const struct cxe_cpl_accept_req *r,
				  struct cxe_c4_path *p, struct cxe_cpl_accept *a)
{
	int ret;

	if (!cxe_c4real_enter(d))
		return -ENODEV;
	ret = cxe_c4real_path(d, r, p, a);
	cxe_c4real_leave(d);
	return ret;
}

/*
 * A message of an accepted connection, on its port's queue: the accept
 * reply through its L2T entry (which resolves the next hop first), every
 * later one as is. The glue sends a TID's messages one at a time.
 */
static int cxe_c4real_send(struct cxe_c4dev *d, u32 tid, struct sk_buff *skb)
{
	struct cxe_c4real *cr = to_real(d);
	struct cxe_c4real_tid *rt;
	int ret = -ENOENT;

	if (!cxe_c4real_enter(d))
		goto out;
	rcu_read_lock();
	rt = xa_load(&cr->tids, tid);
	if (rt && READ_ONCE(d->up)) {
		/*
		 * The accept reply is a connection set-up message: the port's
		 * control queue, through the next hop's L2T entry. The flow's
		 * own requests (FW_FLOWC_WR first) go on its offload queue,
		 * where the firmware takes nothing of a flow before its FLOWC.
		 */
		if (!rt->replied) {
			rt->replied = true;
			set_wr_txq(skb, CPL_PRIORITY_SETUP, rt->ctrlq);
			ret = cxgb4_l2t_send(cr->lldi.ports[0], skb, rt->l2t);
		} else {
			set_wr_txq(skb, CPL_PRIORITY_DATA, rt->txq);
			ret = cxgb4_ofld_send(cr->lldi.ports[0], skb);
		}
		skb = NULL;
	}
	rcu_read_unlock();
	cxe_c4real_leave(d);
out:
	kfree_skb(skb);
	/* cxgb4 answers NET_XMIT_SUCCESS (0) or NET_XMIT_DROP, or an errno */
	ret = net_xmit_eval(ret);
	return ret > 0 ? net_xmit_errno(ret) : ret;
}

/*
 * The TID back to the chip (cxgb4 sends the release) and its L2T entry
 * dropped; once the adapter is detached, cxgb4's tables are gone with it
 */
static void cxe_c4real_release_tid(struct cxe_c4dev *d, u32 tid, bool ipv6)
{
	struct cxe_c4real *cr = to_real(d);
	struct cxe_c4real_tid *rt = xa_erase_bh(&cr->tids, tid);

	if (cxe_c4real_enter(d)) {
		/*
		 * cxgb4_remove_tid() tells the chip; a TID a reset took may
		 * be a new connection's by now: its table entry is left for
		 * cxgb4 to overwrite when it gives the TID out again
		 */
		if (!rt || !rt->lost)
			cxgb4_remove_tid(cr->lldi.tids, 0, tid,
					 ipv6 ? AF_INET6 : AF_INET);
		if (rt && rt->ipv6)
			cxe_c4real_clip_put(cr, &rt->local6);
		if (rt)
			cxgb4_l2t_release(rt->l2t);
		cxe_c4real_leave(d);
	}
	if (rt)
		kfree_rcu(rt, rcu);
}

/*
 * Pods from libcxgb's manager, whose index the glue takes is the one a
 * tag names (the manager's base_idx above its own), with the colour the
 * manager keeps for it. Once the adapter is detached there are none, and
 * pods given back then are the manager's no more.
 */
static int cxe_c4real_pods_get(struct cxe_c4dev *d, u32 n, u32 *color)
{
	struct cxe_c4real *cr = to_real(d);
	u32 idx, tag;
	int ret = -ENODEV;

	spin_lock_bh(&cr->ppm_lock);
	if (cr->ppm) {
		ret = cxgbi_ppm_ppods_reserve(cr->ppm, n * CXE_PPOD_PAGES, 0,
					      &idx, &tag, 0);
		if (ret >= 0 && ret != n) {
			cxgbi_ppm_ppod_release(cr->ppm, idx);
			ret = -ERANGE;
		} else if (ret >= 0) {
			ret = cr->ppm->base_idx + idx;
			*color = tag & CXE_PPOD_TAG_COLOR_MASK;
		}
	}
	spin_unlock_bh(&cr->ppm_lock);
	return ret;
}

static void cxe_c4real_pods_put(struct cxe_c4dev *d, u32 idx, u32 n)
{
	struct cxe_c4real *cr = to_real(d);

	spin_lock_bh(&cr->ppm_lock);
	if (cr->ppm)
		cxgbi_ppm_ppod_release(cr->ppm, idx - cr->ppm->base_idx);
	spin_unlock_bh(&cr->ppm_lock);
}

/* The chip writes placed data into pg: mapped for the device to write */
static int cxe_c4real_map_page(struct cxe_c4dev *d, struct page *pg,
			       u64 *addr)
{
	struct device *dev = &to_real(d)->lldi.pdev->dev;
	dma_addr_t a = dma_map_page(dev, pg, 0, PAGE_SIZE, DMA_FROM_DEVICE);

	if (dma_mapping_error(dev, a))
		return -ENOMEM;
	*addr = a;
	return 0;
}

static void cxe_c4real_unmap_page(struct cxe_c4dev *d, u64 addr)
{
	dma_unmap_page(&to_real(d)->lldi.pdev->dev, addr, PAGE_SIZE,
		       DMA_FROM_DEVICE);
}

/*
 * The adapter's pods, as cxgbit sets them up: libcxgb's manager of the
 * iSCSI pod region cxgb4 reports (shared with cxgb4i through
 * lldi->iscsi_ppm), the tag format from the chip's tag mask. Placement
 * needs the chip's first page size to be the 4 KiB pods name (a tag's
 * page size selector is 0) and, as mainline, at least 1024 pods. 0 pods
 * otherwise, with the reason.
 */
static void cxe_c4real_pods_init(struct cxe_c4real *cr)
{
	const struct cxgb4_lld_info *lldi = &cr->lldi;
	struct cxgbi_tag_format tformat = {};
	const char *why = NULL;
	struct cxgbi_ppm *ppm;
	u64 base;
	u32 i;

	if (cxe_ppod_tagfmt_init(&cr->d.tagfmt, lldi->iscsi_tagmask))
		why = "a tag mask libcxgb does not read";
	else if (!lldi->vr || !lldi->vr->iscsi.size)
		why = "no iSCSI pod region (firmware configuration)";
	else if ((lldi->iscsi_pgsz_order & 0xf) != 0)
		why = "the chip's first DDP page size is not 4 KiB";
	if (why)
		goto none;
	for (i = 0; i < DDP_PGIDX_MAX; i++)
		tformat.pgsz_order[i] = (lldi->iscsi_pgsz_order >> (i << 3)) & 0xf;
	cxgbi_tagmask_check(lldi->iscsi_tagmask, &tformat);
	if (cxgbi_ppm_init(lldi->iscsi_ppm, lldi->ports[0], lldi->pdev,
			   &cr->lldi, &tformat, lldi->vr->iscsi.size,
			   lldi->iscsi_llimit, lldi->vr->iscsi.start, 2,
			   lldi->vr->ppod_edram.start,
			   lldi->vr->ppod_edram.size) < 0) {
		why = "libcxgb could not set its pod manager up";
		goto none;
	}
	ppm = *lldi->iscsi_ppm;
	base = (u64)ppm->llimit - ((u64)ppm->base_idx << CXE_PPOD_SHIFT);
	if (ppm->ppmax < 1024)
		why = "fewer than 1024 pods";
	else if (ppm->base_idx + ppm->ppmax > cxe_ppod_tag_max_idx(&cr->d.tagfmt))
		why = "more pods than its tags name";
	else if (ppm->llimit < (u64)ppm->base_idx << CXE_PPOD_SHIFT)
		why = "a pod region below its lower limit";
	if (why) {
		cxgbi_ppm_release(ppm);
		goto none;
	}
	cr->ppm = ppm;
	cr->d.ppod_base = base;
	cr->d.npods = ppm->ppmax;
	return;
none:
	pr_info("cxgb4 adapter %s: no page pods, no placement: %s\n",
		pci_name(lldi->pdev), why);
}

/* Our reference to the pod manager, dropped while cxgb4's tables live */
static void cxe_c4real_pods_exit(struct cxe_c4real *cr)
{
	struct cxgbi_ppm *ppm;

	spin_lock_bh(&cr->ppm_lock);
	ppm = cr->ppm;
	cr->ppm = NULL;
	spin_unlock_bh(&cr->ppm_lock);
	if (ppm)
		cxgbi_ppm_release(ppm);
}

/*
 * The last reference: the TIDs of connections nobody accepted before the
 * glue let go of them (at unload) go back as every other
 */
static void cxe_c4real_release(struct cxe_c4dev *d)
{
	struct cxe_c4real *cr = to_real(d);
	struct cxe_c4real_tid *rt;
	struct in6_addr *a;
	unsigned long tid;

	xa_for_each(&cr->tids, tid, rt)
		cxe_c4real_release_tid(d, tid, rt->ipv6);
	xa_destroy(&cr->tids);
	/* STIDs the glue never settled are not given back: nor their CLIP entries */
	xa_for_each(&cr->stid6, tid, a)
		kfree(a);
	xa_destroy(&cr->stid6);
	cxe_c4real_pods_exit(cr);
	pci_dev_put(cr->lldi.pdev);
	kfree(cr);
}

static const struct cxe_c4dev_ops cxe_c4real_ops = {
	.alloc_stid	= cxe_c4real_alloc_stid,
	.free_stid	= cxe_c4real_free_stid,
	.create_server	= cxe_c4real_create_server,
	.remove_server	= cxe_c4real_remove_server,
	.has_port	= cxe_c4real_has_port,
	.accept_path	= cxe_c4real_accept_path,
	.send		= cxe_c4real_send,
	.release_tid	= cxe_c4real_release_tid,
	.pods_get	= cxe_c4real_pods_get,
	.pods_put	= cxe_c4real_pods_put,
	.map_page	= cxe_c4real_map_page,
	.unmap_page	= cxe_c4real_unmap_page,
	.release	= cxe_c4real_release,
};

/*
 * cxgb4 calls this once per adapter whose firmware offloads (at our
 * registration for those already up, later for new ones); what it returns
 * is the handle of every later call for that adapter. The T4 has no iSCSI
 * PDU offload the backend can use: refused, as cxgbit does.
 */
static void *cxe_cxgb4_add(const struct cxgb4_lld_info *lldi)
{
	struct cxe_cxgb4_hw hw = {
		.chip		= CHELSIO_CHIP_VERSION(lldi->adapter_type),
		.iscsi_iolen	= lldi->iscsi_iolen,
		.fw_vers	= lldi->fw_vers,
		.page_size	= PAGE_SIZE,
		.max_frags	= MAX_SKB_FRAGS,
	};
	struct cxe_c4real *r;
	int ret;

	if (is_t4(lldi->adapter_type)) {
		pr_info("cxgb4 adapter %s: a T4, which this backend does not drive\n",
			pci_name(lldi->pdev));
		return ERR_PTR(-ENODEV);
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return ERR_PTR(-ENOMEM);
	r->lldi = *lldi;
	spin_lock_init(&r->ppm_lock);
	cxe_c4real_pods_init(r);
	hw.ddp = r->ppm;
	ret = cxe_cxgb4_limits(&hw, &r->d.limits);
	if (ret) {
		pr_warn("cxgb4 adapter %s: T%d with an iSCSI I/O length of %u: no room for a PDU, not used\n",
			pci_name(lldi->pdev), hw.chip, lldi->iscsi_iolen);
		cxe_c4real_pods_exit(r);
		kfree(r);
		return ERR_PTR(ret);
	}
	/* the device's DMA mappings may outlive cxgb4's hold on it */
	pci_dev_get(lldi->pdev);
	/* released from the receive path too */
	xa_init_flags(&r->tids, XA_FLAGS_LOCK_BH);
	xa_init_flags(&r->stid6, XA_FLAGS_LOCK_BH);
	cxe_c4dev_init(&r->d, &cxe_c4real_ops);
	snprintf(r->kind, sizeof(r->kind), "T%d", hw.chip);
	r->d.name = pci_name(lldi->pdev);
	r->d.kind = r->kind;
	r->d.nports = lldi->nports;
	r->d.chip = hw.chip;
	r->d.wr_cred = lldi->wr_cred;
	/* the admin's choice: this path has never run on a Chelsio adapter */
	r->d.serves = cxgb4_hw;
	cxe_c4dev_add(&r->d);
	pr_info("cxgb4 adapter %s: T%d, %u ports, firmware %#x, %u page pods: attached, %s\n",
		pci_name(lldi->pdev), hw.chip, lldi->nports, lldi->fw_vers,
		r->d.npods,
		cxgb4_hw ? "serving offloaded portals (never run on Chelsio hardware before)" :
			   "serving no portal (cxgb4_hw=0)");
	return &r->d;
}

/* A reset of the chip took every TID it had: none is released to it */
static void cxe_c4real_lose_tids(struct cxe_c4real *cr)
{
	struct cxe_c4real_tid *rt;
	unsigned long tid;

	xa_lock_bh(&cr->tids);
	xa_for_each(&cr->tids, tid, rt)
		rt->lost = true;
	xa_unlock_bh(&cr->tids);
}

static int cxe_cxgb4_state_change(void *handle, enum cxgb4_state state)
{
	struct cxe_c4dev *d = handle;

	switch (state) {
	case CXGB4_STATE_UP:
		/* after a reset, the portals' servers are to be opened anew */
		cxe_c4dev_up(d);
		break;
	case CXGB4_STATE_START_RECOVERY:
	case CXGB4_STATE_DOWN:
		/*
		 * an EEH error, a firmware or function reset: the chip
		 * forgets its connections and servers without a message,
		 * and none may go to it about them (mainline cxgbit leaves
		 * its TIDs to aborts that cannot go, and listens no more)
		 */
		if (!READ_ONCE(d->up))
			break;
		cxe_c4real_lose_tids(to_real(d));
		cxe_c4dev_reset(d);
		break;
	case CXGB4_STATE_DETACH:
		/* the adapter goes (PCI remove): cxgb4 calls nothing after it */
		WRITE_ONCE(d->up, false);
		cxe_c4real_quiesce(to_real(d));
		/* libcxgb's manager points into the adapter cxgb4 frees */
		cxe_c4real_pods_exit(to_real(d));
		pr_info("cxgb4 adapter %s: detached: its servers and connections end\n",
			d->name);
		cxe_c4dev_gone(d);
		/*
		 * connections whose PDU layer has not let go yet keep their
		 * TIDs: the adapter then stays listed, down, until the last
		 * of them goes (cxe_c4dev_settle())
		 */
		if (cxe_c4dev_del(d))
			pr_info("cxgb4 adapter %s: listed until its connections are released\n",
				d->name);
		else
			cxe_c4dev_put(d);
		return 0;
	default:
		break;
	}
	pr_info("cxgb4 adapter %s: state %d, %s\n", d->name, state,
		READ_ONCE(d->up) ? "up" : "down");
	return 0;
}

/*
 * A message on the backend's queues, to the glue: in the response itself
 * (after the RSS header, up to the control word at the entry's end), or
 * in a gather list, whose fragments (free list buffers: one message may
 * span several) are copied into one piece first. The glue copies what it
 * keeps before it returns. Once the handler returns 0, cxgb4 has handed
 * over every page of the list but the last, which its free list keeps
 * (the next message may be packed into it): those are released here once
 * copied, as cxgb4's own t4_pktgl_free() and mainline cxgbit do. Without
 * memory for the copy the message is left to cxgb4 (a nonzero return: it
 * takes its pages back and hands the message again later) rather than
 * dropped from a TID's stream.
 */
static int cxe_cxgb4_rx(void *handle, const __be64 *rsp,
			const struct pkt_gl *gl)
{
	struct cxe_c4dev *d = handle;
	u32 i, at;
	u8 *buf;

	if (!gl) {
		cxe_c4dev_rx(d, rsp + 1, 64 - sizeof(struct rsp_ctrl) - 8);
		return 0;
	}
	/* an event of a queue (no message): we ask for none */
	if (gl == CXGB4_MSG_AN)
		return 0;
	if (gl->nfrags == 1) {
		cxe_c4dev_rx(d, gl->va, gl->tot_len);
		return 0;
	}
	buf = kmalloc(gl->tot_len, GFP_ATOMIC);
	if (!buf)
		return -ENOMEM;
	for (i = 0, at = 0; i < gl->nfrags && at < gl->tot_len; i++) {
		u32 n = min_t(u32, gl->frags[i].size, gl->tot_len - at);

		memcpy(buf + at, i ? page_address(gl->frags[i].page) +
				     gl->frags[i].offset : gl->va, n);
		at += n;
	}
	cxe_c4dev_rx(d, buf, at);
	kfree(buf);
	for (i = 0; i < gl->nfrags - 1; i++)
		put_page(gl->frags[i].page);
	return 0;
}

static struct cxgb4_uld_info cxe_cxgb4_uld_info = {
	.name		= KBUILD_MODNAME,
	.nrxq		= 1,
	.ntxq		= 1,
	.rxq_size	= 1024,
	.add		= cxe_cxgb4_add,
	.rx_handler	= cxe_cxgb4_rx,
	.state_change	= cxe_cxgb4_state_change,
};

int cxe_c4real_init(void)
{
	/* calls cxe_cxgb4_add for each adapter already up, before it returns */
	cxgb4_register_uld(CXGB4_ULD_ISCSIT, &cxe_cxgb4_uld_info);
	return 0;
}

/*
 * cxgb4_unregister_uld() frees our queues on every adapter and forgets
 * our handles without a CXGB4_STATE_DETACH: once it returns cxgb4 calls
 * nothing of ours, and the adapters are ours to drop.
 */
void cxe_c4real_exit(void)
{
	cxgb4_unregister_uld(CXGB4_ULD_ISCSIT);
	cxe_c4dev_drop_all(&cxe_c4real_ops);
}
