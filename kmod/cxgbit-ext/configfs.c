// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext control interface: /sys/kernel/config/cxgbit_ext/
 *
 *   version      module version (read-only)
 *   transport    name of the LIO transport this module registers (read-only)
 *   portals      offloaded portals LIO has set up, one "ip:port" per line
 *   portal_state the same portals, each followed by where its logins go,
 *                by the rule that steers them (cxe_portal_state_show):
 *                  ip:port on [netdev=adapter ...] [*=adapter|-]
 *                  ip:port off unbound|no_netdev|unserved [netdev]
 *   backends     the backends registered (this module's, and those of
 *                modules such as cxgbit_ext_cxgb4), one per line, whether
 *                each can carry offloaded connections now and what it
 *                offloads (cxe_backend_show_all):
 *                  name on|off [why [detail...]] caps=hcrc,dcrc,...
 *   login_holds  targets whose logins LIO refuses on an offloaded portal
 *                are refused there, not handed to the stock portal
 *                (holds.c), one "target ms-left" per line; write
 *                "target seconds" to hold (at most 600), "target 0" to
 *                end the hold
 *   connections  offloaded connections, one per line: peer, local, adapter,
 *                digests, offloads, counters (a binary attribute: not
 *                limited to a page, 1024 connections take ~200 KiB)
 *   device_counters  the counters of the adapters of backends with devices
 *                of their own (not under adapters/), as "backend adapter
 *                name value" lines (cxe_backends_counters_read; a binary
 *                attribute, as connections)
 *   adapters/<name>/   soft0 from load; mkdir makes a software adapter,
 *                      rmdir removes one (its connections go on until they
 *                      end; new logins on its netdev go to stock TCP)
 *     type       "soft" (software adapter) or the hardware's name
 *     netdev     netdev the adapter serves, "*" for all, empty for none
 *                (read-write; a named netdev beats "*", and two adapters
 *                may not serve the same one). A name is resolved when
 *                written, in the writer's network namespace or else the
 *                one namespace that has it; the adapter then follows that
 *                netdev, not the name: a rename shows here, and when the
 *                netdev is unregistered the adapter serves none.
 *     caps       offloads the adapter can perform, space separated
 *     ddp, iso   toggles, 0 or 1 (read-write): direct data placement and
 *                Data-In segmentation, for connections accepted after
 *     counters   "name value" per line
 *
 * This file also keeps the adapters: the list the SYN steering hook and
 * accept look netdevs up in.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/configfs.h>
#include <target/iscsi/iscsi_transport.h>
#include <linux/netdevice.h>
#include <linux/string.h>
#include <linux/ctype.h>
#include <linux/sizes.h>
#include <linux/inetdevice.h>
#include <net/sock.h>
#include <net/net_namespace.h>
#include <net/addrconf.h>
#include <linux/rwsem.h>

#include "cxgbit_ext.h"

static ssize_t cxe_root_version_show(struct config_item *item, char *page)
{
	return sysfs_emit(page, "%s\n", CXE_VERSION);
}

static ssize_t cxe_root_transport_show(struct config_item *item, char *page)
{
	return sysfs_emit(page, "%s\n", cxe_transport.name);
}

static ssize_t cxe_root_portals_show(struct config_item *item, char *page)
{
	return cxe_np_show_all(page, false);
}

static ssize_t cxe_root_portal_state_show(struct config_item *item, char *page)
{
	return cxe_np_show_all(page, true);
}

static ssize_t cxe_root_backends_show(struct config_item *item, char *page)
{
	return cxe_backend_show_all(page);
}

/*
 * A binary attribute's read: configfs hands out all size bytes of the
 * buffer whatever the read returns, so what the lines (len bytes, each
 * ending in a newline) left over becomes trailing spaces on the last
 * line, never uninitialised memory. Returns size.
 */
size_t cxe_bin_fill(char *buf, size_t len, size_t size)
{
	if (len < size) {
		memset(buf + len, ' ', size - len);
		if (len)
			buf[len - 1] = ' ';
		buf[size - 1] = '\n';
	}
	return size;
}

/* configfs asks for the size first (buf NULL), then fills a buffer of it */
static ssize_t cxe_root_connections_read(struct config_item *item, void *buf,
					 size_t size)
{
	return cxe_conn_show_all(buf, size);
}

CONFIGFS_ATTR_RO(cxe_root_, version);
CONFIGFS_ATTR_RO(cxe_root_, transport);
CONFIGFS_ATTR_RO(cxe_root_, portals);
CONFIGFS_ATTR_RO(cxe_root_, portal_state);
CONFIGFS_ATTR_RO(cxe_root_, backends);

static ssize_t cxe_root_login_holds_show(struct config_item *item, char *page)
{
	return cxe_holds_show(page);
}

static ssize_t cxe_root_login_holds_store(struct config_item *item,
					  const char *page, size_t count)
{
	return cxe_holds_store(page, count);
}

CONFIGFS_ATTR(cxe_root_, login_holds);

static ssize_t cxe_root_device_counters_read(struct config_item *item,
					     void *buf, size_t size)
{
	return cxe_backends_counters_read(buf, size);
}

CONFIGFS_BIN_ATTR_RO(cxe_root_, device_counters, NULL, SZ_1M);
CONFIGFS_BIN_ATTR_RO(cxe_root_, connections, NULL, SZ_16M);

static struct configfs_attribute *cxe_root_attrs[] = {
	&cxe_root_attr_version,
	&cxe_root_attr_transport,
	&cxe_root_attr_portals,
	&cxe_root_attr_portal_state,
	&cxe_root_attr_backends,
	&cxe_root_attr_login_holds,
	NULL,
};

static struct configfs_bin_attribute *cxe_root_bin_attrs[] = {
	&cxe_root_attr_connections,
	&cxe_root_attr_device_counters,
	NULL,
};

/* ---- the adapters ------------------------------------------------------ */

static LIST_HEAD(cxe_adapters);
static DEFINE_SPINLOCK(cxe_adapters_lock);	/* the list, each netdev */
static struct cxe_adapter *cxe_soft0;

static char *soft0_netdev = "*";
module_param(soft0_netdev, charp, 0444);
MODULE_PARM_DESC(soft0_netdev,
		 "netdev the built-in software adapter soft0 serves at load: a name, \"*\" (all, the default) or \"\" (none)");

static struct cxe_adapter *to_adapter(struct config_item *item)
{
	return container_of(to_config_group(item), struct cxe_adapter, group);
}

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

/* The netdev a portal's address is on, in its namespace; RCU held. */
struct net_device *cxe_portal_netdev(const struct cxe_np *cnp, const void *ip)
{
	if (cnp->addr.ss_family == AF_INET)
		return __ip_dev_find(cnp->net, *(const __be32 *)ip, false);
	return ipv6_dev_find(cnp->net, ip, NULL);
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
ssize_t cxe_portal_state_show(const struct cxe_np *cnp, char *page, ssize_t at)
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

static ssize_t cxe_adapter_type_show(struct config_item *item, char *page)
{
	return sysfs_emit(page, "%s\n", to_adapter(item)->backend->name);
}

static ssize_t cxe_adapter_netdev_show(struct config_item *item, char *page)
{
	struct cxe_adapter *a = to_adapter(item);
	ssize_t len;

	spin_lock_bh(&cxe_adapters_lock);
	len = sysfs_emit(page, "%s\n", a->netdev);
	spin_unlock_bh(&cxe_adapters_lock);
	return len;
}

/*
 * A netdev by name: in the writer's network namespace, else in the one
 * namespace that has a netdev of that name (configfs is global, the
 * portals' netdevs often live in a namespace of their own).
 */
int cxe_netdev_resolve(const char *name, struct net **netp, int *ifindex)
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
static int cxe_adapter_bind(struct cxe_adapter *a, const char *name)
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

static ssize_t cxe_adapter_netdev_store(struct config_item *item,
					const char *page, size_t count)
{
	struct cxe_adapter *a = to_adapter(item);
	size_t len = strcspn(page, "\n");
	char name[IFNAMSIZ];
	int ret;

	if (len >= IFNAMSIZ) {
		pr_err("adapter %s: netdev name must be 1..%d characters, \"*\" or empty\n",
		       a->name, IFNAMSIZ - 1);
		return -EINVAL;
	}
	memcpy(name, page, len);
	name[len] = '\0';
	/* empty: serve no netdev; new connections go to stock TCP */
	ret = cxe_adapter_bind(a, name);
	return ret ? ret : count;
}

/*
 * What the adapter's backend can do for the PDU layer, space separated in
 * enum cxe_cap's order. ddp and iso can be switched off (the toggles);
 * digests follow the negotiation.
 */
static ssize_t cxe_adapter_caps_show(struct config_item *item, char *page)
{
	ssize_t len = cxe_caps_show(to_adapter(item)->backend->caps, " ",
				    page, 0);

	return len + sysfs_emit_at(page, len, "\n");
}

static ssize_t cxe_toggle_store(struct cxe_adapter *a, bool *toggle,
				const char *what, const char *page,
				size_t count)
{
	bool on;

	if (kstrtobool(page, &on)) {
		pr_err("adapter %s: %s takes 0 or 1\n", a->name, what);
		return -EINVAL;
	}
	WRITE_ONCE(*toggle, on);
	return count;
}

static ssize_t cxe_adapter_ddp_show(struct config_item *item, char *page)
{
	return sysfs_emit(page, "%d\n", READ_ONCE(to_adapter(item)->ddp));
}

static ssize_t cxe_adapter_ddp_store(struct config_item *item,
				     const char *page, size_t count)
{
	struct cxe_adapter *a = to_adapter(item);

	return cxe_toggle_store(a, &a->ddp, "ddp", page, count);
}

static ssize_t cxe_adapter_iso_show(struct config_item *item, char *page)
{
	return sysfs_emit(page, "%d\n", READ_ONCE(to_adapter(item)->iso));
}

static ssize_t cxe_adapter_iso_store(struct config_item *item,
				     const char *page, size_t count)
{
	struct cxe_adapter *a = to_adapter(item);

	return cxe_toggle_store(a, &a->iso, "iso", page, count);
}

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

static ssize_t cxe_adapter_counters_show(struct config_item *item, char *page)
{
	return cxe_adapter_counters_emit(to_adapter(item), NULL, page,
					 PAGE_SIZE);
}

CONFIGFS_ATTR_RO(cxe_adapter_, type);
CONFIGFS_ATTR(cxe_adapter_, netdev);
CONFIGFS_ATTR_RO(cxe_adapter_, counters);
CONFIGFS_ATTR_RO(cxe_adapter_, caps);
CONFIGFS_ATTR(cxe_adapter_, ddp);
CONFIGFS_ATTR(cxe_adapter_, iso);

static struct configfs_attribute *cxe_adapter_attrs[] = {
	&cxe_adapter_attr_type,
	&cxe_adapter_attr_netdev,
	&cxe_adapter_attr_counters,
	&cxe_adapter_attr_caps,
	&cxe_adapter_attr_ddp,
	&cxe_adapter_attr_iso,
	NULL,
};

/* The last reference: the adapter is off the list since its rmdir. */
static void cxe_adapter_release(struct config_item *item)
{
	struct cxe_adapter *a = to_adapter(item);

	free_percpu(a->stats);
	kfree(a);
}

static struct configfs_item_operations cxe_adapter_item_ops = {
	.release	= cxe_adapter_release,
};

static const struct config_item_type cxe_adapter_type = {
	.ct_item_ops	= &cxe_adapter_item_ops,
	.ct_attrs	= cxe_adapter_attrs,
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

/* An adapter of backend b, every offload on, not listed */
static struct cxe_adapter *cxe_adapter_alloc(const char *name,
					     const struct cxe_backend *b)
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
	config_group_init_type_name(&a->group, a->name, &cxe_adapter_type);
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
	return cxe_adapter_alloc(name, b);
}
EXPORT_SYMBOL_GPL(cxe_adapter_add);

/*
 * An adapter of the backend whose adapters are made by name (the software
 * one), serving no netdev, with every offload on, listed.
 */
static struct cxe_adapter *cxe_adapter_new(const char *name)
{
	const struct cxe_backend *b = cxe_backend_find(CXE_BACKEND_MKDIR);
	struct cxe_adapter *a;

	if (!b)
		return ERR_PTR(-ENODEV);
	if (!cxe_adapter_name_ok(name)) {
		pr_err("adapter name '%s': 1..%d characters of A-Z a-z 0-9 _ -\n",
		       name, IFNAMSIZ - 1);
		return ERR_PTR(-EINVAL);
	}
	a = cxe_adapter_alloc(name, b);
	if (IS_ERR(a))
		return a;
	spin_lock_bh(&cxe_adapters_lock);
	list_add_tail(&a->node, &cxe_adapters);
	spin_unlock_bh(&cxe_adapters_lock);
	return a;
}

static void cxe_adapter_unlist(struct cxe_adapter *a)
{
	spin_lock_bh(&cxe_adapters_lock);
	list_del(&a->node);
	spin_unlock_bh(&cxe_adapters_lock);
}

/* mkdir adapters/<name> */
static struct config_group *cxe_adapters_make(struct config_group *group,
					      const char *name)
{
	struct cxe_adapter *a = cxe_adapter_new(name);

	if (IS_ERR(a))
		return ERR_CAST(a);
	pr_info("adapter %s created (software, serving no netdev until bound)\n", name);
	return &a->group;
}

/* rmdir adapters/<name>: no new connections; live ones keep a reference */
static void cxe_adapters_drop(struct config_group *group, struct config_item *item)
{
	struct cxe_adapter *a = to_adapter(item);

	cxe_adapter_unlist(a);
	pr_info("adapter %s removed\n", a->name);
	config_item_put(item);
}

static struct configfs_group_operations cxe_adapters_group_ops = {
	.make_group	= cxe_adapters_make,
	.drop_item	= cxe_adapters_drop,
};

static const struct config_item_type cxe_adapters_type = {
	.ct_group_ops	= &cxe_adapters_group_ops,
	.ct_owner	= THIS_MODULE,
};

static const struct config_item_type cxe_root_type = {
	.ct_attrs	= cxe_root_attrs,
	.ct_bin_attrs	= cxe_root_bin_attrs,
	.ct_owner	= THIS_MODULE,
};

static struct config_group cxe_adapters_group;

static struct configfs_subsystem cxe_subsys = {
	.su_group = {
		.cg_item = {
			.ci_namebuf	= CXE_DRV_NAME,
			.ci_type	= &cxe_root_type,
		},
	},
};

int cxe_configfs_init(void)
{
	int ret;

	cxe_soft0 = cxe_adapter_new("soft0");
	if (IS_ERR(cxe_soft0))
		return PTR_ERR(cxe_soft0);
	ret = register_netdevice_notifier(&cxe_netdev_nb);
	if (ret)
		goto err_soft0;
	/* a netdev not there yet: soft0 serves none until bound */
	if (cxe_adapter_bind(cxe_soft0, soft0_netdev))
		pr_warn("soft0_netdev=%s: soft0 serves no netdev\n", soft0_netdev);

	config_group_init(&cxe_subsys.su_group);
	mutex_init(&cxe_subsys.su_mutex);
	config_group_init_type_name(&cxe_adapters_group, "adapters",
				    &cxe_adapters_type);
	configfs_add_default_group(&cxe_adapters_group, &cxe_subsys.su_group);
	configfs_add_default_group(&cxe_soft0->group, &cxe_adapters_group);

	ret = configfs_register_subsystem(&cxe_subsys);
	if (ret) {
		pr_err("configfs_register_subsystem: %d\n", ret);
		goto err_notifier;
	}
	return 0;

err_notifier:
	unregister_netdevice_notifier(&cxe_netdev_nb);
err_soft0:
	cxe_adapter_unlist(cxe_soft0);
	cxe_adapter_put(cxe_soft0);
	return ret;
}

/* Unload: no connection is left (each pins the module), nor an adapter
 * made with mkdir (configfs pins the module while its directory exists).
 */
void cxe_configfs_exit(void)
{
	configfs_unregister_subsystem(&cxe_subsys);
	unregister_netdevice_notifier(&cxe_netdev_nb);
	cxe_adapter_unlist(cxe_soft0);
	cxe_adapter_put(cxe_soft0);
}
