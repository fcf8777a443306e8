// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext control interface: /sys/kernel/config/cxgbit_ext/
 *
 *   version      module version (read-only)
 *   transport    name of the LIO transport this module registers (read-only)
 *   portals      offloaded portals LIO has set up, one "ip:port" per line
 *   connections  offloaded connections, one per line: peer, local, adapter,
 *                digests, counters
 *   adapters/<name>/
 *     type       "soft" (software adapter) or the hardware's name
 *     netdev     netdev the adapter serves, "*" for all, empty for none
 *                (read-write)
 *     caps       offloads the adapter performs, space separated
 *     counters   "name value" per line
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/configfs.h>
#include <target/iscsi/iscsi_transport.h>
#include <linux/netdevice.h>
#include <linux/string.h>

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
	return cxe_np_show_all(page);
}

static ssize_t cxe_root_connections_show(struct config_item *item, char *page)
{
	return cxe_conn_show_all(page);
}

CONFIGFS_ATTR_RO(cxe_root_, version);
CONFIGFS_ATTR_RO(cxe_root_, transport);
CONFIGFS_ATTR_RO(cxe_root_, portals);
CONFIGFS_ATTR_RO(cxe_root_, connections);

static struct configfs_attribute *cxe_root_attrs[] = {
	&cxe_root_attr_version,
	&cxe_root_attr_transport,
	&cxe_root_attr_portals,
	&cxe_root_attr_connections,
	NULL,
};

/* adapters/soft0: the software adapter made at load */
static ssize_t cxe_adapter_type_show(struct config_item *item, char *page)
{
	return sysfs_emit(page, "soft\n");
}

static ssize_t cxe_adapter_netdev_show(struct config_item *item, char *page)
{
	ssize_t len;

	spin_lock_bh(&cxe_soft0.lock);
	len = sysfs_emit(page, "%s\n", cxe_soft0.netdev);
	spin_unlock_bh(&cxe_soft0.lock);
	return len;
}

static ssize_t cxe_adapter_netdev_store(struct config_item *item,
					const char *page, size_t count)
{
	char name[IFNAMSIZ];
	size_t len = strcspn(page, "\n");

	if (len >= IFNAMSIZ) {
		pr_err("adapter %s: netdev name must be 1..%d characters, \"*\" or empty\n",
		       cxe_soft0.name, IFNAMSIZ - 1);
		return -EINVAL;
	}
	memcpy(name, page, len);
	name[len] = '\0';
	/* empty: serve no netdev; new connections go to stock TCP */
	if (len && strcmp(name, "*") && !dev_valid_name(name)) {
		pr_err("adapter %s: '%s' is not a valid netdev name\n",
		       cxe_soft0.name, name);
		return -EINVAL;
	}
	spin_lock_bh(&cxe_soft0.lock);
	strscpy(cxe_soft0.netdev, name, sizeof(cxe_soft0.netdev));
	spin_unlock_bh(&cxe_soft0.lock);
	return count;
}

/*
 * What the software adapter does for the PDU layer, in the names the tools
 * show: CRC32C header and data digests, direct data placement of Data-Out
 * (and immediate/unsolicited data), Data-In segmentation (a burst handed
 * down once), and receive aggregation (several PDUs per wake-up).
 */
static ssize_t cxe_adapter_caps_show(struct config_item *item, char *page)
{
	return sysfs_emit(page, "hcrc dcrc ddp iso rxagg\n");
}

static ssize_t cxe_adapter_counters_show(struct config_item *item, char *page)
{
	ssize_t len = 0;
	int i;

	for (i = 0; i < CXE_STAT_MAX; i++)
		len += scnprintf(page + len, PAGE_SIZE - len, "%s %lld\n",
				 cxe_stat_names[i],
				 atomic64_read(&cxe_soft0.stats[i]));
	return len;
}

CONFIGFS_ATTR_RO(cxe_adapter_, type);
CONFIGFS_ATTR(cxe_adapter_, netdev);
CONFIGFS_ATTR_RO(cxe_adapter_, counters);
CONFIGFS_ATTR_RO(cxe_adapter_, caps);

static struct configfs_attribute *cxe_adapter_attrs[] = {
	&cxe_adapter_attr_type,
	&cxe_adapter_attr_netdev,
	&cxe_adapter_attr_counters,
	&cxe_adapter_attr_caps,
	NULL,
};

static const struct config_item_type cxe_adapter_type = {
	.ct_attrs	= cxe_adapter_attrs,
	.ct_owner	= THIS_MODULE,
};

static struct config_group cxe_soft0_group;

static const struct config_item_type cxe_root_type = {
	.ct_attrs	= cxe_root_attrs,
	.ct_owner	= THIS_MODULE,
};

static const struct config_item_type cxe_adapters_type = {
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

	config_group_init(&cxe_subsys.su_group);
	mutex_init(&cxe_subsys.su_mutex);

	config_group_init_type_name(&cxe_adapters_group, "adapters",
				    &cxe_adapters_type);
	configfs_add_default_group(&cxe_adapters_group, &cxe_subsys.su_group);
	config_group_init_type_name(&cxe_soft0_group, cxe_soft0.name,
				    &cxe_adapter_type);
	configfs_add_default_group(&cxe_soft0_group, &cxe_adapters_group);

	ret = configfs_register_subsystem(&cxe_subsys);
	if (ret)
		pr_err("configfs_register_subsystem: %d\n", ret);
	return ret;
}

void cxe_configfs_exit(void)
{
	configfs_unregister_subsystem(&cxe_subsys);
}
