// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: modelled adapters, the device: its servers, the device
 * calls the glue makes of it, and the control interface (modeldev.h says
 * what a model is; modelconn.c runs its connections).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/highmem.h>
#include <linux/ipv6.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "../../cxgbit_ext.h"
#include "conn.h"
#include "dev.h"
#include "modeldev.h"

struct workqueue_struct *cxe_c4model_wq;

/* TCP's own data_ready, as every new TCP socket has it */
static void (*cxe_c4model_tcp_ready)(struct sock *sk);

static LIST_HEAD(cxe_c4models);
static DEFINE_MUTEX(cxe_c4models_lock);	/* adds and removals */
/* the list too, for the netdev notifier (under rtnl: no mutex it may wait on) */
static DEFINE_SPINLOCK(cxe_c4models_list_lock);

static int cxe_c4model_alloc_stid(struct cxe_c4dev *d, int family)
{
	struct cxe_c4model *m = to_model(d);
	int stid;

	if (READ_ONCE(m->unplugged))
		return -ENODEV;
	spin_lock_bh(&m->lock);
	stid = find_first_zero_bit(m->stids, CXE_MODEL_LSN_STIDS);
	if (stid < CXE_MODEL_LSN_STIDS)
		__set_bit(stid, m->stids);
	else
		stid = -ENOSPC;
	spin_unlock_bh(&m->lock);
	return stid;
}

static void cxe_c4model_free_stid(struct cxe_c4dev *d, u32 stid, int family)
{
	struct cxe_c4model *m = to_model(d);

	spin_lock_bh(&m->lock);
	__clear_bit(stid, m->stids);
	spin_unlock_bh(&m->lock);
}

/* ---- servers ---------------------------------------------------------------- */

/*
 * A listener's data_ready: a connection joined its accept queue. The
 * connections it makes inherit this callback (and its user data) until
 * they are taken: for them it is TCP's own.
 */
static void cxe_c4model_listener_ready(struct sock *sk)
{
	struct cxe_c4model_srv *s;

	read_lock_bh(&sk->sk_callback_lock);
	s = sk->sk_state == TCP_LISTEN ? sk->sk_user_data : NULL;
	if (s)
		queue_work(cxe_c4model_wq, &s->accept);
	read_unlock_bh(&sk->sk_callback_lock);
	READ_ONCE(cxe_c4model_tcp_ready)(sk);
}

void cxe_c4model_tcp_callbacks(struct socket *sock)
{
	struct sock *sk = sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	WRITE_ONCE(sk->sk_data_ready, cxe_c4model_tcp_ready);
	write_unlock_bh(&sk->sk_callback_lock);
}

void cxe_c4model_rst(struct socket *sock)
{
	tcp_abort(sock->sk, ECONNABORTED);
}

/*
 * The server's listening socket: in the port's namespace, on the portal's
 * address (a wildcard stays one; [::] takes IPv4 too, as LIO's own and
 * the software adapter's do) with an ephemeral port, since the glue
 * steers the SYNs to it whatever their port.
 */
static int cxe_c4model_listen(struct cxe_c4model *m, struct cxe_c4model_srv *s)
{
	sa_family_t family = s->addr.ss_family;
	struct sockaddr_storage ss = s->addr;
	struct net *net = NULL;
	struct socket *sock;
	struct sock *sk;
	int ret, len;

	if (family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_port = 0;
		len = sizeof(struct sockaddr_in);
	} else if (family == AF_INET6) {
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
		len = sizeof(struct sockaddr_in6);
	} else {
		return -EAFNOSUPPORT;
	}
	/* the namespace lives while the port does (its netdevs go first) */
	rcu_read_lock();
	if (READ_ONCE(m->ifindex))
		net = maybe_get_net(read_pnet(&m->net));
	rcu_read_unlock();
	if (!net)
		return -ENETDOWN;
	/*
	 * A user-style socket, as the software adapter's: it and the
	 * connections it makes pin the namespace, which cannot then go
	 * while a server or connection uses it.
	 */
	ret = __sock_create(net, family, SOCK_STREAM, IPPROTO_TCP, &sock, 0);
	put_net(net);
	if (ret)
		return ret;
	sk = sock->sk;
	sock_set_reuseaddr(sk);
	/* as the software adapter's: not transparent only under NAT matters */
	cxe_steered_listener(sock);
	ret = kernel_bind(sock, (struct sockaddr *)&ss, len);
	if (!ret)
		ret = kernel_listen(sock, CXE_C4MODEL_BACKLOG);
	if (ret) {
		sock_release(sock);
		return ret;
	}
	s->sock = sock;
	write_lock_bh(&sk->sk_callback_lock);
	WRITE_ONCE(cxe_c4model_tcp_ready, sk->sk_data_ready);
	sk->sk_user_data = s;
	WRITE_ONCE(sk->sk_data_ready, cxe_c4model_listener_ready);
	write_unlock_bh(&sk->sk_callback_lock);
	return 0;
}

/*
 * The server is gone (process context): its listener closes, and the
 * connections it made that were never taken are reset.
 */
static void cxe_c4model_srv_free(struct cxe_c4model_srv *s)
{
	struct socket *child;

	if (s->sock) {
		cxe_c4model_tcp_callbacks(s->sock);
		cancel_work_sync(&s->accept);
		while (!kernel_accept(s->sock, &child, O_NONBLOCK)) {
			cxe_c4model_tcp_callbacks(child);
			cxe_c4model_rst(child);
			sock_release(child);
		}
		sock_release(s->sock);
	}
	kfree(s);
}

/*
 * A request the chip took is answered at most answer_ms after it (all owed
 * answers go when the first one's time comes); one it refused, never. An
 * open that goes to the table keeps its server's listener in srv.
 */
static int cxe_c4model_request(struct cxe_c4model *m, u32 stid, bool open,
			       struct cxe_c4model_srv *s)
{
	int ret;

	/* a pulled chip is not asked: the call fails as cxgb4's would */
	if (READ_ONCE(m->unplugged))
		return -ENODEV;
	spin_lock_bh(&m->lock);
	if (m->stopped) {
		ret = -ENODEV;
		m->table.why = "the model is stopped";
	} else if (open && m->srv[stid]) {
		/* the table refuses it too: an answer is still on its way */
		ret = -EBUSY;
		m->table.why = "the STID's last server is not gone yet";
	} else {
		ret = open ? cxe_model_lsn_open(&m->table, stid) :
			     cxe_model_lsn_remove(&m->table, stid);
	}
	if (ret) {
		m->refused++;
		pr_warn("cxgb4 model %s: server %u: %s refused: %s\n", m->name,
			stid, open ? "open" : "removal", m->table.why);
	} else {
		if (open)
			m->srv[stid] = s;
		else if (m->srv[stid])
			/* the chip takes no more SYNs for it */
			m->srv[stid]->listening = false;
		queue_delayed_work(system_wq, &m->answer,
				   msecs_to_jiffies(m->answer_ms));
	}
	spin_unlock_bh(&m->lock);
	return ret ? -EIO : 0;
}

static int cxe_c4model_create_server(struct cxe_c4dev *d, u32 stid,
				     const struct sockaddr_storage *addr)
{
	struct cxe_c4model *m = to_model(d);
	struct cxe_c4model_srv *s;
	int ret;

	if (stid >= CXE_MODEL_LSN_STIDS)
		return -EINVAL;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->m = m;
	s->stid = stid;
	s->addr = *addr;
	INIT_WORK(&s->accept, cxe_c4model_accept_work);
	ret = cxe_c4model_listen(m, s);
	if (ret) {
		pr_err("cxgb4 model %s: server %u: no listening socket on %pISc (%d)\n",
		       m->name, stid, addr, ret);
		kfree(s);
		return ret;
	}
	ret = cxe_c4model_request(m, stid, true, s);
	if (ret)
		cxe_c4model_srv_free(s);
	return ret;
}

static int cxe_c4model_remove_server(struct cxe_c4dev *d, u32 stid, bool ipv6)
{
	if (stid >= CXE_MODEL_LSN_STIDS)
		return -EINVAL;
	return cxe_c4model_request(to_model(d), stid, false, NULL);
}

/*
 * An answer on its way to the glue (m->lock held): a server opened now
 * listens; one refused or removed is taken out, for its listener to go
 * (returned) before the glue hears that it went.
 */
static struct cxe_c4model_srv *cxe_c4model_answered(struct cxe_c4model *m,
						    const u8 *msg, int len)
{
	struct cxe_cpl_listen_rpl r;
	struct cxe_c4model_srv *s;
	bool open = cxe_cpl_opcode(msg, len) == CXE_CPL_PASS_OPEN_RPL;

	if ((open ? cxe_cpl_parse_pass_open_rpl(msg, len, &r) :
		    cxe_cpl_parse_close_listsrv_rpl(msg, len, &r)) < 0 ||
	    r.stid >= CXE_MODEL_LSN_STIDS)
		return NULL;
	s = m->srv[r.stid];
	if (!s)
		return NULL;
	if (open && !r.status) {
		s->listening = true;
		return NULL;
	}
	s->listening = false;
	m->srv[r.stid] = NULL;
	return s;
}

/* The answers the chip owes, to the glue, in order */
static void cxe_c4model_answer(struct work_struct *work)
{
	struct cxe_c4model *m = container_of(to_delayed_work(work),
					     struct cxe_c4model, answer);
	u8 msg[CXE_CPL_PASS_OPEN_RPL_LEN];
	struct cxe_c4model_srv *gone;
	int len;

	for (;;) {
		gone = NULL;
		spin_lock_bh(&m->lock);
		len = m->stopped ? 0 : cxe_model_lsn_next(&m->table, msg, sizeof(msg));
		if (len)
			gone = cxe_c4model_answered(m, msg, len);
		spin_unlock_bh(&m->lock);
		if (!len)
			return;
		if (gone)
			cxe_c4model_srv_free(gone);
		cxe_c4dev_rx(&m->d, msg, len);
	}
}

/*
 * The listener of a server the chip listens for (opened, not being
 * removed), with a reference; softirq, RCU held. The listener goes in
 * process context after it is taken out of srv under the lock.
 */
static struct sock *cxe_c4model_syn_listener(struct cxe_c4dev *d, u32 stid)
{
	struct cxe_c4model *m = to_model(d);
	struct cxe_c4model_srv *s;
	struct sock *sk = NULL;

	if (stid >= CXE_MODEL_LSN_STIDS)
		return NULL;
	spin_lock_bh(&m->lock);
	s = m->srv[stid];
	if (s && s->listening && !m->stopped) {
		sk = s->sock->sk;
		sock_hold(sk);
	}
	spin_unlock_bh(&m->lock);
	return sk;
}

static const u16 cxe_c4model_mtus[CXE_C4_NMTUS] = {
	88, 88, 256, 512, 576, 1024, 1280, 1488,
	1500, 2002, 2048, 4096, 4352, 8192, 9000, 9600,
};

/* The path of an accept: the port's MTU, a 10 Gb/s port, all indexes 0 */
static int cxe_c4model_accept_path(struct cxe_c4dev *d,
				   const struct cxe_cpl_accept_req *r,
				   struct cxe_c4_path *p, struct cxe_cpl_accept *a)
{
	struct cxe_c4model *m = to_model(d);
	struct net_device *nd = NULL;
	u32 mtu = 0;
	int ifindex;

	if (READ_ONCE(m->unplugged))
		return -ENODEV;
	rcu_read_lock();
	ifindex = READ_ONCE(m->ifindex);
	if (ifindex)
		nd = dev_get_by_index_rcu(read_pnet(&m->net), ifindex);
	if (nd)
		mtu = READ_ONCE(nd->mtu);
	rcu_read_unlock();
	if (!nd)
		return -ENETUNREACH;
	p->mtus = cxe_c4model_mtus;
	p->mtu = mtu;
	p->speed_mbps = 10000;
	a->l2t_idx = 0;
	a->rss_qid = 0;
	a->tx_chan = 0;
	a->smac_idx = 0;
	return 0;
}

static bool cxe_c4model_has_port(struct cxe_c4dev *d,
				 const struct net_device *nd)
{
	struct cxe_c4model *m = to_model(d);

	return READ_ONCE(m->ifindex) && nd->ifindex == READ_ONCE(m->ifindex) &&
	       net_eq(dev_net(nd), read_pnet(&m->net));
}

/* the page's physical address stands for the bus address it maps to */
static int cxe_c4model_pods_get(struct cxe_c4dev *d, u32 n, u32 *color)
{
	struct cxe_c4model *m = to_model(d);
	unsigned long idx;

	if (READ_ONCE(m->unplugged))
		return -ENODEV;
	spin_lock_bh(&m->ppm_lock);
	idx = bitmap_find_next_zero_area(m->pod_map, CXE_C4MODEL_PODS, 0, n, 0);
	if (idx < CXE_C4MODEL_PODS) {
		bitmap_set(m->pod_map, idx, n);
		m->pod_color[idx] = (m->pod_color[idx] + 1) &
				    CXE_PPOD_TAG_COLOR_MASK;
		*color = m->pod_color[idx];
	}
	spin_unlock_bh(&m->ppm_lock);
	return idx < CXE_C4MODEL_PODS ? (int)idx : -ENOSPC;
}

static void cxe_c4model_pods_put(struct cxe_c4dev *d, u32 idx, u32 n)
{
	struct cxe_c4model *m = to_model(d);

	spin_lock_bh(&m->ppm_lock);
	bitmap_clear(m->pod_map, idx, n);
	spin_unlock_bh(&m->ppm_lock);
}

static int cxe_c4model_map_page(struct cxe_c4dev *d, struct page *pg,
				u64 *addr)
{
	*addr = page_to_phys(pg);
	return 0;
}

static void cxe_c4model_unmap_page(struct cxe_c4dev *d, u64 addr)
{
}

static void cxe_c4model_release(struct cxe_c4dev *d)
{
	struct cxe_c4model *m = to_model(d);

	xa_destroy(&m->conns);
	bitmap_free(m->pod_map);
	kfree(m->pod_color);
	kvfree(m->ppm.mem);
	kfree(m);
}

static const struct cxe_c4dev_ops cxe_c4model_ops = {
	.alloc_stid	= cxe_c4model_alloc_stid,
	.free_stid	= cxe_c4model_free_stid,
	.create_server	= cxe_c4model_create_server,
	.remove_server	= cxe_c4model_remove_server,
	.has_port	= cxe_c4model_has_port,
	.accept_path	= cxe_c4model_accept_path,
	.send		= cxe_c4model_send,
	.release_tid	= cxe_c4model_release_tid,
	.syn_listener	= cxe_c4model_syn_listener,
	.pods_get	= cxe_c4model_pods_get,
	.pods_put	= cxe_c4model_pods_put,
	.map_page	= cxe_c4model_map_page,
	.unmap_page	= cxe_c4model_unmap_page,
	.release	= cxe_c4model_release,
};

/* ---- the control interface ----------------------------------------------- */

static struct cxe_c4model *cxe_c4model_find(const char *name)
{
	struct cxe_c4model *m;

	list_for_each_entry(m, &cxe_c4models, node)
		if (!strcmp(m->name, name))
			return m;
	return NULL;
}

/* its port: a netdev by name, as a software adapter's */
static int cxe_c4model_port(struct cxe_c4model *m, const char *name)
{
	struct net *net;
	int ifindex, ret;

	ret = cxe_netdev_resolve(name, &net, &ifindex);
	if (ret)
		return ret;
	write_pnet(&m->net, net);
	m->ifindex = ifindex;
	strscpy(m->netdev, name, sizeof(m->netdev));
	return 0;
}

/* a model that never was listed */
static void cxe_c4model_unmade(struct cxe_c4model *m)
{
	bitmap_free(m->pod_map);
	kfree(m->pod_color);
	kvfree(m->ppm.mem);
	kfree(m);
}

static int cxe_c4model_add(char *args)
{
	struct cxe_cxgb4_hw hw = {
		.page_size	= PAGE_SIZE,
		.max_frags	= MAX_SKB_FRAGS,
		.fw_vers	= CXE_CXGB4_ISO_FW,
		.ddp		= true,
	};
	char *name = strsep(&args, " "), *arg, *netdev = NULL;
	u32 table = CXE_MODEL_LSN_STIDS, answer_ms = 0;
	struct cxe_c4model *m;
	int ret = 0;

	if (!name || !*name || strlen(name) >= CXE_C4MODEL_NAME) {
		pr_err("cxgb4_models: a name of 1 to %d characters\n",
		       CXE_C4MODEL_NAME - 1);
		return -EINVAL;
	}
	while ((arg = strsep(&args, " "))) {
		if (!*arg)
			continue;
		if (!strcmp(arg, "chip=t5"))
			hw.chip = CXE_CHIP_T5;
		else if (!strcmp(arg, "chip=t6"))
			hw.chip = CXE_CHIP_T6;
		else if (!strncmp(arg, "netdev=", 7))
			netdev = arg + 7;
		else if (!strncmp(arg, "answer_ms=", 10))
			ret = kstrtou32(arg + 10, 0, &answer_ms);
		else if (!strncmp(arg, "table=", 6))
			ret = kstrtou32(arg + 6, 0, &table);
		else
			ret = -EINVAL;
		if (ret) {
			pr_err("cxgb4_models: %s: '%s' is not chip=t5|t6, netdev=IF, answer_ms=N or table=N\n",
			       name, arg);
			return -EINVAL;
		}
	}
	if (!hw.chip || !netdev || !dev_valid_name(netdev)) {
		pr_err("cxgb4_models: %s: chip=t5|t6 and netdev=IF are needed\n",
		       name);
		return -EINVAL;
	}
	if (table > CXE_MODEL_LSN_STIDS || answer_ms > 60000) {
		pr_err("cxgb4_models: %s: table is at most %d, answer_ms at most 60000\n",
		       name, CXE_MODEL_LSN_STIDS);
		return -EINVAL;
	}
	hw.iscsi_iolen = hw.chip == CXE_CHIP_T5 ? CXE_CXGB4_T5_MAX_PDU :
			 CXE_CXGB4_T6_MAX_DLEN + CXE_CXGB4_PDU_OVERHEAD;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->ppm.mem = kvzalloc(CXE_C4MODEL_PODS << CXE_PPOD_SHIFT, GFP_KERNEL);
	m->pod_map = bitmap_zalloc(CXE_C4MODEL_PODS, GFP_KERNEL);
	m->pod_color = kzalloc(CXE_C4MODEL_PODS, GFP_KERNEL);
	if (!m->ppm.mem || !m->pod_map || !m->pod_color) {
		cxe_c4model_unmade(m);
		return -ENOMEM;
	}
	m->ppm.base = CXE_C4MODEL_POD_BASE;
	m->ppm.size = CXE_C4MODEL_PODS << CXE_PPOD_SHIFT;
	spin_lock_init(&m->ppm_lock);
	ret = cxe_cxgb4_limits(&hw, &m->d.limits);
	if (!ret) {
		ret = cxe_c4model_port(m, netdev);
		if (ret)
			pr_err("cxgb4_models: %s: %s netdev %s\n", name,
			       ret == -EEXIST ? "several network namespaces have a" :
			       "no network namespace has a", netdev);
	}
	if (ret) {
		cxe_c4model_unmade(m);
		return ret;
	}
	strscpy(m->name, name, sizeof(m->name));
	m->answer_ms = answer_ms;
	spin_lock_init(&m->lock);
	cxe_model_lsn_init(&m->table, table);
	INIT_DELAYED_WORK(&m->answer, cxe_c4model_answer);
	xa_init_flags(&m->conns, XA_FLAGS_LOCK_BH);
	init_waitqueue_head(&m->gone);
	atomic_set(&m->refused_msgs, 0);
	atomic_set(&m->bad_releases, 0);
	cxe_c4dev_init(&m->d, &cxe_c4model_ops);
	m->d.name = m->name;
	m->d.kind = hw.chip == CXE_CHIP_T5 ? "T5model" : "T6model";
	m->d.chip = hw.chip;
	m->d.wr_cred = CXE_C4MODEL_WR_CRED;
	m->d.nports = 1;
	m->d.serves = true;
	m->d.up = true;
	m->d.ppod_base = CXE_C4MODEL_POD_BASE;
	m->d.npods = CXE_C4MODEL_PODS;
	/* the register as the glue reads it; cannot fail for this mask */
	cxe_ppod_tagfmt_init(&m->d.tagfmt, CXE_C4MODEL_TAGMASK);

	mutex_lock(&cxe_c4models_lock);
	if (cxe_c4model_find(name)) {
		mutex_unlock(&cxe_c4models_lock);
		pr_err("cxgb4_models: %s exists\n", name);
		cxe_c4model_unmade(m);
		return -EEXIST;
	}
	/* the works of every model's connections; goes at unload */
	if (!cxe_c4model_wq)
		cxe_c4model_wq = alloc_workqueue("cxe_c4model", 0, 0);
	if (!cxe_c4model_wq) {
		mutex_unlock(&cxe_c4models_lock);
		cxe_c4model_unmade(m);
		return -ENOMEM;
	}
	spin_lock_bh(&cxe_c4models_list_lock);
	list_add_tail(&m->node, &cxe_c4models);
	spin_unlock_bh(&cxe_c4models_list_lock);
	cxe_c4dev_add(&m->d);
	mutex_unlock(&cxe_c4models_lock);
	pr_info("cxgb4 model %s: %s on %s, answers after %u ms, %u servers\n",
		m->name, m->d.kind, m->netdev, answer_ms, table);
	return 0;
}

static bool cxe_c4model_no_conns(struct cxe_c4model *m)
{
	bool none;

	spin_lock_bh(&m->lock);
	none = !m->nconns;
	spin_unlock_bh(&m->lock);
	return none;
}

/*
 * No more answers: whatever is owed stays unsent. The listeners close and
 * every connection is reset and ends; nothing goes to the glue from here
 * on (it has let go of them all before an unload). Process context.
 */
static void cxe_c4model_halt(struct cxe_c4model *m)
{
	struct cxe_c4model_srv *srv[CXE_MODEL_LSN_STIDS];
	struct cxe_c4model_conn *c, *tmp;
	unsigned long tid;
	LIST_HEAD(conns);
	int i;

	spin_lock_bh(&m->lock);
	m->stopped = true;
	memcpy(srv, m->srv, sizeof(srv));
	memset(m->srv, 0, sizeof(m->srv));
	spin_unlock_bh(&m->lock);
	cancel_delayed_work_sync(&m->answer);
	/* no accept work runs after this: no connection comes */
	for (i = 0; i < CXE_MODEL_LSN_STIDS; i++)
		if (srv[i])
			cxe_c4model_srv_free(srv[i]);
	spin_lock_bh(&m->lock);
	xa_for_each(&m->conns, tid, c) {
		xa_erase(&m->conns, tid);
		list_add_tail(&c->halt_node, &conns);
	}
	spin_unlock_bh(&m->lock);
	list_for_each_entry_safe(c, tmp, &conns, halt_node) {
		/*
		 * Dead first: the transmit work queues no release work after
		 * this (a RST ends a send it waits in); a release work queued
		 * before finds the map without it, and must not run after.
		 */
		spin_lock_bh(&c->lock);
		c->dead = true;
		spin_unlock_bh(&c->lock);
		cxe_c4model_rst(c->sock);
		cancel_work_sync(&c->tx_work);
		cancel_work_sync(&c->release_work);
		cxe_c4model_conn_end(c, true);
	}
	/* and those a release work took out of the map end first */
	wait_event(m->gone, cxe_c4model_no_conns(m));
}

/*
 * A surprise removal (modeldev.h): the chip stops (halt), then the glue
 * hears the adapter is gone, as cxgb4's DETACH tells it of a real one
 */
static int cxe_c4model_unplug(const char *name)
{
	struct cxe_c4model *m;

	mutex_lock(&cxe_c4models_lock);
	m = cxe_c4model_find(name);
	if (!m || m->unplugged) {
		mutex_unlock(&cxe_c4models_lock);
		pr_err("cxgb4_models: %s %s\n", name,
		       m ? "is unplugged already" : "is no model");
		return m ? -EALREADY : -ENOENT;
	}
	WRITE_ONCE(m->unplugged, true);
	cxe_c4model_halt(m);
	cxe_c4dev_gone(&m->d);
	mutex_unlock(&cxe_c4models_lock);
	pr_info("cxgb4 model %s: unplugged\n", name);
	return 0;
}

static int cxe_c4model_del(const char *name)
{
	struct cxe_c4model *m;
	u32 conns;
	int ret;

	mutex_lock(&cxe_c4models_lock);
	m = cxe_c4model_find(name);
	if (!m) {
		mutex_unlock(&cxe_c4models_lock);
		pr_err("cxgb4_models: no model %s\n", name);
		return -ENOENT;
	}
	spin_lock_bh(&m->lock);
	conns = m->nconns;
	spin_unlock_bh(&m->lock);
	if (conns) {
		mutex_unlock(&cxe_c4models_lock);
		pr_err("cxgb4_models: %s carries connections (%u): end them first\n",
		       name, conns);
		return -EBUSY;
	}
	/*
	 * with no server left, no answer is owed and no connection comes
	 * (a server's listener goes before the glue hears it went)
	 */
	ret = cxe_c4dev_del(&m->d);
	if (ret) {
		mutex_unlock(&cxe_c4models_lock);
		pr_err("cxgb4_models: %s has servers: remove their portals first\n",
		       name);
		return ret;
	}
	spin_lock_bh(&cxe_c4models_list_lock);
	list_del(&m->node);
	spin_unlock_bh(&cxe_c4models_list_lock);
	mutex_unlock(&cxe_c4models_lock);
	cxe_c4model_halt(m);
	pr_info("cxgb4 model %s: removed\n", name);
	cxe_c4dev_put(&m->d);
	return 0;
}

ssize_t cxe_c4model_store(const char *page, size_t count)
{
	char *buf, *args, *verb;
	int ret;

	buf = kstrndup(page, count, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	args = strim(buf);
	verb = strsep(&args, " ");
	if (!strcmp(verb, "add") && args)
		ret = cxe_c4model_add(args);
	else if (!strcmp(verb, "del") && args)
		ret = cxe_c4model_del(strim(args));
	else if (!strcmp(verb, "unplug") && args)
		ret = cxe_c4model_unplug(strim(args));
	else
		ret = -EINVAL;
	if (ret == -EINVAL && strcmp(verb, "add"))
		pr_err("cxgb4_models: write 'add NAME chip=t5|t6 netdev=IF [answer_ms=N] [table=N]', 'unplug NAME' or 'del NAME'\n");
	kfree(buf);
	return ret ? ret : count;
}

ssize_t cxe_c4model_show(char *page)
{
	struct cxe_c4model *m;
	ssize_t len = 0;

	mutex_lock(&cxe_c4models_lock);
	list_for_each_entry(m, &cxe_c4models, node) {
		spin_lock_bh(&m->lock);
		len += sysfs_emit_at(page, len, "%s chip=%s netdev=%s%s",
				     m->name, m->d.kind, m->netdev,
				     READ_ONCE(m->ifindex) ? "" : "(gone)");
		len += sysfs_emit_at(page, len, " answer_ms=%u table=%u servers=%u refused=%u",
				     m->answer_ms, m->table.cap,
				     m->table.servers, m->refused);
		len += sysfs_emit_at(page, len, " conns=%u refused_msgs=%d bad_releases=%d",
				     m->nconns, atomic_read(&m->refused_msgs),
				     atomic_read(&m->bad_releases));
		len += sysfs_emit_at(page, len, " pod_writes=%d pod_writes_late=%d\n",
				     atomic_read(&m->pod_writes),
				     atomic_read(&m->pod_writes_late));
		spin_unlock_bh(&m->lock);
	}
	mutex_unlock(&cxe_c4models_lock);
	return len;
}

/* A model's port unregisters: it has no port, and serves nothing now */
void cxe_c4model_netdev_gone(const struct net_device *nd)
{
	struct cxe_c4model *m;

	spin_lock_bh(&cxe_c4models_list_lock);
	list_for_each_entry(m, &cxe_c4models, node)
		if (cxe_c4model_has_port(&m->d, nd))
			WRITE_ONCE(m->ifindex, 0);
	spin_unlock_bh(&cxe_c4models_list_lock);
}

void cxe_c4model_stop(void)
{
	struct cxe_c4model *m;

	mutex_lock(&cxe_c4models_lock);
	list_for_each_entry(m, &cxe_c4models, node)
		cxe_c4model_halt(m);
	mutex_unlock(&cxe_c4models_lock);
}

/* after cxe_c4model_stop(): the models go, then their workqueue */
void cxe_c4model_exit(void)
{
	struct cxe_c4model *m, *tmp;

	mutex_lock(&cxe_c4models_lock);
	list_for_each_entry(m, &cxe_c4models, node)
		cxe_c4model_halt(m);	/* done by stop already: a no-op */
	spin_lock_bh(&cxe_c4models_list_lock);
	list_for_each_entry_safe(m, tmp, &cxe_c4models, node)
		list_del(&m->node);
	spin_unlock_bh(&cxe_c4models_list_lock);
	mutex_unlock(&cxe_c4models_lock);
	cxe_c4dev_drop_all(&cxe_c4model_ops);
	/* a callback of ours that a socket called before it got TCP's back ends */
	synchronize_net();
	if (cxe_c4model_wq) {
		destroy_workqueue(cxe_c4model_wq);
		cxe_c4model_wq = NULL;
	}
}
