// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: the Chelsio T5/T6 adapters the cxgb4 driver runs, taken
 * as cxgb4's upper-layer driver for iSCSI target offload (the
 * CXGB4_ULD_ISCSIT slot, the in-tree cxgbit's: main.c keeps that module
 * from loading beside this one, as cxgb4_register_uld() checks nothing).
 *
 * What is here: the ULD registration, the adapters cxgb4 attaches and
 * detaches with their state, given to the device glue (dev.h) with what
 * it asks of them done through cxgb4, and the chip's messages handed to
 * it. A real adapter serves no portal until the backend accepts
 * connections (dev.h says why), so it opens no server yet.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/pci.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "cxgb4.h"
#include "cxgb4_uld.h"
/* their layout in the kernel's own cxgb4.ko, asserted (cxgb4-layout) */
#include "kernel_layout.h"

#include "../../cxgbit_ext.h"
#include "dev.h"

/*
 * One Chelsio adapter cxgb4 attached to us, from add to DETACH (or our
 * unload): the glue's device (dev.h) and what cxgb4 told us of it.
 */
struct cxe_c4real {
	struct cxe_c4dev	d;
	struct cxgb4_lld_info	lldi;
	char			kind[4];
};

static struct cxe_c4real *to_real(struct cxe_c4dev *d)
{
	return container_of(d, struct cxe_c4real, d);
}

static int cxe_c4real_alloc_stid(struct cxe_c4dev *d, int family)
{
	int stid = cxgb4_alloc_stid(to_real(d)->lldi.tids, family, d);

	return stid < 0 ? -ENOSPC : stid;
}

static void cxe_c4real_free_stid(struct cxe_c4dev *d, u32 stid, int family)
{
	cxgb4_free_stid(to_real(d)->lldi.tids, stid, family);
}

/*
 * The server's answer comes on our first receive queue. IPv6 servers need
 * an entry in the adapter's CLIP table first, which is not done yet.
 */
static int cxe_c4real_create_server(struct cxe_c4dev *d, u32 stid,
				    const struct sockaddr_storage *addr)
{
	const struct sockaddr_in *sin = (const void *)addr;
	struct cxe_c4real *r = to_real(d);
	int ret;

	if (addr->ss_family != AF_INET)
		return -EAFNOSUPPORT;
	ret = cxgb4_create_server(r->lldi.ports[0], stid, sin->sin_addr.s_addr,
				  sin->sin_port, 0, r->lldi.rxq_ids[0]);
	return ret > 0 ? net_xmit_errno(ret) : ret;
}

static int cxe_c4real_remove_server(struct cxe_c4dev *d, u32 stid, bool ipv6)
{
	struct cxe_c4real *r = to_real(d);
	int ret;

	ret = cxgb4_remove_server(r->lldi.ports[0], stid, r->lldi.rxq_ids[0],
				  ipv6);
	return ret > 0 ? net_xmit_errno(ret) : ret;
}

static bool cxe_c4real_has_port(struct cxe_c4dev *d,
				const struct net_device *nd)
{
	struct cxe_c4real *r = to_real(d);
	u32 i;

	for (i = 0; i < r->lldi.nports; i++)
		if (r->lldi.ports[i] == nd)
			return true;
	return false;
}

static void cxe_c4real_release(struct cxe_c4dev *d)
{
	kfree(to_real(d));
}

static const struct cxe_c4dev_ops cxe_c4real_ops = {
	.alloc_stid	= cxe_c4real_alloc_stid,
	.free_stid	= cxe_c4real_free_stid,
	.create_server	= cxe_c4real_create_server,
	.remove_server	= cxe_c4real_remove_server,
	.has_port	= cxe_c4real_has_port,
	.release	= cxe_c4real_release,
};

/*
 * cxgb4 calls this once per adapter whose firmware offloads (at our
 * registration for those already up, later for new ones); what it returns
 * is the handle of every later call for that adapter. The T4 has no iSCSI
 * PDU offload the backend can use: refused, as cxgbit does.
 */
static void *cxe_cxgb4_add(const struct cxgb4_lld_info *lldi)
{
	/* no page pods are set up yet: nothing is placed */
	struct cxe_cxgb4_hw hw = {
		.chip		= CHELSIO_CHIP_VERSION(lldi->adapter_type),
		.iscsi_iolen	= lldi->iscsi_iolen,
		.fw_vers	= lldi->fw_vers,
		.page_size	= PAGE_SIZE,
		.max_frags	= MAX_SKB_FRAGS,
	};
	struct cxe_c4real *r;
	int ret;

	if (is_t4(lldi->adapter_type)) {
		pr_info("cxgb4 adapter %s: a T4, which this backend does not drive\n",
			pci_name(lldi->pdev));
		return ERR_PTR(-ENODEV);
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return ERR_PTR(-ENOMEM);
	ret = cxe_cxgb4_limits(&hw, &r->d.limits);
	if (ret) {
		pr_warn("cxgb4 adapter %s: T%d with an iSCSI I/O length of %u: no room for a PDU, not used\n",
			pci_name(lldi->pdev), hw.chip, lldi->iscsi_iolen);
		kfree(r);
		return ERR_PTR(ret);
	}
	r->lldi = *lldi;
	cxe_c4dev_init(&r->d, &cxe_c4real_ops);
	snprintf(r->kind, sizeof(r->kind), "T%d", hw.chip);
	r->d.name = pci_name(lldi->pdev);
	r->d.kind = r->kind;
	r->d.nports = lldi->nports;
	/* not until the backend accepts connections: see dev.h */
	r->d.serves = false;
	cxe_c4dev_add(&r->d);
	pr_info("cxgb4 adapter %s: T%d, %u ports, firmware %#x: attached\n",
		pci_name(lldi->pdev), hw.chip, lldi->nports, lldi->fw_vers);
	return &r->d;
}

static int cxe_cxgb4_state_change(void *handle, enum cxgb4_state state)
{
	struct cxe_c4dev *d = handle;

	switch (state) {
	case CXGB4_STATE_UP:
		WRITE_ONCE(d->up, true);
		break;
	case CXGB4_STATE_START_RECOVERY:
	case CXGB4_STATE_DOWN:
		WRITE_ONCE(d->up, false);
		break;
	case CXGB4_STATE_DETACH:
		/* the adapter goes (PCI remove): cxgb4 calls nothing after it */
		WRITE_ONCE(d->up, false);
		pr_info("cxgb4 adapter %s: detached\n", d->name);
		/* no server: real adapters serve no portal yet */
		if (cxe_c4dev_del(d))
			pr_err("cxgb4 adapter %s: detached with servers left\n",
			       d->name);
		else
			cxe_c4dev_put(d);
		return 0;
	default:
		break;
	}
	pr_info("cxgb4 adapter %s: state %d, %s\n", d->name, state,
		READ_ONCE(d->up) ? "up" : "down");
	return 0;
}

/*
 * A message on the backend's queues, to the glue: in the response itself
 * (after the RSS header, up to the control word at the entry's end), or
 * in a gather list.
 */
static int cxe_cxgb4_rx(void *handle, const __be64 *rsp,
			const struct pkt_gl *gl)
{
	struct cxe_c4dev *d = handle;

	if (gl)
		cxe_c4dev_rx(d, gl->va, gl->tot_len);
	else
		cxe_c4dev_rx(d, rsp + 1, 64 - sizeof(struct rsp_ctrl) - 8);
	return 0;
}

static struct cxgb4_uld_info cxe_cxgb4_uld_info = {
	.name		= KBUILD_MODNAME,
	.nrxq		= 1,
	.ntxq		= 1,
	.rxq_size	= 1024,
	.add		= cxe_cxgb4_add,
	.rx_handler	= cxe_cxgb4_rx,
	.state_change	= cxe_cxgb4_state_change,
};

int cxe_c4real_init(void)
{
	/* calls cxe_cxgb4_add for each adapter already up, before it returns */
	cxgb4_register_uld(CXGB4_ULD_ISCSIT, &cxe_cxgb4_uld_info);
	return 0;
}

/*
 * cxgb4_unregister_uld() frees our queues on every adapter and forgets
 * our handles without a CXGB4_STATE_DETACH: once it returns cxgb4 calls
 * nothing of ours, and the adapters are ours to drop.
 */
void cxe_c4real_exit(void)
{
	cxgb4_unregister_uld(CXGB4_ULD_ISCSIT);
	cxe_c4dev_drop_all(&cxe_c4real_ops);
}
