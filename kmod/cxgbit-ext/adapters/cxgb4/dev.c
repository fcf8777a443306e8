// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: its device glue (dev.h), its entry in the backend
 * registry and the listening servers of offloaded portals.
 *
 * The backend listens for every offloaded portal beside the portal's own
 * backend (CXE_BACKEND_DEVICES): on each adapter that serves the portal's
 * address (a port of it holds the address, or the portal is a wildcard),
 * one server, whose life listen.c keeps. A portal's listen waits for the
 * chip's answer for CXE_C4_ANSWER_WAIT and goes on without the server when
 * it does not come or says no (the portal still works through its own
 * backend); a late answer is settled when it comes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "../../cxgbit_ext.h"
#include "dev.h"
#include "listen.h"

/* how long a listen or unlisten waits for the chip's answer: mainline's */
#define CXE_C4_ANSWER_WAIT	(10 * HZ)

static LIST_HEAD(cxe_c4devs);
static DEFINE_MUTEX(cxe_c4devs_lock);	/* the list, and the portals' */

/* An offloaded portal the backend listens for */
struct cxe_c4portal {
	struct list_head	node;	/* cxe_c4portals */
	struct cxe_np		*cnp;
	struct list_head	servers;
};

static LIST_HEAD(cxe_c4portals);

/* removals the receive path decided (they need process context) */
struct workqueue_struct *cxe_c4_wq;

static void cxe_c4dev_listen_work(struct work_struct *work);
static void cxe_c4dev_unlist_work(struct work_struct *work);

static void cxe_c4dev_free(struct kref *ref)
{
	struct cxe_c4dev *d = container_of(ref, struct cxe_c4dev, ref);

	xa_destroy(&d->servers);
	xa_destroy(&d->tids);
	if (d->adapter)
		cxe_adapter_put(d->adapter);
	d->ops->release(d);
}

void cxe_c4dev_put(struct cxe_c4dev *d)
{
	kref_put(&d->ref, cxe_c4dev_free);
}

void cxe_c4dev_init(struct cxe_c4dev *d, const struct cxe_c4dev_ops *ops)
{
	kref_init(&d->ref);
	d->ops = ops;
	spin_lock_init(&d->lock);
	/* stored in process context, erased in the receive path's */
	xa_init_flags(&d->servers, XA_FLAGS_LOCK_BH);
	xa_init_flags(&d->tids, XA_FLAGS_LOCK_BH);
	atomic64_set(&d->cpl_dropped, 0);
	atomic64_set(&d->accepted, 0);
	INIT_WORK(&d->listen, cxe_c4dev_listen_work);
	INIT_WORK(&d->unlist, cxe_c4dev_unlist_work);
}

int cxe_c4dev_pods_get(struct cxe_c4dev *d, u32 n, u32 *color)
{
	int idx;

	if (!n || n > d->npods)
		return -ENOSPC;
	idx = d->ops->pods_get(d, n, color);
	if (idx < 0)
		return idx;
	if (idx + n > cxe_ppod_tag_max_idx(&d->tagfmt)) {
		/* a device whose pods its tags cannot all name */
		d->ops->pods_put(d, idx, n);
		return -ERANGE;
	}
	spin_lock_bh(&d->lock);
	d->pods_used += n;
	spin_unlock_bh(&d->lock);
	return idx;
}

void cxe_c4dev_pods_put(struct cxe_c4dev *d, u32 idx, u32 n)
{
	d->ops->pods_put(d, idx, n);
	spin_lock_bh(&d->lock);
	d->pods_used -= n;
	spin_unlock_bh(&d->lock);
}

void cxe_c4dev_add(struct cxe_c4dev *d)
{
	mutex_lock(&cxe_c4devs_lock);
	list_add_tail_rcu(&d->node, &cxe_c4devs);
	d->listed = true;
	mutex_unlock(&cxe_c4devs_lock);
}

/*
 * The TID of an accepted connection into d's map, while d is listed: an
 * adapter being removed (which it is only with an empty map) takes none,
 * so nothing is left in the map of one that is gone. -ENODEV then.
 */
int cxe_c4dev_map_tid(struct cxe_c4dev *d, u32 tid, struct cxe_c4tid *t)
{
	int ret = -ENODEV;

	mutex_lock(&cxe_c4devs_lock);
	if (d->listed && !d->gone)
		ret = xa_insert_bh(&d->tids, tid, t, GFP_KERNEL);
	mutex_unlock(&cxe_c4devs_lock);
	return ret;
}

int cxe_c4dev_del(struct cxe_c4dev *d)
{
	mutex_lock(&cxe_c4devs_lock);
	if (!xa_empty(&d->servers) || !xa_empty(&d->tids)) {
		mutex_unlock(&cxe_c4devs_lock);
		return -EBUSY;
	}
	list_del_rcu(&d->node);
	d->listed = false;
	mutex_unlock(&cxe_c4devs_lock);
	synchronize_rcu();	/* the steering hook's readers */
	return 0;
}

/*
 * A gone adapter leaves the list once its last TID and server went (the
 * PDU layer lets go of a connection after DETACH): the list's reference
 * dropped by whoever unlists it, here or at the backend's exit.
 */
static void cxe_c4dev_unlist_work(struct work_struct *work)
{
	struct cxe_c4dev *d = container_of(work, struct cxe_c4dev, unlist);
	bool unlisted = false;

	mutex_lock(&cxe_c4devs_lock);
	if (d->listed && d->gone && xa_empty(&d->servers) && xa_empty(&d->tids)) {
		list_del_rcu(&d->node);
		d->listed = false;
		unlisted = true;
	}
	mutex_unlock(&cxe_c4devs_lock);
	if (unlisted) {
		synchronize_rcu();
		pr_info("cxgb4 adapter %s: its last connection released: unlisted\n", d->name);
		cxe_c4dev_put(d);
	}
	cxe_c4dev_put(d);	/* the work's */
}

void cxe_c4dev_settle(struct cxe_c4dev *d)
{
	if (!READ_ONCE(d->gone))
		return;
	kref_get(&d->ref);
	if (!queue_work(cxe_c4_wq, &d->unlist))
		cxe_c4dev_put(d);
}

void cxe_c4dev_drop_all(const struct cxe_c4dev_ops *ops)
{
	struct cxe_c4dev *d, *tmp;
	struct cxe_c4srv *s;
	unsigned long stid;

	mutex_lock(&cxe_c4devs_lock);
	list_for_each_entry_safe(d, tmp, &cxe_c4devs, node) {
		if (d->ops != ops)
			continue;
		list_del_rcu(&d->node);
		d->listed = false;
		synchronize_rcu();
		xa_for_each(&d->servers, stid, s) {
			xa_erase_bh(&d->servers, stid);
			cxe_c4srv_put(s);
		}
		cxe_c4dev_drop_tids(d);
		cxe_c4dev_put(d);
	}
	mutex_unlock(&cxe_c4devs_lock);
}

/* ---- servers ----------------------------------------------------------- */

static void cxe_c4srv_free(struct kref *ref)
{
	struct cxe_c4srv *s = container_of(ref, struct cxe_c4srv, ref);

	cxe_c4dev_put(s->dev);
	kfree(s);
}

void cxe_c4srv_put(struct cxe_c4srv *s)
{
	kref_put(&s->ref, cxe_c4srv_free);
}

static void cxe_c4srv_act(struct cxe_c4srv *s, int what, bool atomic);

/* an answer no server expects, or one its state refused */
static void cxe_c4dev_stray(struct cxe_c4dev *d)
{
	spin_lock_bh(&d->lock);
	d->stray++;
	spin_unlock_bh(&d->lock);
}

/* the request for the state's answer never reached the chip */
static void cxe_c4srv_unsent(struct cxe_c4srv *s, int err, bool atomic)
{
	int what;

	spin_lock_bh(&s->dev->lock);
	what = cxe_c4lsn_unsent(&s->l, err);
	spin_unlock_bh(&s->dev->lock);
	cxe_c4srv_act(s, what, atomic);
}

static void cxe_c4srv_do_remove(struct cxe_c4srv *s)
{
	int ret = s->dev->ops->remove_server(s->dev, s->l.stid, s->ipv6);

	if (ret) {
		pr_warn("cxgb4 adapter %s: removing server %u failed (%d); its STID stays taken\n",
			s->dev->name, s->l.stid, ret);
		cxe_c4srv_unsent(s, ret, false);
	}
}

/* every server of d is over (listen.c's gone: STIDs settled, waiters told) */
static void cxe_c4dev_servers_gone(struct cxe_c4dev *d)
{
	struct cxe_c4srv *s;
	unsigned long stid = 0;
	int what;

	for (;; stid++) {
		spin_lock_bh(&d->lock);
		s = xa_find(&d->servers, &stid, ULONG_MAX, XA_PRESENT);
		what = 0;
		if (s) {
			kref_get(&s->ref);
			what = cxe_c4lsn_gone(&s->l);
		}
		spin_unlock_bh(&d->lock);
		if (!s)
			break;
		cxe_c4srv_act(s, what, false);
		cxe_c4srv_put(s);
	}
}

/*
 * The adapter went away: it serves nothing from here on, its servers are
 * over, and so is every connection on it (cm.c). Connections accepted
 * after this are refused at the TID map. Process context.
 */
void cxe_c4dev_gone(struct cxe_c4dev *d)
{
	mutex_lock(&cxe_c4devs_lock);
	WRITE_ONCE(d->gone, true);
	WRITE_ONCE(d->up, false);
	mutex_unlock(&cxe_c4devs_lock);
	cxe_c4dev_servers_gone(d);
	cxe_c4dev_end_tids(d);
}

/*
 * The chip was reset under the adapter (cxgb4's START_RECOVERY or DOWN):
 * its servers and connections went with the chip's state, as at a
 * detach, but the adapter stays. It serves again once cxgb4 says it is
 * up (cxe_c4dev_up()). Process context.
 */
void cxe_c4dev_reset(struct cxe_c4dev *d)
{
	WRITE_ONCE(d->up, false);
	WRITE_ONCE(d->resets, d->resets + 1);
	cxe_c4dev_servers_gone(d);
	cxe_c4dev_end_tids(d);
}

static void cxe_c4srv_remove_work(struct work_struct *work)
{
	struct cxe_c4srv *s = container_of(work, struct cxe_c4srv, remove);

	cxe_c4srv_do_remove(s);
	cxe_c4srv_put(s);
}

/*
 * What listen.c answered, in its order. A removal needs process context
 * (cxgb4 allocates its request): from the receive path it is queued.
 */
static void cxe_c4srv_act(struct cxe_c4srv *s, int what, bool atomic)
{
	struct cxe_c4dev *d = s->dev;

	if (what < 0) {
		cxe_c4dev_stray(d);
		return;
	}
	if (what & CXE_C4L_REMOVE) {
		if (atomic) {
			kref_get(&s->ref);
			if (!queue_work(cxe_c4_wq, &s->remove))
				cxe_c4srv_put(s);
		} else {
			cxe_c4srv_do_remove(s);
		}
	}
	if (what & CXE_C4L_FREE_STID) {
		/* under the lock the map's readers take their reference under */
		spin_lock_bh(&d->lock);
		xa_erase_bh(&d->servers, s->l.stid);
		spin_unlock_bh(&d->lock);
		d->ops->free_stid(d, s->l.stid, s->ipv6 ? AF_INET6 : AF_INET);
		cxe_c4srv_put(s);	/* the STID map's */
	}
	if (what & CXE_C4L_WAKE)
		wake_up(&s->answered);
}

static bool cxe_c4srv_answered(struct cxe_c4srv *s)
{
	bool done;

	spin_lock_bh(&s->dev->lock);
	done = !s->l.waiting;
	spin_unlock_bh(&s->dev->lock);
	return done;
}

/*
 * Wait for the answer the state asked for; the waiter's errno. The state
 * says when it came (a wake-up left over from an earlier wait cannot).
 */
static int cxe_c4srv_wait(struct cxe_c4srv *s)
{
	int what, err;

	if (!wait_event_timeout(s->answered, cxe_c4srv_answered(s),
				CXE_C4_ANSWER_WAIT)) {
		spin_lock_bh(&s->dev->lock);
		what = cxe_c4lsn_timeout(&s->l);
		spin_unlock_bh(&s->dev->lock);
		cxe_c4srv_act(s, what, false);
	}
	spin_lock_bh(&s->dev->lock);
	err = s->l.err;
	spin_unlock_bh(&s->dev->lock);
	return err;
}

/* The portal no longer takes the server's connections */
static void cxe_c4srv_stop(struct cxe_c4srv *s)
{
	spin_lock_bh(&s->dev->lock);
	s->cnp = NULL;
	spin_unlock_bh(&s->dev->lock);
	cxe_c4srv_drop_ready(s);
}

/* A server on d for the portal's address; the portal's reference, or NULL */
static struct cxe_c4srv *cxe_c4srv_open(struct cxe_c4dev *d,
					struct cxe_np *cnp, int *err)
{
	const struct sockaddr_storage *addr = &cnp->addr;
	struct cxe_c4srv *s;
	int stid, ret;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	kref_init(&s->ref);
	kref_get(&d->ref);
	s->dev = d;
	s->ipv6 = addr->ss_family == AF_INET6;
	init_waitqueue_head(&s->answered);
	INIT_WORK(&s->remove, cxe_c4srv_remove_work);
	INIT_LIST_HEAD(&s->ready);
	stid = d->ops->alloc_stid(d, addr->ss_family);
	if (stid < 0) {
		*err = -ENOSPC;
		cxe_c4srv_put(s);
		return NULL;
	}
	cxe_c4lsn_init(&s->l, stid);
	s->cnp = cnp;
	kref_get(&s->ref);	/* the STID map's, until the STID goes back */
	ret = xa_err(xa_store_bh(&d->servers, stid, s, GFP_KERNEL));
	if (ret) {
		d->ops->free_stid(d, stid, addr->ss_family);
		cxe_c4srv_put(s);
		cxe_c4srv_put(s);
		*err = ret;
		return NULL;
	}
	ret = d->ops->create_server(d, stid, addr);
	if (ret)
		cxe_c4srv_unsent(s, ret, false);
	*err = cxe_c4srv_wait(s);
	if (*err) {
		cxe_c4srv_stop(s);
		cxe_c4srv_put(s);
		return NULL;
	}
	return s;
}

static void cxe_c4srv_close(struct cxe_c4srv *s)
{
	int what, err;

	cxe_c4srv_stop(s);
	spin_lock_bh(&s->dev->lock);
	what = cxe_c4lsn_unlisten(&s->l);
	spin_unlock_bh(&s->dev->lock);
	cxe_c4srv_act(s, what, false);
	err = cxe_c4srv_wait(s);
	if (err)
		pr_warn("cxgb4 adapter %s: server %u not removed in time or refused (%d)\n",
			s->dev->name, s->l.stid, err);
	cxe_c4srv_put(s);
}

/* ---- the chip's messages ------------------------------------------------- */

static void cxe_c4dev_listen_rpl(struct cxe_c4dev *d, const void *cpl,
				 size_t len, bool open)
{
	struct cxe_cpl_listen_rpl r;
	struct cxe_c4srv *s;
	int what;

	if ((open ? cxe_cpl_parse_pass_open_rpl(cpl, len, &r) :
		    cxe_cpl_parse_close_listsrv_rpl(cpl, len, &r)) < 0) {
		cxe_c4dev_stray(d);
		return;
	}
	spin_lock_bh(&d->lock);
	s = xa_load(&d->servers, r.stid);
	if (!s) {
		d->stray++;
		spin_unlock_bh(&d->lock);
		return;
	}
	kref_get(&s->ref);
	if (!s->l.waiting)
		d->unwaited++;
	what = open ? cxe_c4lsn_open_rpl(&s->l, r.status) :
		      cxe_c4lsn_close_rpl(&s->l, r.status);
	spin_unlock_bh(&d->lock);
	if (r.status)
		pr_info("cxgb4 adapter %s: server %u: %s answered status %u\n",
			d->name, r.stid, open ? "open" : "removal", r.status);
	cxe_c4srv_act(s, what, true);
	cxe_c4srv_put(s);
}

void cxe_c4dev_rx(struct cxe_c4dev *d, const void *cpl, size_t len)
{
	switch (cxe_cpl_opcode(cpl, len)) {
	case CXE_CPL_PASS_OPEN_RPL:
		cxe_c4dev_listen_rpl(d, cpl, len, true);
		return;
	case CXE_CPL_CLOSE_LISTSRV_RPL:
		cxe_c4dev_listen_rpl(d, cpl, len, false);
		return;
	default:
		if (cxe_c4tid_rx(d, cxe_cpl_opcode(cpl, len), cpl, len))
			return;
		atomic64_inc(&d->cpl_dropped);
		pr_warn_ratelimited("cxgb4 adapter %s: CPL opcode %#x the backend does not take: dropped\n",
				    d->name, len ? ((const u8 *)cpl)[0] : 0);
	}
}

/* ---- portals ------------------------------------------------------------- */

/*
 * Whether a port of d holds the portal's address, or for a wildcard, is
 * in the portal's network namespace: connections for a portal only come
 * in on netdevs of its namespace, and a server on the chip would take
 * SYNs meant for the portals of the ports' own namespace.
 */
static bool cxe_c4dev_serves(struct cxe_c4dev *d, const struct cxe_np *cnp)
{
	const void *ip = cxe_portal_ip(cnp);
	struct net_device *nd;
	bool found = false;

	if (!d->serves || !READ_ONCE(d->up))
		return false;
	rcu_read_lock();
	if (ip) {
		nd = cxe_portal_netdev(cnp, ip);
		found = nd && d->ops->has_port(d, nd);
	} else {
		for_each_netdev_rcu(cnp->net, nd) {
			found = d->ops->has_port(d, nd);
			if (found)
				break;
		}
	}
	rcu_read_unlock();
	return found;
}

static int cxe_c4_listen(struct cxe_np *cnp)
{
	struct cxe_c4portal *p;
	struct cxe_c4srv *s;
	struct cxe_c4dev *d;
	int err;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->cnp = cnp;
	INIT_LIST_HEAD(&p->servers);
	mutex_lock(&cxe_c4devs_lock);
	list_for_each_entry(d, &cxe_c4devs, node) {
		if (!cxe_c4dev_serves(d, cnp))
			continue;
		s = cxe_c4srv_open(d, cnp, &err);
		if (!s) {
			pr_warn("portal %pISpc: cxgb4 adapter %s does not listen for it (%d)\n",
				&cnp->addr, d->name, err);
			continue;
		}
		list_add_tail(&s->node, &p->servers);
		pr_info("portal %pISpc: cxgb4 adapter %s listens for it (server %u)\n",
			&cnp->addr, d->name, s->l.stid);
	}
	list_add_tail(&p->node, &cxe_c4portals);
	mutex_unlock(&cxe_c4devs_lock);
	return 0;
}

/*
 * Whether one of the portal's servers is d's and listening (or opening);
 * those of d that are over (a reset of its chip took them) leave the
 * portal's list on the way. cxe_c4devs_lock held.
 */
static bool cxe_c4portal_on(struct cxe_c4portal *p, struct cxe_c4dev *d)
{
	struct cxe_c4srv *s, *tmp;
	bool on = false, live;

	list_for_each_entry_safe(s, tmp, &p->servers, node) {
		if (s->dev != d)
			continue;
		spin_lock_bh(&d->lock);
		live = s->l.state == CXE_C4LSN_OPENING ||
		       s->l.state == CXE_C4LSN_LISTENING;
		spin_unlock_bh(&d->lock);
		on |= live;
		if (!live) {
			list_del(&s->node);
			cxe_c4srv_stop(s);
			cxe_c4srv_put(s);
		}
	}
	return on;
}

/*
 * An adapter up (at its add, or after a reset of its chip, which took
 * the servers it had): a server for each portal it serves and has none
 * for. From a work item: the chip's answers take their time, and cxgb4
 * calls the state change under its own lock.
 */
static void cxe_c4dev_listen_work(struct work_struct *work)
{
	struct cxe_c4dev *d = container_of(work, struct cxe_c4dev, listen);
	struct cxe_c4portal *p;
	struct cxe_c4srv *s;
	int err;

	mutex_lock(&cxe_c4devs_lock);
	list_for_each_entry(p, &cxe_c4portals, node) {
		if (!cxe_c4dev_serves(d, p->cnp) || cxe_c4portal_on(p, d))
			continue;
		s = cxe_c4srv_open(d, p->cnp, &err);
		if (!s) {
			pr_warn("portal %pISpc: cxgb4 adapter %s does not listen for it (%d)\n",
				&p->cnp->addr, d->name, err);
			continue;
		}
		list_add_tail(&s->node, &p->servers);
		pr_info("portal %pISpc: cxgb4 adapter %s listens for it (server %u)\n",
			&p->cnp->addr, d->name, s->l.stid);
	}
	mutex_unlock(&cxe_c4devs_lock);
	cxe_c4dev_put(d);
}

void cxe_c4dev_up(struct cxe_c4dev *d)
{
	WRITE_ONCE(d->up, true);
	kref_get(&d->ref);
	if (!queue_work(cxe_c4_wq, &d->listen))
		cxe_c4dev_put(d);
}

static void cxe_c4_unlisten(struct cxe_np *cnp)
{
	struct cxe_c4srv *s, *tmp;
	struct cxe_c4portal *p;

	mutex_lock(&cxe_c4devs_lock);
	list_for_each_entry(p, &cxe_c4portals, node) {
		if (p->cnp != cnp)
			continue;
		list_del(&p->node);
		list_for_each_entry_safe(s, tmp, &p->servers, node) {
			list_del(&s->node);
			cxe_c4srv_close(s);
		}
		kfree(p);
		break;
	}
	mutex_unlock(&cxe_c4devs_lock);
}

extern const struct cxe_backend cxe_cxgb4_backend;

struct cxe_adapter *cxe_c4dev_adapter(struct cxe_c4dev *d)
{
	struct cxe_adapter *a;

	mutex_lock(&cxe_c4devs_lock);
	if (!d->adapter) {
		a = cxe_adapter_add(d->name, &cxe_cxgb4_backend);
		if (!IS_ERR(a))
			d->adapter = a;
	}
	a = d->adapter;
	if (a)
		config_item_get(&a->group.cg_item);
	mutex_unlock(&cxe_c4devs_lock);
	return a;
}

/* the most one adapter's block of counters takes, its name included */
#define CXE_C4_COUNTERS_MAX	(CXE_STAT_MAX * 64)

/*
 * The counters of each adapter that has carried connections, as a
 * software adapter's counters file has them, each line after the
 * backend's and the adapter's names (struct cxe_backend's counters_read:
 * asked for its size first, buf NULL). Whole blocks only: an adapter
 * that came between the two calls may find no room.
 */
ssize_t cxe_c4_counters_read(void *buf, size_t size)
{
	char prefix[IFNAMSIZ + 8];
	struct cxe_c4dev *d;
	size_t len = 0;

	mutex_lock(&cxe_c4devs_lock);
	list_for_each_entry(d, &cxe_c4devs, node) {
		if (!d->adapter)
			continue;
		if (!buf) {
			len += CXE_C4_COUNTERS_MAX;
		} else if (size - len >= CXE_C4_COUNTERS_MAX) {
			snprintf(prefix, sizeof(prefix), "%s %s",
				 cxe_cxgb4_backend.name, d->name);
			len += cxe_adapter_counters_emit(d->adapter, prefix,
							 (char *)buf + len,
							 size - len);
		}
	}
	mutex_unlock(&cxe_c4devs_lock);
	return len;
}

/* The next connection the chip brought up for the portal, or NULL */
struct cxe_c4tid *cxe_c4_take_ready(struct cxe_np *cnp)
{
	struct cxe_c4tid *t = NULL;
	struct cxe_c4portal *p;
	struct cxe_c4srv *s;

	mutex_lock(&cxe_c4devs_lock);
	list_for_each_entry(p, &cxe_c4portals, node) {
		if (p->cnp != cnp)
			continue;
		list_for_each_entry(s, &p->servers, node) {
			spin_lock_bh(&s->dev->lock);
			t = list_first_entry_or_null(&s->ready, struct cxe_c4tid,
						     ready);
			if (t)
				list_del_init(&t->ready);
			spin_unlock_bh(&s->dev->lock);
			if (t)
				break;
		}
		break;
	}
	mutex_unlock(&cxe_c4devs_lock);
	return t;	/* the ready list's reference is the caller's */
}

/* ---- the backend ----------------------------------------------------------- */

/*
 * The backend's state in the backends file: " off no_ports" while it has
 * no adapter; " on" once one of them serves portals, else " off hw_off"
 * (real adapters serve none unless the module's cxgb4_hw says so, main.c);
 * then each adapter: name, kind, ports, up or down, messages
 * dropped, servers listening, STIDs taken, answers nobody waited for
 * (late, or for a late server's removal), answers no server expects,
 * connections on TIDs now and given to portals since it came, page pods
 * in use and in all, then each limit with what set it (limits.h), e.g.
 * "0000:03:00.4=T6/2ports/up/dropped:0/servers:0/stids:0/unwaited:0/
 * stray:0/conns:0/accepted:0/pods_used:0/pods:0/recv:16384(t6)/send:16384(t6)/
 * iso:65532(iso_len)/ddp:-(no_ppm)"
 */
static ssize_t cxe_c4dev_show(struct cxe_c4dev *d, char *page, ssize_t at)
{
	const struct cxe_cxgb4_limits *l = &d->limits;
	u32 servers = 0, stids = 0, conns = 0, unwaited, stray, pods;
	struct cxe_c4tid *t;
	struct cxe_c4srv *s;
	unsigned long stid;
	ssize_t len;

	spin_lock_bh(&d->lock);
	xa_for_each(&d->tids, stid, t)
		conns++;
	xa_for_each(&d->servers, stid, s) {
		stids++;
		servers += s->l.state == CXE_C4LSN_LISTENING;
	}
	unwaited = d->unwaited;
	stray = d->stray;
	pods = d->pods_used;
	spin_unlock_bh(&d->lock);
	len = sysfs_emit_at(page, at, " %s=%s/%uports/%s/dropped:%lld",
			    d->name, d->kind, d->nports,
			    READ_ONCE(d->up) ? "up" : "down",
			    atomic64_read(&d->cpl_dropped));
	len += sysfs_emit_at(page, at + len, "/servers:%u/stids:%u/unwaited:%u/stray:%u",
			     servers, stids, unwaited, stray);
	len += sysfs_emit_at(page, at + len, "/conns:%u/accepted:%lld/pods_used:%u/pods:%u",
			     conns, atomic64_read(&d->accepted), pods, d->npods);
	len += sysfs_emit_at(page, at + len, "/recv:%u(%s)/send:%u(%s)/iso:%u(%s)",
			     l->max_recv_dlen, l->recv_by, l->max_send_dlen,
			     l->send_by, l->max_iso_burst, l->iso_by);
	if (l->ddp_min_len == CXE_CXGB4_NEVER)
		return len + sysfs_emit_at(page, at + len, "/ddp:-(%s)",
					   l->ddp_by);
	return len + sysfs_emit_at(page, at + len, "/ddp:%u(%s)", l->ddp_min_len,
				   l->ddp_by);
}

static ssize_t cxe_c4_show_state(char *page, ssize_t at)
{
	struct cxe_c4dev *d;
	ssize_t len;

	mutex_lock(&cxe_c4devs_lock);
	if (list_empty(&cxe_c4devs)) {
		len = sysfs_emit_at(page, at, " off no_ports");
	} else {
		bool serves = false;

		list_for_each_entry(d, &cxe_c4devs, node)
			serves |= d->serves;
		len = sysfs_emit_at(page, at, serves ? " on" : " off hw_off");
		list_for_each_entry(d, &cxe_c4devs, node)
			len += cxe_c4dev_show(d, page, at + len);
	}
	mutex_unlock(&cxe_c4devs_lock);
	return len;
}

static const struct cxe_adapter_ops cxe_c4_ops = {
	.listen		= cxe_c4_listen,
	.unlisten	= cxe_c4_unlisten,
	.accept		= cxe_c4_accept,
	.conn_release	= cxe_c4_conn_release,
	.set_params	= cxe_c4_set_params,
	.recv_hdr	= cxe_c4_recv_hdr,
	.recv_data	= cxe_c4_recv_data,
	.data_taken	= cxe_c4_data_taken,
	.send_pdu	= cxe_c4_send_pdu,
	.send_burst	= cxe_c4_send_burst,
	.ddp_reserve	= cxe_c4_ddp_reserve,
	.ddp_check	= cxe_c4_ddp_check,
	.ddp_release	= cxe_c4_ddp_release,
};

/* What the chip does for iSCSI PDUs (cpl.h has its messages) */
const struct cxe_backend cxe_cxgb4_backend = {
	.contract = CXE_BACKEND_CONTRACT,
	.name	= "cxgb4",
	.owner	= THIS_MODULE,
	.caps	= BIT(CXE_CAP_HCRC) | BIT(CXE_CAP_DCRC) | BIT(CXE_CAP_DDP) |
		  BIT(CXE_CAP_ISO) | BIT(CXE_CAP_RXAGG),
	.flags	= CXE_BACKEND_DEVICES,
	.conn_size = CXE_CONN_SIZE(struct cxe_c4c, c),
	.limits	= {
		.max_recv_dlen	= CXE_NO_LIMIT,
		.max_send_dlen	= CXE_NO_LIMIT,
		.max_iso_burst	= CXE_NO_LIMIT,
		.ddp_align	= 1,
	},
	.ops	= &cxe_c4_ops,
	.show_state = cxe_c4_show_state,
	.counters_read = cxe_c4_counters_read,
};

static int __init cxe_cxgb4_init(void)
{
	int ret;

	cxe_c4_wq = alloc_workqueue("cxe_cxgb4", 0, 0);
	if (!cxe_c4_wq)
		return -ENOMEM;
	ret = cxe_c4real_init();
	if (ret)
		goto err_wq;
	/*
	 * Last: registered, the backend is called and its module held, and
	 * a module whose init fails is freed whatever holds it
	 */
	ret = cxe_backend_register(&cxe_cxgb4_backend);
	if (ret)
		goto err_real;
	return 0;

err_real:
	cxe_c4real_exit();
err_wq:
	destroy_workqueue(cxe_c4_wq);
	return ret;
}

/*
 * No connection of ours is left (each holds the module). Unregistered,
 * the backend is asked for nothing more and has closed every portal's
 * servers on the chips, which still answer; then cxgb4 stops calling,
 * the removals already decided run (nothing can queue another), and
 * what late answers left of servers goes with its adapter.
 */
static void __exit cxe_cxgb4_exit(void)
{
	cxe_backend_unregister(&cxe_cxgb4_backend);
	cxe_c4real_exit();
	destroy_workqueue(cxe_c4_wq);
}

module_init(cxe_cxgb4_init);
module_exit(cxe_cxgb4_exit);

MODULE_DESCRIPTION("cxgbit-ext backend for Chelsio T5/T6 adapters on cxgb4");
MODULE_AUTHOR("cxgbit-ext developers");
MODULE_VERSION(CXE_VERSION);
MODULE_LICENSE("GPL");
