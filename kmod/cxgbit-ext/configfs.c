// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext control interface: /sys/kernel/config/cxgbit_ext/
 *
 *   version      module version (read-only)
 *   transport    name of the LIO transport this module registers (read-only)
 *   portals      offloaded portals LIO has set up, one "ip:port" per line
 *   adapters/    one directory per adapter (grows with the adapter layer)
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/configfs.h>
#include <target/iscsi/iscsi_transport.h>

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

CONFIGFS_ATTR_RO(cxe_root_, version);
CONFIGFS_ATTR_RO(cxe_root_, transport);
CONFIGFS_ATTR_RO(cxe_root_, portals);

static struct configfs_attribute *cxe_root_attrs[] = {
	&cxe_root_attr_version,
	&cxe_root_attr_transport,
	&cxe_root_attr_portals,
	NULL,
};

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

	ret = configfs_register_subsystem(&cxe_subsys);
	if (ret)
		pr_err("configfs_register_subsystem: %d\n", ret);
	return ret;
}

void cxe_configfs_exit(void)
{
	configfs_unregister_subsystem(&cxe_subsys);
}
