// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: the Chelsio T5/T6 adapters the cxgb4 driver runs, taken
 * as cxgb4's upper-layer driver for iSCSI target offload (the
 * CXGB4_ULD_ISCSIT slot, the in-tree cxgbit's: main.c keeps that module
 * from loading beside this one, as cxgb4_register_uld() checks nothing).
 *
 * What is here: the ULD registration, the adapters cxgb4 attaches and
 * detaches with their state, and the backend's entry in the registry,
 * whose show_state tells the control interface why it offloads nothing.
 * What is not: listening, connections, sending and receiving
 * (docs/cxgb4.md). Until they exist the backend has no flags, so the
 * registry never gives it a portal or an adapter, and a CPL message
 * reaching it is counted and dropped.
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
#include "cpl.h"
#include "limits.h"

/*
 * One Chelsio adapter cxgb4 attached to us, from add to DETACH (or our
 * unload). Only the list holds it: nothing else refers to it until
 * connections do, and then it gets a reference count.
 */
struct cxe_cxgb4_dev {
	struct list_head	node;		/* cxe_cxgb4_devs */
	struct cxgb4_lld_info	lldi;		/* what cxgb4 told us at add */
	struct cxe_cxgb4_limits	limits;		/* what it can do for PDUs */
	bool			up;		/* CXGB4_STATE_UP, not since
						 * RECOVERY or DETACH
						 */
	atomic64_t		cpl_dropped;	/* messages nothing takes yet */
};

static LIST_HEAD(cxe_cxgb4_devs);
static DEFINE_MUTEX(cxe_cxgb4_lock);	/* the list */

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
	struct cxe_cxgb4_dev *d;
	int ret;

	if (is_t4(lldi->adapter_type)) {
		pr_info("cxgb4 adapter %s: a T4, which this backend does not drive\n",
			pci_name(lldi->pdev));
		return ERR_PTR(-ENODEV);
	}
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return ERR_PTR(-ENOMEM);
	ret = cxe_cxgb4_limits(&hw, &d->limits);
	if (ret) {
		pr_warn("cxgb4 adapter %s: T%d with an iSCSI I/O length of %u: no room for a PDU, not used\n",
			pci_name(lldi->pdev), hw.chip, lldi->iscsi_iolen);
		kfree(d);
		return ERR_PTR(ret);
	}
	d->lldi = *lldi;

	mutex_lock(&cxe_cxgb4_lock);
	list_add_tail(&d->node, &cxe_cxgb4_devs);
	mutex_unlock(&cxe_cxgb4_lock);
	pr_info("cxgb4 adapter %s: T%d, %u ports, firmware %#x: attached\n",
		pci_name(lldi->pdev), hw.chip, lldi->nports, lldi->fw_vers);
	return d;
}

static int cxe_cxgb4_state_change(void *handle, enum cxgb4_state state)
{
	struct cxe_cxgb4_dev *d = handle;

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
		mutex_lock(&cxe_cxgb4_lock);
		list_del(&d->node);
		mutex_unlock(&cxe_cxgb4_lock);
		pr_info("cxgb4 adapter %s: detached\n", pci_name(d->lldi.pdev));
		kfree(d);
		return 0;
	default:
		break;
	}
	pr_info("cxgb4 adapter %s: state %d, %s\n", pci_name(d->lldi.pdev),
		state, READ_ONCE(d->up) ? "up" : "down");
	return 0;
}

/*
 * A message on the backend's queues. Nothing has opened a connection or a
 * listener, so none is for us: count it and leave it to cxgb4 (returning
 * 0 without taking a gather list's pages frees nothing of cxgb4's).
 */
static int cxe_cxgb4_rx(void *handle, const __be64 *rsp,
			const struct pkt_gl *gl)
{
	struct cxe_cxgb4_dev *d = handle;
	const u8 *cpl = gl ? gl->va : (const u8 *)(rsp + 1);

	atomic64_inc(&d->cpl_dropped);
	pr_warn_ratelimited("cxgb4 adapter %s: CPL opcode %#x with no connection: dropped\n",
			    pci_name(d->lldi.pdev), cpl[0]);
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

/*
 * The backend's state in the backends file: " off no_ports" while cxgb4
 * has attached no T5/T6 adapter, " off no_data_path" and each adapter once
 * it has (offload needs the connection path this backend does not have
 * yet): PCI name, chip, ports, up or down, messages dropped, then each
 * limit with what set it (limits.h), e.g. "0000:03:00.4=T6/2ports/up/
 * dropped:0/recv:16384(t6)/send:16384(t6)/iso:65532(iso_len)/ddp:-(no_ppm)"
 */
static ssize_t cxe_cxgb4_show_dev(const struct cxe_cxgb4_dev *d, char *page,
				  ssize_t at)
{
	const struct cxe_cxgb4_limits *l = &d->limits;
	ssize_t len;

	len = sysfs_emit_at(page, at, " %s=T%d/%uports/%s/dropped:%lld",
			    pci_name(d->lldi.pdev),
			    CHELSIO_CHIP_VERSION(d->lldi.adapter_type),
			    d->lldi.nports, READ_ONCE(d->up) ? "up" : "down",
			    atomic64_read(&d->cpl_dropped));
	len += sysfs_emit_at(page, at + len, "/recv:%u(%s)/send:%u(%s)/iso:%u(%s)",
			     l->max_recv_dlen, l->recv_by, l->max_send_dlen,
			     l->send_by, l->max_iso_burst, l->iso_by);
	if (l->ddp_min_len == CXE_CXGB4_NEVER)
		return len + sysfs_emit_at(page, at + len, "/ddp:-(%s)",
					   l->ddp_by);
	return len + sysfs_emit_at(page, at + len, "/ddp:%u(%s)", l->ddp_min_len,
				   l->ddp_by);
}

static ssize_t cxe_cxgb4_show_state(char *page, ssize_t at)
{
	struct cxe_cxgb4_dev *d;
	ssize_t len;

	mutex_lock(&cxe_cxgb4_lock);
	if (list_empty(&cxe_cxgb4_devs)) {
		len = sysfs_emit_at(page, at, " off no_ports");
	} else {
		len = sysfs_emit_at(page, at, " off no_data_path");
		list_for_each_entry(d, &cxe_cxgb4_devs, node)
			len += cxe_cxgb4_show_dev(d, page, at + len);
	}
	mutex_unlock(&cxe_cxgb4_lock);
	return len;
}

/* What the chip does for iSCSI PDUs (cpl.h has its messages) */
static const struct cxe_backend cxe_cxgb4_backend = {
	.name	= "cxgb4",
	.caps	= BIT(CXE_CAP_HCRC) | BIT(CXE_CAP_DCRC) | BIT(CXE_CAP_DDP) |
		  BIT(CXE_CAP_ISO) | BIT(CXE_CAP_RXAGG),
	.show_state = cxe_cxgb4_show_state,
};

int cxe_cxgb4_init(void)
{
	int ret;

	ret = cxe_backend_register(&cxe_cxgb4_backend);
	if (ret)
		return ret;
	/* calls cxe_cxgb4_add for each adapter already up, before it returns */
	cxgb4_register_uld(CXGB4_ULD_ISCSIT, &cxe_cxgb4_uld_info);
	return 0;
}

/*
 * cxgb4_unregister_uld() frees our queues on every adapter and forgets
 * our handles without a CXGB4_STATE_DETACH: once it returns cxgb4 calls
 * nothing of ours, and the adapters still listed are ours to drop.
 */
void cxe_cxgb4_exit(void)
{
	struct cxe_cxgb4_dev *d, *tmp;

	cxgb4_unregister_uld(CXGB4_ULD_ISCSIT);
	mutex_lock(&cxe_cxgb4_lock);
	list_for_each_entry_safe(d, tmp, &cxe_cxgb4_devs, node) {
		list_del(&d->node);
		kfree(d);
	}
	mutex_unlock(&cxe_cxgb4_lock);
	cxe_backend_unregister(&cxe_cxgb4_backend);
}
