// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4sim (sim.h says what it is): the L2 table. Stands for l2t.c,
 * whose exported symbols it defines. Messages sent through an entry go to
 * the chip (sim_chip.c) as if the entry's next hop were resolved.
 */
#include "l2t_inc.h"
#include "sim.h"

static struct l2t_entry c4sim_l2t[C4SIM_NL2T];
static DEFINE_SPINLOCK(c4sim_l2t_lock);	/* the entries' counts */

struct l2t_entry *cxgb4_l2t_get(struct l2t_data *d, struct neighbour *neigh,
				const struct net_device *physdev,
				unsigned int priority)
{
	struct l2t_entry *e = NULL;
	unsigned int i;

	if (c4sim_detached("cxgb4_l2t_get"))
		return NULL;
	spin_lock_bh(&c4sim_l2t_lock);
	for (i = 0; i < C4SIM_NL2T; i++) {
		if (!atomic_read(&c4sim_l2t[i].refcnt)) {
			e = &c4sim_l2t[i];
			memset(e, 0, sizeof(*e));
			e->idx = i;
			atomic_set(&e->refcnt, 1);
			break;
		}
	}
	spin_unlock_bh(&c4sim_l2t_lock);
	c4sim_trace("l2t get dev=%s idx=%d", physdev->name, e ? (int)e->idx : -1);
	return e;
}
EXPORT_SYMBOL(cxgb4_l2t_get);

void cxgb4_l2t_release(struct l2t_entry *e)
{
	if (c4sim_detached("cxgb4_l2t_release"))
		return;
	spin_lock_bh(&c4sim_l2t_lock);
	if (atomic_dec_and_test(&e->refcnt))
		c4sim_trace("l2t release idx=%u", e->idx);
	spin_unlock_bh(&c4sim_l2t_lock);
}
EXPORT_SYMBOL(cxgb4_l2t_release);

int cxgb4_l2t_send(struct net_device *dev, struct sk_buff *skb,
		   struct l2t_entry *e)
{
	char via[24];

	/* cxgb4 frees what it drops: NET_XMIT_DROP, not an error to free on */
	if (c4sim_detached("cxgb4_l2t_send")) {
		kfree_skb(skb);
		return NET_XMIT_DROP;
	}
	snprintf(via, sizeof(via), "l2t%u", e->idx);
	c4sim_chip_tx(via, skb);
	return NET_XMIT_SUCCESS;
}
EXPORT_SYMBOL(cxgb4_l2t_send);

/* A new probe's table: the entries the removed adapter's ULD held are gone */
void c4sim_l2t_fresh(void)
{
	spin_lock_bh(&c4sim_l2t_lock);
	memset(c4sim_l2t, 0, sizeof(c4sim_l2t));
	spin_unlock_bh(&c4sim_l2t_lock);
}
