// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: the servers of offloaded portals on the adapters, and
 * what becomes of them and of the connections when an adapter comes, is
 * reset or goes.
 *
 * The backend listens for every offloaded portal beside the portal's own
 * backend (CXE_BACKEND_DEVICES): on each adapter that serves the portal's
 * address (a port of it holds the address, or the portal is a wildcard),
 * one server, whose life listen.c keeps. A portal's listen waits for the
 * chip's answer for CXE_C4_ANSWER_WAIT and goes on without the server when
 * it does not come or says no (the portal still works through its own
 * backend); a late answer is settled when it comes (dev.c). Connections
 * a server brought up wait on it for the portal's accept; a server that
 * stops first aborts those nobody took (cm.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "../../cxgbit_ext.h"
#include "dev.h"
#include "listen.h"

/* how long a listen or unlisten waits for the chip's answer: mainline's */
#define CXE_C4_ANSWER_WAIT	(10 * HZ)

/* An offloaded portal the backend listens for */
struct cxe_c4portal {
	struct list_head	node;	/* cxe_c4portals */
	struct cxe_np		*cnp;
	struct list_head	servers;
};

static LIST_HEAD(cxe_c4portals);

/* ---- servers ------------------------------------------------------------ */

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

int cxe_c4_listen(struct cxe_np *cnp)
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

void cxe_c4_unlisten(struct cxe_np *cnp)
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

/* ---- the adapter's life ------------------------------------------------- */

void cxe_c4dev_add(struct cxe_c4dev *d)
{
	INIT_WORK(&d->listen, cxe_c4dev_listen_work);
	mutex_lock(&cxe_c4devs_lock);
	list_add_tail_rcu(&d->node, &cxe_c4devs);
	d->listed = true;
	mutex_unlock(&cxe_c4devs_lock);
}

void cxe_c4dev_up(struct cxe_c4dev *d)
{
	WRITE_ONCE(d->up, true);
	kref_get(&d->ref);
	if (!queue_work(cxe_c4_wq, &d->listen))
		cxe_c4dev_put(d);
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
