// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext control interface: /sys/kernel/config/cxgbit_ext/
 *
 *   version      module version (read-only)
 *   transport    name of the LIO transport this module registers (read-only)
 *   portals      offloaded portals LIO has set up, one "ip:port" per line
 *   portal_state the same portals, each followed by where its logins go,
 *                by the rule that steers them (cxe_portal_state):
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
 * Attributes only: the adapters are adapters.c's, the portals and the
 * backends backend.c's, the connections portal.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/configfs.h>
#include <target/iscsi/iscsi_transport.h>
#include <linux/netdevice.h>
#include <linux/string.h>
#include <linux/sizes.h>

#include "core.h"

static ssize_t cxe_root_version_show(struct config_item *item, char *page)
{
	return sysfs_emit(page, "%s\n", CXE_VERSION);
}

static ssize_t cxe_root_transport_show(struct config_item *item, char *page)
{
	return sysfs_emit(page, "%s\n", cxe_transport.name);
}

struct cxe_portals_page {
	char	*page;
	ssize_t	len;
	bool	state;
};

/*
 * One portal's line, whole or not at all: 0, or -ENOSPC when it is full.
 * The portal as LIO names it: a zoned IPv6 address with its zone inside
 * the brackets, [fe80::1%3]:3260.
 */
static int cxe_portal_line(const struct cxe_np *cnp, void *arg)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&cnp->addr;
	struct cxe_portals_page *p = arg;
	ssize_t len = p->len;

	if (cnp->addr.ss_family == AF_INET6 && sin6->sin6_scope_id)
		len += sysfs_emit_at(p->page, len, "[%pI6c%%%u]:%u", &sin6->sin6_addr,
				     sin6->sin6_scope_id, ntohs(sin6->sin6_port));
	else
		len += sysfs_emit_at(p->page, len, "%pISpc", &cnp->addr);
	if (p->state)
		len += cxe_portal_state(cnp, p->page, len);
	if (!sysfs_emit_at(p->page, len, "\n"))
		return -ENOSPC;
	p->len = len + 1;
	return 0;
}

/*
 * The portals file, one "ip:port" per portal, or with state the
 * portal_state file: each followed by where its logins go. Whole lines
 * only: a portal whose line does not fit in the page is left out, with
 * those after it.
 */
static ssize_t cxe_portals_show(char *page, bool state)
{
	struct cxe_portals_page p = { .page = page, .state = state };

	cxe_portals_each(cxe_portal_line, &p);
	return p.len;
}

static ssize_t cxe_root_portals_show(struct config_item *item, char *page)
{
	return cxe_portals_show(page, false);
}

static ssize_t cxe_root_portal_state_show(struct config_item *item, char *page)
{
	return cxe_portals_show(page, true);
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
static ssize_t cxe_bin_fill(char *buf, size_t len, size_t size)
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
	ssize_t len = cxe_conn_show_all(buf, size);

	return buf ? cxe_bin_fill(buf, len, size) : len;
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
	ssize_t len = cxe_backends_counters_read(buf, size);

	return buf ? cxe_bin_fill(buf, len, size) : len;
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

static struct cxe_adapter *cxe_soft0;

static char *soft0_netdev = "*";
module_param(soft0_netdev, charp, 0444);
MODULE_PARM_DESC(soft0_netdev,
		 "netdev the built-in software adapter soft0 serves at load: a name, \"*\" (all, the default) or \"\" (none)");

static struct cxe_adapter *to_adapter(struct config_item *item)
{
	return container_of(to_config_group(item), struct cxe_adapter, group);
}

static ssize_t cxe_adapter_type_show(struct config_item *item, char *page)
{
	return sysfs_emit(page, "%s\n", to_adapter(item)->backend->name);
}

static ssize_t cxe_adapter_netdev_show(struct config_item *item, char *page)
{
	char name[IFNAMSIZ];

	cxe_adapter_netdev_name(to_adapter(item), name);
	return sysfs_emit(page, "%s\n", name);
}

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

static struct configfs_item_operations cxe_adapter_item_ops = {
	.release	= cxe_adapter_release,
};

static const struct config_item_type cxe_adapter_type = {
	.ct_item_ops	= &cxe_adapter_item_ops,
	.ct_attrs	= cxe_adapter_attrs,
	.ct_owner	= THIS_MODULE,
};

static struct config_group cxe_adapters_group;

/* An adapter of the backend whose adapters are made by name, listed */
static struct cxe_adapter *cxe_adapter_new_soft(const char *name)
{
	const struct cxe_backend *b = cxe_backend_find(CXE_BACKEND_MKDIR);

	if (!b)
		return ERR_PTR(-ENODEV);
	return cxe_adapter_new(name, b, &cxe_adapter_type);
}

/* mkdir adapters/<name> */
static struct config_group *cxe_adapters_make(struct config_group *group,
					      const char *name)
{
	struct cxe_adapter *a = cxe_adapter_new_soft(name);

	if (IS_ERR(a))
		return ERR_CAST(a);
	pr_info("adapter %s created (software, serving no netdev until bound)\n", name);
	return &a->group;
}

struct cxe_adapter *cxe_adapter_publish(const char *name,
					const struct cxe_backend *b,
					const char *netdev)
{
	struct cxe_adapter *a;
	int ret;

	if (!(b->flags & CXE_BACKEND_SOCKETS))
		return ERR_PTR(-EINVAL);
	a = cxe_adapter_new(name, b, &cxe_adapter_type);
	if (IS_ERR(a))
		return a;
	ret = cxe_adapter_bind(a, netdev);
	if (!ret)
		ret = configfs_register_group(&cxe_adapters_group, &a->group);
	if (ret) {
		cxe_adapter_unlist(a);
		cxe_adapter_put(a);
		return ERR_PTR(ret);
	}
	pr_info("adapter %s published by backend %s, serving '%s'\n", name,
		b->name, netdev);
	return a;
}
EXPORT_SYMBOL_GPL(cxe_adapter_publish);

/*
 * The backend's adapter leaves adapters/ and serves nothing more; its
 * connections keep it (and its backend's module) until they end.
 */
void cxe_adapter_unpublish(struct cxe_adapter *a)
{
	cxe_adapter_unlist(a);
	configfs_unregister_group(&a->group);
	pr_info("adapter %s unpublished\n", a->name);
	cxe_adapter_put(a);
}
EXPORT_SYMBOL_GPL(cxe_adapter_unpublish);

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

	ret = cxe_adapters_init();
	if (ret)
		return ret;
	cxe_soft0 = cxe_adapter_new_soft("soft0");
	if (IS_ERR(cxe_soft0)) {
		ret = PTR_ERR(cxe_soft0);
		goto err_adapters;
	}
	/* a netdev not there yet: soft0 serves none until bound */
	if (cxe_adapter_bind(cxe_soft0, soft0_netdev))
		pr_warn("soft0_netdev=%s: soft0 serves no netdev\n", soft0_netdev);

	config_group_init(&cxe_subsys.su_group);
	mutex_init(&cxe_subsys.su_mutex);
	config_group_init_type_name(&cxe_adapters_group, "adapters",
				    &cxe_adapters_type);
	configfs_add_default_group(&cxe_adapters_group, &cxe_subsys.su_group);
	configfs_add_default_group(&cxe_soft0->group, &cxe_adapters_group);
	configfs_add_default_group(&cxe_spr_group, &cxe_subsys.su_group);

	ret = configfs_register_subsystem(&cxe_subsys);
	if (ret) {
		pr_err("configfs_register_subsystem: %d\n", ret);
		goto err_soft0;
	}
	return 0;

err_soft0:
	cxe_adapter_unlist(cxe_soft0);
	cxe_adapter_put(cxe_soft0);
err_adapters:
	cxe_adapters_exit();
	return ret;
}

/* Unload: no connection is left (each pins the module), nor an adapter
 * made with mkdir (configfs pins the module while its directory exists).
 */
void cxe_configfs_exit(void)
{
	configfs_unregister_subsystem(&cxe_subsys);
	cxe_adapter_unlist(cxe_soft0);
	cxe_adapter_put(cxe_soft0);
	cxe_adapters_exit();
}
