// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: what the core knows of it. Its entry in the backend
 * registry (cxgbit_ext.ko's contract, adapter.h) with its ops table, the
 * calls the PDU layer makes around a connection's PDUs (accept, the full
 * feature phase, release), and the module's life. The ops are the other
 * files': servers.c listens, io.c carries PDUs, ddp.c places them; cm.c
 * keeps the connections, uld.c is cxgb4's side.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <target/iscsi/iscsi_target_core.h>

#include "../../cxgbit_ext.h"
#include "dev.h"

extern const struct cxe_backend cxe_cxgb4_backend;

/* ---- the PDU layer's side ------------------------------------------------- */

static struct cxe_c4c *cxe_c4c(struct cxe_conn *c)
{
	return container_of(c, struct cxe_c4c, c);
}

/*
 * A connection the chip brought up for one of the portal's servers. It
 * counts on its adapter's struct cxe_adapter; its limits are the
 * adapter's (limits.c); it places write data when the adapter's ddp
 * toggle is on and the chip has page pods for pages of the host's size.
 */
int cxe_c4_accept(struct cxe_np *cnp, struct cxe_conn *c)
{
	struct cxe_c4c *cc = cxe_c4c(c);
	struct cxe_c4tid *t;
	struct cxe_adapter *a;

	t = cxe_c4_take_ready(cnp);
	if (!t)
		return -EAGAIN;
	a = cxe_c4dev_adapter(t->dev, &cxe_cxgb4_backend);
	if (!a) {
		cxe_c4tid_do(t, cxe_c4conn_release);
		cxe_c4tid_put(t);
		return -ENOMEM;
	}
	cc->t = t;	/* the ready list's reference is the PDU layer's now */
	c->adapter = a;
	c->ddp = READ_ONCE(a->ddp) && t->dev->npods &&
		 t->dev->limits.ddp_min_len != CXE_CXGB4_NEVER &&
		 PAGE_SHIFT == CXE_PPOD_PAGE_SHIFT;
	if (cxe_c4_ddp_init(cc, c->ddp))
		c->ddp = false;	/* no memory for the table: no placement */
	if (c->ddp) {
		spin_lock_bh(&t->dev->lock);
		t->pods_held = true;
		spin_unlock_bh(&t->dev->lock);
	}
	c->iso = READ_ONCE(a->iso);
	memcpy(&c->peer, &t->peer, sizeof(c->peer));
	memcpy(&c->local, &t->local, sizeof(c->local));
	cc->hw = t->dev->limits;
	if (!c->iso)
		cc->hw.max_iso_burst = 0;
	cc->limits = (struct cxe_limits) {
		.max_recv_dlen	= cc->hw.max_recv_dlen,
		.max_send_dlen	= cc->hw.max_send_dlen,
		/* send_burst cuts any burst into requests (tx.c) */
		.max_iso_burst	= CXE_NO_LIMIT,
		.ddp_min_len	= c->ddp ? cc->hw.ddp_min_len : CXE_NO_LIMIT,
		.ddp_align	= PAGE_SIZE,
	};
	c->limits = &cc->limits;
	cc->txc = (struct cxe_c4tx_conn) { .chip = t->dev->chip, .tid = t->tid };
	cxe_c4rx_init(&cc->as, t->dev->chip, cc->hw.max_recv_dlen);
	return 0;
}

void cxe_c4_conn_release(struct cxe_conn *c)
{
	struct cxe_c4c *cc = cxe_c4c(c);

	/*
	 * After a logout the connection closes with a FIN behind the Logout
	 * response (an abort would drop it); anything else is aborted, as
	 * mainline cxgbit does
	 */
	if (c->conn->conn_state == TARG_CONN_STATE_IN_LOGOUT)
		cxe_c4tid_do(cc->t, cxe_c4conn_close);
	/* pods name the TID: cleared before it can go back and be reused */
	cxe_c4_ddp_exit(cc);
	cxe_c4tid_pods_cleared(cc->t);
	cxe_c4tid_do(cc->t, cxe_c4conn_release);
	kfree_skb(cc->data);
	cc->data = NULL;
	kfree_skb(cc->held);
	cc->held = NULL;
	kvfree(cc->req);
	cc->req = NULL;
	cxe_c4tid_put(cc->t);
	cc->t = NULL;
}

/*
 * The full feature phase: the chip checks the negotiated digests from the
 * next PDU it receives on (CPL_SET_TCB_FIELD, answered before the last
 * Login response, held until now, lets the initiator send one), and the
 * requests after that response ask it to insert them. Without the chip's
 * answer the connection ends.
 */
void cxe_c4_set_params(struct cxe_conn *c, bool hdigest, bool ddigest,
		       u32 max_recv_dlen)
{
	struct cxe_c4c *cc = cxe_c4c(c);
	struct cxe_c4tid *t = cc->t;
	int ret;

	cxe_c4rx_init(&cc->as, t->dev->chip, max_recv_dlen);
	ret = cxe_c4tid_set_digests(t, hdigest, ddigest);
	/* the last Login response, without digests, then the digests */
	if (!ret)
		ret = cxe_c4_send_held(c);
	c->hdigest = hdigest;
	c->ddigest = ddigest;
	cc->txc.hcrc = hdigest;
	cc->txc.dcrc = ddigest;
	if (ret) {
		pr_err("%pISpc: the chip did not take the digest settings (%d): aborting the connection\n",
		       &c->peer, ret);
		cxe_c4tid_do(t, cxe_c4conn_abort);
	}
}

static const struct cxe_adapter_ops cxe_c4_ops = {
	.listen		= cxe_c4_listen,
	.unlisten	= cxe_c4_unlisten,
	.accept		= cxe_c4_accept,
	.conn_release	= cxe_c4_conn_release,
	.set_params	= cxe_c4_set_params,
	.recv_hdr	= cxe_c4_recv_hdr,
	.recv_data	= cxe_c4_recv_data,
	.data_taken	= cxe_c4_data_taken,
	.send_pdu	= cxe_c4_send_pdu,
	.send_burst	= cxe_c4_send_burst,
	.ddp_reserve	= cxe_c4_ddp_reserve,
	.ddp_check	= cxe_c4_ddp_check,
	.ddp_release	= cxe_c4_ddp_release,
};

static ssize_t cxe_c4_counters_read(void *buf, size_t size)
{
	return cxe_c4dev_counters_read(cxe_cxgb4_backend.name, buf, size);
}

/* What the chip does for iSCSI PDUs (cpl.h has its messages) */
const struct cxe_backend cxe_cxgb4_backend = {
	.contract = CXE_BACKEND_CONTRACT,
	.name	= "cxgb4",
	.owner	= THIS_MODULE,
	.caps	= BIT(CXE_CAP_HCRC) | BIT(CXE_CAP_DCRC) | BIT(CXE_CAP_DDP) |
		  BIT(CXE_CAP_ISO) | BIT(CXE_CAP_RXAGG),
	.flags	= CXE_BACKEND_DEVICES,
	.conn_size = CXE_CONN_SIZE(struct cxe_c4c, c),
	.limits	= {
		.max_recv_dlen	= CXE_NO_LIMIT,
		.max_send_dlen	= CXE_NO_LIMIT,
		.max_iso_burst	= CXE_NO_LIMIT,
		.ddp_align	= 1,
	},
	.ops	= &cxe_c4_ops,
	.show_state = cxe_c4_show_state,
	.counters_read = cxe_c4_counters_read,
};

static int __init cxe_cxgb4_init(void)
{
	int ret;

	cxe_c4_wq = alloc_workqueue("cxe_cxgb4", 0, 0);
	if (!cxe_c4_wq)
		return -ENOMEM;
	ret = cxe_c4real_init();
	if (ret)
		goto err_wq;
	/*
	 * Last: registered, the backend is called and its module held, and
	 * a module whose init fails is freed whatever holds it
	 */
	ret = cxe_backend_register(&cxe_cxgb4_backend);
	if (ret)
		goto err_real;
	return 0;

err_real:
	cxe_c4real_exit();
err_wq:
	destroy_workqueue(cxe_c4_wq);
	return ret;
}

/*
 * No connection of ours is left (each holds the module). Unregistered,
 * the backend is asked for nothing more and has closed every portal's
 * servers on the chips, which still answer; then cxgb4 stops calling,
 * the removals already decided run (nothing can queue another), and
 * what late answers left of servers goes with its adapter.
 */
static void __exit cxe_cxgb4_exit(void)
{
	cxe_backend_unregister(&cxe_cxgb4_backend);
	cxe_c4real_exit();
	destroy_workqueue(cxe_c4_wq);
}

module_init(cxe_cxgb4_init);
module_exit(cxe_cxgb4_exit);

MODULE_DESCRIPTION("cxgbit-ext backend for Chelsio T5/T6 adapters on cxgb4");
MODULE_AUTHOR("cxgbit-ext developers");
MODULE_VERSION(CXE_VERSION);
MODULE_LICENSE("GPL");
