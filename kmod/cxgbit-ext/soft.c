// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext software adapter: listening and SYN steering.
 *
 * LIO's stock iSCSI/TCP listener already owns ip:port when offload is
 * enabled on a portal, and a second socket cannot listen there. The
 * adapter does what a hardware adapter does on its own ports: it takes
 * the new connections that arrive on *its* netdevs and leaves the rest to
 * the stock listener. Its listening socket is bound to an ephemeral port
 * of the portal's address; a netfilter PRE_ROUTING hook hands each SYN for
 * the portal that came in on an owned netdev to that socket, the way
 * xt_TPROXY does (skb->sk = listener). The TCP stack then builds the
 * request and child sockets on the portal's own address and port, so the
 * initiator sees nothing different. Established packets find their
 * socket by the usual lookup; only SYNs are steered.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/net.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/mutex.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <net/sock.h>
#include <net/ip.h>

#include "cxgbit_ext.h"

LIST_HEAD(cxe_nps);
DEFINE_SPINLOCK(cxe_nps_lock);

struct cxe_adapter cxe_soft0 = {
	.name		= "soft0",
	.lock		= __SPIN_LOCK_UNLOCKED(cxe_soft0.lock),
	.netdev		= "*",
};

bool cxe_adapter_owns_dev(struct cxe_adapter *a, const struct net_device *dev)
{
	bool owns;

	if (!dev)
		return false;
	spin_lock_bh(&a->lock);
	owns = !strcmp(a->netdev, "*") || !strcmp(a->netdev, dev->name);
	spin_unlock_bh(&a->lock);
	return owns;
}

static bool cxe_np_matches(const struct cxe_np *cnp, __be32 daddr, __be16 dport)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&cnp->addr;

	return sin->sin_family == AF_INET && sin->sin_port == dport &&
	       (sin->sin_addr.s_addr == htonl(INADDR_ANY) ||
		sin->sin_addr.s_addr == daddr);
}

static unsigned int cxe_steer_syn(void *priv, struct sk_buff *skb,
				  const struct nf_hook_state *state)
{
	const struct iphdr *iph = ip_hdr(skb);
	const struct tcphdr *th;
	struct tcphdr _th;
	struct cxe_np *cnp;

	if (iph->protocol != IPPROTO_TCP || skb->sk || ip_is_fragment(iph))
		return NF_ACCEPT;
	th = skb_header_pointer(skb, ip_hdrlen(skb), sizeof(_th), &_th);
	if (!th || !th->syn || th->ack || th->rst || th->fin)
		return NF_ACCEPT;

	rcu_read_lock();
	list_for_each_entry_rcu(cnp, &cxe_nps, node) {
		struct sock *sk;

		if (!net_eq(cnp->net, state->net) ||
		    !cxe_np_matches(cnp, iph->daddr, th->dest) ||
		    !cxe_adapter_owns_dev(cnp->adapter, state->in))
			continue;
		sk = cnp->listener->sk;
		if (!refcount_inc_not_zero(&sk->sk_refcnt))
			break;
		/* as nf_tproxy_assign_sock(): the stack delivers to sk */
		skb_orphan(skb);
		skb->sk = sk;
		skb->destructor = sock_edemux;
		cxe_stat_add(cnp->adapter, CXE_STAT_SYN_STEERED, 1);
		break;
	}
	rcu_read_unlock();
	return NF_ACCEPT;
}

/* One PRE_ROUTING hook per network namespace with offloaded portals */
struct cxe_hook {
	struct list_head	node;
	struct net		*net;
	unsigned int		users;
	struct nf_hook_ops	ops;
};

static LIST_HEAD(cxe_hooks);
static DEFINE_MUTEX(cxe_hooks_mutex);

static int cxe_hook_get(struct net *net)
{
	struct cxe_hook *h;
	int ret;

	mutex_lock(&cxe_hooks_mutex);
	list_for_each_entry(h, &cxe_hooks, node) {
		if (net_eq(h->net, net)) {
			h->users++;
			mutex_unlock(&cxe_hooks_mutex);
			return 0;
		}
	}
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h) {
		mutex_unlock(&cxe_hooks_mutex);
		return -ENOMEM;
	}
	h->net = net;
	h->users = 1;
	h->ops.hook = cxe_steer_syn;
	h->ops.pf = NFPROTO_IPV4;
	h->ops.hooknum = NF_INET_PRE_ROUTING;
	h->ops.priority = NF_IP_PRI_MANGLE;
	ret = nf_register_net_hook(net, &h->ops);
	if (ret) {
		kfree(h);
		mutex_unlock(&cxe_hooks_mutex);
		return ret;
	}
	list_add(&h->node, &cxe_hooks);
	mutex_unlock(&cxe_hooks_mutex);
	return 0;
}

static void cxe_hook_put(struct net *net)
{
	struct cxe_hook *h;

	mutex_lock(&cxe_hooks_mutex);
	list_for_each_entry(h, &cxe_hooks, node) {
		if (!net_eq(h->net, net))
			continue;
		if (--h->users == 0) {
			nf_unregister_net_hook(net, &h->ops);
			list_del(&h->node);
			kfree(h);
		}
		break;
	}
	mutex_unlock(&cxe_hooks_mutex);
}

int cxe_soft_listen(struct cxe_np *cnp)
{
	struct sockaddr_in sin;
	struct socket *sock;
	int ret;

	if (cnp->addr.ss_family != AF_INET) {
		pr_err("portal %pISpc: the software adapter offloads IPv4 portals only so far\n",
		       &cnp->addr);
		return -EAFNOSUPPORT;
	}
	/* a user-style socket: it pins the portal's network namespace */
	ret = sock_create(AF_INET, SOCK_STREAM, IPPROTO_TCP, &sock);
	if (ret)
		return ret;
	sock_set_reuseaddr(sock->sk);
	memcpy(&sin, &cnp->addr, sizeof(sin));
	sin.sin_port = 0;
	ret = kernel_bind(sock, (struct sockaddr *)&sin, sizeof(sin));
	if (!ret)
		ret = kernel_listen(sock, 256);
	if (ret) {
		sock_release(sock);
		return ret;
	}
	cnp->listener = sock;
	cnp->net = sock_net(sock->sk);
	ret = cxe_hook_get(cnp->net);
	if (ret) {
		sock_release(sock);
		cnp->listener = NULL;
		return ret;
	}
	spin_lock(&cxe_nps_lock);
	list_add_tail_rcu(&cnp->node, &cxe_nps);
	spin_unlock(&cxe_nps_lock);
	return 0;
}

void cxe_soft_unlisten(struct cxe_np *cnp)
{
	spin_lock(&cxe_nps_lock);
	list_del_rcu(&cnp->node);
	spin_unlock(&cxe_nps_lock);
	cxe_hook_put(cnp->net);
	synchronize_net();
	sock_release(cnp->listener);
	cnp->listener = NULL;
}
