// SPDX-License-Identifier: GPL-2.0-only
/*
 * backendprobe: a test-only backend module with no adapters, for what the
 * registry does with a module's backend (tests/vm/test_module.py): one
 * built for another contract version (contract=), one under a name
 * registered already (name=), one that asks to serve portals by name
 * (flags=, CXE_BACKEND_* bits) is refused at load, with the reason in the
 * kernel log; any other is listed in the backends file until it unloads.
 * With netdev=, it rides the kernel's TCP (CXE_BACKEND_SOCKETS): its
 * adapter probe0 serves that netdev and it adopts nothing, answering
 * adopt_err= (an errno, negative) for each connection steered to it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

#include "cxgbit_ext.h"

static uint contract = CXE_BACKEND_CONTRACT;
module_param(contract, uint, 0444);
MODULE_PARM_DESC(contract, "the contract version it declares (default: the one it is built with)");

static char *name = "probe";
module_param(name, charp, 0444);
MODULE_PARM_DESC(name, "the backend's name (default: probe)");

static ulong flags;
module_param(flags, ulong, 0444);
MODULE_PARM_DESC(flags, "its CXE_BACKEND_* flags (default: none)");

static char *netdev;
module_param(netdev, charp, 0444);
MODULE_PARM_DESC(netdev, "a netdev its adapter probe0 serves, refusing every connection (default: none, no adapter)");

static int adopt_err = -ENOMEM;
module_param(adopt_err, int, 0444);
MODULE_PARM_DESC(adopt_err, "what adopt answers with netdev= (default: -ENOMEM)");

static int cxe_probe_listen(struct cxe_np *cnp)
{
	return 0;
}

static void cxe_probe_unlisten(struct cxe_np *cnp)
{
}

static const struct cxe_adapter_ops cxe_probe_ops = {
	.listen		= cxe_probe_listen,
	.unlisten	= cxe_probe_unlisten,
};

static int cxe_probe_adopt(struct cxe_conn *c)
{
	return adopt_err;
}

static struct cxe_adapter_ops cxe_probe_sockets_ops;

static struct cxe_backend cxe_probe = {
	.owner	= THIS_MODULE,
	.ops	= &cxe_probe_ops,
};

static struct cxe_adapter *cxe_probe_adapter;

static int __init cxe_probe_init(void)
{
	int ret;

	cxe_probe.contract = contract;
	cxe_probe.name = name;
	cxe_probe.flags = flags;
	if (netdev) {
		/* the portal's listener accepts for it */
		cxe_probe_sockets_ops = cxe_sock_conn_ops;
		cxe_probe_sockets_ops.adopt = cxe_probe_adopt;
		cxe_probe.ops = &cxe_probe_sockets_ops;
		cxe_probe.flags |= CXE_BACKEND_SOCKETS;
	}
	ret = cxe_backend_register(&cxe_probe);
	if (ret || !netdev)
		return ret;
	cxe_probe_adapter = cxe_adapter_publish("probe0", &cxe_probe, netdev);
	if (IS_ERR(cxe_probe_adapter)) {
		cxe_backend_unregister(&cxe_probe);
		return PTR_ERR(cxe_probe_adapter);
	}
	return 0;
}

static void __exit cxe_probe_exit(void)
{
	if (cxe_probe_adapter)
		cxe_adapter_unpublish(cxe_probe_adapter);
	cxe_backend_unregister(&cxe_probe);
}

module_init(cxe_probe_init);
module_exit(cxe_probe_exit);

MODULE_DESCRIPTION("cxgbit-ext test-only backend module (never installed)");
MODULE_LICENSE("GPL");
