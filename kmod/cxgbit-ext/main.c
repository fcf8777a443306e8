// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext: module entry. Registers the ISCSI_CXGBIT transport and the
 * configfs control interface; refuses to load beside the in-tree cxgbit,
 * which owns the same transport type and cxgb4 ULD slot.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/kobject.h>
#include <target/iscsi/iscsi_target_core.h>
#include <target/iscsi/iscsi_transport.h>

#include "core.h"

/* Our own kobject sits in the kernel's module kset: look for a sibling. */
static bool cxe_module_loaded(const char *name)
{
	struct kobject *kobj;

	kobj = kset_find_obj(THIS_MODULE->mkobj.kobj.kset, name);
	if (!kobj)
		return false;
	kobject_put(kobj);
	return true;
}

/*
 * While we are loaded, the in-tree cxgbit may not load: LIO's
 * enable_offload always does request_module("cxgbit"), and two
 * ISCSI_CXGBIT transports must never coexist.
 */
static int cxe_module_notify(struct notifier_block *nb, unsigned long state,
			     void *data)
{
	struct module *mod = data;

	if (state != MODULE_STATE_COMING || strcmp(mod->name, "cxgbit"))
		return NOTIFY_DONE;
	pr_err("refusing to let the in-tree cxgbit load beside cxgbit_ext (same ISCSI_CXGBIT transport); install cxgbit-ext.conf in /etc/modprobe.d\n");
	return notifier_from_errno(-EBUSY);
}

static struct notifier_block cxe_module_nb = {
	.notifier_call = cxe_module_notify,
};

static int __init cxe_init(void)
{
	int ret;

	if (cxe_module_loaded("cxgbit")) {
		pr_err("the in-tree cxgbit module is loaded and owns the ISCSI_CXGBIT transport; 'rmmod cxgbit' first (cxgbit_ext replaces it)\n");
		return -EBUSY;
	}

	ret = register_module_notifier(&cxe_module_nb);
	if (ret)
		return ret;
	ret = cxe_dcache_module_init();
	if (ret)
		goto err_notifier;
	ret = cxe_tpgs_init();
	if (ret)
		goto err_dcache;
	/* the backends first: the control interface makes soft0 of one */
	ret = cxe_backend_register(&cxe_soft_backend);
	if (ret)
		goto err_tpgs;
	/* before the control interface, whose reservations/ is spr.c's */
	ret = cxe_spr_init();
	if (ret)
		goto err_backend;
	ret = cxe_configfs_init();
	if (ret)
		goto err_spr;

	iscsit_register_transport(&cxe_transport);
	pr_info("version %s: transport %s registered\n", CXE_VERSION,
		cxe_transport.name);
	return 0;

err_spr:
	cxe_spr_exit();
err_backend:
	cxe_backend_unregister(&cxe_soft_backend);
err_tpgs:
	cxe_tpgs_exit();
err_dcache:
	cxe_dcache_module_exit();
err_notifier:
	unregister_module_notifier(&cxe_module_nb);
	return ret;
}

static void __exit cxe_exit(void)
{
	iscsit_unregister_transport(&cxe_transport);
	cxe_configfs_exit();
	cxe_spr_exit();
	cxe_backend_unregister(&cxe_soft_backend);
	cxe_soft_exit();
	cxe_tpgs_exit();
	cxe_dcache_module_exit();
	unregister_module_notifier(&cxe_module_nb);
	pr_info("unloaded\n");
}

module_init(cxe_init);
module_exit(cxe_exit);

MODULE_DESCRIPTION("iSCSI PDU-offload target transport for LIO (cxgbit-ext)");
MODULE_AUTHOR("cxgbit-ext developers");
MODULE_VERSION(CXE_VERSION);
MODULE_LICENSE("GPL");
MODULE_SOFTDEP("pre: iscsi_target_mod");
