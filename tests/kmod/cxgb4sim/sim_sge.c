// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4sim (sim.h says what it is): the offload transmit queues and the
 * free-list buffers. Stands for sge.c, whose exported symbols it defines.
 * Work requests go to the chip (sim_chip.c).
 */
#include "sge_inc.h"
#include "sim.h"

int cxgb4_ofld_send(struct net_device *dev, struct sk_buff *skb)
{
	/* cxgb4 frees what it drops: NET_XMIT_DROP, not an error to free on */
	if (c4sim_detached("cxgb4_ofld_send")) {
		kfree_skb(skb);
		return NET_XMIT_DROP;
	}
	c4sim_chip_tx("ofld_send", skb);
	return NET_XMIT_SUCCESS;
}
EXPORT_SYMBOL(cxgb4_ofld_send);

/*
 * As cxgb4: a short message copied; else pull_len bytes copied and the
 * buffers as page frags, the pages the ULD owns taken over, a reference
 * taken on the last one, which the free list keeps
 */
#define C4SIM_RX_COPY_THRES	256	/* cxgb4's RX_COPY_THRES */

struct sk_buff *cxgb4_pktgl_to_skb(const struct pkt_gl *gl,
				   unsigned int skb_len, unsigned int pull_len)
{
	struct sk_buff *skb;
	unsigned int i;

	if (gl->tot_len <= C4SIM_RX_COPY_THRES) {
		skb = dev_alloc_skb(gl->tot_len);
		if (!skb)
			return NULL;
		__skb_put(skb, gl->tot_len);
		skb_copy_to_linear_data(skb, gl->va, gl->tot_len);
		return skb;
	}
	skb = dev_alloc_skb(skb_len);
	if (!skb)
		return NULL;
	__skb_put(skb, pull_len);
	skb_copy_to_linear_data(skb, gl->va, pull_len);
	for (i = 0; i < gl->nfrags; i++) {
		unsigned int off = gl->frags[i].offset, len = gl->frags[i].size;

		if (!i) {
			off += pull_len;
			len -= pull_len;
		}
		__skb_fill_page_desc(skb, i, gl->frags[i].page, off, len);
	}
	skb_shinfo(skb)->nr_frags = gl->nfrags;
	get_page(gl->frags[gl->nfrags - 1].page);
	skb->len = gl->tot_len;
	skb->data_len = skb->len - pull_len;
	skb->truesize += skb->data_len;
	return skb;
}
EXPORT_SYMBOL(cxgb4_pktgl_to_skb);
