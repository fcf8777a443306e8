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
	unsigned long flags;
	bool on;

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
	/* a stopped queue (a reset, no ULD) delivers nothing: lost with it */
	spin_lock_irqsave(&q->pending.lock, flags);
	on = q->on;
	if (on)
		__skb_queue_tail(&q->pending, skb);
	spin_unlock_irqrestore(&q->pending.lock, flags);
	if (!on) {
		if (!c4sim_quiet(rss->opcode))
			c4sim_trace("rx q=%u: stopped, the message is lost", abs_id);
		kfree_skb(skb);
		return 0;
	}
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
	l->iscsi_ppm = &a->ppm_slots[a->probe];
	l->nodeid = NUMA_NO_NODE;
	l->pf = C4SIM_PF;
}

/* The ULD's queues' ids and lists, once at load */
void c4sim_uld_init(struct c4sim_adapter *a)
{
	unsigned int i;

	for (i = 0; i < C4SIM_NRXQ; i++) {
		struct c4sim_rxq *q = &a->rxq[i];

		q->abs_id = C4SIM_RXQ_BASE + i;
		a->rxq_ids[i] = q->abs_id;
		skb_queue_head_init(&q->pending);
		skb_queue_head_init(&q->lro_mgr.lroq);
	}
}

/*
 * The ULD's queues as cxgb4's setup_sge_queues_uld() makes them, sized as
 * cxgb4 sizes them without MSI-X (per CPU, whole per port); they deliver
 * once on (enable_rx()). The ULD mutex held, as every change below.
 */
static void c4sim_queues_add(struct c4sim_adapter *a, enum cxgb4_uld type,
			     const struct cxgb4_uld_info *p)
{
	unsigned int i;

	a->nrxq = min_t(unsigned int, roundup(min_t(unsigned int, p->nrxq, num_online_cpus()),
					      a->nports), C4SIM_NRXQ);
	a->ntxq = roundup(min_t(unsigned int, p->ntxq, num_online_cpus()), a->nports);
	for (i = 0; i < C4SIM_NRXQ; i++) {
		a->rxq[i].uld = type;
		netif_napi_add(a->ports[0], &a->rxq[i].napi, c4sim_poll);
	}
	a->rxq_added = true;
}

static void c4sim_queues_on(struct c4sim_adapter *a)
{
	unsigned long flags;
	unsigned int i;

	if (!a->rxq_added || a->rxq_on)
		return;
	for (i = 0; i < C4SIM_NRXQ; i++) {
		struct c4sim_rxq *q = &a->rxq[i];

		napi_enable(&q->napi);
		spin_lock_irqsave(&q->pending.lock, flags);
		q->on = true;
		spin_unlock_irqrestore(&q->pending.lock, flags);
	}
	a->rxq_on = true;
}

/*
 * cxgb4's quiesce_rx(): a poll under way ends (with the message it
 * holds), none starts; what the queues held is lost with their state
 */
static void c4sim_queues_off(struct c4sim_adapter *a)
{
	struct sk_buff_head lost;
	unsigned long flags;
	unsigned int i;

	if (!a->rxq_on)
		return;
	for (i = 0; i < C4SIM_NRXQ; i++) {
		struct c4sim_rxq *q = &a->rxq[i];

		__skb_queue_head_init(&lost);
		spin_lock_irqsave(&q->pending.lock, flags);
		q->on = false;
		skb_queue_splice_init(&q->pending, &lost);
		spin_unlock_irqrestore(&q->pending.lock, flags);
		__skb_queue_purge(&lost);
		napi_disable(&q->napi);
		skb_queue_purge(&q->lro_mgr.lroq);
	}
	a->rxq_on = false;
}

/* cxgb4's free_sge_queues_uld() */
static void c4sim_queues_del(struct c4sim_adapter *a)
{
	unsigned int i;

	if (!a->rxq_added)
		return;
	c4sim_queues_off(a);
	for (i = 0; i < C4SIM_NRXQ; i++)
		netif_napi_del(&a->rxq[i].napi);
	a->rxq_added = false;
}

/* cxgb4_shutdown_uld_adapter(): the handle forgotten, the queues gone */
static void c4sim_uld_forget(struct c4sim_adapter *a)
{
	c4sim_queues_del(a);
	WRITE_ONCE(a->uld, NULL);
	a->handle = NULL;
}

/*
 * The ULD on the adapter, as cxgb4_uld_alloc_resources() and uld_attach()
 * put it there: its queues (delivering if the adapter is up), its add()
 * with the adapter's lld info, then CXGB4_STATE_UP if the adapter is up
 * (CXGB4_FULL_INIT_DONE); else UP comes with the adapter's.
 */
static void c4sim_uld_attach(struct c4sim_adapter *a, enum cxgb4_uld type,
			     const struct cxgb4_uld_info *p)
{
	bool up = a->state == C4SIM_UP;
	struct cxgb4_lld_info lldi;
	void *handle;

	if (a->uld) {
		/* cxgb4 does not check either: the later one replaces */
		pr_warn("cxgb4sim: %s takes the iSCSI target slot from %s\n",
			p->name, a->uld->name);
		c4sim_uld_forget(a);
	}
	c4sim_queues_add(a, type, p);
	if (up)
		c4sim_queues_on(a);
	c4sim_lldi(a, p, &lldi);
	handle = p->add(&lldi);
	if (IS_ERR(handle)) {
		c4sim_trace("uld add %s: error %ld", p->name, PTR_ERR(handle));
		c4sim_queues_del(a);
		return;
	}
	a->handle = handle;
	WRITE_ONCE(a->uld, p);
	if (!up) {
		c4sim_trace("uld add %s: the adapter is %s: UP when it is up", p->name,
			    c4sim_state_name());
		return;
	}
	c4sim_trace("uld add %s: state UP", p->name);
	p->state_change(handle, CXGB4_STATE_UP);
}

void cxgb4_register_uld(enum cxgb4_uld type, const struct cxgb4_uld_info *p)
{
	struct c4sim_adapter *a = c4sim;

	if (type != CXGB4_ULD_ISCSIT) {
		pr_info("cxgb4sim: ULD %d (%s) not simulated\n", type, p->name);
		return;
	}
	mutex_lock(&c4sim_uld_mutex);
	a->registered = p;
	c4sim_trace("uld register %s lro=%d nrxq=%u ntxq=%u", p->name, p->lro,
		    p->nrxq, p->ntxq);
	if (a->state == C4SIM_DETACHED)
		c4sim_trace("uld register %s: no adapter (detached): it is added at the probe",
			    p->name);
	else
		c4sim_uld_attach(a, type, p);
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
		c4sim_uld_forget(a);
	} else if (a->registered) {
		c4sim_trace("uld unregister %s: not on the adapter", a->registered->name);
	}
	a->registered = NULL;
	mutex_unlock(&c4sim_uld_mutex);
	return 0;
}
EXPORT_SYMBOL(cxgb4_unregister_uld);

/* ---- the adapter's state, as cxgb4 changes it under its ULDs ------------- */

/*
 * debugfs cxgb4sim/state takes a word and makes the change cxgb4 makes,
 * in cxgb4's order (cxgb4_main.c of 6.1 and 6.12); its ULD calls are made
 * under the ULD mutex, as cxgb4 makes them under its uld_mutex
 * (notify_ulds(), detach_ulds()). A reset of the chip (sim_chip.c)
 * takes its connections without a word to the ULD, its listening
 * servers and its page pod memory; requests sent to it meanwhile are
 * lost (traced "chip: reset: ... lost", counted in lost_in_reset). What
 * cxgb4 keeps in host memory (TID and STID tables, L2T) stays until the
 * adapter is removed: the ULD releases its entries there itself.
 *
 * recovery (up): a PCI channel error, eeh_err_detected(): the adapter
 *	is already frozen (the chip is reset here first), then
 *	notify_ulds(CXGB4_STATE_START_RECOVERY), then disable_interrupts()
 *	quiesces the response queues and cxgb_down().
 * down (up): a function reset (pci_reset_function(): a reset through
 *	sysfs, an FLR), eeh_reset_prepare(): notify_ulds(CXGB4_STATE_DOWN)
 *	with the chip still running, cxgb_close() of the ports,
 *	disable_interrupts(), cxgb_down(); the reset of the function then
 *	resets the chip. cxgb4 sends DOWN from there alone (not from
 *	cxgb_close() or cxgb_down()).
 * up (recovery, down): eeh_slot_reset() or eeh_reset_done() (through
 *	cxgb_open()) bring the adapter up again in cxgb_up(): enable_rx(),
 *	then notify_ulds(CXGB4_STATE_UP). The chip has no server: cxgb4
 *	makes none again, nor does any ULD's UP (mainline cxgbit only sets
 *	CDEV_STATE_UP); a ULD has to create its servers again itself and
 *	to have forgotten the TIDs the reset took (a request for one after
 *	UP is an error: the chip may have given it to a new connection).
 *	eeh_resume() only restarts the ports' links: it calls no ULD.
 * detach (up, recovery, down): a PCI removal, remove_one():
 *	detach_ulds() calls state_change(CXGB4_STATE_DETACH), the chip
 *	still running (if it was); t4_uld_clean_up() then forgets the
 *	ULD's handle and frees its queues (cxgb4_shutdown_uld_adapter());
 *	cxgb_down(), t4_fw_bye() and kfree(adapter) end the adapter. Any
 *	call the ULD makes for it after that is traced as an error ("...
 *	after detach") and refused (a use-after-free on hardware); the
 *	stand-in's ports stay (cxgb4 unregisters its own), so that the
 *	tests' wiring does.
 * attach (detached): a new probe, init_one(): fresh tables and lld
 *	info (a new adapter: its iscsi_ppm another field), then
 *	cxgb4_uld_enable() gives every registered ULD its add() (uld_attach());
 *	UP follows at the first cxgb_open() of a port, at once here (the
 *	stand-in's ports are up). A ULD's calls for the removed adapter
 *	made after this are not told apart from its new handle's.
 *
 * t4_fatal_err()'s CXGB4_STATE_FATAL_ERROR is not offered: the chip
 * stops without forgetting its connections, which the stand-in's TCP
 * does not model, and cxgb4 recovers from it only by a removal.
 */
static const char * const c4sim_state_names[] = {
	[C4SIM_UP]		= "up",
	[C4SIM_RECOVERY]	= "recovery",
	[C4SIM_DOWN]		= "down",
	[C4SIM_DETACHED]	= "detached",
};

const char *c4sim_state_name(void)
{
	return c4sim_state_names[READ_ONCE(c4sim->state)];
}

/* notify_ulds(), detach_ulds(): the ULD mutex held */
static void c4sim_notify(struct c4sim_adapter *a, enum cxgb4_state state, const char *name)
{
	if (!a->uld)
		return;
	c4sim_trace("uld %s: state %s", a->uld->name, name);
	a->uld->state_change(a->handle, state);
}

static void c4sim_set_state(struct c4sim_adapter *a, enum c4sim_state state)
{
	spin_lock_bh(&a->chip_lock);
	WRITE_ONCE(a->state, state);
	spin_unlock_bh(&a->chip_lock);
}

static void c4sim_to_recovery(struct c4sim_adapter *a)
{
	c4sim_chip_reset(C4SIM_RECOVERY);
	c4sim_notify(a, CXGB4_STATE_START_RECOVERY, "START_RECOVERY");
	c4sim_queues_off(a);
}

static void c4sim_to_down(struct c4sim_adapter *a)
{
	c4sim_notify(a, CXGB4_STATE_DOWN, "DOWN");
	c4sim_queues_off(a);
	c4sim_chip_reset(C4SIM_DOWN);
}

static void c4sim_to_up(struct c4sim_adapter *a)
{
	c4sim_set_state(a, C4SIM_UP);
	c4sim_queues_on(a);
	c4sim_notify(a, CXGB4_STATE_UP, "UP");
}

static void c4sim_to_detached(struct c4sim_adapter *a)
{
	c4sim_notify(a, CXGB4_STATE_DETACH, "DETACH");
	c4sim_uld_forget(a);
	if (READ_ONCE(a->ppm_slots[a->probe])) {
		set_bit(a->probe, &a->ppm_held);
		c4sim_trace("chip: the ULD still holds the pod manager of %s",
			    "the removed adapter, whose last release writes into it");
	}
	c4sim_chip_reset(C4SIM_DETACHED);
}

static void c4sim_to_attached(struct c4sim_adapter *a)
{
	a->probe++;
	c4sim_tables_fresh(a);
	c4sim_set_state(a, C4SIM_UP);
	if (a->registered)
		c4sim_uld_attach(a, CXGB4_ULD_ISCSIT, a->registered);
}

#define C4SIM_FROM(s)	BIT(C4SIM_##s)

int c4sim_state_write(const char *word)
{
	static const struct {
		const char	*word;
		unsigned int	from;	/* the states it is made from */
		void		(*change)(struct c4sim_adapter *a);
	} changes[] = {
		{ "recovery",	C4SIM_FROM(UP),	c4sim_to_recovery },
		{ "down",	C4SIM_FROM(UP),	c4sim_to_down },
		{ "up",		C4SIM_FROM(RECOVERY) | C4SIM_FROM(DOWN), c4sim_to_up },
		{ "detach",	C4SIM_FROM(UP) | C4SIM_FROM(RECOVERY) | C4SIM_FROM(DOWN),
				c4sim_to_detached },
		{ "attach",	C4SIM_FROM(DETACHED), c4sim_to_attached },
	};
	struct c4sim_adapter *a = c4sim;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < ARRAY_SIZE(changes); i++)
		if (!strcmp(word, changes[i].word))
			break;
	if (i == ARRAY_SIZE(changes))
		return -EINVAL;
	c4sim_ppm_check();
	mutex_lock(&c4sim_uld_mutex);
	if (!(changes[i].from & BIT(a->state))) {
		c4sim_trace("state %s: refused, the adapter is %s", word, c4sim_state_name());
		ret = -EINVAL;
	} else if (changes[i].change == c4sim_to_attached && a->probe + 1 == C4SIM_PROBES) {
		c4sim_trace("state %s: refused, %u probes made", word, C4SIM_PROBES);
		ret = -ENOSPC;
	} else {
		c4sim_trace("state %s", word);
		changes[i].change(a);
	}
	mutex_unlock(&c4sim_uld_mutex);
	return ret;
}

bool c4sim_detached(const char *call)
{
	if (likely(READ_ONCE(c4sim->state) != C4SIM_DETACHED))
		return false;
	c4sim_count(C4SIM_AFTER_DETACH, 1);
	c4sim_trace("error: %s after detach: %s", call,
		    "cxgb4 freed the adapter in remove_one (a use-after-free on hardware)");
	return true;
}

/*
 * libcxgb's ppm_destroy() clears the lld info's iscsi_ppm the pod manager
 * was made through: after the removal, a field of the adapter cxgb4
 * freed. Seen when debugfs is read.
 */
void c4sim_ppm_check(void)
{
	struct c4sim_adapter *a = c4sim;
	unsigned int i;

	BUILD_BUG_ON(C4SIM_PROBES > BITS_PER_LONG);
	for (i = 0; i < C4SIM_PROBES; i++) {
		if (!test_bit(i, &a->ppm_held) || READ_ONCE(a->ppm_slots[i]) ||
		    !test_and_clear_bit(i, &a->ppm_held))
			continue;
		c4sim_count(C4SIM_AFTER_DETACH, 1);
		c4sim_trace("error: the ULD released its pod manager after detach: %s",
			    "libcxgb cleared iscsi_ppm in the adapter cxgb4 freed (a use-after-free)");
	}
}
