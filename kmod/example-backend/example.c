// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit_ext_example: the example backend for OEMs. It is what a backend
 * module for a NIC whose iSCSI offloads sit beside the host's TCP stack
 * (CRC32C, data placement; not a TOE) looks like on the cxgbit-ext
 * contract, built out of tree against the headers the cxgbit-ext-dkms
 * package installs. It has no hardware: every PDU goes through the
 * software path (cxe_sock_conn_ops), and where a NIC's driver would program
 * its engine this backend counts what it carried, so that a session on
 * it shows which backend carried it.
 *
 * Its one adapter, "ex0" (published in cxgbit_ext's adapters/), serves the
 * netdev given by the netdev parameter: connections to an offloaded
 * portal that arrive on it are steered to it before the software
 * adapters' (a named netdev beats soft0's "*"), accepted by the portal's
 * listener, and adopted here. docs/backends.md walks through it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/atomic.h>

#include "cxgbit_ext.h"

static char *netdev = "";
module_param(netdev, charp, 0444);
MODULE_PARM_DESC(netdev, "the netdev ex0 serves: a name, \"*\" (all) or \"\" (none, the default)");

/* What the backend keeps per connection (struct cxe_conn's priv) */
struct cxe_ex_conn {
	atomic64_t	pdus_rx;
	atomic64_t	pdus_tx;	/* a burst counts each PDU it becomes */
};

static struct cxe_adapter *cxe_ex_adapter;
/* the software path's ops, with this backend's where it acts */
static struct cxe_adapter_ops cxe_ex_ops;

static struct cxe_ex_conn *cxe_ex(struct cxe_conn *c)
{
	return c->priv;
}

/* A connection accepted for ex0: where a NIC's driver would set up its flow */
static int cxe_ex_adopt(struct cxe_conn *c)
{
	struct cxe_ex_conn *ec = kzalloc(sizeof(*ec), GFP_KERNEL);

	if (!ec)
		return -ENOMEM;
	c->priv = ec;
	return 0;
}

static void cxe_ex_conn_release(struct cxe_conn *c)
{
	struct cxe_ex_conn *ec = cxe_ex(c);

	cxe_sock_conn_ops.conn_release(c);
	pr_info("connection %pISpc -> %pISpc: %lld PDUs received, %lld sent on %s\n",
		&c->peer, &c->local, atomic64_read(&ec->pdus_rx),
		atomic64_read(&ec->pdus_tx), c->adapter->name);
	kfree(ec);
	c->priv = NULL;
}

static int cxe_ex_recv_hdr(struct cxe_conn *c, u8 *hdr, u32 *flags)
{
	int ret = cxe_sock_conn_ops.recv_hdr(c, hdr, flags);

	if (!ret)
		atomic64_inc(&cxe_ex(c)->pdus_rx);
	return ret;
}

static int cxe_ex_send_pdu(struct cxe_conn *c, const u8 *bhs,
			   const struct cxe_data *src)
{
	int ret = cxe_sock_conn_ops.send_pdu(c, bhs, src);

	if (!ret)
		atomic64_inc(&cxe_ex(c)->pdus_tx);
	return ret;
}

static int cxe_ex_send_burst(struct cxe_conn *c, const struct cxe_burst *b)
{
	struct cxe_seg_burst plan = cxe_burst_plan(b);
	int ret = cxe_sock_conn_ops.send_burst(c, b);

	if (!ret)
		atomic64_add(cxe_seg_count(&plan), &cxe_ex(c)->pdus_tx);
	return ret;
}

static const struct cxe_backend cxe_ex_backend = {
	.contract	= CXE_BACKEND_CONTRACT,
	.name		= "example",
	.owner		= THIS_MODULE,
	/* what the software path performs for it */
	.caps		= BIT(CXE_CAP_HCRC) | BIT(CXE_CAP_DCRC) |
			  BIT(CXE_CAP_DDP) | BIT(CXE_CAP_ISO),
	.flags		= CXE_BACKEND_SOCKETS,
	.limits		= {
		.max_recv_dlen	= CXE_NO_LIMIT,
		.max_send_dlen	= CXE_NO_LIMIT,
		.max_iso_burst	= CXE_NO_LIMIT,
		.ddp_align	= 1,
	},
	.ops		= &cxe_ex_ops,
	/* no show_state: always " on"; ex0's netdev file says what it serves */
};

static int __init cxe_ex_init(void)
{
	int ret;

	cxe_ex_ops = cxe_sock_conn_ops;	/* the portal's listener accepts */
	cxe_ex_ops.adopt = cxe_ex_adopt;
	cxe_ex_ops.conn_release = cxe_ex_conn_release;
	cxe_ex_ops.recv_hdr = cxe_ex_recv_hdr;
	cxe_ex_ops.send_pdu = cxe_ex_send_pdu;
	cxe_ex_ops.send_burst = cxe_ex_send_burst;
	ret = cxe_backend_register(&cxe_ex_backend);
	if (ret)
		return ret;
	/* last: published, ex0 is steered to at once */
	cxe_ex_adapter = cxe_adapter_publish("ex0", &cxe_ex_backend, netdev);
	if (IS_ERR(cxe_ex_adapter)) {
		ret = PTR_ERR(cxe_ex_adapter);
		pr_err("adapter ex0 on netdev '%s' not published (%d)\n", netdev, ret);
		cxe_backend_unregister(&cxe_ex_backend);
		return ret;
	}
	return 0;
}

/* No connection is left (each holds the module): ex0 goes, then the backend */
static void __exit cxe_ex_exit(void)
{
	cxe_adapter_unpublish(cxe_ex_adapter);
	cxe_backend_unregister(&cxe_ex_backend);
}

module_init(cxe_ex_init);
module_exit(cxe_ex_exit);

MODULE_DESCRIPTION("cxgbit-ext example backend: a NIC beside the host's TCP, on the software path");
MODULE_AUTHOR("cxgbit-ext developers");
MODULE_LICENSE("GPL");
