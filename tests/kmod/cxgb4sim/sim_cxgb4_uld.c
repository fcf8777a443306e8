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
#define C4SIM_PGSZ_ORDER	0x04020100	/* 4K, 8K, 16K, 64K pods */
#define C4SIM_PF		4		/* cxgb4's default function */

static DEFINE_MUTEX(c4sim_uld_mutex);

static struct pkt_gl *c4sim_gl(const struct sk_buff *skb);
static void c4sim_gl_watch(struct pkt_gl *gl);
static void c4sim_gl_done(struct pkt_gl *gl, int ret);

/*
 * The free-list pages a ULD took over (cxgb4 gives it all of a message's
 * but the last), each with a reference of ours, by pfn: one still held by
 * someone else once the ULD's connections are gone was leaked.
 */
static DEFINE_XARRAY_FLAGS(c4sim_fl_pages, XA_FLAGS_LOCK_BH);

/* The ULD's response queue of that absolute id, NULL if it has none */
static struct c4sim_rxq *c4sim_rxq(unsigned int abs_id)
{
	unsigned int i = abs_id - C4SIM_RXQ_BASE;

	return i < c4sim->nrxq ? &c4sim->rxq[i] : NULL;
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
	int done = 0, ret;

	while (done < budget && (skb = skb_dequeue(&q->pending))) {
		struct pkt_gl *gl = NULL;
		bool fl;

		done++;
		if (!uld) {
			c4sim_trace("error: q=%u: a message before the ULD's add returned",
				    q->abs_id);
			kfree_skb(skb);
			continue;
		}
		fl = skb->len > C4SIM_IMM_LEN;
		memcpy(rsp, skb->data, sizeof(rsp));
		if (fl)
			gl = c4sim_gl(skb);
		kfree_skb(skb);
		if (fl && !gl)
			continue;	/* no buffer: dropped, as on a full free list */
		if (gl)
			c4sim_gl_watch(gl);
		if (uld->lro)
			ret = uld->lro_rx_handler(c4sim->handle, rsp, gl, &q->lro_mgr, napi);
		else
			ret = uld->rx_handler(c4sim->handle, rsp, gl);
		if (ret)
			c4sim_trace("error: q=%u: the ULD refused a message (%d): %s", q->abs_id,
				    ret, "cxgb4 delivers it again, the stand-in does not");
		c4sim_gl_done(gl, ret);
	}
	if (uld && uld->lro && uld->lro_flush)
		uld->lro_flush(&q->lro_mgr);
	if (done < budget)
		napi_complete_done(napi, done);
	return done;
}

/*
 * A free-list message (queued as an skb: the 64-byte response with its RSS
 * header, then the message) in free-list buffers of a page each, as many
 * as it takes. As cxgb4's process_responses(), a ULD that took the
 * message owns every page of it but the last, which stays the free
 * list's (cxgb4_pktgl_to_skb() takes a reference on that one alone).
 */
static struct pkt_gl *c4sim_gl(const struct sk_buff *skb)
{
	unsigned int len = skb->len - C4SIM_IMM_LEN, off = 0, i;
	struct pkt_gl *gl;

	if (DIV_ROUND_UP(len, PAGE_SIZE) > MAX_SKB_FRAGS)
		return NULL;
	gl = kzalloc(sizeof(*gl), GFP_ATOMIC);
	if (!gl)
		return NULL;
	for (i = 0; off < len; i++) {
		unsigned int n = min_t(unsigned int, len - off, PAGE_SIZE);
		struct page *page = alloc_page(GFP_ATOMIC);

		if (!page) {
			c4sim_gl_done(gl, -ENOMEM);
			return NULL;
		}
		memcpy(page_address(page), skb->data + C4SIM_IMM_LEN + off, n);
		gl->frags[i].page = page;
		gl->frags[i].offset = 0;
		gl->frags[i].size = n;
		gl->nfrags = i + 1;
		off += n;
	}
	gl->va = page_address(gl->frags[0].page);
	gl->tot_len = len;
	return gl;
}

/*
 * A watch on each page the ULD will own (every one but the last), taken
 * before it sees the message: a ULD may let them go before it returns,
 * as cxgb4's own handlers do (t4_pktgl_free()).
 */
static void c4sim_gl_watch(struct pkt_gl *gl)
{
	unsigned int i;

	for (i = 0; i + 1 < gl->nfrags; i++) {
		struct page *page = gl->frags[i].page;

		get_page(page);
		if (xa_insert(&c4sim_fl_pages, page_to_pfn(page), page, GFP_ATOMIC))
			put_page(page);	/* not watched */
	}
}

/* After the ULD: the last page is the free list's; the others the ULD's */
static void c4sim_gl_done(struct pkt_gl *gl, int ret)
{
	unsigned int i;

	if (!gl)
		return;
	for (i = 0; i < gl->nfrags; i++) {
		struct page *page = gl->frags[i].page;

		if (i + 1 < gl->nfrags) {
			if (!ret)
				continue;
			/* cxgb4 takes back a message the ULD refused, whole */
			if (xa_erase(&c4sim_fl_pages, page_to_pfn(page)))
				put_page(page);
		}
		put_page(page);
	}
	kfree(gl);
}

/*
 * The free-list pages ULDs took over that are still held: those let go
 * of (ours the only reference left) are forgotten first. Process context.
 */
unsigned long c4sim_fl_pages_held(void)
{
	unsigned long pfn, held = 0;
	struct page *page;

	xa_for_each(&c4sim_fl_pages, pfn, page) {
		if (page_ref_count(page) > 1) {
			held++;
			continue;
		}
		xa_erase_bh(&c4sim_fl_pages, pfn);
		put_page(page);
	}
	return held;
}

/* At unload: ours dropped, whoever else holds a page keeps it */
void c4sim_fl_pages_forget(void)
{
	unsigned long pfn;
	struct page *page;

	xa_for_each(&c4sim_fl_pages, pfn, page) {
		xa_erase_bh(&c4sim_fl_pages, pfn);
		put_page(page);
	}
}

static bool c4sim_quiet(unsigned int op)
{
	return op == CPL_ISCSI_HDR || op == CPL_ISCSI_DATA || op == CPL_RX_ISCSI_DDP ||
	       op == CPL_RX_ISCSI_CMP || op == CPL_FW4_ACK;
}

static int c4sim_queue(unsigned int abs_id, const void *cpl, unsigned int len, bool fl)
{
	struct c4sim_rxq *q = c4sim_rxq(abs_id);
	struct rss_header *rss;
	struct sk_buff *skb;

	if (!q || (!fl && len > C4SIM_IMM_MAX)) {
		c4sim_trace("error: a message for queue %u, which no ULD has", abs_id);
		return -EINVAL;
	}
	skb = alloc_skb(C4SIM_IMM_LEN + (fl ? len : 0), GFP_ATOMIC);
	if (!skb)
		return NET_XMIT_DROP;
	rss = skb_put_zero(skb, C4SIM_IMM_LEN);
	rss->opcode = *(const u8 *)cpl;
	rss->qid = htons(abs_id);
	if (fl)
		skb_put_data(skb, cpl, len);
	else
		memcpy(rss + 1, cpl, len);
	/* the data path's messages are counted (sim_tcp.c), not traced */
	if (!c4sim_quiet(rss->opcode))
		c4sim_trace("rx q=%u%s %s tid=%u", abs_id, fl ? " fl" : "",
			    c4sim_opname(rss->opcode) ?: "CPL",
			    GET_TID((const struct cpl_pass_open_rpl *)cpl));
	skb_queue_tail(&q->pending, skb);
	local_bh_disable();
	napi_schedule(&q->napi);
	local_bh_enable();
	return 0;
}

int c4sim_deliver_fl(unsigned int abs_id, const void *msg, unsigned int len)
{
	return c4sim_queue(abs_id, msg, len, true);
}

int c4sim_deliver(unsigned int abs_id, const void *cpl, unsigned int len)
{
	return c4sim_queue(abs_id, cpl, len, false);
}

/*
 * The chip puts a message that carries a packet's bytes in free-list
 * buffers, however short (cxgbit takes CPL_ISCSI_DATA from them alone);
 * the others in the IQ entry when they fit
 */
int c4sim_deliver_any(unsigned int abs_id, const void *msg, unsigned int len)
{
	unsigned int op = *(const u8 *)msg;

	return c4sim_queue(abs_id, msg, len,
			   op == CPL_ISCSI_HDR || op == CPL_ISCSI_DATA || op == CPL_RX_ISCSI_CMP ||
			   op == CPL_RX_DATA || len > C4SIM_IMM_MAX);
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
	l->nrxq = a->nrxq;
	l->ntxq = a->ntxq;
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
	l->pf = C4SIM_PF;
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
	/* as cxgb4 sizes a ULD's queues without MSI-X: per CPU, whole per port */
	a->nrxq = min_t(unsigned int, roundup(min_t(unsigned int, p->nrxq, num_online_cpus()),
					      a->nports), C4SIM_NRXQ);
	a->ntxq = roundup(min_t(unsigned int, p->ntxq, num_online_cpus()), a->nports);
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
