// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext: the iscsit_transport LIO selects through the np "cxgbit"
 * attribute (targetcli enable_offload, rtslib NetworkPortal.offload).
 *
 * At this stage the transport owns offloaded portals (setup/accept/free);
 * no adapter answers connections yet, so accept waits until LIO stops the
 * portal's thread and every login on the portal is served by the stock
 * iSCSI/TCP listener of the same address.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/inet.h>
#include <target/iscsi/iscsi_target_core.h>
#include <target/iscsi/iscsi_transport.h>

#include "cxgbit_ext.h"

static LIST_HEAD(cxe_nps);
static DEFINE_SPINLOCK(cxe_nps_lock);

static void cxe_np_release(struct kref *kref)
{
	kfree(container_of(kref, struct cxe_np, kref));
}

static int cxe_setup_np(struct iscsi_np *np, struct sockaddr_storage *addr)
{
	struct cxe_np *cnp;

	if (addr->ss_family != AF_INET && addr->ss_family != AF_INET6)
		return -EAFNOSUPPORT;

	cnp = kzalloc(sizeof(*cnp), GFP_KERNEL);
	if (!cnp)
		return -ENOMEM;

	kref_init(&cnp->kref);
	init_completion(&cnp->accept_comp);
	cnp->np = np;
	memcpy(&cnp->addr, addr, sizeof(cnp->addr));
	np->np_context = cnp;

	spin_lock(&cxe_nps_lock);
	list_add_tail(&cnp->node, &cxe_nps);
	spin_unlock(&cxe_nps_lock);

	pr_info("offload portal %pISpc set up\n", addr);
	return 0;
}

static int cxe_accept_np(struct iscsi_np *np, struct iscsit_conn *conn)
{
	struct cxe_np *cnp = np->np_context;

	/*
	 * Woken by LIO's SIGINT when the portal thread is reset or stopped;
	 * -ENODEV makes the login thread check its state and exit or retry.
	 */
	if (wait_for_completion_interruptible(&cnp->accept_comp))
		return -ENODEV;
	return -EAGAIN;
}

static void cxe_free_np(struct iscsi_np *np)
{
	struct cxe_np *cnp = np->np_context;

	spin_lock(&cxe_nps_lock);
	list_del(&cnp->node);
	spin_unlock(&cxe_nps_lock);

	pr_info("offload portal %pISpc released\n", &cnp->addr);
	np->np_context = NULL;
	kref_put(&cnp->kref, cxe_np_release);
}

ssize_t cxe_np_show_all(char *buf)
{
	struct cxe_np *cnp;
	ssize_t len = 0;

	spin_lock(&cxe_nps_lock);
	list_for_each_entry(cnp, &cxe_nps, node)
		len += scnprintf(buf + len, PAGE_SIZE - len, "%pISpc\n",
				 &cnp->addr);
	spin_unlock(&cxe_nps_lock);
	return len;
}

static enum target_prot_op cxe_get_sup_prot_ops(struct iscsit_conn *conn)
{
	return TARGET_PROT_NORMAL;
}

struct iscsit_transport cxe_transport = {
	.name			= CXE_DRV_NAME,
	.transport_type		= ISCSI_CXGBIT,
	.rdma_shutdown		= false,
	.owner			= THIS_MODULE,
	.iscsit_setup_np	= cxe_setup_np,
	.iscsit_accept_np	= cxe_accept_np,
	.iscsit_free_np		= cxe_free_np,
	.iscsit_immediate_queue	= iscsit_immediate_queue,
	.iscsit_response_queue	= iscsit_response_queue,
	.iscsit_get_dataout	= iscsit_build_r2ts_for_cmd,
	.iscsit_queue_data_in	= iscsit_queue_rsp,
	.iscsit_queue_status	= iscsit_queue_rsp,
	.iscsit_aborted_task	= iscsit_aborted_task,
	.iscsit_get_sup_prot_ops = cxe_get_sup_prot_ops,
};
