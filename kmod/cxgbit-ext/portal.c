// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext portals, connections and login: what LIO asks of a transport
 * before full feature phase (setting up and freeing a network portal,
 * accepting its connections, the Login PDUs) and at a connection's end.
 * The PDU path after login is transport.c's; which backends listen for a
 * portal is backend.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/nsproxy.h>
#include <linux/wait.h>
#include <net/sock.h>
#include <scsi/iscsi_proto.h>
#include <target/iscsi/iscsi_target_core.h>
#include <target/iscsi/iscsi_transport.h>

#include "iscsi_target_parameters.h"
#include "iscsi_target_login.h"

#include "core.h"
#include "pdu/cxe_bhs.h"

static LIST_HEAD(cxe_conns);
static DEFINE_SPINLOCK(cxe_conns_lock);

int cxe_setup_np(struct iscsi_np *np, struct sockaddr_storage *addr)
{
	struct cxe_np *cnp;
	int ret;

	cnp = kzalloc(sizeof(*cnp), GFP_KERNEL);
	if (!cnp)
		return -ENOMEM;
	cnp->np = np;
	/*
	 * One backend listens for a portal, for all of its adapters (the
	 * software one does, through one socket), and takes its connections.
	 * Backends with devices of their own listen beside it
	 * (cxe_backends_listen); taking connections from them too needs
	 * accept to wait on each.
	 */
	cnp->backend = cxe_backend_find(CXE_BACKEND_PORTALS);
	if (!cnp->backend) {
		kfree(cnp);
		return -ENODEV;
	}
	memcpy(&cnp->addr, addr, sizeof(cnp->addr));
	init_waitqueue_head(&cnp->accept_wq);
	/* LIO sets a portal up in the namespace of the process enabling it */
	cnp->net = get_net(current->nsproxy->net_ns);

	ret = cxe_portal_listen(cnp);
	if (ret) {
		put_net(cnp->net);
		kfree(cnp);
		return ret;
	}
	np->np_context = cnp;
	/* LIO matches portals (and answers SendTargets) by np_sockaddr */
	memcpy(&np->np_sockaddr, addr, sizeof(np->np_sockaddr));
	pr_info("offload portal %pISpc set up\n", addr);
	return 0;
}

void cxe_np_ready(struct cxe_np *cnp)
{
	/* what was made ready is seen by whoever sees the count move */
	smp_mb__before_atomic();
	atomic_inc(&cnp->ready);
	wake_up_interruptible(&cnp->accept_wq);
}
EXPORT_SYMBOL_GPL(cxe_np_ready);

/*
 * A connection b accepted for an adapter of a backend that rides the
 * kernel's TCP (CXE_BACKEND_SOCKETS): that one adopts it and holds it
 * from here, its module in b's stead. Otherwise b lets it go and the
 * caller frees it; LIO closes the socket b lent it.
 */
static int cxe_adopt(const struct cxe_backend *b, struct cxe_conn *c)
{
	const struct cxe_backend *to = c->adapter->backend;
	int ret = -ENODEV;

	if (try_module_get(to->owner)) {
		ret = to->ops->adopt(c);
		if (ret)
			module_put(to->owner);
	}
	if (!ret) {
		module_put(b->owner);
		return 0;
	}
	pr_warn_ratelimited("connection %pISpc -> %pISpc: backend %s did not take it (%d): closed\n",
			    &c->peer, &c->local, to->name, ret);
	b->ops->conn_release(c);
	cxe_adapter_put(c->adapter);
	return ret;
}

/*
 * b's next connection for the portal: 0 with *cp, -EAGAIN, or an error.
 * A connection holds b's module (cxe_free_conn() lets it go); one that
 * is unloading has none to give.
 */
static int cxe_accept_from(const struct cxe_backend *b, struct cxe_np *cnp,
			   struct iscsit_conn *conn, struct cxe_conn **cp)
{
	struct cxe_conn *c;
	int ret;

	if (!try_module_get(b->owner))
		return -EAGAIN;
	/* the shared part first, the backend's own after it (conn_size) */
	c = kzalloc(b->conn_size, GFP_KERNEL);
	if (!c) {
		module_put(b->owner);
		return -ENOMEM;
	}
	c->conn = conn;
	c->limits = &b->limits;
	/* sets c->adapter (with a reference) and its toggles, may narrow c->limits */
	ret = b->ops->accept(cnp, c);
	if (!ret && c->adapter->backend != b)
		ret = cxe_adopt(b, c);
	if (ret) {
		kfree(c);
		module_put(b->owner);
		return ret;
	}
	*cp = c;
	return 0;
}

/*
 * Offload is per target (LIO enables it per TPG), steering per ip:port:
 * a connection reaches this portal whatever target it is for. Those LIO
 * would serve differently here than on its stock portal for the same
 * address go back there, their first Login request unread, so that the
 * initiator sees exactly what it would see without offload:
 * - discovery sessions: SendTargets here lists only targets with offload
 *   on this portal, the stock portal lists every target;
 * - a login LIO answers without having found a TPG behind this portal
 *   (the target has no offload here, or no such target): the stock
 *   portal finds the target's TPG, or answers the same refusal.
 * LIO's configuration decides: as its configfs tree shows it when the
 * first request is read at accept (tpgs.c), else LIO's own TPG lookup.
 * 0 when handed back; -EAGAIN for a held target; else why it could not be.
 */
static int cxe_hand_back(struct cxe_conn *c, const char *why,
			 const char *target)
{
	int ret;

	if (c->answered || !cxe_ops(c)->hand_back)
		return -EOPNOTSUPP;
	/*
	 * A held target's TPG is being enabled (holds.c): LIO's answer
	 * stands. Otherwise counted first: once handed back, the stock portal
	 * may answer the initiator before this thread goes on (taken back in
	 * the rare case that the adapter could not hand it back).
	 */
	ret = target && cxe_hold_has(target, strlen(target)) ? -EAGAIN : 0;
	if (!ret) {
		cxe_cstat(c, CXE_STAT_HANDED_BACK, 1);
		ret = cxe_ops(c)->hand_back(c, target);
		if (ret)
			cxe_cstat(c, CXE_STAT_HANDED_BACK, -1);
	}
	if (ret == -EAGAIN) {
		cxe_cstat(c, CXE_STAT_LOGINS_HELD, 1);
		pr_info_ratelimited("connection %pISpc -> %pISpc: %s: target %s is held, answered here\n",
				    &c->peer, &c->local, why, target);
	}
	if (ret)
		return ret;
	pr_info("connection %pISpc -> %pISpc: %s: handed to the stock portal\n",
		&c->peer, &c->local, why);
	return 0;
}

#define CXE_NO_TPG	"no TPG of this target behind the offloaded portal"

/*
 * The first Login request of a connection from an adapter that hands its
 * connections up with it whole (one with hand_back), read at accept: the
 * hand-back of a discovery session is decided there, before LIO sees the
 * connection, and LIO's first read gets this copy (cxe_get_login_rx()).
 */
struct cxe_first_login {
	u8	hdr[ISCSI_HDR_LEN];
	/* the read's: 0, -EMSGSIZE (text too long), -1; -ENOMEM: to close */
	int	ret;
	u32	dlen;
	u8	text[MAX_KEY_VALUE_PAIRS];
};

/* A Login request's header into hdr: 0, or -1 (the login ends) */
static int cxe_login_hdr(struct cxe_conn *c, u8 *hdr)
{
	u8 buf[ISCSI_HDR_LEN + CXE_MAX_AHS_LEN];
	u32 flags;

	if (cxe_ops(c)->recv_hdr(c, buf, &flags))
		return -1;
	if (cxe_bhs_ahs_len(buf)) {
		pr_err("%pISpc: login PDU with an AHS\n", &c->peer);
		return -1;
	}
	memcpy(hdr, buf, ISCSI_HDR_LEN);
	return 0;
}

/* A Login request's text of dlen bytes into buf: 0, or -1 */
static int cxe_login_text(struct cxe_conn *c, u8 *buf, u32 dlen)
{
	bool bad;

	return cxe_recv_buf(c, buf, dlen, dlen, &bad) || bad ? -1 : 0;
}

static void cxe_conn_free(struct cxe_conn *c);

/* A Login request's TargetName in buf, or NULL without one */
static const char *cxe_text_target(const u8 *text, u32 dlen,
				   char buf[ISCSI_IQN_LEN])
{
	const u8 *v;
	u32 vlen;

	v = cxe_keys_value(text, dlen, "TargetName", &vlen);
	if (!v || !vlen || vlen >= ISCSI_IQN_LEN)
		return NULL;
	memcpy(buf, v, vlen);
	buf[vlen] = '\0';
	return buf;
}

/*
 * The target of the login f if LIO would fail it for want of a TPG behind
 * the offloaded portal, else NULL. A held target's is LIO's to answer
 * (cxe_hand_back()), as is one whose TPGs are not known.
 */
static const char *cxe_login_no_tpg(struct cxe_np *cnp,
				    const struct cxe_first_login *f,
				    char buf[ISCSI_IQN_LEN])
{
	const char *target = cxe_text_target(f->text, f->dlen, buf);

	if (!target || cxe_hold_has(target, strlen(target)) ||
	    cxe_tpg_behind(target, &cnp->addr))
		return NULL;
	return target;
}

/*
 * Read c's first Login request, whole at accept. True when c was handed
 * to the stock portal (a discovery session, a login for a target with no
 * TPG behind this portal): then it is freed.
 *
 * One that should go back but cannot for want of memory (its copy here,
 * or the stock portal's request socket) is closed at LIO's first read,
 * never answered here: what LIO says on this portal is not what the
 * stock portal says (SendTargets, the target's TPG), while a closed
 * connection is one an initiator logs in again on.
 */
static bool cxe_login_first(struct cxe_np *cnp, struct cxe_conn *c)
{
	char buf[ISCSI_IQN_LEN];
	struct cxe_first_login *f;
	const char *target, *why;
	int ret;

	f = kmalloc(sizeof(*f), GFP_KERNEL);
	if (!f) {
		c->first = ERR_PTR(-ENOMEM);
		goto closed;
	}
	f->ret = cxe_login_hdr(c, f->hdr);
	if (!f->ret) {
		f->dlen = ntoh24(((struct iscsi_login_req *)f->hdr)->dlength);
		/* too long a text is LIO's check's to refuse */
		f->ret = f->dlen > MAX_KEY_VALUE_PAIRS ? -EMSGSIZE :
			 cxe_login_text(c, f->text, f->dlen);
	}
	c->first = f;
	if (f->ret)
		return false;
	if (cxe_keys_have(f->text, f->dlen, "SessionType", "Discovery")) {
		why = "discovery session";
		target = NULL;
	} else {
		why = CXE_NO_TPG;
		target = cxe_login_no_tpg(cnp, f, buf);
		if (!target)
			return false;
	}
	ret = cxe_hand_back(c, why, target);
	if (!ret) {
		cxe_conn_free(c);
		return true;
	}
	if (ret != -ENOMEM)
		return false;	/* held, or no stock portal: LIO answers */
	f->ret = -ENOMEM;
closed:
	pr_warn_ratelimited("connection %pISpc -> %pISpc: no memory to read or hand back its first Login request: closed\n",
			    &c->peer, &c->local);
	return false;
}

#define CXE_MAX_ACCEPTING	4

/*
 * The next connection from any backend that takes the portal's: the
 * portal's own, then those with devices of their own. Waits until one
 * says it may have one; interrupted by LIO's SIGINT when the portal
 * thread resets or stops.
 */
int cxe_accept_np(struct iscsi_np *np, struct iscsit_conn *conn)
{
	const struct cxe_backend *b[CXE_MAX_ACCEPTING];
	struct cxe_np *cnp = np->np_context;
	struct cxe_conn *c = NULL;
	int i, n, ret, seen;

	for (;;) {
		/* a connection made ready after this is not missed */
		seen = atomic_read_acquire(&cnp->ready);
		ret = cxe_accept_from(cnp->backend, cnp, conn, &c);
		if (ret == -EAGAIN) {
			/* those registered now, asked with their modules held */
			n = cxe_backends_get(b, ARRAY_SIZE(b), CXE_BACKEND_DEVICES);
			for (i = 0; i < n && ret == -EAGAIN; i++)
				if (b[i]->ops->accept)
					ret = cxe_accept_from(b[i], cnp, conn, &c);
			cxe_backends_put(b, n);
		}
		if (!ret && cxe_ops(c)->hand_back && cxe_login_first(cnp, c))
			continue;	/* handed back: LIO never saw it */
		if (ret != -EAGAIN)
			break;
		ret = wait_event_interruptible(cnp->accept_wq,
					       atomic_read(&cnp->ready) != seen);
		if (ret)
			return ret;
	}
	if (ret)
		return ret;
	mutex_init(&c->tx_lock);
	cxe_dcache_init(&c->dcache);
	conn->context = c;
	conn->login_family = c->peer.ss_family;
	memcpy(&conn->login_sockaddr, &c->peer, sizeof(c->peer));
	memcpy(&conn->local_sockaddr, &c->local, sizeof(c->local));
	spin_lock(&cxe_conns_lock);
	list_add_tail(&c->node, &cxe_conns);
	spin_unlock(&cxe_conns_lock);
	cxe_cstat(c, CXE_STAT_CONNS, 1);
	pr_info("connection %pISpc -> %pISpc offloaded on %s\n", &c->peer,
		&c->local, c->adapter->name);
	return 0;
}

void cxe_free_np(struct iscsi_np *np)
{
	struct cxe_np *cnp = np->np_context;

	cxe_portal_unlisten(cnp);
	pr_info("offload portal %pISpc released\n", &cnp->addr);
	np->np_context = NULL;
	put_net(cnp->net);
	kfree(cnp);	/* unlisten waited for the steering hook's readers */
}

#define CXE_CONN_LINE	400	/* two addresses, offloads and counters */

static const char *const cxe_iso_off_name[] = {
	[CXE_ISO_OFF_ADAPTER]	= "adapter",
	[CXE_ISO_OFF_ERL]	= "erl",
	[CXE_ISO_OFF_ORDER]	= "order",
};

static int cxe_conn_line(const struct cxe_conn *c, char *line)
{
	return scnprintf(line, CXE_CONN_LINE,
			 "%pISpc %pISpc adapter=%s login=%d hdigest=%d ddigest=%d ddp=%d iso=%d iso_off=%s pdus_rx=%lld pdus_tx=%lld bytes_placed=%lld bytes_copied=%lld tx_inline=%lld data_cache_kib=%u\n",
			 &c->peer, &c->local, c->adapter->name,
			 !READ_ONCE(c->logged_in), c->hdigest, c->ddigest,
			 c->ddp, READ_ONCE(c->iso),
			 READ_ONCE(c->iso) ? "no" : cxe_iso_off_name[READ_ONCE(c->iso_off)],
			 atomic64_read(&c->stats[CXE_STAT_PDUS_RX]),
			 atomic64_read(&c->stats[CXE_STAT_PDUS_TX]),
			 atomic64_read(&c->stats[CXE_STAT_BYTES_PLACED]),
			 atomic64_read(&c->stats[CXE_STAT_BYTES_COPIED]),
			 atomic64_read(&c->stats[CXE_STAT_TX_INLINE]),
			 cxe_dcache_kib(&c->dcache));
}

/*
 * The connections file, one line per connection. With buf NULL: the size
 * to allocate, with room for counters that grow meanwhile. Otherwise the
 * whole lines that fit in size bytes (a connection made since is left for
 * the next read): their length.
 */
ssize_t cxe_conn_show_all(char *buf, size_t size)
{
	char line[CXE_CONN_LINE];
	struct cxe_conn *c;
	size_t len = 0, lines = 0;
	int n;

	spin_lock(&cxe_conns_lock);
	list_for_each_entry(c, &cxe_conns, node) {
		n = cxe_conn_line(c, line);
		if (buf && len + n > size)
			break;
		if (buf)
			memcpy(buf + len, line, n);
		len += n;
		lines++;
	}
	spin_unlock(&cxe_conns_lock);
	return buf ? len : len + lines * 32;
}

/* What cxe_accept_from() made, the backend's part released first */
static void cxe_conn_free(struct cxe_conn *c)
{
	struct module *owner = c->adapter->backend->owner;

	cxe_ops(c)->conn_release(c);
	cxe_adapter_put(c->adapter);
	if (!IS_ERR(c->first))
		kfree(c->first);
	kfree(c);
	module_put(owner);	/* cxe_accept_from()'s */
}

void cxe_free_conn(struct iscsit_conn *conn)
{
	struct cxe_conn *c = conn->context;

	if (!c)
		return;
	spin_lock(&cxe_conns_lock);
	list_del(&c->node);
	spin_unlock(&cxe_conns_lock);
	conn->context = NULL;
	cxe_dcache_destroy(&c->dcache);
	mutex_destroy(&c->tx_lock);
	cxe_conn_free(c);
}

/* ---- login --------------------------------------------------------------- */

/*
 * A Login request for LIO: the first one as accept read it, if it did
 * (its copy is then let go), the others from the connection.
 */
int cxe_get_login_rx(struct iscsit_conn *conn, struct iscsi_login *login)
{
	struct cxe_conn *c = conn->context;
	struct iscsi_login_req *req = (struct iscsi_login_req *)login->req;
	struct cxe_first_login *f = c->first;
	u32 dlen;
	int ret;

	if (IS_ERR(f)) {
		c->first = NULL;
		return -1;	/* accept could not keep it (cxe_login_first()) */
	}
	ret = f ? f->ret : cxe_login_hdr(c, login->req);
	if (ret && ret != -EMSGSIZE)
		goto out;	/* f->hdr is not read whole */
	if (f)
		memcpy(login->req, f->hdr, ISCSI_HDR_LEN);
	dlen = ntoh24(req->dlength);
	if (login->first_request) {
		login->leading_connection = !req->tsih;
		login->current_stage = ISCSI_LOGIN_CURRENT_STAGE(req->flags);
		login->version_min = req->min_version;
		login->version_max = req->max_version;
		memcpy(login->isid, req->isid, 6);
		login->cmd_sn = be32_to_cpu(req->cmdsn);
		login->init_task_tag = req->itt;
		login->initial_exp_statsn = be32_to_cpu(req->exp_statsn);
		login->cid = be16_to_cpu(req->cid);
		login->tsih = be16_to_cpu(req->tsih);
	}
	/* checks the opcode, flags, stages and dlen <= MAX_KEY_VALUE_PAIRS */
	ret = iscsi_target_check_login_request(conn, login);
	if (ret < 0)
		goto out;
	memset(login->req_buf, 0, MAX_KEY_VALUE_PAIRS);
	if (f && f->ret)
		ret = -1;	/* LIO's check let too long a text by? */
	else if (f)
		memcpy(login->req_buf, f->text, dlen);
	else
		ret = cxe_login_text(c, login->req_buf, dlen);
out:
	if (f) {
		c->first = NULL;
		kfree(f);
	}
	return ret ? -1 : 0;
}

static_assert(offsetof(struct cxe_conn, limits) ==
	      ALIGN(offsetof(struct cxe_conn, iso) + 1, __alignof__(void *)),
	      "iso_off must sit in padding: backends build against this layout");

/* A session key's negotiated value is Yes, as a leading login settled it */
static bool cxe_key_yes(struct iscsi_param_list *pl, char *key)
{
	struct iscsi_param *p = iscsi_find_param_from_key(key, pl);

	return p && !strcmp(p->value, YES);
}

/*
 * Whether the adapter may cut this connection's Data-In into bursts: the
 * burst planner's model is ERL 0 with PDUs and sequences in order, where
 * no Data-In is ever sent again or out of order (SNACKs, recovery). A
 * connection joining a session finds the session's values in sess_ops;
 * a leading one in the parameter list its login settled.
 */
static void cxe_login_iso(struct cxe_conn *c, bool leading)
{
	struct iscsi_param_list *pl = c->conn->param_list;
	struct iscsi_sess_ops *so = c->conn->sess->sess_ops;
	struct iscsi_param *erl;
	bool erl0, in_order;

	if (!c->iso)
		return;		/* off on the adapter: iso_off says so already */
	if (leading) {
		erl = iscsi_find_param_from_key(ERRORRECOVERYLEVEL, pl);
		erl0 = erl && !strcmp(erl->value, "0");
		in_order = cxe_key_yes(pl, DATASEQUENCEINORDER) &&
			   cxe_key_yes(pl, DATAPDUINORDER);
	} else {
		erl0 = !so->ErrorRecoveryLevel;
		in_order = so->DataSequenceInOrder && so->DataPDUInOrder;
	}
	if (!erl0 || !in_order) {
		WRITE_ONCE(c->iso_off, erl0 ? CXE_ISO_OFF_ORDER : CXE_ISO_OFF_ERL);
		WRITE_ONCE(c->iso, false);
	}
}

/*
 * The negotiated digests and our receive limit, from the parameter list
 * the login settled (LIO copies them into conn_ops only after the last
 * response is sent).
 */
static int cxe_login_params(struct cxe_conn *c)
{
	struct iscsi_param_list *pl = c->conn->param_list;
	struct iscsi_param *hd, *dd, *mx;
	u32 max_dlen;

	hd = iscsi_find_param_from_key(HEADERDIGEST, pl);
	dd = iscsi_find_param_from_key(DATADIGEST, pl);
	mx = iscsi_find_param_from_key(MAXXMITDATASEGMENTLENGTH, pl);
	if (!hd || !dd || !mx || kstrtou32(mx->value, 0, &max_dlen)) {
		pr_err("%pISpc: negotiated digests or MaxXmitDataSegmentLength missing\n",
		       &c->peer);
		return -1;
	}
	cxe_ops(c)->set_params(c, !strcmp(hd->value, CRC32C),
			       !strcmp(dd->value, CRC32C), max_dlen);
	cxe_limit_send(c);
	return 0;
}

/* The first Login request's TargetName in buf, or NULL without one */
static const char *cxe_login_target(struct iscsi_login *login,
				    char buf[ISCSI_IQN_LEN])
{
	const struct iscsi_login_req *req = (const struct iscsi_login_req *)login->req;

	return cxe_text_target(login->req_buf,
			       min_t(u32, ntoh24(req->dlength), MAX_KEY_VALUE_PAIRS),
			       buf);
}

/*
 * A session's commands come from one tag map whose entries LIO sizes by the
 * transport of the connection that made the session (its priv_size); a
 * connection of another transport would index that map with its own size,
 * and commands of the two would overlap. So a connection of ours joins
 * only a session whose connections are all ours: true when one is not.
 */
static bool cxe_session_foreign(struct iscsit_conn *conn)
{
	struct iscsit_session *sess = conn->sess;
	struct iscsit_conn *other;
	bool foreign = false;

	if (!sess)
		return false;
	spin_lock_bh(&sess->conn_lock);
	list_for_each_entry(other, &sess->sess_conn_list, conn_list)
		foreign |= other->conn_transport != conn->conn_transport;
	spin_unlock_bh(&sess->conn_lock);
	return foreign;
}

/* The Login response that refuses c a place in the session, then the end */
static int cxe_refuse_join(struct cxe_conn *c, const struct iscsi_login *login)
{
	struct iscsi_login_rsp rsp;
	struct cxe_data none = {};

	memcpy(&rsp, login->rsp, sizeof(rsp));
	rsp.flags &= ~(ISCSI_FLAG_LOGIN_TRANSIT | ISCSI_FLAG_LOGIN_NEXT_STAGE_MASK);
	rsp.status_class = ISCSI_STATUS_CLS_INITIATOR_ERR;
	rsp.status_detail = ISCSI_LOGIN_STATUS_CONN_ADD_FAILED;
	hton24(rsp.dlength, 0);
	pr_warn_ratelimited("connection %pISpc -> %pISpc: not added to a session with connections of another transport\n",
			    &c->peer, &c->local);
	c->answered = true;
	cxe_ops(c)->send_pdu(c, (const u8 *)&rsp, &none);
	return -1;
}

int cxe_put_login_tx(struct iscsit_conn *conn, struct iscsi_login *login,
		     u32 length)
{
	struct cxe_conn *c = conn->context;
	char target[ISCSI_IQN_LEN];
	struct cxe_data src = { .buf = login->rsp_buf, .len = length };
	const struct iscsi_login_rsp *rsp = (const struct iscsi_login_rsp *)login->rsp;

	if (!conn->tpg && rsp->status_class &&
	    !cxe_hand_back(c, CXE_NO_TPG, cxe_login_target(login, target)))
		return 0;	/* LIO is failing the login: it forgets the connection */
	if (!login->leading_connection && !rsp->status_class &&
	    cxe_session_foreign(conn))
		return cxe_refuse_join(c, login);
	c->answered = true;
	if (cxe_ops(c)->send_pdu(c, login->rsp, &src))
		return -1;
	/*
	 * The last Login response went out without digests; from here on
	 * the negotiated digests and limits apply. LIO has started the RX
	 * and TX threads but lets RX go (rx_login_comp) only after this,
	 * and nothing is queued for TX yet: neither sees the switch happen
	 * (mainline cxgbit switches here too).
	 */
	if (login->login_complete && !login->login_failed) {
		if (cxe_login_params(c))
			return -1;
		cxe_login_iso(c, login->leading_connection);
		/* from here LIO's answer is final: no hand-back to stock */
		WRITE_ONCE(c->logged_in, true);
	}
	/*
	 * LIO reads the next Login request by itself only on a socket it
	 * watches (conn->sock, lent by a socket-based adapter); for one
	 * carried by a device the transport asks for it, as mainline cxgbit
	 * does.
	 */
	if (!login->login_complete && !login->login_failed && !conn->sock)
		schedule_delayed_work(&conn->login_work, 0);
	return 0;
}

