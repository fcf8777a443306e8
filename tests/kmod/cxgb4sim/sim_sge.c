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
	c4sim_chip_tx("ofld_send", skb);
	return NET_XMIT_SUCCESS;
}
EXPORT_SYMBOL(cxgb4_ofld_send);

/* As cxgb4: pull_len bytes copied, the rest of the buffers as page frags */
struct sk_buff *cxgb4_pktgl_to_skb(const struct pkt_gl *gl,
				   unsigned int skb_len, unsigned int pull_len)
{
	struct sk_buff *skb;
	unsigned int i;

	if (gl->tot_len <= skb_len) {
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
		get_page(gl->frags[i].page);
		skb_add_rx_frag(skb, i, gl->frags[i].page, off, len, PAGE_SIZE);
	}
	return skb;
}
EXPORT_SYMBOL(cxgb4_pktgl_to_skb);
