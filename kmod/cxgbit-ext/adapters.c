// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext adapters: the instances of the backends, what each serves
 * and what it counted.
 *
 * The adapters made by name (soft0 and those of mkdir in adapters/) are
 * listed here with the netdev each serves: the SYN steering hook and
 * accept look a netdev's adapter up in the list (cxe_adapter_steer(),
 * cxe_adapter_get_for_sk()), and the portal_state file shows the same
 * rule for each portal (cxe_portal_state()). A netdev is followed by
 * identity once bound: renamed, it stays served; unregistered, its
 * adapter serves none. Adapters of backends with devices of their own
 * (cxe_adapter_add()) are not listed: their device decides what they
 * take.
 *
 * An adapter's reference count is its configfs item's; the control
 * interface (configfs.c) gives the listed ones their directories.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/configfs.h>
#include <linux/netdevice.h>
#include <linux/string.h>
#include <linux/ctype.h>
#include <linux/inetdevice.h>
#include <linux/rwsem.h>
#include <net/sock.h>
#include <net/net_namespace.h>
#include <net/addrconf.h>

#include "core.h"

const char *const cxe_stat_names[CXE_STAT_MAX] = {
	[CXE_STAT_SYN_STEERED]	= "syn_steered",
	[CXE_STAT_CONNS]	= "connections",
	[CXE_STAT_PDUS_RX]	= "pdus_rx",
	[CXE_STAT_PDUS_TX]	= "pdus_tx",
	[CXE_STAT_BYTES_PLACED]	= "bytes_placed",
	[CXE_STAT_BYTES_COPIED]	= "bytes_copied",
	[CXE_STAT_HDIGEST_ERR]	= "hdigest_errors",
	[CXE_STAT_DDIGEST_ERR]	= "ddigest_errors",
	[CXE_STAT_DDP_TAG_ERR]	= "ddp_tag_errors",
	[CXE_STAT_DROPS]	= "drops",
	[CXE_STAT_BURSTS]	= "bursts",
	[CXE_STAT_BURST_PDUS]	= "burst_pdus",
	[CXE_STAT_RX_WAITS]	= "rx_waits",
	[CXE_STAT_HANDED_BACK]	= "handed_back",
	[CXE_STAT_LOGINS_HELD]	= "logins_held",
	[CXE_STAT_MODEL_CPLS]	= "model_cpls",
	[CXE_STAT_MODEL_WRS]	= "model_wrs",
	[CXE_STAT_RANGE_BYTES]	= "range_bytes",
	[CXE_STAT_TX_INLINE]	= "tx_inline",
	[CXE_STAT_DCACHE_HITS]	= "data_cache_hits",
	[CXE_STAT_DCACHE_MISSES] = "data_cache_misses",
	[CXE_STAT_WALK_STARTS]	= "sg_walk_starts",
	[CXE_STAT_LOGINS_STALLED] = "logins_stalled",
	[CXE_STAT_PI_BLOCKS]	= "pi_blocks",
	[CXE_STAT_PI_PASSES]	= "pi_passes",
	[CXE_STAT_PI_CHECKED]	= "pi_checked",
};

static LIST_HEAD(cxe_adapters);
static DEFINE_SPINLOCK(cxe_adapters_lock);	/* the list, each netdev */
/* Is a bound to this very netdev (not by "*")? cxe_adapters_lock held. */
static bool cxe_adapter_bound_to(const struct cxe_adapter *a,
				 const struct net *net, int ifindex)
{
	return a->ifindex && a->ifindex == ifindex &&
	       net_eq(read_pnet(&a->net), net);
}

/* The adapter serving a netdev: the one bound to it, else one serving "*". */
static struct cxe_adapter *cxe_adapter_find(const struct net *net, int ifindex)
{
	struct cxe_adapter *a, *any = NULL;

	lockdep_assert_held(&cxe_adapters_lock);
	list_for_each_entry(a, &cxe_adapters, node) {
		if (cxe_adapter_bound_to(a, net, ifindex))
			return a;
		if (!any && !strcmp(a->netdev, "*"))
			any = a;
	}
	return any;
}

/* SYN steering (softirq): does an adapter serve dev? A SYN is counted on it. */
bool cxe_adapter_steer(const struct net_device *dev, bool syn)
{
	struct cxe_adapter *a;

	if (!dev)
		return false;
	spin_lock_bh(&cxe_adapters_lock);
	a = cxe_adapter_find(dev_net(dev), dev->ifindex);
	if (a && syn)
		cxe_stat_add(a, CXE_STAT_SYN_STEERED, 1);
	spin_unlock_bh(&cxe_adapters_lock);
	return a;
}

/*
 * The adapter serving the netdev an accepted connection came in on, with
 * a reference; NULL when none does (any more).
 */
struct cxe_adapter *cxe_adapter_get_for_sk(const struct sock *sk)
{
	struct cxe_adapter *a = NULL;
	struct net_device *dev;

	rcu_read_lock();
	dev = dev_get_by_index_rcu(sock_net(sk), READ_ONCE(sk->sk_rx_dst_ifindex));
	if (dev) {
		spin_lock_bh(&cxe_adapters_lock);
		a = cxe_adapter_find(dev_net(dev), dev->ifindex);
		if (a && !config_item_get_unless_zero(&a->group.cg_item))
			a = NULL;
		spin_unlock_bh(&cxe_adapters_lock);
	}
	rcu_read_unlock();
	return a;
}

/* The portal's address, or NULL for a wildcard one (0.0.0.0, [::]) */
const void *cxe_portal_ip(const struct cxe_np *cnp)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&cnp->addr;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&cnp->addr;

	if (cnp->addr.ss_family == AF_INET)
		return sin->sin_addr.s_addr == htonl(INADDR_ANY) ? NULL : &sin->sin_addr;
	return ipv6_addr_any(&sin6->sin6_addr) ? NULL : &sin6->sin6_addr;
}
EXPORT_SYMBOL_GPL(cxe_portal_ip);

/*
 * The netdev a portal's address is on, in its namespace; RCU held. A
 * zoned address (link-local) is on its zone's netdev or on none: another
 * netdev may have the same address.
 */
struct net_device *cxe_portal_netdev(const struct cxe_np *cnp, const void *ip)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&cnp->addr;
	struct net_device *zone;

	if (cnp->addr.ss_family == AF_INET)
		return __ip_dev_find(cnp->net, *(const __be32 *)ip, false);
	if (!sin6->sin6_scope_id)
		return ipv6_dev_find(cnp->net, ip, NULL);
	zone = dev_get_by_index_rcu(cnp->net, sin6->sin6_scope_id);
	return zone ? ipv6_dev_find(cnp->net, ip, zone) : NULL;
}
EXPORT_SYMBOL_GPL(cxe_portal_netdev);

/*
 * Where a portal's logins go, after its address in the portal_state file:
 * the adapter that steering (cxe_adapter_find, by the netdev a SYN comes
 * in on) gives each netdev of the portal's namespace they may arrive on.
 * A specific address: the netdev it is on, " on netdev=adapter", else
 * " off unserved netdev" (no adapter serves it) or " off no_netdev" (the
 * address is on none). A wildcard address: " on", "netdev=adapter" for
 * each netdev an adapter is bound to by name, then "*=adapter" for every
 * other netdev (now or later), "*=-" when those go to stock TCP; else
 * " off unserved". Before all of that, " off unbound": no adapter serves
 * any netdev. Appended to page from offset at, as sysfs_emit_at does.
 */
ssize_t cxe_portal_state(const struct cxe_np *cnp, char *page, ssize_t at)
{
	const void *ip = cxe_portal_ip(cnp);
	struct cxe_adapter *a, *rest;
	struct net_device *dev;
	ssize_t len = 0;
	bool bound = false;

	rcu_read_lock();
	spin_lock_bh(&cxe_adapters_lock);
	list_for_each_entry(a, &cxe_adapters, node)
		bound |= a->netdev[0] != '\0';
	if (!bound) {
		len = sysfs_emit_at(page, at, " off unbound");
	} else if (ip) {
		dev = cxe_portal_netdev(cnp, ip);
		a = dev ? cxe_adapter_find(cnp->net, dev->ifindex) : NULL;
		if (a)
			len = sysfs_emit_at(page, at, " on %s=%s", dev->name, a->name);
		else if (dev)
			len = sysfs_emit_at(page, at, " off unserved %s", dev->name);
		else
			len = sysfs_emit_at(page, at, " off no_netdev");
	} else {
		/* ifindex 0 is no netdev's: what one bound to no adapter gets */
		rest = cxe_adapter_find(cnp->net, 0);
		for_each_netdev_rcu(cnp->net, dev) {
			a = cxe_adapter_find(cnp->net, dev->ifindex);
			if (!a || !cxe_adapter_bound_to(a, cnp->net, dev->ifindex))
				continue;
			len += sysfs_emit_at(page, at + len, "%s %s=%s",
					     len ? "" : " on", dev->name, a->name);
		}
		if (rest || len)
			len += sysfs_emit_at(page, at + len, "%s *=%s", len ? "" : " on",
					     rest ? rest->name : "-");
		else
			len = sysfs_emit_at(page, at, " off unserved");
	}
	spin_unlock_bh(&cxe_adapters_lock);
	rcu_read_unlock();
	return len;
}

/*
 * A netdev by name: in the writer's network namespace, else in the one
 * namespace that has a netdev of that name (configfs is global, the
 * portals' netdevs often live in a namespace of their own).
 */
static int cxe_netdev_resolve(const char *name, struct net **netp, int *ifindex)
{
	struct net_device *dev;
	struct net *net;
	int found = 0;

	rcu_read_lock();
	dev = dev_get_by_name_rcu(current->nsproxy->net_ns, name);
	if (dev) {
		*netp = dev_net(dev);
		*ifindex = dev->ifindex;
	}
	rcu_read_unlock();
	if (dev)
		return 0;
	down_read(&net_rwsem);
	for_each_net(net) {
		rcu_read_lock();
		dev = dev_get_by_name_rcu(net, name);
		if (dev && !found++) {
			*netp = net;
			*ifindex = dev->ifindex;
		}
		rcu_read_unlock();
	}
	up_read(&net_rwsem);
	if (found == 1)
		return 0;
	return found ? -EEXIST : -ENODEV;
}

/* Serve netdev name ("*" all, "" none) unless another adapter serves it. */
int cxe_adapter_bind(struct cxe_adapter *a, const char *name)
{
	bool named = *name && strcmp(name, "*");
	struct net *net = NULL;
	struct cxe_adapter *o;
	int ifindex = 0, ret;

	if (named && !dev_valid_name(name)) {
		pr_err("adapter %s: '%s' is not a valid netdev name\n", a->name, name);
		return -EINVAL;
	}
	if (named) {
		ret = cxe_netdev_resolve(name, &net, &ifindex);
		if (ret) {
			pr_err("adapter %s: %s netdev '%s'\n", a->name,
			       ret == -EEXIST ? "several network namespaces have a" :
			       "no network namespace has a", name);
			return ret;
		}
	}
	/* the namespace cannot go away unseen: its netdevs unregister first */
	spin_lock_bh(&cxe_adapters_lock);
	list_for_each_entry(o, &cxe_adapters, node) {
		if (o != a && *name &&
		    (named ? cxe_adapter_bound_to(o, net, ifindex) :
		     !strcmp(o->netdev, name))) {
			spin_unlock_bh(&cxe_adapters_lock);
			pr_err("adapter %s: %s already serves '%s'\n", a->name, o->name, name);
			return -EBUSY;
		}
	}
	strscpy(a->netdev, name, sizeof(a->netdev));
	a->ifindex = ifindex;
	write_pnet(&a->net, net);
	spin_unlock_bh(&cxe_adapters_lock);
	return 0;
}

/* The name of the netdev a serves now ("*", "" or a netdev's) */
void cxe_adapter_netdev_name(struct cxe_adapter *a, char name[IFNAMSIZ])
{
	spin_lock_bh(&cxe_adapters_lock);
	strscpy(name, a->netdev, IFNAMSIZ);
	spin_unlock_bh(&cxe_adapters_lock);
}

/* Follow bound netdevs: a rename is shown, an unregistered one unbinds. */
static int cxe_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct cxe_adapter *a;

	if (event != NETDEV_CHANGENAME && event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	spin_lock_bh(&cxe_adapters_lock);
	list_for_each_entry(a, &cxe_adapters, node) {
		if (!cxe_adapter_bound_to(a, dev_net(dev), dev->ifindex))
			continue;
		if (event == NETDEV_CHANGENAME) {
			pr_info("adapter %s: netdev %s renamed %s: still served\n",
				a->name, a->netdev, dev->name);
			strscpy(a->netdev, dev->name, sizeof(a->netdev));
			continue;
		}
		pr_info("adapter %s: netdev %s unregistered: the adapter serves no netdev now, new connections go to stock TCP\n",
			a->name, a->netdev);
		a->netdev[0] = '\0';
		a->ifindex = 0;
		write_pnet(&a->net, NULL);
	}
	spin_unlock_bh(&cxe_adapters_lock);
	return NOTIFY_DONE;
}

static struct notifier_block cxe_netdev_nb = {
	.notifier_call = cxe_netdev_event,
};

size_t cxe_adapter_counters_emit(const struct cxe_adapter *a,
				 const char *prefix, char *buf, size_t size)
{
	u64 sum[CXE_STAT_MAX] = {};
	size_t len = 0;
	int cpu, i;

	for_each_possible_cpu(cpu)
		for (i = 0; i < CXE_STAT_MAX; i++)
			sum[i] += per_cpu_ptr(a->stats, cpu)->v[i];
	for (i = 0; i < CXE_STAT_MAX; i++)
		len += scnprintf(buf + len, size - len, "%s%s%s %llu\n",
				 prefix ?: "", prefix ? " " : "",
				 cxe_stat_names[i], sum[i]);
	return len;
}
EXPORT_SYMBOL_GPL(cxe_adapter_counters_emit);

/* The last reference: the adapter is off the list since its rmdir. */
void cxe_adapter_release(struct config_item *item)
{
	struct cxe_adapter *a = container_of(to_config_group(item),
					     struct cxe_adapter, group);

	free_percpu(a->stats);
	kfree(a);
}

static struct configfs_item_operations cxe_adapter_unlisted_ops = {
	.release	= cxe_adapter_release,
};

/* the item of an adapter with no directory: its reference count only */
static const struct config_item_type cxe_adapter_unlisted_type = {
	.ct_item_ops	= &cxe_adapter_unlisted_ops,
	.ct_owner	= THIS_MODULE,
};

static bool cxe_adapter_name_ok(const char *name)
{
	size_t len = strlen(name);

	size_t i;

	if (!len || len >= IFNAMSIZ)
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum(name[i]) && name[i] != '_' && name[i] != '-')
			return false;
	return true;
}

/* An adapter of backend b, an item of type, every offload on, not listed */
static struct cxe_adapter *cxe_adapter_alloc(const char *name,
					     const struct cxe_backend *b,
					     const struct config_item_type *type)
{
	struct cxe_adapter *a;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return ERR_PTR(-ENOMEM);
	a->stats = alloc_percpu(struct cxe_stats);
	if (!a->stats) {
		kfree(a);
		return ERR_PTR(-ENOMEM);
	}
	strscpy(a->name, name, sizeof(a->name));
	a->backend = b;
	a->ddp = true;
	a->iso = true;
	config_group_init_type_name(&a->group, a->name, type);
	return a;
}

/*
 * An adapter of a backend with devices of its own (struct cxe_adapter
 * for its connections: their counters, their reference). Not in
 * adapters/ and never steered to: the backend's device decides what it
 * takes. cxe_adapter_put() drops it.
 */
struct cxe_adapter *cxe_adapter_add(const char *name,
				    const struct cxe_backend *b)
{
	return cxe_adapter_alloc(name, b, &cxe_adapter_unlisted_type);
}
EXPORT_SYMBOL_GPL(cxe_adapter_add);

/*
 * An adapter of b, the backend whose adapters are made by name (the
 * software one), an item of type, serving no netdev, with every offload
 * on, listed.
 */
struct cxe_adapter *cxe_adapter_new(const char *name,
				    const struct cxe_backend *b,
				    const struct config_item_type *type)
{
	struct cxe_adapter *a;

	if (!b)
		return ERR_PTR(-ENODEV);
	if (!cxe_adapter_name_ok(name)) {
		pr_err("adapter name '%s': 1..%d characters of A-Z a-z 0-9 _ -\n",
		       name, IFNAMSIZ - 1);
		return ERR_PTR(-EINVAL);
	}
	a = cxe_adapter_alloc(name, b, type);
	if (IS_ERR(a))
		return a;
	spin_lock_bh(&cxe_adapters_lock);
	list_add_tail(&a->node, &cxe_adapters);
	spin_unlock_bh(&cxe_adapters_lock);
	return a;
}

void cxe_adapter_unlist(struct cxe_adapter *a)
{
	spin_lock_bh(&cxe_adapters_lock);
	list_del(&a->node);
	spin_unlock_bh(&cxe_adapters_lock);
}

int cxe_adapters_init(void)
{
	return register_netdevice_notifier(&cxe_netdev_nb);
}

void cxe_adapters_exit(void)
{
	unregister_netdevice_notifier(&cxe_netdev_nb);
}
