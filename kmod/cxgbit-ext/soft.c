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
 * socket by the usual lookup; only SYNs are steered (and the ACK that
 * completes a SYN-cookie handshake), and only those the host's own stack
 * would have answered: addressed to this host after any DNAT (never
 * forwarded traffic), and on a 4-tuple that no socket owns.
 *
 * On an accepted connection the adapter does what hardware would: it
 * checks and makes digests, receives write data straight into the
 * command's pages, cuts Data-In bursts into PDUs and keeps the DDP tag
 * table. The pure parts (digest framing, segmentation plan, tags) are in
 * pdu/.
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
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <linux/bvec.h>
#include <linux/uio.h>
#include <net/sock.h>
#include <net/ip.h>
#include <net/tcp.h>
#include <net/inet_hashtables.h>
#include <net/inet_timewait_sock.h>
#include <net/route.h>
#include <net/ipv6.h>
#include <net/addrconf.h>
#include <net/inet6_hashtables.h>
#include <linux/netfilter_ipv6.h>
#include <net/request_sock.h>
#include <net/inet_connection_sock.h>
#include <target/iscsi/iscsi_target_core.h>

#include "cxgbit_ext.h"
#include "pdu/cxe_bhs.h"
#include "pdu/cxe_ddp.h"
#include "pdu/cxe_rx.h"
#include "pdu/cxe_seg.h"

/*
 * An offloaded portal as this adapter serves it (cnp->priv): the socket
 * every software adapter's connections for the portal are accepted on.
 */
struct cxe_soft_np {
	struct list_head	node;		/* cxe_nps, RCU */
	struct cxe_np		*cnp;
	struct net		*net;
	struct socket		*listener;
};

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

static bool cxe_np_matches(const struct cxe_np *cnp, const struct cxe_pkt *p)
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

static unsigned int cxe_steer(struct sk_buff *skb,
			      const struct nf_hook_state *state,
			      const struct cxe_pkt *p)
{
	const struct tcphdr *th = p->th;
	struct cxe_soft_np *snp;

	if (th->rst || th->fin || th->syn == th->ack)
		return NF_ACCEPT;

	rcu_read_lock();
	list_for_each_entry_rcu(snp, &cxe_nps, node) {
		struct sock *sk = snp->listener->sk;

		if (!net_eq(snp->net, state->net) || !cxe_np_matches(snp->cnp, p))
			continue;
		/*
		 * A bare ACK is ours only when it may complete a handshake
		 * the listener answered with a SYN cookie (no request socket
		 * to find it by): the listener checks the cookie.
		 */
		if (th->ack && !cxe_cookies_sent(state->net, sk))
			break;
		/* ours only: for this host, on a tuple nobody owns */
		if (!cxe_pkt_local(state, p) || cxe_tuple_owned(state, p))
			break;
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
	rcu_read_unlock();
	return NF_ACCEPT;
}

static unsigned int cxe_steer4(void *priv, struct sk_buff *skb,
			       const struct nf_hook_state *state)
{
	const struct iphdr *iph = ip_hdr(skb);
	struct cxe_pkt p = { .family = AF_INET };
	struct tcphdr _th;

	if (iph->protocol != IPPROTO_TCP || skb->sk || ip_is_fragment(iph))
		return NF_ACCEPT;
	p.th = skb_header_pointer(skb, ip_hdrlen(skb), sizeof(_th), &_th);
	if (!p.th)
		return NF_ACCEPT;
	p.saddr.v4 = iph->saddr;
	p.daddr.v4 = iph->daddr;
	return cxe_steer(skb, state, &p);
}

static unsigned int cxe_steer6(void *priv, struct sk_buff *skb,
			       const struct nf_hook_state *state)
{
	const struct ipv6hdr *ip6h = ipv6_hdr(skb);
	struct cxe_pkt p = { .family = AF_INET6 };
	u8 nexthdr = ip6h->nexthdr;
	struct tcphdr _th;
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
	ret = kernel_bind(sock, (struct sockaddr *)&ss, len);
	if (!ret)
		ret = kernel_listen(sock, 256);
	if (ret)
		goto err_sock;
	snp->cnp = cnp;
	snp->listener = sock;
	snp->net = sock_net(sock->sk);
	ret = cxe_hook_get(snp->net);
	if (ret)
		goto err_sock;
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

	spin_lock(&cxe_nps_lock);
	list_del_rcu(&snp->node);
	spin_unlock(&cxe_nps_lock);
	cxe_hook_put(snp->net);
	/* the steering hook's readers are done with snp (and cnp) after */
	synchronize_net();
	sock_release(snp->listener);
	cnp->priv = NULL;
	kfree(snp);
}

/* ---- connections ----------------------------------------------------------- */

#define CXE_DDP_SLOTS	1024	/* live R2T tags per connection */
/* TTT of an R2T that got no DDP slot: its data is checked by LIO alone */
#define CXE_NODDP_IDX	(CXE_DDP_MAX_TAGS - 1)

struct cxe_ddp_slot {
	struct cxe_task	*owner;
	u32		itt;
	u32		gen;
	u32		offset;
	u32		len;
};

/*
 * A connection as the software adapter keeps it: the shared part first
 * (the PDU layer allocates conn_size bytes, see struct cxe_backend), the
 * socket and its stream state after it.
 */
struct cxe_soft_conn {
	struct cxe_conn		c;
	struct socket		*sock;		/* LIO's too: conn->sock */
	spinlock_t		ddp_lock;	/* ddp[], noddp_gen */
	struct cxe_ddp_slot	*ddp;		/* CXE_DDP_SLOTS */
	u32			noddp_gen;	/* TTTs of R2Ts without a slot */
	u8			*bounce;	/* a page, when ddp is off */
	/* receive: the parser and what its callbacks fill */
	struct cxe_rx		rx;
	u8			*hdr;		/* recv_hdr's buffer */
	const struct cxe_data	*dst;		/* recv_data's destination */
	/* where the last piece of this PDU's data went (cxe_place()) */
	struct scatterlist	*place_sgl;	/* the list walked */
	struct scatterlist	*place_sg;
	u32			place_start;	/* place_sg's first byte in dst */
	u32			place_left;	/* entries from place_sg on */
	int			dstatus;	/* digest status of the PDU */
	bool			pdu_done;
	bool			got_hdr;
	u32			hdr_seq;	/* copied_seq after the last pull */
	/*
	 * The first Login request, read with MSG_PEEK and fed to the parser
	 * from here: it stays in the socket until the first send, so that
	 * a connection LIO has no target for here can still be handed,
	 * unread, to the stock listener (cxe_soft_hand_back).
	 */
	bool			held;
	u8			*held_buf;
	u32			held_len;
	u32			held_off;
};

static struct cxe_soft_conn *cxe_soft(struct cxe_conn *c)
{
	return container_of(c, struct cxe_soft_conn, c);
}

static struct socket *cxe_soft_listener(const struct cxe_np *cnp)
{
	const struct cxe_soft_np *snp = cnp->priv;

	return snp->listener;
}

/*
 * The next connection, and the adapter serving the netdev it came in on
 * (the SYN was steered here because one did; if it has been unbound or
 * removed since, the connection is closed and the initiator retries, to
 * the stock listener).
 */
static int cxe_soft_accept_one(struct cxe_np *cnp, struct socket **sockp,
			       struct cxe_adapter **ap)
{
	int ret;

	for (;;) {
		ret = kernel_accept(cxe_soft_listener(cnp), sockp, 0);
		if (ret < 0)
			return ret;
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
 * Give a connection whose first Login request is still unread to the
 * listener the host's own stack would have chosen for it (LIO's stock
 * iSCSI/TCP portal for the same address): queued on that listener as a
 * new connection, as a TCP handshake completing there would queue it.
 * The stock portal then reads the request and answers it as it would have
 * without offload. The socket struct is freed; the sock goes on.
 */
static int cxe_soft_hand_back(struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	struct socket *sock = sc->sock;
	struct sock *sk, *lsk;
	struct request_sock *req;
	struct net *net;

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
	req = inet_reqsk_alloc(lsk->sk_prot->rsk_prot, lsk, true);
	if (!req) {
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

/* ---- socket I/O -------------------------------------------------------------- */

static int cxe_send(struct cxe_conn *c, const void *buf, size_t len, bool more)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0) };
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
	int ret;

	while (iov.iov_len) {
		ret = kernel_sendmsg(cxe_soft(c)->sock, &msg, &iov, 1, iov.iov_len);
		if (ret <= 0)
			return ret ? ret : -ECONNRESET;
		iov.iov_base += ret;
		iov.iov_len -= ret;
	}
	return 0;
}

/*
 * Send n bytes of a page without copying them: the socket takes a reference
 * on the page (as stock LIO's sendpage path does), the command keeps its
 * pages until it is freed. A page the network stack may not hold (slab,
 * no reference count) is copied instead.
 */
static int cxe_send_page(struct cxe_conn *c, struct page *pg, u32 off, u32 n,
			 u8 *mapped, bool more)
{
	int flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0);
	int ret;

	if (!sendpage_ok(pg))
		return cxe_send(c, mapped, n, more);
	while (n) {
#ifdef CXE_HAVE_KERNEL_SENDPAGE	/* see the Makefile */
		ret = kernel_sendpage(cxe_soft(c)->sock, pg, off, n, flags);
#else
		struct msghdr msg = { .msg_flags = flags | MSG_SPLICE_PAGES };
		struct bio_vec bv;

		bvec_set_page(&bv, pg, n, off);
		iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, &bv, 1, n);
		ret = sock_sendmsg(cxe_soft(c)->sock, &msg);
#endif
		if (ret <= 0)
			return ret ? ret : -ECONNRESET;
		off += ret;
		n -= ret;
	}
	return 0;
}

/*
 * Walk [off, off + len) of a scatterlist one page piece at a time: receive
 * and transmit both go straight to the command's pages.
 */
typedef int (*cxe_sg_fn)(struct cxe_conn *c, struct page *pg, u32 pg_off,
			 u8 *p, u32 n, u32 *crc, bool more);

static int cxe_sg_walk(struct cxe_conn *c, struct scatterlist *sgl, u32 nents,
		       u32 off, u32 len, u32 *crc, bool more, cxe_sg_fn fn)
{
	struct scatterlist *sg;
	int i, ret = 0;

	for_each_sg(sgl, sg, nents, i) {
		u32 sg_off = sg->offset, sg_len = sg->length;

		if (!len)
			break;
		if (off >= sg_len) {
			off -= sg_len;
			continue;
		}
		sg_off += off;
		sg_len -= off;
		off = 0;
		while (sg_len && len && !ret) {
			struct page *pg = nth_page(sg_page(sg), sg_off >> PAGE_SHIFT);
			u32 pg_off = offset_in_page(sg_off);
			u32 n = min3(sg_len, len, (u32)PAGE_SIZE - pg_off);
			u8 *p = kmap_local_page(pg);

			ret = fn(c, pg, pg_off, p + pg_off, n, crc, more || len > n);
			kunmap_local(p);
			sg_off += n;
			sg_len -= n;
			len -= n;
		}
		if (ret)
			return ret;
	}
	return len ? -EINVAL : 0;
}

static int cxe_sg_send_fn(struct cxe_conn *c, struct page *pg, u32 pg_off,
			  u8 *p, u32 n, u32 *crc, bool more)
{
	if (crc)
		*crc = cxe_crc32c(*crc, p, n);
	return cxe_send_page(c, pg, pg_off, n, p, more);
}

/* ---- receive ----------------------------------------------------------------- */

/*
 * Every byte of the stream goes through the pure parser (pdu/cxe_rx.c),
 * fed straight from the socket's receive queue by tcp_read_sock(): it
 * checks lengths and digests and hands the data segment to the callbacks
 * below, which copy it from the skbs into its destination (the command's
 * pages: placement) with no buffer in between. The parser pauses after
 * each header, so the PDU layer says where the data goes before any of it
 * is consumed, and after each PDU. Receive aggregation: while PDUs are
 * queued the thread goes from one to the next without sleeping;
 * pdus_rx / rx_waits is the number handled per wake-up.
 */
static int cxe_rx_header_cb(void *ctx, const u8 *hdr, u32 hdr_len, int status)
{
	struct cxe_soft_conn *sc = cxe_soft(ctx);

	memcpy(sc->hdr, hdr, hdr_len);
	sc->got_hdr = true;
	sc->place_sg = NULL;
	/* a header digest error at ERL 0: its lengths cannot be trusted */
	return status & CXE_RX_HDIGEST_ERR ? -EBADMSG : 1;
}

/*
 * Copy len bytes to byte pos of dst's scatterlist. A PDU's data segment
 * arrives in order, so the walk goes on from where the last piece of the
 * same PDU ended: placing a segment is linear in its length, where
 * sg_pcopy_from_buffer() walks from the start of the list for each piece.
 */
static int cxe_place(struct cxe_soft_conn *sc, const struct cxe_data *dst,
		     u32 pos, const u8 *buf, u32 len)
{
	struct scatterlist *sg = sc->place_sg;
	u32 start = sc->place_start, left = sc->place_left;

	if (!sg || sc->place_sgl != dst->sgl || pos < start) {
		sc->place_sgl = dst->sgl;
		sg = dst->sgl;
		start = 0;
		left = dst->nents;
	}
	while (len) {
		u32 in, n;

		while (left && pos >= start + sg->length) {
			start += sg->length;
			sg = --left ? sg_next(sg) : NULL;
		}
		if (!left)
			return -EINVAL;
		in = sg->offset + pos - start;
		n = min3(len, start + sg->length - pos,
			 (u32)PAGE_SIZE - offset_in_page(in));
		memcpy_to_page(nth_page(sg_page(sg), in >> PAGE_SHIFT),
			       offset_in_page(in), buf, n);
		pos += n;
		buf += n;
		len -= n;
	}
	sc->place_sg = sg;
	sc->place_start = start;
	sc->place_left = left;
	return 0;
}

/* DDP off: through the bounce page, as an adapter without placement does */
static int cxe_rx_bounce(struct cxe_soft_conn *sc, const struct cxe_data *dst,
			 u32 off, const u8 *buf, u32 len)
{
	u32 n;
	int ret;

	for (; len; off += n, buf += n, len -= n) {
		n = min_t(u32, len, PAGE_SIZE);
		memcpy(sc->bounce, buf, n);
		ret = cxe_place(sc, dst, dst->offset + off, sc->bounce, n);
		if (ret)
			return ret;
	}
	return 0;
}

/* A piece of the data segment, at off within it (may run in atomic context) */
static int cxe_rx_data_cb(void *ctx, u32 off, const u8 *buf, u32 len)
{
	struct cxe_conn *c = ctx;
	struct cxe_soft_conn *sc = cxe_soft(c);
	const struct cxe_data *dst = sc->dst;

	/* bytes past dst->len nobody wants (overflow, refused PDUs) */
	if (!dst || off >= dst->len)
		return 0;
	len = min(len, dst->len - off);
	if (!dst->sgl) {
		memcpy((u8 *)dst->buf + off, buf, len);
		return 0;
	}
	if (!c->ddp)
		return cxe_rx_bounce(sc, dst, off, buf, len);
	return cxe_place(sc, dst, dst->offset + off, buf, len);
}

static int cxe_rx_done_cb(void *ctx, int status)
{
	struct cxe_soft_conn *sc = cxe_soft(ctx);

	sc->dstatus = status;
	sc->pdu_done = true;
	return 1;
}

static const struct cxe_rx_ops cxe_soft_rx_ops = {
	.header	= cxe_rx_header_cb,
	.data	= cxe_rx_data_cb,
	.done	= cxe_rx_done_cb,
};

/* tcp_read_sock() actor: feed the parser until it pauses or fails */
static int cxe_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			unsigned int offset, size_t len)
{
	struct cxe_conn *c = desc->arg.data;
	struct skb_seq_state st;
	unsigned int used = 0, n;
	const u8 *p;
	long fed;

	if (!desc->count)
		return 0;
	skb_prepare_seq_read(skb, offset, offset + len, &st);
	while ((n = skb_seq_read(used, &p, &st))) {
		fed = cxe_rx_feed(&cxe_soft(c)->rx, p, n, &cxe_soft_rx_ops, c);
		if (fed < 0) {
			desc->error = fed;
			desc->count = 0;
			break;
		}
		used += fed;
		if (cxe_soft(c)->rx.paused) {
			desc->count = 0;
			break;
		}
	}
	skb_abort_seq_read(&st);
	return used;
}

/*
 * iSCSI has no use for TCP urgent data, and tcp_read_sock() stops short of
 * the urgent byte for good: the stream cannot go on (waiting would spin),
 * so the connection ends.
 */
static bool cxe_urgent(struct cxe_conn *c, struct sock *sk)
{
	if (!READ_ONCE(tcp_sk(sk)->urg_data))
		return false;
	pr_warn_ratelimited("%pISpc: TCP urgent data: dropping the connection\n",
			    &c->peer);
	return true;
}

/*
 * Why a reader waiting for more of the stream must stop: a socket error,
 * the peer's close, or a signal (LIO stopping the thread, or its login
 * timer). 0: it may wait.
 */
static int cxe_wait_stop(struct sock *sk)
{
	if (sk->sk_err)
		return sock_error(sk);
	if (sk->sk_shutdown & RCV_SHUTDOWN || sock_flag(sk, SOCK_DONE))
		return -ECONNRESET;
	if (signal_pending(current))
		return -EINTR;
	return 0;
}

/*
 * Sleep until more data is queued after last, for at most what is left of
 * *timeo: the socket's receive timeout, as sock_recvmsg() honours it. LIO
 * sets it to its login timeout for the login phase and lifts it after.
 */
static int cxe_wait_data(struct sock *sk, long *timeo,
			 const struct sk_buff *last)
{
	if (!*timeo)
		return -EAGAIN;
	sk_wait_data(sk, timeo, last);
	return 0;
}

/*
 * Peek len bytes of the stream from its start into buf, once they are all
 * queued; returns early on urgent data, an error, the peer's close or a
 * signal (LIO's login timer).
 */
static int cxe_peek(struct cxe_conn *c, void *buf, u32 len)
{
	struct msghdr msg = { .msg_flags = MSG_PEEK | MSG_DONTWAIT };
	struct kvec iov = { .iov_base = buf, .iov_len = len };
	struct sock *sk = cxe_soft(c)->sock->sk;
	long timeo = sock_rcvtimeo(sk, false);
	int ret;

	lock_sock(sk);
	for (;;) {
		if (cxe_urgent(c, sk)) {
			ret = -ECONNABORTED;
			break;
		}
		if (tcp_inq(sk) >= len) {
			ret = 0;
			break;
		}
		ret = cxe_wait_stop(sk) ?:
		      cxe_wait_data(sk, &timeo,
				    skb_peek_tail(&sk->sk_receive_queue));
		if (ret)
			break;
	}
	release_sock(sk);
	if (ret)
		return ret;
	ret = kernel_recvmsg(cxe_soft(c)->sock, &msg, &iov, 1, len, msg.msg_flags);
	if (ret < 0)
		return ret;
	return ret == len ? 0 : -ECONNRESET;
}

/*
 * The first Login request, from the socket without consuming it. One that
 * LIO would refuse anyway (an AHS, more text than a login PDU may carry)
 * is not held: it is read from the socket as any PDU.
 */
static int cxe_held_pull(struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u8 bhs[CXE_BHS_LEN];
	long fed;
	u64 len;
	int ret;

	if (!sc->held_buf) {
		ret = cxe_peek(c, bhs, sizeof(bhs));
		if (ret)
			return ret;
		if (cxe_bhs_ahs_len(bhs) || cxe_bhs_dlen(bhs) > MAX_KEY_VALUE_PAIRS) {
			sc->held = false;
			return 0;
		}
		len = cxe_pdu_wire_len(0, cxe_bhs_dlen(bhs), false, false);
		sc->held_buf = kmalloc(len, GFP_KERNEL);
		if (!sc->held_buf)
			return -ENOMEM;
		ret = cxe_peek(c, sc->held_buf, len);
		if (ret)
			return ret;
		sc->held_len = len;
	}
	fed = cxe_rx_feed(&sc->rx, sc->held_buf + sc->held_off,
			  sc->held_len - sc->held_off, &cxe_soft_rx_ops, c);
	if (fed < 0)
		return fed;
	sc->held_off += fed;
	/* the parser pauses after the header and at the PDU's end */
	return sc->rx.paused ? 0 : -EPROTO;
}

/* The first send: the held Login request is LIO's now, consume it. */
static int cxe_skip_actor(read_descriptor_t *desc, struct sk_buff *skb,
			  unsigned int offset, size_t len)
{
	size_t n = min_t(size_t, len, desc->count);

	desc->count -= n;
	return n;
}

static int cxe_held_release(struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	read_descriptor_t desc = { .count = sc->held_len };
	struct sock *sk = cxe_soft(c)->sock->sk;

	sc->held = false;
	if (!sc->held_buf)
		return 0;
	if (sc->held_off != sc->held_len)
		return -EPROTO;	/* answered before it was read whole */
	lock_sock(sk);
	tcp_read_sock(sk, &desc, cxe_skip_actor);
	release_sock(sk);
	kfree(sc->held_buf);
	sc->held_buf = NULL;
	return desc.count ? -EPROTO : 0;
}

/*
 * Feed the parser from the socket until it pauses: after a header, or
 * after a PDU. Sleeps while the receive queue is empty (counted in
 * rx_waits); returns early on an error, the peer's close or a signal (LIO
 * stopping the thread).
 */
static int cxe_rx_pull(struct cxe_conn *c)
{
	struct sock *sk = cxe_soft(c)->sock->sk;
	long timeo = sock_rcvtimeo(sk, false);
	int ret = 0;

	if (cxe_soft(c)->held) {
		ret = cxe_held_pull(c);
		if (ret || cxe_soft(c)->held)
			return ret;
	}

	lock_sock(sk);
	for (;;) {
		read_descriptor_t desc = { .arg.data = c, .count = 1 };

		if (cxe_urgent(c, sk)) {
			ret = -ECONNABORTED;
			break;
		}
		tcp_read_sock(sk, &desc, cxe_rx_actor);
		if (desc.error) {
			ret = desc.error;
			break;
		}
		if (!desc.count)
			break;
		ret = cxe_wait_stop(sk);
		if (ret)
			break;
		cxe_cstat(c, CXE_STAT_RX_WAITS, 1);
		ret = cxe_wait_data(sk, &timeo, NULL);
		if (ret)
			break;
	}
	/* where the data segment starts, when paused after a header */
	cxe_soft(c)->hdr_seq = tcp_sk(sk)->copied_seq;
	release_sock(sk);
	return ret;
}

static int cxe_soft_recv_hdr(struct cxe_conn *c, u8 *hdr)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	int ret;

	sc->hdr = hdr;
	sc->got_hdr = false;
	/*
	 * A data segment the PDU layer did not ask for (a TMF, Logout or
	 * SNACK with data, which LIO never reads) goes through the parser,
	 * its digest checked, and nowhere else: the stream stays in step.
	 */
	do {
		ret = cxe_rx_pull(c);
	} while (!ret && !sc->got_hdr);
	if (ret == -EBADMSG) {
		cxe_cstat(c, CXE_STAT_HDIGEST_ERR, 1);
		return ret;
	}
	if (ret == -CXE_RX_EBADOP || ret == -CXE_RX_E2BIG) {
		/*
		 * The parser refused the header (an opcode no initiator sends,
		 * data above the limit): hand it up all the same, so that the
		 * PDU layer answers with a Reject; the stream is dead after it.
		 */
		memcpy(hdr, sc->rx.hdr, sc->rx.hdr_len);
		ret = 0;
	}
	if (!ret)
		cxe_cstat(c, CXE_STAT_PDUS_RX, 1);
	return ret;
}

static int cxe_soft_recv_data(struct cxe_conn *c, const struct cxe_data *dst,
			      u32 dlen, bool *bad)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 have = min(dst->len, dlen);
	int ret;

	*bad = false;
	if (!dlen)
		return 0;
	if (sc->rx.state != CXE_RX_DATA || sc->rx.dlen != dlen || sc->rx.have)
		return -EPROTO;	/* not paused before this PDU's data */
	sc->dst = dst;
	sc->pdu_done = false;
	ret = cxe_rx_pull(c);
	sc->dst = NULL;
	if (ret)
		return ret;
	if (!sc->pdu_done)
		return -EPROTO;
	if (sc->dstatus & CXE_RX_DDIGEST_ERR) {
		*bad = true;
		cxe_cstat(c, CXE_STAT_DDIGEST_ERR, 1);
	}
	if (have && dst->sgl)
		cxe_cstat(c, c->ddp ? CXE_STAT_BYTES_PLACED : CXE_STAT_BYTES_COPIED,
			  have);
	return 0;
}

/*
 * LIO refused a Data-Out and read its data segment (with pad and digest)
 * from the socket itself (iscsit_dump_data_payload). The parser, paused
 * after the header, skips it, once the socket shows exactly that many
 * bytes were taken.
 */
static int cxe_soft_data_taken(struct cxe_conn *c)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 taken = READ_ONCE(tcp_sk(cxe_soft(c)->sock->sk)->copied_seq) - sc->hdr_seq;
	u32 wire = cxe_rx_data_wire_len(&sc->rx);

	if (taken != wire || !cxe_rx_skip_data(&sc->rx)) {
		pr_err("%pISpc: %u bytes of a %u-byte data segment were read past the adapter: stream lost\n",
		       &c->peer, taken, wire);
		return -EPROTO;
	}
	return 0;
}

/* ---- transmit ---------------------------------------------------------------- */

static int cxe_soft_send(struct cxe_conn *c, const u8 *bhs,
			 const struct cxe_data *src, bool more)
{
	u8 hdr[CXE_BHS_LEN + CXE_DIGEST_LEN];
	u32 hlen = CXE_BHS_LEN, crc = ~0u, dlen = src ? src->len : 0;
	u32 padlen = cxe_pad_len(dlen);
	bool tail = padlen || c->ddigest;
	static const u8 zeros[4];
	u8 dig[CXE_DIGEST_LEN];
	int ret;

	if (cxe_soft(c)->held) {
		ret = cxe_held_release(c);
		if (ret)
			return ret;
	}
	memcpy(hdr, bhs, CXE_BHS_LEN);
	if (c->hdigest) {
		cxe_put_le32(hdr + CXE_BHS_LEN, cxe_digest(hdr, CXE_BHS_LEN));
		hlen += CXE_DIGEST_LEN;
	}
	ret = cxe_send(c, hdr, hlen, dlen || more);
	if (ret || !dlen)
		goto out;
	if (src->sgl) {
		ret = cxe_sg_walk(c, src->sgl, src->nents, src->offset, dlen,
				  c->ddigest ? &crc : NULL, tail || more,
				  cxe_sg_send_fn);
	} else {
		/* a buffer of the PDU layer (sense data, text): copied */
		if (c->ddigest)
			crc = cxe_crc32c(crc, src->buf, dlen);
		ret = cxe_send(c, src->buf, dlen, tail || more);
	}
	if (!ret && padlen) {
		crc = cxe_crc32c(crc, zeros, padlen);
		ret = cxe_send(c, zeros, padlen, c->ddigest || more);
	}
	if (!ret && c->ddigest) {
		cxe_put_le32(dig, ~crc);
		ret = cxe_send(c, dig, sizeof(dig), more);
	}
out:
	if (!ret)
		cxe_cstat(c, CXE_STAT_PDUS_TX, 1);
	return ret;
}

static int cxe_soft_send_pdu(struct cxe_conn *c, const u8 *bhs,
			     const struct cxe_data *src)
{
	return cxe_soft_send(c, bhs, src, false);
}

/* Segmentation: the burst becomes PDUs by the pure planner. */
static int cxe_soft_send_burst(struct cxe_conn *c, const struct cxe_burst *b)
{
	struct cxe_seg_burst plan = {
		.offset = b->offset,
		.len = b->len,
		.max_pdu = b->max_pdu,
		.datasn = b->datasn,
		.status = b->status,
	};
	u32 i, n = cxe_seg_count(&plan);
	struct cxe_seg_pdu pdu;
	u8 bhs[CXE_BHS_LEN];
	int ret;

	if (!n)
		return -EINVAL;
	for (i = 0; cxe_seg_pdu(&plan, i, &pdu); i++) {
		struct cxe_data src = {
			.sgl = b->sgl,
			.nents = b->nents,
			.offset = pdu.offset,
			.len = pdu.len,
		};

		cxe_seg_datain_hdr(bhs, b->tmpl, &pdu);
		ret = cxe_soft_send(c, bhs, &src, i + 1 < n);
		if (ret)
			return ret;
	}
	cxe_cstat(c, CXE_STAT_BURSTS, 1);
	cxe_cstat(c, CXE_STAT_BURST_PDUS, n);
	return n;
}

/* ---- DDP tags -------------------------------------------------------------- */

static u32 cxe_soft_ddp_reserve(struct cxe_conn *c, struct cxe_task *owner,
				u32 itt, u32 off, u32 len, bool place)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 i;

	spin_lock_bh(&sc->ddp_lock);
	for (i = 0; place && i < CXE_DDP_SLOTS; i++) {
		struct cxe_ddp_slot *s = &sc->ddp[i];

		if (s->owner)
			continue;
		s->owner = owner;
		s->itt = itt;
		s->gen = cxe_ddp_next_gen(s->gen, i);
		s->offset = off;
		s->len = len;
		owner->ddp_live++;
		spin_unlock_bh(&sc->ddp_lock);
		return cxe_ddp_tag(i, s->gen);
	}
	/* no placement for this R2T: a distinct TTT LIO alone checks */
	sc->noddp_gen = cxe_ddp_next_gen(sc->noddp_gen, CXE_NODDP_IDX);
	i = cxe_ddp_tag(CXE_NODDP_IDX, sc->noddp_gen);
	spin_unlock_bh(&sc->ddp_lock);
	if (place)
		pr_warn_ratelimited("%pISpc: all %u DDP tags in use\n", &c->peer, CXE_DDP_SLOTS);
	return i;
}

/*
 * May a Data-Out be placed by its TTT? Only by a live slot of this ITT, of
 * the tag's generation, inside the R2T's window; the slot is freed when
 * the R2T's last byte arrives. False means a stale or forged TTT.
 */
static bool cxe_soft_ddp_check(struct cxe_conn *c, u32 ttt, u32 itt, u32 off,
			       u32 len, bool final)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 i = cxe_ddp_tag_idx(ttt);
	struct cxe_ddp_slot *s;
	bool ok;

	if (i == CXE_NODDP_IDX)
		return true;
	if (i >= CXE_DDP_SLOTS)
		return false;
	spin_lock_bh(&sc->ddp_lock);
	s = &sc->ddp[i];
	ok = s->owner && s->itt == itt && s->gen == cxe_ddp_tag_gen(ttt) &&
	     cxe_ddp_in_window(s->offset, s->len, off, len);
	if (ok && final && off + len == s->offset + s->len) {
		s->owner->ddp_live--;
		s->owner = NULL;
	}
	spin_unlock_bh(&sc->ddp_lock);
	return ok;
}

static void cxe_soft_ddp_release(struct cxe_conn *c, struct cxe_task *owner)
{
	struct cxe_soft_conn *sc = cxe_soft(c);
	u32 i;

	if (!sc->ddp)
		return;	/* the connection is released */
	/* a task with no live tag (a read, a completed write) scans nothing */
	spin_lock_bh(&sc->ddp_lock);
	for (i = 0; owner->ddp_live && i < CXE_DDP_SLOTS; i++)
		if (sc->ddp[i].owner == owner) {
			sc->ddp[i].owner = NULL;
			owner->ddp_live--;
		}
	spin_unlock_bh(&sc->ddp_lock);
}

static const struct cxe_adapter_ops cxe_soft_ops = {
	.listen		= cxe_soft_listen,
	.unlisten	= cxe_soft_unlisten,
	.accept		= cxe_soft_accept,
	.hand_back	= cxe_soft_hand_back,
	.conn_release	= cxe_soft_conn_release,
	.set_params	= cxe_soft_set_params,
	.recv_hdr	= cxe_soft_recv_hdr,
	.recv_data	= cxe_soft_recv_data,
	.data_taken	= cxe_soft_data_taken,
	.send_pdu	= cxe_soft_send_pdu,
	.send_burst	= cxe_soft_send_burst,
	.ddp_reserve	= cxe_soft_ddp_reserve,
	.ddp_check	= cxe_soft_ddp_check,
	.ddp_release	= cxe_soft_ddp_release,
};

/*
 * Software adapters are made by name (soft0 at load, more with mkdir) and
 * share one listener per portal; steering picks the adapter by netdev.
 */
const struct cxe_backend cxe_soft_backend = {
	.name	= "soft",
	.caps	= BIT(CXE_CAP_HCRC) | BIT(CXE_CAP_DCRC) | BIT(CXE_CAP_DDP) |
		  BIT(CXE_CAP_ISO) | BIT(CXE_CAP_RXAGG),
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
};
