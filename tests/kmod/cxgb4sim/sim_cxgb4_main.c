// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4sim (sim.h says what it is): the adapter, its ports, its server
 * TIDs and listening servers, and the trace. Stands for cxgb4_main.c,
 * whose exported symbols it defines.
 */
#include "cxgb4_main_inc.h"
#include <linux/debugfs.h>
#include <linux/etherdevice.h>
#include <linux/seq_file.h>
#include <linux/vmalloc.h>
#include "sim.h"

static unsigned int nports = 2;
module_param(nports, uint, 0444);
MODULE_PARM_DESC(nports, "ports of the adapter (1-4)");
static char *chip = "t6";
module_param(chip, charp, 0444);
MODULE_PARM_DESC(chip, "t5 or t6");

struct c4sim_adapter *c4sim;

/* ---- the trace: what crossed the API, one line each ---------------------- */

#define C4SIM_TRACE_MAX	4096
#define C4SIM_ERRORS_MAX	256
static LIST_HEAD(c4sim_trace_lines);
static unsigned int c4sim_trace_len;
/* the errors, kept apart: the trace forgets its oldest lines */
static LIST_HEAD(c4sim_error_lines);
static unsigned int c4sim_errors;
static DEFINE_SPINLOCK(c4sim_trace_lock);
static struct dentry *c4sim_dir;

struct c4sim_line {
	struct list_head	node;
	char			*text;
};

void c4sim_trace(const char *fmt, ...)
{
	struct c4sim_line *l, *old = NULL;
	va_list ap;

	l = kmalloc(sizeof(*l), GFP_ATOMIC);
	if (!l)
		return;
	va_start(ap, fmt);
	l->text = kvasprintf(GFP_ATOMIC, fmt, ap);
	va_end(ap);
	if (!l->text) {
		kfree(l);
		return;
	}
	spin_lock_bh(&c4sim_trace_lock);
	if (!strncmp(l->text, "error:", 6) && c4sim_errors++ < C4SIM_ERRORS_MAX) {
		struct c4sim_line *e = kmalloc(sizeof(*e), GFP_ATOMIC);

		if (e) {
			e->text = kstrdup(l->text, GFP_ATOMIC);
			if (e->text)
				list_add_tail(&e->node, &c4sim_error_lines);
			else
				kfree(e);
		}
	}
	list_add_tail(&l->node, &c4sim_trace_lines);
	if (++c4sim_trace_len > C4SIM_TRACE_MAX) {
		old = list_first_entry(&c4sim_trace_lines, struct c4sim_line, node);
		list_del(&old->node);
		c4sim_trace_len--;
	}
	spin_unlock_bh(&c4sim_trace_lock);
	if (old) {
		kfree(old->text);
		kfree(old);
	}
}

static int c4sim_trace_show(struct seq_file *m, void *v)
{
	struct c4sim_line *l;

	spin_lock_bh(&c4sim_trace_lock);
	list_for_each_entry(l, &c4sim_trace_lines, node)
		seq_printf(m, "%s\n", l->text);
	spin_unlock_bh(&c4sim_trace_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(c4sim_trace);

/* every error so far: how many, then the first C4SIM_ERRORS_MAX */
static int c4sim_errors_show(struct seq_file *m, void *v)
{
	struct c4sim_line *l;

	c4sim_ppm_check();
	spin_lock_bh(&c4sim_trace_lock);
	seq_printf(m, "%u\n", c4sim_errors);
	list_for_each_entry(l, &c4sim_error_lines, node)
		seq_printf(m, "%s\n", l->text);
	spin_unlock_bh(&c4sim_trace_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(c4sim_errors);

static int c4sim_stats_show(struct seq_file *m, void *v)
{
	static const char * const names[C4SIM_NSTATS] = {
		[C4SIM_ESTABLISHED]	= "established",
		[C4SIM_TX_DATA_WRS]	= "tx_data_wrs",
		[C4SIM_TX_GATHERED]	= "tx_gathered",
		[C4SIM_TX_ISO]		= "tx_iso",
		[C4SIM_TX_BYTES]	= "tx_bytes",
		[C4SIM_POD_WRITES]	= "pod_writes",
		[C4SIM_RX_BYTES]	= "rx_bytes",
		[C4SIM_RX_PLACED]	= "rx_placed",
		[C4SIM_FW4_ACKS]	= "fw4_acks",
		[C4SIM_RESET_CONNS]	= "reset_conns",
		[C4SIM_RX_REFUSED]	= "rx_refused",
		[C4SIM_LOST_IN_RESET]	= "lost_in_reset",
		[C4SIM_AFTER_DETACH]	= "after_detach",
	};
	unsigned int i;

	for (i = 0; i < C4SIM_NSTATS; i++)
		seq_printf(m, "%s %lld\n", names[i], atomic64_read(&c4sim->stats[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(c4sim_stats);

static int c4sim_fl_pages_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%lu\n", c4sim_fl_pages_held());
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(c4sim_fl_pages);

/*
 * The adapter's state (up, recovery, down, detached); a word written
 * (recovery, down, up, detach, attach) changes it as cxgb4 would
 * (sim_cxgb4_uld.c says how), -EINVAL if there is no such change now
 */
static int c4sim_state_show(struct seq_file *m, void *v)
{
	c4sim_ppm_check();
	seq_printf(m, "%s\n", c4sim_state_name());
	return 0;
}

static int c4sim_state_open(struct inode *inode, struct file *file)
{
	return single_open(file, c4sim_state_show, inode->i_private);
}

static ssize_t c4sim_state_store(struct file *file, const char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	char buf[16];
	int ret;

	if (!count || count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	ret = c4sim_state_write(strim(buf));
	return ret ? ret : count;
}

static const struct file_operations c4sim_state_fops = {
	.owner		= THIS_MODULE,
	.open		= c4sim_state_open,
	.read		= seq_read,
	.write		= c4sim_state_store,
	.llseek		= seq_lseek,
	.release	= single_release,
};

static void c4sim_lines_free(struct list_head *lines)
{
	struct c4sim_line *l, *n;

	list_for_each_entry_safe(l, n, lines, node) {
		kfree(l->text);
		kfree(l);
	}
	INIT_LIST_HEAD(lines);
}

static void c4sim_trace_free(void)
{
	c4sim_lines_free(&c4sim_trace_lines);
	c4sim_lines_free(&c4sim_error_lines);
	c4sim_trace_len = 0;
	c4sim_errors = 0;
}

const char *c4sim_opname(unsigned int op)
{
	switch (op) {
	case CPL_PASS_OPEN_REQ:		return "CPL_PASS_OPEN_REQ";
	case CPL_PASS_OPEN_RPL:		return "CPL_PASS_OPEN_RPL";
	case CPL_PASS_OPEN_REQ6:	return "CPL_PASS_OPEN_REQ6";
	case CPL_CLOSE_LISTSRV_REQ:	return "CPL_CLOSE_LISTSRV_REQ";
	case CPL_CLOSE_LISTSRV_RPL:	return "CPL_CLOSE_LISTSRV_RPL";
	case CPL_PASS_ACCEPT_RPL:	return "CPL_PASS_ACCEPT_RPL";
	case CPL_SET_TCB_FIELD:		return "CPL_SET_TCB_FIELD";
	case CPL_RX_DATA_ACK:		return "CPL_RX_DATA_ACK";
	case CPL_CLOSE_CON_REQ:		return "CPL_CLOSE_CON_REQ";
	case CPL_ABORT_REQ:		return "CPL_ABORT_REQ";
	case CPL_ABORT_RPL:		return "CPL_ABORT_RPL";
	case CPL_TX_DATA_ISO:		return "CPL_TX_DATA_ISO";
	case CPL_PASS_ACCEPT_REQ:	return "CPL_PASS_ACCEPT_REQ";
	case CPL_PASS_ESTABLISH:	return "CPL_PASS_ESTABLISH";
	case CPL_PEER_CLOSE:		return "CPL_PEER_CLOSE";
	case CPL_CLOSE_CON_RPL:		return "CPL_CLOSE_CON_RPL";
	case CPL_ABORT_REQ_RSS:		return "CPL_ABORT_REQ_RSS";
	case CPL_ABORT_RPL_RSS:		return "CPL_ABORT_RPL_RSS";
	case CPL_SET_TCB_RPL:		return "CPL_SET_TCB_RPL";
	case CPL_FW4_ACK:		return "CPL_FW4_ACK";
	default:			return NULL;
	}
}

/* ---- ports: netdevs with cxgb4's port_info, joined to a peer as a wire ---- */

struct c4sim_peer {
	struct net_device *other;
};

static netdev_tx_t c4sim_port_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct port_info *pi = netdev_priv(dev);
	struct net_device *peer = c4sim->peers[pi->port_id];

	if (dev_forward_skb(peer, skb) == NET_RX_SUCCESS)
		dev_sw_netstats_tx_add(dev, 1, skb->len);
	return NETDEV_TX_OK;
}

static netdev_tx_t c4sim_peer_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct c4sim_peer *p = netdev_priv(dev);
	struct port_info *pi = netdev_priv(p->other);

	/* what the chip takes off the wire never reaches the host */
	skb_reset_mac_header(skb);
	if (c4sim_chip_rx(pi->port_id, skb))
		return NETDEV_TX_OK;
	dev_forward_skb(p->other, skb);
	return NETDEV_TX_OK;
}

#if IS_ENABLED(CONFIG_DCB)
/*
 * cxgb4's ports carry DCB operations, which ULDs call unchecked (cxgbit
 * asks each connection's port for its DCB state); DCB is off until DCBX
 * negotiates it, so it stays off here.
 */
static u8 c4sim_dcb_getstate(struct net_device *dev)
{
	return 0;
}

static const struct dcbnl_rtnl_ops c4sim_dcb_ops = {
	.getstate	= c4sim_dcb_getstate,
};
#endif

static const struct net_device_ops c4sim_port_ops = {
	.ndo_start_xmit		= c4sim_port_xmit,
	.ndo_set_mac_address	= eth_mac_addr,
};

static const struct net_device_ops c4sim_peer_ops = {
	.ndo_start_xmit		= c4sim_peer_xmit,
	.ndo_set_mac_address	= eth_mac_addr,
};

static void c4sim_ports_free(struct c4sim_adapter *a)
{
	unsigned int i;

	rtnl_lock();
	for (i = 0; i < a->nports; i++) {
		if (a->peers[i])
			unregister_netdevice(a->peers[i]);
		if (a->ports[i])
			unregister_netdevice(a->ports[i]);
	}
	rtnl_unlock();
	for (i = 0; i < a->nports; i++) {
		if (a->peers[i])
			free_netdev(a->peers[i]);
		if (a->ports[i])
			free_netdev(a->ports[i]);
	}
}

static int c4sim_ports_init(struct c4sim_adapter *a)
{
	struct net_device *dev, *peer;
	struct port_info *pi;
	u8 i;	/* nports is 1-4: the names fit IFNAMSIZ */
	int ret;

	for (i = 0; i < a->nports; i++) {
		dev = alloc_etherdev(sizeof(struct port_info));
		peer = alloc_etherdev(sizeof(struct c4sim_peer));
		if (!dev || !peer) {
			free_netdev(dev);
			free_netdev(peer);
			return -ENOMEM;
		}
		snprintf(dev->name, IFNAMSIZ, "c4sim%u", i);
		snprintf(peer->name, IFNAMSIZ, "c4peer%u", i);
		dev->netdev_ops = &c4sim_port_ops;
#if IS_ENABLED(CONFIG_DCB)
		dev->dcbnl_ops = &c4sim_dcb_ops;
#endif
		peer->netdev_ops = &c4sim_peer_ops;
		dev->pcpu_stat_type = NETDEV_PCPU_STAT_TSTATS;
		eth_hw_addr_random(dev);
		eth_hw_addr_random(peer);
		dev->max_mtu = 9000;
		peer->max_mtu = 9000;
		pi = netdev_priv(dev);
		pi->port_id = i;
		pi->tx_chan = i;
		pi->lport = i;
		pi->smt_idx = i;
		pi->link_cfg.speed = SPEED_25000;
		((struct c4sim_peer *)netdev_priv(peer))->other = dev;
		a->ports[i] = dev;
		a->peers[i] = peer;
		ret = register_netdev(dev);
		if (!ret)
			ret = register_netdev(peer);
		if (ret) {
			if (dev->reg_state == NETREG_REGISTERED)
				unregister_netdev(dev);
			free_netdev(dev);
			free_netdev(peer);
			a->ports[i] = NULL;
			a->peers[i] = NULL;
			return ret;
		}
	}
	return 0;
}

/*
 * Lookups: after the removal (freed memory on hardware) traced as errors,
 * and answered from what the stand-in still has, so that the ULD goes on
 * as it would have rather than fail of a made-up answer
 */
unsigned int cxgb4_port_chan(const struct net_device *dev)
{
	c4sim_detached("cxgb4_port_chan");
	return ((const struct port_info *)netdev_priv(dev))->tx_chan;
}
EXPORT_SYMBOL(cxgb4_port_chan);

unsigned int cxgb4_port_idx(const struct net_device *dev)
{
	c4sim_detached("cxgb4_port_idx");
	return ((const struct port_info *)netdev_priv(dev))->port_id;
}
EXPORT_SYMBOL(cxgb4_port_idx);

/*
 * The largest MTU of the table whose payload (less header_size) is at
 * most data_size_max and, when one exists, a multiple of data_size_align:
 * cxgb4's contract for this call.
 */
unsigned int cxgb4_best_aligned_mtu(const unsigned short *mtus,
				    unsigned short header_size,
				    unsigned short data_size_max,
				    unsigned short data_size_align,
				    unsigned int *mtu_idxp)
{
	unsigned int i, best = 0, aligned = NMTUS;

	c4sim_detached("cxgb4_best_aligned_mtu");
	for (i = 0; i < NMTUS; i++) {
		if (mtus[i] < header_size || mtus[i] - header_size > data_size_max)
			break;
		best = i;
		if (data_size_align && !((mtus[i] - header_size) % data_size_align))
			aligned = i;
	}
	if (aligned != NMTUS && best - aligned <= 1)
		best = aligned;
	if (mtu_idxp)
		*mtu_idxp = best;
	return mtus[best];
}
EXPORT_SYMBOL(cxgb4_best_aligned_mtu);

/* ---- server TIDs and listening servers ------------------------------------ */

int cxgb4_alloc_stid(struct tid_info *t, int family, void *data)
{
	int stid;

	if (c4sim_detached("cxgb4_alloc_stid"))
		return -1;
	spin_lock_bh(&t->stid_lock);
	if (family == PF_INET)
		stid = find_first_zero_bit(t->stid_bmap, t->nstids);
	else	/* an IPv6 server takes two aligned entries */
		stid = bitmap_find_free_region(t->stid_bmap, t->nstids, 1);
	if (stid < 0 || stid >= t->nstids) {
		spin_unlock_bh(&t->stid_lock);
		return -1;
	}
	if (family == PF_INET) {
		__set_bit(stid, t->stid_bmap);
		t->stids_in_use++;
	} else {
		t->stids_in_use += 2;
		t->v6_stids_in_use += 2;
	}
	t->stid_tab[stid].data = data;
	spin_unlock_bh(&t->stid_lock);
	return stid + t->stid_base;
}
EXPORT_SYMBOL(cxgb4_alloc_stid);

void cxgb4_free_stid(struct tid_info *t, unsigned int stid, int family)
{
	if (c4sim_detached("cxgb4_free_stid"))
		return;
	stid -= t->stid_base;
	if (WARN_ON(stid >= t->nstids))
		return;
	spin_lock_bh(&t->stid_lock);
	if (family == PF_INET) {
		__clear_bit(stid, t->stid_bmap);
		t->stids_in_use--;
	} else {
		bitmap_release_region(t->stid_bmap, stid, 1);
		t->stids_in_use -= 2;
		t->v6_stids_in_use -= 2;
	}
	t->stid_tab[stid].data = NULL;
	spin_unlock_bh(&t->stid_lock);
}
EXPORT_SYMBOL(cxgb4_free_stid);

void cxgb4_remove_tid(struct tid_info *t, unsigned int qid, unsigned int tid,
		      unsigned short family)
{
	if (c4sim_detached("cxgb4_remove_tid"))
		return;
	c4sim_trace("tx ctrl TID_RELEASE tid=%u qid=%u family=%u", tid, qid, family);
	c4sim_chip_tid_release(tid);
	if (tid - t->tid_base < t->ntids && t->tid_tab[tid - t->tid_base]) {
		t->tid_tab[tid - t->tid_base] = NULL;
		atomic_dec(family == AF_INET6 ? &t->hash_tids_in_use : &t->tids_in_use);
	}
}
EXPORT_SYMBOL(cxgb4_remove_tid);

/* The firmware's answer to a server request, on the queue it names */
static int c4sim_server_reply(unsigned int op, unsigned int stid, unsigned int queue)
{
	struct cpl_pass_open_rpl rpl = {};	/* same layout as the close reply */

	rpl.ot.opcode_tid = htonl(MK_OPCODE_TID(op, stid));
	rpl.status = CPL_ERR_NONE;
	return c4sim_deliver(queue, &rpl, sizeof(rpl));
}

static bool c4sim_is_port(const struct net_device *dev)
{
	unsigned int i;

	for (i = 0; i < c4sim->nports; i++)
		if (c4sim->ports[i] == dev)
			return true;
	return false;
}

int cxgb4_create_server(const struct net_device *dev, unsigned int stid,
			__be32 sip, __be16 sport, __be16 vlan,
			unsigned int queue)
{
	if (c4sim_detached("cxgb4_create_server"))
		return -ENODEV;
	if (!c4sim_is_port(dev))
		return -EINVAL;
	c4sim_trace("tx ctrl CPL_PASS_OPEN_REQ stid=%u ip=%pI4 port=%u queue=%u",
		    stid, &sip, ntohs(sport), queue);
	if (!c4sim_server_set(stid, true, false, sip, sport, queue))
		return NET_XMIT_SUCCESS;	/* no reply comes */
	return c4sim_server_reply(CPL_PASS_OPEN_RPL, stid, queue);
}
EXPORT_SYMBOL(cxgb4_create_server);

int cxgb4_create_server6(const struct net_device *dev, unsigned int stid,
			 const struct in6_addr *sip, __be16 sport,
			 unsigned int queue)
{
	if (c4sim_detached("cxgb4_create_server6"))
		return -ENODEV;
	if (!c4sim_is_port(dev))
		return -EINVAL;
	c4sim_trace("tx ctrl CPL_PASS_OPEN_REQ6 stid=%u ip=%pI6c port=%u queue=%u",
		    stid, sip, ntohs(sport), queue);
	if (!c4sim_server_set(stid, true, true, 0, sport, queue))
		return NET_XMIT_SUCCESS;
	return c4sim_server_reply(CPL_PASS_OPEN_RPL, stid, queue);
}
EXPORT_SYMBOL(cxgb4_create_server6);

/*
 * debugfs cxgb4sim/hold_close: while 1, the servers' close requests wait
 * in the chip, their servers still taking SYNs, as until the firmware
 * gets to a request; 0 carries out those waiting, in order, and answers
 * them
 */
static DEFINE_SPINLOCK(c4sim_hold_lock);
static bool c4sim_hold_close;
static unsigned int c4sim_nheld;
struct c4sim_close {
	unsigned int stid, queue;
};

static struct c4sim_close c4sim_held[C4SIM_NSTIDS];

/* the close carried out and answered, as cxgb4_remove_server() returns */
static int c4sim_server_close(unsigned int stid, unsigned int queue)
{
	if (!c4sim_server_set(stid, false, false, 0, 0, 0))
		return NET_XMIT_SUCCESS;	/* no reply comes */
	return c4sim_server_reply(CPL_CLOSE_LISTSRV_RPL, stid, queue);
}

int cxgb4_remove_server(const struct net_device *dev, unsigned int stid,
			unsigned int queue, bool ipv6)
{
	bool held;

	if (c4sim_detached("cxgb4_remove_server"))
		return -ENODEV;
	if (!c4sim_is_port(dev))
		return -EINVAL;
	c4sim_trace("tx ctrl CPL_CLOSE_LISTSRV_REQ stid=%u queue=%u ipv6=%d",
		    stid, queue, ipv6);
	spin_lock_bh(&c4sim_hold_lock);
	held = c4sim_hold_close && c4sim_nheld < ARRAY_SIZE(c4sim_held);
	if (held) {
		c4sim_held[c4sim_nheld].stid = stid;
		c4sim_held[c4sim_nheld].queue = queue;
		c4sim_nheld++;
	}
	spin_unlock_bh(&c4sim_hold_lock);
	return held ? NET_XMIT_SUCCESS : c4sim_server_close(stid, queue);
}
EXPORT_SYMBOL(cxgb4_remove_server);

static int c4sim_hold_get(void *data, u64 *val)
{
	*val = READ_ONCE(c4sim_hold_close);
	return 0;
}

static int c4sim_hold_set(void *data, u64 val)
{
	struct c4sim_close *held;
	unsigned int i, n = 0;

	if (val > 1)
		return -EINVAL;
	held = kmalloc(sizeof(c4sim_held), GFP_KERNEL);
	if (!held)
		return -ENOMEM;
	spin_lock_bh(&c4sim_hold_lock);
	c4sim_hold_close = val;
	if (!val) {
		n = c4sim_nheld;
		memcpy(held, c4sim_held, n * sizeof(*held));
		c4sim_nheld = 0;
	}
	spin_unlock_bh(&c4sim_hold_lock);
	for (i = 0; i < n; i++)
		c4sim_server_close(held[i].stid, held[i].queue);
	kfree(held);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(c4sim_hold_fops, c4sim_hold_get, c4sim_hold_set, "%llu\n");

/* ---- the adapter ---------------------------------------------------------- */

/*
 * A new probe's host tables (init_one()'s tid_init() of a new adapter):
 * what the ULD of the removed one held there is gone with it
 */
void c4sim_tables_fresh(struct c4sim_adapter *a)
{
	struct tid_info *t = &a->tids;

	spin_lock_bh(&t->stid_lock);
	bitmap_zero(t->stid_bmap, t->nstids);
	memset(t->stid_tab, 0, t->nstids * sizeof(*t->stid_tab));
	t->stids_in_use = 0;
	t->v6_stids_in_use = 0;
	spin_unlock_bh(&t->stid_lock);
	memset(t->tid_tab, 0, t->ntids * sizeof(*t->tid_tab));
	atomic_set(&t->tids_in_use, 0);
	atomic_set(&t->hash_tids_in_use, 0);
	atomic_set(&t->conns_in_use, 0);
	c4sim_l2t_fresh();
	a->clips = 0;
}

/* cxgb4's default MTU table, as the firmware leaves it */
static const unsigned short c4sim_mtus[NMTUS] = {
	88, 88, 256, 512, 576, 1024, 1280, 1488, 1500, 2002, 2048, 4096,
	4352, 8192, 9000, 9600
};

static void c4sim_pdev_release(struct device *dev)
{
	kfree(to_pci_dev(dev));
}

static void c4sim_adapter_free(struct c4sim_adapter *a)
{
	c4sim_ports_free(a);
	kfree(a->tids.stid_tab);
	bitmap_free(a->tids.stid_bmap);
	kfree(a->tids.tid_tab);
	vfree(a->ppm.mem);
	put_device(&a->pdev->dev);
	kfree(a);
}

static int __init c4sim_init(void)
{
	struct c4sim_adapter *a;
	struct pci_dev *pdev;
	int ret;

	if (!nports || nports > ARRAY_SIZE(a->ports) ||
	    (strcmp(chip, "t5") && strcmp(chip, "t6")))
		return -EINVAL;
	a = kzalloc(sizeof(*a), GFP_KERNEL);
	pdev = kzalloc(sizeof(*pdev), GFP_KERNEL);
	if (!a || !pdev) {
		kfree(a);
		kfree(pdev);
		return -ENOMEM;
	}
	/*
	 * A PCI function that is on no bus: a device the ULDs may take
	 * references on (pci_dev_get), freed with the last one.
	 */
	device_initialize(&pdev->dev);
	pdev->dev.release = c4sim_pdev_release;
	/* it maps the ULD's buffers as a 64-bit function without an IOMMU does */
	pdev->dev.coherent_dma_mask = DMA_BIT_MASK(64);
	pdev->dev.dma_mask = &pdev->dev.coherent_dma_mask;
	pdev->vendor = PCI_VENDOR_ID_CHELSIO;
	ret = dev_set_name(&pdev->dev, "0000:c4:00.4");
	if (ret) {
		put_device(&pdev->dev);
		kfree(a);
		return ret;
	}
	a->pdev = pdev;
	a->state = C4SIM_UP;
	a->nports = nports;
	a->t5 = !strcmp(chip, "t5");
	spin_lock_init(&a->chip_lock);
	c4sim_uld_init(a);
	spin_lock_init(&a->tids.stid_lock);
	spin_lock_init(&a->tids.atid_lock);
	spin_lock_init(&a->tids.ftid_lock);
	a->tids.nstids = C4SIM_NSTIDS;
	a->tids.stid_base = 0x100;
	a->tids.ntids = C4SIM_NTIDS;
	a->tids.stid_tab = kcalloc(C4SIM_NSTIDS, sizeof(*a->tids.stid_tab), GFP_KERNEL);
	a->tids.stid_bmap = bitmap_zalloc(C4SIM_NSTIDS, GFP_KERNEL);
	a->tids.tid_tab = kcalloc(C4SIM_NTIDS, sizeof(void *), GFP_KERNEL);
	/* the iSCSI pod region the firmware configuration gives: 4 MiB */
	a->vr.iscsi.start = 0x1000000;
	a->vr.iscsi.size = 0x400000;
	memcpy(a->mtus, c4sim_mtus, sizeof(a->mtus));
	spin_lock_init(&a->ppm_lock);
	a->ppm.base = a->vr.iscsi.start;
	a->ppm.size = a->vr.iscsi.size;
	a->ppm.mem = vzalloc(a->ppm.size);
	c4sim = a;
	ret = -ENOMEM;
	if (!a->tids.stid_tab || !a->tids.stid_bmap || !a->tids.tid_tab || !a->ppm.mem)
		goto err;
	ret = c4sim_tcp_init();
	if (ret)
		goto err;
	ret = c4sim_ports_init(a);
	if (ret) {
		c4sim_tcp_exit();
		goto err;
	}
	c4sim_dir = debugfs_create_dir("cxgb4sim", NULL);
	debugfs_create_file("trace", 0444, c4sim_dir, NULL, &c4sim_trace_fops);
	debugfs_create_file("errors", 0444, c4sim_dir, NULL, &c4sim_errors_fops);
	debugfs_create_file("stats", 0444, c4sim_dir, NULL, &c4sim_stats_fops);
	debugfs_create_file("fl_pages", 0444, c4sim_dir, NULL, &c4sim_fl_pages_fops);
	debugfs_create_file("state", 0644, c4sim_dir, NULL, &c4sim_state_fops);
	debugfs_create_file_unsafe("hold_close", 0644, c4sim_dir, NULL, &c4sim_hold_fops);
	pr_info("cxgb4sim: a %s stand-in for cxgb4 at %s, %u ports (c4sim0..), for tests only\n",
		a->t5 ? "T5" : "T6", pci_name(pdev), nports);
	return 0;
err:
	c4sim = NULL;
	c4sim_adapter_free(a);
	return ret;
}

static void __exit c4sim_exit(void)
{
	c4sim_conns_halt();
	c4sim_tcp_exit();
	c4sim_fl_pages_forget();
	debugfs_remove_recursive(c4sim_dir);
	c4sim_adapter_free(c4sim);
	c4sim_trace_free();
}

module_init(c4sim_init);
module_exit(c4sim_exit);
MODULE_DESCRIPTION("cxgb4 stand-in below its API, for tests only");
MODULE_LICENSE("GPL");
