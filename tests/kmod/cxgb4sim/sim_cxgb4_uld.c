// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4sim (sim.h says what it is): the upper-layer driver slot and its
 * response queues. Stands for cxgb4_uld.c, whose exported symbols it
 * defines. Only the iSCSI target slot exists: the one cxgbit and
 * cxgbit_ext take.
 */
#include "cxgb4_uld_inc.h"
#include "sim.h"

/* What the firmware of the adapter reports (cxgb4's adap_init0) */
#define C4SIM_FW_VERS		0x011b0500	/* 1.27.5.0: ISO (from 1.13.43.0) */
#define C4SIM_WR_CRED		128		/* offload queue credits, 16 B */
#define C4SIM_PDU_OVERHEAD	312		/* BHS, AHS, digests */
#define C4SIM_T5_IOLEN		16224
#define C4SIM_T6_IOLEN		(16384 + C4SIM_PDU_OVERHEAD)
#define C4SIM_TAGMASK		0x3fffffff	/* ULP_RX_ISCSI_TAGMASK */
#define C4SIM_PGSZ_ORDER	0x04020100	/* 4K, 8K, 16K, 64K pods */

static DEFINE_MUTEX(c4sim_uld_mutex);

static struct c4sim_rxq *c4sim_rxq(unsigned int abs_id)
{
	unsigned int i = abs_id - C4SIM_RXQ_BASE;

	return i < C4SIM_NRXQ ? &c4sim->rxq[i] : NULL;
}

/*
 * As cxgb4's response queue handler: the ULD gets the RSS header and the
 * CPL after it (immediate: no free-list buffer), a batch per poll, and
 * its LRO flush at the end of the batch.
 */
static int c4sim_poll(struct napi_struct *napi, int budget)
{
	struct c4sim_rxq *q = container_of(napi, struct c4sim_rxq, napi);
	const struct cxgb4_uld_info *uld = READ_ONCE(c4sim->uld);
	__be64 rsp[C4SIM_IMM_LEN / 8];
	struct sk_buff *skb;
	int done = 0;

	while (done < budget && (skb = skb_dequeue(&q->pending))) {
		memcpy(rsp, skb->data, sizeof(rsp));
		kfree_skb(skb);
		done++;
		if (!uld) {
			c4sim_trace("error: q=%u: a message before the ULD's add returned",
				    q->abs_id);
			continue;
		}
		if (uld->lro)
			uld->lro_rx_handler(c4sim->handle, rsp, NULL, &q->lro_mgr, napi);
		else
			uld->rx_handler(c4sim->handle, rsp, NULL);
	}
	if (uld && uld->lro && uld->lro_flush)
		uld->lro_flush(&q->lro_mgr);
	if (done < budget)
		napi_complete_done(napi, done);
	return done;
}

int c4sim_deliver(unsigned int abs_id, const void *cpl, unsigned int len)
{
	struct c4sim_rxq *q = c4sim_rxq(abs_id);
	struct rss_header *rss;
	struct sk_buff *skb;

	if (!q || len > C4SIM_IMM_LEN - sizeof(*rss)) {
		c4sim_trace("error: a reply for queue %u, which no ULD has", abs_id);
		return -EINVAL;
	}
	skb = alloc_skb(C4SIM_IMM_LEN, GFP_ATOMIC);
	if (!skb)
		return NET_XMIT_DROP;
	rss = skb_put_zero(skb, C4SIM_IMM_LEN);
	rss->opcode = *(const u8 *)cpl;
	rss->qid = htons(abs_id);
	memcpy(rss + 1, cpl, len);
	c4sim_trace("rx q=%u %s tid=%u", abs_id,
		    c4sim_opname(rss->opcode) ?: "CPL",
		    GET_TID((const struct cpl_pass_open_rpl *)cpl));
	skb_queue_tail(&q->pending, skb);
	local_bh_disable();
	napi_schedule(&q->napi);
	local_bh_enable();
	return 0;
}

static void c4sim_lldi(struct c4sim_adapter *a, const struct cxgb4_uld_info *p,
		       struct cxgb4_lld_info *l)
{
	memset(l, 0, sizeof(*l));
	l->pdev = a->pdev;
	l->l2t = (struct l2t_data *)a;	/* opaque to the ULD */
	l->tids = &a->tids;
	l->ports = a->ports;
	l->vr = &a->vr;
	l->mtus = a->mtus;
	l->rxq_ids = a->rxq_ids;
	l->ciq_ids = a->rxq_ids;
	l->nrxq = C4SIM_NRXQ;
	l->ntxq = p->ntxq;
	l->nchan = a->nports;
	l->nports = a->nports;
	l->wr_cred = C4SIM_WR_CRED;
	l->adapter_type = CHELSIO_CHIP_CODE(a->t5 ? CHELSIO_T5 : CHELSIO_T6, 0);
	l->fw_vers = C4SIM_FW_VERS;
	l->iscsi_iolen = a->t5 ? C4SIM_T5_IOLEN : C4SIM_T6_IOLEN;
	l->sge_host_page_size = PAGE_SIZE;
	l->sge_ingpadboundary = 32;
	l->sge_egrstatuspagesize = 64;
	l->sge_pktshift = 2;
	l->iscsi_tagmask = C4SIM_TAGMASK;
	l->iscsi_pgsz_order = C4SIM_PGSZ_ORDER;
	l->iscsi_llimit = a->vr.iscsi.start;
	l->iscsi_ppm = &a->iscsi_ppm;
	l->nodeid = NUMA_NO_NODE;
}

static void c4sim_queues_stop(struct c4sim_adapter *a)
{
	unsigned int i;

	for (i = 0; i < C4SIM_NRXQ; i++) {
		napi_disable(&a->rxq[i].napi);
		netif_napi_del(&a->rxq[i].napi);
		skb_queue_purge(&a->rxq[i].pending);
		skb_queue_purge(&a->rxq[i].lro_mgr.lroq);
	}
}

void cxgb4_register_uld(enum cxgb4_uld type, const struct cxgb4_uld_info *p)
{
	struct c4sim_adapter *a = c4sim;
	struct cxgb4_lld_info lldi;
	unsigned int i;
	void *handle;

	if (type != CXGB4_ULD_ISCSIT) {
		pr_info("cxgb4sim: ULD %d (%s) not simulated\n", type, p->name);
		return;
	}
	mutex_lock(&c4sim_uld_mutex);
	if (a->uld) {
		/* cxgb4 does not check either: the later one replaces */
		pr_warn("cxgb4sim: %s takes the iSCSI target slot from %s\n",
			p->name, a->uld->name);
	}
	for (i = 0; i < C4SIM_NRXQ; i++) {
		struct c4sim_rxq *q = &a->rxq[i];

		q->abs_id = C4SIM_RXQ_BASE + i;
		q->uld = type;
		a->rxq_ids[i] = q->abs_id;
		skb_queue_head_init(&q->pending);
		skb_queue_head_init(&q->lro_mgr.lroq);
		netif_napi_add(a->ports[0], &q->napi, c4sim_poll);
		napi_enable(&q->napi);
	}
	c4sim_lldi(a, p, &lldi);
	c4sim_trace("uld register %s lro=%d nrxq=%u ntxq=%u", p->name, p->lro,
		    p->nrxq, p->ntxq);
	handle = p->add(&lldi);
	if (IS_ERR(handle)) {
		c4sim_trace("uld add %s: error %ld", p->name, PTR_ERR(handle));
		c4sim_queues_stop(a);
		mutex_unlock(&c4sim_uld_mutex);
		return;
	}
	a->handle = handle;
	WRITE_ONCE(a->uld, p);
	c4sim_trace("uld add %s: state UP", p->name);
	p->state_change(handle, CXGB4_STATE_UP);
	mutex_unlock(&c4sim_uld_mutex);
}
EXPORT_SYMBOL(cxgb4_register_uld);

/* As cxgb4: the handle is forgotten, the queues stop; no detach is called */
int cxgb4_unregister_uld(enum cxgb4_uld type)
{
	struct c4sim_adapter *a = c4sim;

	if (type != CXGB4_ULD_ISCSIT)
		return -EINVAL;
	mutex_lock(&c4sim_uld_mutex);
	if (a->uld) {
		c4sim_trace("uld unregister %s", a->uld->name);
		c4sim_queues_stop(a);
		WRITE_ONCE(a->uld, NULL);
		a->handle = NULL;
	}
	mutex_unlock(&c4sim_uld_mutex);
	return 0;
}
EXPORT_SYMBOL(cxgb4_unregister_uld);

int c4sim_uld_init(struct c4sim_adapter *a)
{
	return 0;
}

void c4sim_uld_exit(struct c4sim_adapter *a)
{
	if (a->uld)
		pr_warn("cxgb4sim: unloaded under %s\n", a->uld->name);
}
