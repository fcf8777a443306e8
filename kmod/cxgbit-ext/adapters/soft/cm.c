// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext software adapter: connection management. Listening and SYN
 * steering, accept, hand-back to the stock portal, connection release;
 * the ops table and the backend's description.
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
 * socket by the usual lookup; only SYNs are steered (and the ACK that
 * completes a SYN-cookie handshake), and only those the host's own stack
 * would have answered: addressed to this host after any DNAT (never
 * forwarded traffic), and on a 4-tuple that no socket owns.
 *
 * On an accepted connection the adapter does what hardware would: it
 * checks and makes digests, receives write data straight into the
 * command's pages and cuts Data-In bursts into PDUs (io.c), and keeps the
 * DDP tag table (ddp.c).
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
#include <linux/netfilter_ipv6.h>
#include <net/sock.h>
#include <net/ip.h>
#include <net/tcp.h>
#include <net/inet_hashtables.h>
#include <net/inet_timewait_sock.h>
#include <net/route.h>
#include <net/ipv6.h>
#include <net/addrconf.h>
#include <net/inet6_hashtables.h>
#include <net/request_sock.h>
#include <net/inet_connection_sock.h>
#include <target/iscsi/iscsi_target_core.h>

#include "soft.h"

/*
 * An offloaded portal as this adapter serves it (cnp->priv): the socket
 * every software adapter's connections for the portal are accepted on.
 */
struct cxe_soft_np {
	struct list_head	node;		/* cxe_nps, RCU */
	struct cxe_np		*cnp;
	struct net		*net;
	struct socket		*listener;
	struct cxe_gate		gate;
};

static int cxe_sock_set_transparent(struct socket *sock, int on)
{
	bool v6 = sock->sk->sk_family == AF_INET6;

	return sock->ops->setsockopt(sock, v6 ? SOL_IPV6 : SOL_IP,
				     v6 ? IPV6_TRANSPARENT : IP_TRANSPARENT,
				     KERNEL_SOCKPTR(&on), sizeof(on));
}

/*
 * A listener the steering hook assigns SYNs to (skb->sk, before the
 * stack's own lookup) is transparent, as nf_tproxy's are: NAT's LOCAL_IN
 * hook takes an assigned socket off a packet unless the socket is
 * transparent or the connection's remote port is the socket's, and a
 * listener's is 0. Without it, any NAT table in the namespace (iptables,
 * Docker's chains) would send every steered SYN to LIO's stock listener.
 * Transparency only relaxes the local-source checks of the replies, and
 * the hook hands over only SYNs addressed to this host. Process context;
 * -EPERM when the writer of the portal lacks CAP_NET_ADMIN and
 * CAP_NET_RAW, which the callers log and go on without.
 */
static int cxe_steered_listener(struct socket *sock)
{
	return cxe_sock_set_transparent(sock, 1);
}

/*
 * A connection accepted on such a listener is made what the stock
 * listener's would be: not transparent (clearing needs no capability
 * and cannot fail on an inet socket).
 */
static void cxe_steered_child(struct socket *sock)
{
	cxe_sock_set_transparent(sock, 0);
}

/* the offloaded portals the steering hook looks SYNs up in */
static LIST_HEAD(cxe_nps);
static DEFINE_SPINLOCK(cxe_nps_lock);

/* What steering needs of a packet, IPv4 or IPv6 */
struct cxe_pkt {
	sa_family_t		family;
	const struct tcphdr	*th;
	union {
		__be32		v4;
		struct in6_addr	v6;
	} saddr, daddr;
};

/* dif: the netdev the packet came in on */
static bool cxe_np_matches(const struct cxe_np *cnp, const struct cxe_pkt *p,
			   int dif)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&cnp->addr;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&cnp->addr;

	if (cnp->addr.ss_family == AF_INET6 && p->family == AF_INET)
		/* [::] is dual-stack in LIO (no IPV6_V6ONLY): IPv4 too */
		return sin6->sin6_port == p->th->dest &&
		       ipv6_addr_any(&sin6->sin6_addr);
	if (cnp->addr.ss_family != p->family)
		return false;
	if (p->family == AF_INET)
		return sin->sin_port == p->th->dest &&
		       (sin->sin_addr.s_addr == htonl(INADDR_ANY) ||
			sin->sin_addr.s_addr == p->daddr.v4);
	/*
	 * A zoned portal (a link-local address) takes the SYNs of its zone's
	 * netdev only, as LIO's own listener, bound to that netdev, does
	 */
	if (sin6->sin6_scope_id && sin6->sin6_scope_id != dif)
		return false;
	return sin6->sin6_port == p->th->dest &&
	       (ipv6_addr_any(&sin6->sin6_addr) ||
		ipv6_addr_equal(&sin6->sin6_addr, &p->daddr.v6));
}

/* Addressed to this host (a wildcard portal matches forwarded packets too)? */
static bool cxe_pkt_local(const struct nf_hook_state *state,
			  const struct cxe_pkt *p)
{
	if (p->family == AF_INET)
		return inet_addr_type_dev_table(state->net, state->in,
						p->daddr.v4) == RTN_LOCAL;
	return ipv6_chk_addr(state->net, &p->daddr.v6, NULL, 0);
}

/*
 * Does a socket own the packet's 4-tuple already? An established
 * connection answers a SYN itself (RFC 5961 challenge ACK), a request
 * socket retransmits its SYN-ACK: neither is a new connection, and handing
 * the SYN to the listener would start a second one on a live tuple. A
 * TIME_WAIT socket gives way to the listener, as nf_tproxy's does
 * (nf_tproxy_handle_time_wait4): the SYN starts a new connection there.
 */
static bool cxe_tuple_owned(const struct nf_hook_state *state,
			    const struct cxe_pkt *p)
{
	struct net *net = state->net;
	struct inet_hashinfo *hinfo = net->ipv4.tcp_death_row.hashinfo;
	const struct tcphdr *th = p->th;
	struct sock *sk;

	if (p->family == AF_INET)
		sk = inet_lookup_established(net, hinfo, p->saddr.v4, th->source,
					     p->daddr.v4, th->dest,
					     state->in->ifindex);
	else
		sk = __inet6_lookup_established(net, hinfo, &p->saddr.v6,
						th->source, &p->daddr.v6,
						ntohs(th->dest),
						state->in->ifindex, 0);
	if (!sk)
		return false;
	if (sk->sk_state == TCP_TIME_WAIT) {
		inet_twsk_deschedule_put(inet_twsk(sk));
		return false;
	}
	sock_gen_put(sk);
	return true;
}

/* May the listener have answered a SYN with a cookie lately? */
static bool cxe_cookies_sent(struct net *net, const struct sock *sk)
{
	return READ_ONCE(net->ipv4.sysctl_tcp_syncookies) == 2 ||
	       !tcp_synq_no_recent_overflow(sk);
}

/*
 * The hook sees every TCP packet the host receives, its own connections'
 * and every neighbour's, so the common case (neither a SYN nor a bare ACK
 * of an offloaded portal) must cost as little as can be: the hook's body is
 * inlined in the per-family functions, the packet's addresses are not
 * zeroed first, and the portal list is read under the RCU read lock
 * netfilter holds around every hook (nf_hook(), NF_HOOK_LIST()).
 */
static __always_inline unsigned int cxe_steer(struct sk_buff *skb,
					      const struct nf_hook_state *state,
					      const struct cxe_pkt *p)
{
	const struct tcphdr *th = p->th;
	struct cxe_soft_np *snp;

	if (th->rst || th->fin || th->syn == th->ack)
		return NF_ACCEPT;

	list_for_each_entry_rcu(snp, &cxe_nps, node) {
		struct sock *sk = snp->listener->sk;

		if (!net_eq(snp->net, state->net) ||
		    !cxe_np_matches(snp->cnp, p, state->in->ifindex))
			continue;
		/*
		 * A bare ACK is ours only when it may complete a handshake
		 * the listener answered with a SYN cookie (no request socket
		 * to find it by): the listener checks the cookie.
		 */
		if (th->ack && !cxe_cookies_sent(state->net, sk))
			break;
		/*
		 * ours only: on a tuple nobody owns, for this host. The
		 * socket lookup goes first: a live connection's packets stop
		 * at it, where the locality check is a route lookup.
		 */
		if (cxe_tuple_owned(state, p) || !cxe_pkt_local(state, p))
			break;
		sk = snp->listener->sk;
		/* the portal is offloaded; is the netdev served (and counted)? */
		if (!cxe_adapter_steer(state->in, th->syn) ||
		    !refcount_inc_not_zero(&sk->sk_refcnt))
			break;
		/* as nf_tproxy_assign_sock(): the stack delivers to sk */
		skb_orphan(skb);
		skb->sk = sk;
		skb->destructor = sock_edemux;
		break;
	}
	return NF_ACCEPT;
}

/* p: what cxe_steer() reads of the family's packet, set field by field */
static unsigned int cxe_steer4(void *priv, struct sk_buff *skb,
			       const struct nf_hook_state *state)
{
	const struct iphdr *iph = ip_hdr(skb);
	struct cxe_pkt p __uninitialized;
	struct tcphdr _th __uninitialized;

	if (iph->protocol != IPPROTO_TCP || skb->sk || ip_is_fragment(iph))
		return NF_ACCEPT;
	p.th = skb_header_pointer(skb, ip_hdrlen(skb), sizeof(_th), &_th);
	if (!p.th)
		return NF_ACCEPT;
	p.family = AF_INET;
	p.saddr.v4 = iph->saddr;
	p.daddr.v4 = iph->daddr;
	return cxe_steer(skb, state, &p);
}

static unsigned int cxe_steer6(void *priv, struct sk_buff *skb,
			       const struct nf_hook_state *state)
{
	const struct ipv6hdr *ip6h = ipv6_hdr(skb);
	struct cxe_pkt p __uninitialized;
	u8 nexthdr = ip6h->nexthdr;
	struct tcphdr _th __uninitialized;
	__be16 frag_off;
	int thoff;

	if (skb->sk)
		return NF_ACCEPT;
	thoff = ipv6_skip_exthdr(skb, sizeof(*ip6h), &nexthdr, &frag_off);
	if (thoff < 0 || nexthdr != IPPROTO_TCP || (frag_off & htons(~0x7)))
		return NF_ACCEPT;
	p.th = skb_header_pointer(skb, thoff, sizeof(_th), &_th);
	if (!p.th)
		return NF_ACCEPT;
	p.family = AF_INET6;
	p.saddr.v6 = ip6h->saddr;
	p.daddr.v6 = ip6h->daddr;
	return cxe_steer(skb, state, &p);
}

/* One PRE_ROUTING hook per network namespace with offloaded portals */
struct cxe_hook {
	struct list_head	node;
	struct net		*net;
	unsigned int		users;
	struct nf_hook_ops	ops[2];	/* IPv4, IPv6 */
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
	/* after DNAT: a SYN NAT sends elsewhere is not ours */
	h->ops[0].hook = cxe_steer4;
	h->ops[0].pf = NFPROTO_IPV4;
	h->ops[0].hooknum = NF_INET_PRE_ROUTING;
	h->ops[0].priority = NF_IP_PRI_NAT_DST + 1;
	h->ops[1].hook = cxe_steer6;
	h->ops[1].pf = NFPROTO_IPV6;
	h->ops[1].hooknum = NF_INET_PRE_ROUTING;
	h->ops[1].priority = NF_IP6_PRI_NAT_DST + 1;
	ret = nf_register_net_hooks(net, h->ops, ARRAY_SIZE(h->ops));
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
			nf_unregister_net_hooks(net, h->ops, ARRAY_SIZE(h->ops));
			list_del(&h->node);
			kfree(h);
		}
		break;
	}
	mutex_unlock(&cxe_hooks_mutex);
}

/* TCP's own data_ready, as every new TCP socket has it */
static void (*cxe_tcp_data_ready)(struct sock *sk);

/*
 * A connection joined a portal listener's accept queue: the portal's gate
 * takes it (gate.c), and the portal's accept once its first Login request
 * is whole. The connections the listener makes inherit this callback: for
 * them it is TCP's own, until the gate gives them TCP's back.
 */
static void cxe_soft_listener_ready(struct sock *sk)
{
	struct cxe_soft_np *snp;

	rcu_read_lock();
	list_for_each_entry_rcu(snp, &cxe_nps, node) {
		if (snp->listener->sk == sk) {
			cxe_gate_kick(&snp->gate);
			break;
		}
	}
	rcu_read_unlock();
	cxe_tcp_data_ready(sk);
}

/* give a socket TCP's own data_ready back */
static void cxe_soft_tcp_ready(struct socket *sock)
{
	write_lock_bh(&sock->sk->sk_callback_lock);
	WRITE_ONCE(sock->sk->sk_data_ready, cxe_tcp_data_ready);
	write_unlock_bh(&sock->sk->sk_callback_lock);
}

/* A connection off the listener made what the stock one's would be */
static void cxe_soft_child(struct socket *sock)
{
	cxe_soft_tcp_ready(sock);
	cxe_steered_child(sock);
}

static int cxe_soft_listen(struct cxe_np *cnp)
{
	sa_family_t family = cnp->addr.ss_family;
	struct sockaddr_storage ss;
	struct cxe_soft_np *snp;
	struct socket *sock;
	int ret, len;

	memcpy(&ss, &cnp->addr, sizeof(ss));
	if (family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_port = 0;
		len = sizeof(struct sockaddr_in);
	} else if (family == AF_INET6) {
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
		len = sizeof(struct sockaddr_in6);
	} else {
		pr_err("portal %pISpc: not an IPv4 or IPv6 address\n", &cnp->addr);
		return -EAFNOSUPPORT;
	}
	snp = kzalloc(sizeof(*snp), GFP_KERNEL);
	if (!snp)
		return -ENOMEM;
	/* a user-style socket: it pins the portal's network namespace */
	ret = sock_create(family, SOCK_STREAM, IPPROTO_TCP, &sock);
	if (ret)
		goto err_free;
	/* [::]'s is dual-stack, as LIO's own: it takes IPv4 SYNs too */
	sock_set_reuseaddr(sock->sk);
	/* without it only a NAT table in the namespace takes logins back */
	if (cxe_steered_listener(sock))
		pr_warn("portal %pISpc: listener not transparent (no CAP_NET_ADMIN or CAP_NET_RAW): logins go stock while a NAT table is loaded\n",
			&cnp->addr);
	ret = kernel_bind(sock, (struct sockaddr *)&ss, len);
	if (!ret)
		ret = kernel_listen(sock, 256);
	if (ret)
		goto err_sock;
	snp->cnp = cnp;
	snp->listener = sock;
	snp->net = sock_net(sock->sk);
	cxe_gate_init(&snp->gate, cnp, sock, cxe_soft_child);
	ret = cxe_hook_get(snp->net);
	if (ret)
		goto err_sock;
	write_lock_bh(&sock->sk->sk_callback_lock);
	WRITE_ONCE(cxe_tcp_data_ready, sock->sk->sk_data_ready);
	WRITE_ONCE(sock->sk->sk_data_ready, cxe_soft_listener_ready);
	write_unlock_bh(&sock->sk->sk_callback_lock);
	cnp->priv = snp;
	spin_lock(&cxe_nps_lock);
	list_add_tail_rcu(&snp->node, &cxe_nps);
	spin_unlock(&cxe_nps_lock);
	return 0;

err_sock:
	sock_release(sock);
err_free:
	kfree(snp);
	return ret;
}

static void cxe_soft_unlisten(struct cxe_np *cnp)
{
	struct cxe_soft_np *snp = cnp->priv;
	struct socket *sock;

	spin_lock(&cxe_nps_lock);
	list_del_rcu(&snp->node);
	spin_unlock(&cxe_nps_lock);
	cxe_hook_put(snp->net);
	/*
	 * New connections inherit TCP's callback from now on; after the wait
	 * the steering hook's readers are done with snp (and cnp), nothing
	 * kicks the gate but its own connections, and those the gate and the
	 * listener still have go first, given TCP's callbacks back: nothing
	 * of ours is called once the module goes.
	 */
	cxe_soft_tcp_ready(snp->listener);
	synchronize_net();
	cxe_gate_stop(&snp->gate);
	while (!kernel_accept(snp->listener, &sock, O_NONBLOCK)) {
		cxe_soft_tcp_ready(sock);
		sock_release(sock);
	}
	sock_release(snp->listener);
	cnp->priv = NULL;
	kfree(snp);
}

/* ---- connections ----------------------------------------------------------- */

/*
 * The next connection whose first Login request is whole, and the adapter
 * serving the netdev it came in on (the SYN was steered here because one
 * did; if it has been unbound or removed since, the connection is closed
 * and the initiator retries, to the stock listener); -EAGAIN when none is
 * ready.
 */
static int cxe_soft_accept_one(struct cxe_np *cnp, struct socket **sockp,
			       struct cxe_adapter **ap)
{
	struct cxe_soft_np *snp = cnp->priv;

	for (;;) {
		*sockp = cxe_gate_take(&snp->gate);
		if (!*sockp)
			return -EAGAIN;
		*ap = cxe_adapter_get_for_sk((*sockp)->sk);
		if (*ap)
			return 0;
		pr_warn_ratelimited("portal %pISpc: no adapter serves the netdev of a new connection any more: closed\n",
				    &cnp->addr);
		sock_release(*sockp);
	}
}

/*
 * On success the socket is lent to LIO's login code as conn->sock (LIO
 * hooks its callbacks during login and releases it with the connection).
 */
static int cxe_soft_accept(struct cxe_np *cnp, struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	struct cxe_adapter *a;
	struct socket *sock;
	int ret;

	ret = cxe_soft_accept_one(cnp, &sock, &a);
	if (ret)
		return ret;
	c->ddp = READ_ONCE(a->ddp);
	c->iso = READ_ONCE(a->iso);
	sc->ddp = kvcalloc(CXE_DDP_SLOTS, sizeof(*sc->ddp), GFP_KERNEL);
	if (sc->ddp && !c->ddp)
		sc->bounce = (u8 *)__get_free_page(GFP_KERNEL);
	if (!sc->ddp || (!c->ddp && !sc->bounce)) {
		kvfree(sc->ddp);
		sc->ddp = NULL;
		sock_release(sock);
		cxe_adapter_put(a);
		return -ENOMEM;
	}
	c->adapter = a;
	sc->sock = sock;
	sc->held = true;
	spin_lock_init(&sc->ddp_lock);
	/* login: no digests, LIO's limit on a login PDU's text */
	cxe_rx_init(&sc->rx, MAX_KEY_VALUE_PAIRS);
	sc->rx.login = true;
	tcp_sock_set_nodelay(sock->sk);
	kernel_getpeername(sock, (struct sockaddr *)&c->peer);
	kernel_getsockname(sock, (struct sockaddr *)&c->local);
	c->conn->sock = sock;
	return 0;
}

/*
 * LIO's login hooks the socket's callbacks to its conn (its
 * iscsi_target_set_sock_callbacks) and restores them only on paths that
 * keep the socket; the stock portal would save ours as the originals and
 * its reader would never be woken.
 */
static void cxe_login_callbacks_off(struct iscsit_conn *conn)
{
	struct sock *sk = conn->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	if (sk->sk_user_data == conn) {
		sk->sk_user_data = NULL;
		sk->sk_data_ready = conn->orig_data_ready;
		sk->sk_state_change = conn->orig_state_change;
	}
	write_unlock_bh(&sk->sk_callback_lock);
	sk->sk_rcvtimeo = MAX_SCHEDULE_TIMEOUT;
	sk->sk_sndtimeo = MAX_SCHEDULE_TIMEOUT;
}

/*
 * Logins handed to the stock portal that it has not answered yet, with
 * the target each is for: a hold on that target (holds.c) resets them, so
 * that the stock portal never reads one after the target's TPG is
 * enabled. Answered means the stock portal sent something (its Login
 * response) or the connection is closing; a record is also forgotten
 * after CXE_HANDED_KEEP_S, by when the stock portal's login timeout has
 * ended any login it left unread.
 */
#define CXE_HANDED_MAX		1024
#define CXE_HANDED_KEEP_S	60

struct cxe_handed {
	struct list_head	node;
	struct sock		*sk;		/* held */
	u32			snd_nxt;	/* at the hand-back */
	unsigned long		until;		/* jiffies */
	struct sockaddr_storage	peer, local;
	/* the list's (while listed) and the handing-back thread's */
	refcount_t		ref;
	bool			listed;		/* cxe_handed_lock */
	char			target[ISCSI_IQN_LEN];
};

static LIST_HEAD(cxe_handed);
static DEFINE_SPINLOCK(cxe_handed_lock);
static unsigned int cxe_handed_count;

static bool cxe_handed_answered(const struct cxe_handed *h)
{
	int state = inet_sk_state_load(h->sk);

	return (state != TCP_ESTABLISHED && state != TCP_CLOSE_WAIT) ||
	       READ_ONCE(tcp_sk(h->sk)->snd_nxt) != h->snd_nxt ||
	       time_after_eq(jiffies, h->until);
}

static void cxe_handed_put(struct cxe_handed *h)
{
	if (refcount_dec_and_test(&h->ref)) {
		sock_put(h->sk);
		kfree(h);
	}
}

/* Drop the list's references of records sorted off it */
static void cxe_handed_free(struct list_head *list)
{
	struct cxe_handed *h, *n;

	list_for_each_entry_safe(h, n, list, node)
		cxe_handed_put(h);
}

/*
 * Move the answered records to done and, with target, that target's
 * unanswered ones to take. cxe_handed_lock held.
 */
static void cxe_handed_sort(const char *target, struct list_head *done,
			    struct list_head *take)
{
	struct cxe_handed *h, *n;

	list_for_each_entry_safe(h, n, &cxe_handed, node) {
		if (cxe_handed_answered(h))
			list_move(&h->node, done);
		else if (target && !strcmp(h->target, target))
			list_move(&h->node, take);
		else
			continue;
		h->listed = false;
		cxe_handed_count--;
	}
}

/*
 * Track a login about to be handed back for target: 0, or -EBUSY when too
 * many are tracked (a hold could not reach it), -EAGAIN when the target is
 * held. The record goes in before the hold is read, and a hold is set
 * before the records are read (holds.c): a login is either seen by the
 * hold's reset or sees the hold.
 */
static int cxe_handed_add(struct cxe_handed *h)
{
	LIST_HEAD(done);
	bool full;

	refcount_set(&h->ref, 1);	/* the handing-back thread's */
	spin_lock_bh(&cxe_handed_lock);
	cxe_handed_sort(NULL, &done, NULL);
	full = cxe_handed_count >= CXE_HANDED_MAX;
	if (!full) {
		refcount_inc(&h->ref);	/* the list's */
		list_add_tail(&h->node, &cxe_handed);
		h->listed = true;
		cxe_handed_count++;
	}
	spin_unlock_bh(&cxe_handed_lock);
	cxe_handed_free(&done);
	if (full)
		return -EBUSY;
	smp_mb();	/* the record before the hold: pairs with holds.c */
	return cxe_hold_has(h->target, strlen(h->target)) ? -EAGAIN : 0;
}

/*
 * The handing-back thread is done with its record: when the login was not
 * handed back, it is taken off the list too (unless a reset or a sort
 * took it first).
 */
static void cxe_handed_done(struct cxe_handed *h, bool handed)
{
	bool unlist = false;

	if (!handed) {
		spin_lock_bh(&cxe_handed_lock);
		unlist = h->listed;
		if (unlist) {
			list_del(&h->node);
			h->listed = false;
			cxe_handed_count--;
		}
		spin_unlock_bh(&cxe_handed_lock);
	}
	if (unlist)
		cxe_handed_put(h);
	cxe_handed_put(h);
}

/* Reset the handed-back logins for target the stock portal has not answered */
static void cxe_soft_reset_handed_back(const char *target)
{
	struct cxe_handed *h;
	LIST_HEAD(done);
	LIST_HEAD(take);

	spin_lock_bh(&cxe_handed_lock);
	cxe_handed_sort(target, &done, &take);
	spin_unlock_bh(&cxe_handed_lock);
	list_for_each_entry(h, &take, node) {
		pr_info("connection %pISpc -> %pISpc: login for %s handed to the stock portal and not answered there: reset (the target is held)\n",
			&h->peer, &h->local, h->target);
		tcp_abort(h->sk, ECONNRESET);
	}
	cxe_handed_free(&done);
	cxe_handed_free(&take);
}

void cxe_soft_exit(void)
{
	LIST_HEAD(all);

	spin_lock_bh(&cxe_handed_lock);
	list_splice_init(&cxe_handed, &all);
	cxe_handed_count = 0;
	spin_unlock_bh(&cxe_handed_lock);
	cxe_handed_free(&all);
}

/*
 * Give a connection whose first Login request is still unread to the
 * listener the host's own stack would have chosen for it (LIO's stock
 * iSCSI/TCP portal for the same address): queued on that listener as a
 * new connection, as a TCP handshake completing there would queue it.
 * The stock portal then reads the request and answers it as it would have
 * without offload. The socket struct is freed; the sock goes on.
 */
static int cxe_soft_hand_back(struct cxe_conn *c, const char *target)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	struct socket *sock = sc->sock;
	struct cxe_handed *h = NULL;
	struct sock *sk, *lsk;
	struct request_sock *req;
	struct net *net;
	int ret;

	if (!c->conn->sock)
		return -ENOTCONN;	/* LIO let the socket go */
	sk = sock->sk;
	net = sock_net(sk);
	cxe_login_callbacks_off(c->conn);
	if (!sc->held)
		return -EINVAL;	/* part of the stream is consumed */
	rcu_read_lock();
	/* IPv4, or IPv4 through a dual-stack IPv6 listener (v4-mapped) */
	if (sk->sk_family == AF_INET || ipv6_addr_v4mapped(&sk->sk_v6_daddr))
		lsk = __inet_lookup_listener(net, net->ipv4.tcp_death_row.hashinfo,
					     NULL, 0, inet_sk(sk)->inet_daddr,
					     inet_sk(sk)->inet_dport,
					     inet_sk(sk)->inet_rcv_saddr,
					     inet_sk(sk)->inet_num, 0, 0);
	else
		lsk = inet6_lookup_listener(net, net->ipv4.tcp_death_row.hashinfo,
					    NULL, 0, &sk->sk_v6_daddr,
					    inet_sk(sk)->inet_dport,
					    &sk->sk_v6_rcv_saddr,
					    inet_sk(sk)->inet_num, 0, 0);
	if (lsk && !refcount_inc_not_zero(&lsk->sk_refcnt))
		lsk = NULL;
	rcu_read_unlock();
	if (!lsk)
		return -ENOENT;
	if (target) {
		h = kzalloc(sizeof(*h), GFP_KERNEL);
		if (!h) {
			sock_put(lsk);
			return -ENOMEM;
		}
		strscpy(h->target, target, sizeof(h->target));
		h->peer = c->peer;
		h->local = c->local;
		h->sk = sk;
		sock_hold(sk);
		h->snd_nxt = READ_ONCE(tcp_sk(sk)->snd_nxt);
		h->until = jiffies + CXE_HANDED_KEEP_S * HZ;
		ret = cxe_handed_add(h);
		if (ret) {
			cxe_handed_done(h, false);
			sock_put(lsk);
			return ret;
		}
	}
	req = inet_reqsk_alloc(lsk->sk_prot->rsk_prot, lsk, true);
	if (!req) {
		if (h)
			cxe_handed_done(h, false);
		sock_put(lsk);
		return -ENOMEM;
	}
	tcp_rsk(req)->tfo_listener = false;
	refcount_set(&req->rsk_refcnt, 1);	/* the accept queue's */

	lock_sock(lsk);
	if (lsk->sk_state != TCP_LISTEN) {
		release_sock(lsk);
		reqsk_put(req);
		sock_put(lsk);
		if (h)
			cxe_handed_done(h, false);
		return -ENOTCONN;
	}
	/* the inverse of sock_graft(): sk belongs to no socket struct */
	write_lock_bh(&sk->sk_callback_lock);
	RCU_INIT_POINTER(sk->sk_wq, NULL);
	sk_set_socket(sk, NULL);
	write_unlock_bh(&sk->sk_callback_lock);
	sock->sk = NULL;
	/* as TCP queues a child: the queue's lock is taken in softirqs too */
	local_bh_disable();
	inet_csk_reqsk_queue_add(lsk, req, sk);	/* cannot fail: listening, locked */
	lsk->sk_data_ready(lsk);
	local_bh_enable();
	release_sock(lsk);
	sock_put(lsk);
	if (h)
		cxe_handed_done(h, true);

	sock_release(sock);
	sc->sock = NULL;
	c->conn->sock = NULL;	/* the stock portal's now */
	kfree(sc->held_buf);
	sc->held_buf = NULL;
	sc->held = false;
	return 0;
}

/*
 * The socket itself belongs to LIO (conn->sock), which releases it; the
 * PDU layer frees the connection struct.
 */
static void cxe_soft_conn_release(struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);

	kvfree(sc->ddp);
	sc->ddp = NULL;
	free_page((unsigned long)sc->bounce);
	sc->bounce = NULL;
	kfree(sc->held_buf);
	sc->held_buf = NULL;
	cxe_soft_tx_release(sc);
}

static void cxe_soft_set_params(struct cxe_conn *c, bool hdigest, bool ddigest,
				u32 max_recv_dlen)
{
	struct cxe_soft_conn *sc = cxe_soft(c);

	/*
	 * Between PDUs: after login the parser paused at the end of the last
	 * login PDU and nothing has been read since.
	 */
	c->hdigest = hdigest;
	c->ddigest = ddigest;
	sc->rx.hdigest = hdigest;
	sc->rx.ddigest = ddigest;
	sc->rx.max_dlen = max_recv_dlen;
	sc->rx.login = false;
}

/* What a connection on the kernel's TCP does, whoever accepted it */
#define CXE_SOFT_CONN_OPS					\
	.hand_back	= cxe_soft_hand_back,			\
	.conn_release	= cxe_soft_conn_release,		\
	.set_params	= cxe_soft_set_params,			\
	.recv_hdr	= cxe_soft_recv_hdr,			\
	.recv_data	= cxe_soft_recv_data,			\
	.data_taken	= cxe_soft_data_taken,			\
	.send_pdu	= cxe_soft_send_pdu,			\
	.send_burst	= cxe_soft_send_burst,			\
	.tx_room	= cxe_soft_tx_room,			\
	.ddp_reserve	= cxe_soft_ddp_reserve,			\
	.ddp_check	= cxe_soft_ddp_check,			\
	.ddp_release	= cxe_soft_ddp_release

static const struct cxe_adapter_ops cxe_soft_ops = {
	.listen		= cxe_soft_listen,
	.unlisten	= cxe_soft_unlisten,
	.accept		= cxe_soft_accept,
	CXE_SOFT_CONN_OPS,
};

/*
 * The same per-connection ops alone: those a CXE_BACKEND_SOCKETS backend
 * starts its table from (the portal's listener accepts for it)
 */
const struct cxe_adapter_ops cxe_sock_conn_ops = {
	CXE_SOFT_CONN_OPS,
};
EXPORT_SYMBOL_GPL(cxe_sock_conn_ops);

/*
 * Software adapters are made by name (soft0 at load, more with mkdir) and
 * share one listener per portal; steering picks the adapter by netdev.
 */
const struct cxe_backend cxe_soft_backend = {
	.contract = CXE_BACKEND_CONTRACT,
	.name	= "soft",
	.owner	= THIS_MODULE,
	.caps	= BIT(CXE_CAP_HCRC) | BIT(CXE_CAP_DCRC) | BIT(CXE_CAP_DDP) |
		  BIT(CXE_CAP_ISO) | BIT(CXE_CAP_T10PI),
	.flags	= CXE_BACKEND_MKDIR | CXE_BACKEND_PORTALS,
	.conn_size = CXE_CONN_SIZE(struct cxe_soft_conn, c),
	/* the kernel's TCP carries whatever iSCSI negotiates */
	.limits	= {
		.max_recv_dlen	= CXE_NO_LIMIT,
		.max_send_dlen	= CXE_NO_LIMIT,
		.max_iso_burst	= CXE_NO_LIMIT,
		.ddp_min_len	= 0,
		.ddp_align	= 1,
	},
	.ops	= &cxe_soft_ops,
	.reset_handed_back = cxe_soft_reset_handed_back,
};
