// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: its adapters (dev.h), the bottom of its device glue.
 * The list of adapters attached, each one's reference count, page pods
 * and TID map; its servers' reference counts and what listen.c decides
 * on the chip's answers about them (a late answer is settled when it
 * comes); the struct cxe_adapter its connections count on; and what the
 * backends and device_counters files show of them. Nothing here calls
 * up: servers.c opens and closes servers, cm.c keeps the connections.
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

/* the adapters attached */
LIST_HEAD(cxe_c4devs);
/* the list, and servers.c's portals */
DEFINE_MUTEX(cxe_c4devs_lock);

/* removals the receive path decided (they need process context) */
struct workqueue_struct *cxe_c4_wq;

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

/* an answer no server expects, or one its state refused */
void cxe_c4dev_stray(struct cxe_c4dev *d)
{
	spin_lock_bh(&d->lock);
	d->stray++;
	spin_unlock_bh(&d->lock);
}

/* the request for the state's answer never reached the chip */
void cxe_c4srv_unsent(struct cxe_c4srv *s, int err, bool atomic)
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
void cxe_c4dev_servers_gone(struct cxe_c4dev *d)
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

void cxe_c4srv_remove_work(struct work_struct *work)
{
	struct cxe_c4srv *s = container_of(work, struct cxe_c4srv, remove);

	cxe_c4srv_do_remove(s);
	cxe_c4srv_put(s);
}

/*
 * What listen.c answered, in its order. A removal needs process context
 * (cxgb4 allocates its request): from the receive path it is queued.
 */
void cxe_c4srv_act(struct cxe_c4srv *s, int what, bool atomic)
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

/* ---- the chip's messages ------------------------------------------------- */

void cxe_c4dev_listen_rpl(struct cxe_c4dev *d, const void *cpl, size_t len,
			  bool open)
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

/* d's struct cxe_adapter, made for backend b at its first connection */
struct cxe_adapter *cxe_c4dev_adapter(struct cxe_c4dev *d,
				      const struct cxe_backend *b)
{
	struct cxe_adapter *a;

	mutex_lock(&cxe_c4devs_lock);
	if (!d->adapter) {
		a = cxe_adapter_add(d->name, b);
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
ssize_t cxe_c4dev_counters_read(const char *backend, void *buf, size_t size)
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
				 backend, d->name);
			len += cxe_adapter_counters_emit(d->adapter, prefix,
							 (char *)buf + len,
							 size - len);
		}
	}
	mutex_unlock(&cxe_c4devs_lock);
	return len;
}

/* ---- the backend's state --------------------------------------------------- */

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

ssize_t cxe_c4_show_state(char *page, ssize_t at)
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

