// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext PDU layer: the iscsit_transport LIO selects through the np
 * "cxgbit" attribute (targetcli enable_offload, rtslib
 * NetworkPortal.offload).
 *
 * LIO core keeps login negotiation, sessions, SCSI, R2T building and error
 * recovery. This PDU layer dispatches PDUs to LIO's helpers and tells the
 * adapter (adapter.h) where each data segment belongs: write data in the
 * command's pages (Data-Out by its R2T's DDP tag, immediate and unsolicited
 * data by offset), other payloads in LIO's buffers. Digests, placement,
 * segmentation and the tag table are the adapter's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/kthread.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/nsproxy.h>
#include <linux/scatterlist.h>
#include <net/sock.h>
#include <scsi/iscsi_proto.h>
#include <target/target_core_base.h>
#include <target/target_core_fabric.h>
#include <target/iscsi/iscsi_target_core.h>
#include <target/iscsi/iscsi_transport.h>

#include "iscsi_target_erl0.h"
#include "iscsi_target_parameters.h"
#include "iscsi_target_login.h"

#include "cxgbit_ext.h"
#include "pdu/cxe_bhs.h"

static LIST_HEAD(cxe_conns);
static DEFINE_SPINLOCK(cxe_conns_lock);
/* the offloaded portals LIO has set up, in that order (the portals file) */
static LIST_HEAD(cxe_portals);
static DEFINE_MUTEX(cxe_portals_lock);

const char *const cxe_stat_names[CXE_STAT_MAX] = {
	[CXE_STAT_SYN_STEERED]	= "syn_steered",
	[CXE_STAT_CONNS]	= "connections",
	[CXE_STAT_PDUS_RX]	= "pdus_rx",
	[CXE_STAT_PDUS_TX]	= "pdus_tx",
	[CXE_STAT_BYTES_PLACED]	= "bytes_placed",
	[CXE_STAT_BYTES_COPIED]	= "bytes_copied",
	[CXE_STAT_HDIGEST_ERR]	= "hdigest_errors",
	[CXE_STAT_DDIGEST_ERR]	= "ddigest_errors",
	[CXE_STAT_DDP_TAG_ERR]	= "ddp_tag_errors",
	[CXE_STAT_DROPS]	= "drops",
	[CXE_STAT_BURSTS]	= "bursts",
	[CXE_STAT_BURST_PDUS]	= "burst_pdus",
	[CXE_STAT_RX_WAITS]	= "rx_waits",
	[CXE_STAT_HANDED_BACK]	= "handed_back",
	[CXE_STAT_LOGINS_HELD]	= "logins_held",
	[CXE_STAT_MODEL_CPLS]	= "model_cpls",
	[CXE_STAT_MODEL_WRS]	= "model_wrs",
	[CXE_STAT_RANGE_BYTES]	= "range_bytes",
	[CXE_STAT_TX_INLINE]	= "tx_inline",
	[CXE_STAT_DCACHE_HITS]	= "data_cache_hits",
	[CXE_STAT_DCACHE_MISSES] = "data_cache_misses",
	[CXE_STAT_WALK_STARTS]	= "sg_walk_starts",
};

/* ---- portals ------------------------------------------------------------ */

static int cxe_setup_np(struct iscsi_np *np, struct sockaddr_storage *addr)
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

	/* every backend registered meanwhile listens for it once */
	cxe_listens_lock();
	ret = cnp->backend->ops->listen(cnp);
	if (ret) {
		cxe_listens_unlock();
		put_net(cnp->net);
		kfree(cnp);
		return ret;
	}
	cxe_backends_listen(cnp);
	mutex_lock(&cxe_portals_lock);
	list_add_tail(&cnp->node, &cxe_portals);
	mutex_unlock(&cxe_portals_lock);
	cxe_listens_unlock();
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

/* A backend registering: it listens for every portal (listen lock held) */
void cxe_np_listen_all(const struct cxe_backend *b)
{
	struct cxe_np *cnp;

	mutex_lock(&cxe_portals_lock);
	list_for_each_entry(cnp, &cxe_portals, node)
		cxe_backend_listen(b, cnp);
	mutex_unlock(&cxe_portals_lock);
}

/* A backend unregistering: it stops listening for each (listen lock held) */
void cxe_np_unlisten_all(const struct cxe_backend *b)
{
	struct cxe_np *cnp;

	mutex_lock(&cxe_portals_lock);
	list_for_each_entry_reverse(cnp, &cxe_portals, node)
		b->ops->unlisten(cnp);
	mutex_unlock(&cxe_portals_lock);
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
	if (ret) {
		kfree(c);
		module_put(b->owner);
		return ret;
	}
	*cp = c;
	return 0;
}

#define CXE_MAX_ACCEPTING	4

/*
 * The next connection from any backend that takes the portal's: the
 * portal's own, then those with devices of their own. Waits until one
 * says it may have one; interrupted by LIO's SIGINT when the portal
 * thread resets or stops.
 */
static int cxe_accept_np(struct iscsi_np *np, struct iscsit_conn *conn)
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

static void cxe_free_np(struct iscsi_np *np)
{
	struct cxe_np *cnp = np->np_context;

	cxe_listens_lock();
	mutex_lock(&cxe_portals_lock);
	list_del(&cnp->node);
	mutex_unlock(&cxe_portals_lock);
	cxe_backends_unlisten(cnp);
	cnp->backend->ops->unlisten(cnp);
	cxe_listens_unlock();
	pr_info("offload portal %pISpc released\n", &cnp->addr);
	np->np_context = NULL;
	put_net(cnp->net);
	kfree(cnp);	/* unlisten waited for the steering hook's readers */
}

/*
 * The portals file, one "ip:port" per portal, or with state the
 * portal_state file: each followed by where its logins go (configfs.c).
 * Whole lines only: a portal whose line does not fit in the page is left
 * out, with those after it.
 */
ssize_t cxe_np_show_all(char *page, bool state)
{
	struct cxe_np *cnp;
	ssize_t len = 0, start;

	mutex_lock(&cxe_portals_lock);
	list_for_each_entry(cnp, &cxe_portals, node) {
		start = len;
		len += sysfs_emit_at(page, len, "%pISpc", &cnp->addr);
		if (state)
			len += cxe_portal_state_show(cnp, page, len);
		if (!sysfs_emit_at(page, len, "\n")) {
			len = start;
			break;
		}
		len++;
	}
	mutex_unlock(&cxe_portals_lock);
	return len;
}

#define CXE_CONN_LINE	384	/* two addresses, offloads and counters */

static int cxe_conn_line(const struct cxe_conn *c, char *line)
{
	return scnprintf(line, CXE_CONN_LINE,
			 "%pISpc %pISpc adapter=%s login=%d hdigest=%d ddigest=%d ddp=%d iso=%d pdus_rx=%lld pdus_tx=%lld bytes_placed=%lld bytes_copied=%lld tx_inline=%lld data_cache_kib=%u\n",
			 &c->peer, &c->local, c->adapter->name,
			 !READ_ONCE(c->logged_in), c->hdigest, c->ddigest,
			 c->ddp, c->iso,
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
 * the next read), the rest filled (cxe_bin_fill()).
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
	if (!buf)
		return len + lines * 32;
	return cxe_bin_fill(buf, len, size);
}

static void cxe_free_conn(struct iscsit_conn *conn)
{
	struct cxe_conn *c = conn->context;
	struct module *owner;

	if (!c)
		return;
	owner = c->adapter->backend->owner;
	spin_lock(&cxe_conns_lock);
	list_del(&c->node);
	spin_unlock(&cxe_conns_lock);
	conn->context = NULL;
	cxe_ops(c)->conn_release(c);
	cxe_dcache_destroy(&c->dcache);
	cxe_adapter_put(c->adapter);
	mutex_destroy(&c->tx_lock);
	kfree(c);
	module_put(owner);	/* cxe_accept_from()'s */
}

/* Receive a data segment of dlen bytes, len of them into buf. */
static int cxe_recv_buf(struct cxe_conn *c, void *buf, u32 len, u32 dlen, bool *bad)
{
	struct cxe_data dst = { .buf = buf, .len = len };

	return cxe_ops(c)->recv_data(c, &dst, dlen, bad);
}

/* The adapter's walk of the command's pages (struct cxe_sg_pos) */
static struct cxe_sg_pos *cxe_task_walk(struct iscsit_cmd *cmd)
{
	struct cxe_task *task = iscsit_priv_cmd(cmd);

	return &task->walk;
}

/* Receive a data segment straight into the command's pages at off. */
static int cxe_recv_place(struct cxe_conn *c, struct iscsit_cmd *cmd, u32 off,
			  u32 len, u32 dlen, bool *bad)
{
	struct cxe_data dst = {
		.sgl = cmd->se_cmd.t_data_sg,
		.nents = cmd->se_cmd.t_data_nents,
		.offset = off,
		.len = len,
		.walk = cxe_task_walk(cmd),
	};

	return cxe_ops(c)->recv_data(c, &dst, dlen, bad);
}

/* Drop a data segment nobody takes (keeps the stream in step). */
static int cxe_discard(struct cxe_conn *c, u32 dlen)
{
	bool bad;

	if (!dlen)
		return 0;
	return cxe_recv_buf(c, NULL, 0, dlen, &bad);
}

/* ---- the backend's limits ------------------------------------------------ */

/*
 * What the adapter's hardware cannot go beyond (struct cxe_limits), kept
 * here and nowhere else in the PDU layer:
 * - receive: the MaxRecvDataSegmentLength we declare (LIO's key for it is
 *   MaxXmitDataSegmentLength) is clamped before the negotiation starts,
 *   so the initiator is told the value the adapter can take, and the RX
 *   checks and set_params() see it;
 * - send: the initiator's MaxRecvDataSegmentLength is lowered once the
 *   login is complete (a target may always send less than the initiator
 *   takes): LIO builds Data-In and other PDUs of at most that, and bursts
 *   are cut at it;
 * - segmentation: a burst goes to send_burst only when a whole
 *   MaxBurstLength sequence fits one (its last PDU carries F);
 * - placement: an R2T window gets a placing DDP tag only when it is long
 *   enough and its pages are aligned as the hardware needs.
 * The two clamps of negotiated values are logged with why; a burst or a
 * window outside the limits quietly takes the per-PDU send or the untagged
 * receive path. A backend without a limit reports CXE_NO_LIMIT and nothing
 * here changes what LIO negotiated.
 */
static const struct cxe_limits *cxe_limits(const struct cxe_conn *c)
{
	return c->limits;
}

static int cxe_validate_params(struct iscsit_conn *conn)
{
	struct cxe_conn *c = conn->context;
	u32 lim = cxe_limits(c)->max_recv_dlen;
	struct iscsi_param *mx;
	u32 v;

	if (lim == CXE_NO_LIMIT)
		return 0;
	mx = iscsi_find_param_from_key(MAXXMITDATASEGMENTLENGTH, conn->param_list);
	if (!mx || kstrtou32(mx->value, 0, &v))
		return -1;
	if (v <= lim)
		return 0;
	pr_info("%pISpc: MaxRecvDataSegmentLength we declare clamped %u -> %u: adapter %s receives no more\n",
		&c->peer, v, lim, c->adapter->name);
	return iscsi_change_param_sprintf(conn, "MaxXmitDataSegmentLength=%u", lim);
}

/* After the last Login response: what we send, at most what the adapter sends */
static void cxe_limit_send(struct cxe_conn *c)
{
	struct iscsi_conn_ops *ops = c->conn->conn_ops;
	u32 lim = cxe_limits(c)->max_send_dlen;

	if (ops->MaxRecvDataSegmentLength <= lim)
		return;
	pr_info("%pISpc: data segments we send clamped %u -> %u: adapter %s sends no more\n",
		&c->peer, ops->MaxRecvDataSegmentLength, lim, c->adapter->name);
	ops->MaxRecvDataSegmentLength = lim;
}

/* May a whole Data-In sequence of up to mbl bytes go to one send_burst? */
static bool cxe_iso_fits(const struct cxe_conn *c, u32 mbl)
{
	return mbl <= cxe_limits(c)->max_iso_burst;
}

/* Are the pages [off, off + len) of sgl aligned as the adapter places? */
static bool cxe_sgl_aligned(struct scatterlist *sgl, u32 nents, u32 off,
			    u32 len, u32 align)
{
	struct scatterlist *sg;
	u64 start = 0, end = (u64)off + len;
	int i;

	for_each_sg(sgl, sg, nents, i) {
		u64 next = start + sg->length;

		if (next > off && start < end &&
		    (sg->offset % align || (next < end && sg->length % align)))
			return false;
		if (next >= end)
			return true;
		start = next;
	}
	return false;
}

/* May Data-Out for this R2T window be placed straight into the pages? */
static bool cxe_ddp_fits(const struct cxe_conn *c, struct iscsit_cmd *cmd,
			 u32 off, u32 len)
{
	const struct cxe_limits *l = cxe_limits(c);

	if (len < l->ddp_min_len)
		return false;
	return l->ddp_align <= 1 ||
	       cxe_sgl_aligned(cmd->se_cmd.t_data_sg, cmd->se_cmd.t_data_nents,
			       off, len, l->ddp_align);
}

/* ---- login --------------------------------------------------------------- */

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
 * LIO's own TPG lookup decides, so the rule follows its configuration.
 */
static bool cxe_hand_back(struct cxe_conn *c, const char *why,
			  const char *target)
{
	int ret;

	if (c->answered || !cxe_ops(c)->hand_back)
		return false;
	/* a held target's TPG is being enabled (holds.c): LIO's answer stands */
	ret = target && cxe_hold_has(target, strlen(target)) ?
	      -EAGAIN : cxe_ops(c)->hand_back(c, target);
	if (ret == -EAGAIN) {
		cxe_cstat(c, CXE_STAT_LOGINS_HELD, 1);
		pr_info_ratelimited("connection %pISpc -> %pISpc: %s: target %s is held, answered here\n",
				    &c->peer, &c->local, why, target);
	}
	if (ret)
		return false;
	cxe_cstat(c, CXE_STAT_HANDED_BACK, 1);
	pr_info("connection %pISpc -> %pISpc: %s: handed to the stock portal\n",
		&c->peer, &c->local, why);
	return true;
}

static int cxe_get_login_rx(struct iscsit_conn *conn, struct iscsi_login *login)
{
	struct cxe_conn *c = conn->context;
	struct iscsi_login_req *req = (struct iscsi_login_req *)login->req;
	u8 hdr[ISCSI_HDR_LEN + CXE_MAX_AHS_LEN];
	u32 dlen, flags;
	bool bad;
	int ret;

	ret = cxe_ops(c)->recv_hdr(c, hdr, &flags);
	if (ret)
		return -1;
	if (cxe_bhs_ahs_len(hdr)) {
		pr_err("%pISpc: login PDU with an AHS\n", &c->peer);
		return -1;
	}
	memcpy(login->req, hdr, ISCSI_HDR_LEN);
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
	if (iscsi_target_check_login_request(conn, login) < 0)
		return -1;
	memset(login->req_buf, 0, MAX_KEY_VALUE_PAIRS);
	ret = cxe_recv_buf(c, login->req_buf, dlen, dlen, &bad);
	if (ret || bad)
		return -1;
	if (login->first_request &&
	    cxe_keys_have(login->req_buf, dlen, "SessionType", "Discovery") &&
	    cxe_hand_back(c, "discovery session", NULL))
		return -1;	/* LIO forgets the connection */
	return 0;
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
	u32 dlen = min_t(u32, ntoh24(req->dlength), MAX_KEY_VALUE_PAIRS);
	const u8 *v;
	u32 vlen;

	v = cxe_keys_value(login->req_buf, dlen, "TargetName", &vlen);
	if (!v || !vlen || vlen >= ISCSI_IQN_LEN)
		return NULL;
	memcpy(buf, v, vlen);
	buf[vlen] = '\0';
	return buf;
}

static int cxe_put_login_tx(struct iscsit_conn *conn, struct iscsi_login *login,
			    u32 length)
{
	struct cxe_conn *c = conn->context;
	char target[ISCSI_IQN_LEN];
	struct cxe_data src = { .buf = login->rsp_buf, .len = length };
	const struct iscsi_login_rsp *rsp = (const struct iscsi_login_rsp *)login->rsp;

	if (!conn->tpg && rsp->status_class &&
	    cxe_hand_back(c, "no TPG of this target behind the offloaded portal",
			  cxe_login_target(login, target)))
		return 0;	/* LIO is failing the login: it forgets the connection */
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

/* ---- transmit ------------------------------------------------------------ */

/*
 * Segmentation offload: LIO hands us the first Data-In of a command; the
 * command's whole read data goes to the adapter instead, one burst per
 * MaxBurstLength sequence, and the adapter cuts each into PDUs. The
 * template header is the one LIO builds for a burst's last PDU: status in
 * it for the command's last burst unless sense data must follow in a SCSI
 * Response.
 */
static int cxe_send_datain_bursts(struct cxe_conn *c, struct iscsit_cmd *cmd,
				  struct iscsi_datain_req *dr, u32 first_len)
{
	struct iscsit_conn *conn = c->conn;
	struct cxe_sg_pos *walk = cxe_task_walk(cmd);
	u32 total = cmd->se_cmd.data_length;
	u32 mbl = conn->sess->sess_ops->MaxBurstLength;
	bool sense = cmd->se_cmd.se_cmd_flags & SCF_TRANSPORT_TASK_SENSE;
	u32 off = 0, datasn = 0;
	int n;

	atomic_long_add(total - first_len, &conn->sess->tx_data_octets);
	while (off < total) {
		u32 len = min(mbl, total - off);
		bool status = off + len == total && !sense;
		struct iscsi_datain datain = {
			.flags = ISCSI_FLAG_CMD_FINAL |
				 (status ? ISCSI_FLAG_DATA_STATUS : 0),
		};
		u8 tmpl[ISCSI_HDR_LEN] = {};
		struct cxe_burst b = {
			.tmpl = tmpl,
			.sgl = cmd->se_cmd.t_data_sg,
			.nents = cmd->se_cmd.t_data_nents,
			.offset = off,
			.len = len,
			.max_pdu = conn->conn_ops->MaxRecvDataSegmentLength,
			.datasn = datasn,
			.status = status,
			.walk = walk,
		};

		if (status) {
			iscsit_increment_maxcmdsn(cmd, conn->sess);
			cmd->stat_sn = conn->stat_sn++;
		}
		iscsit_build_datain_pdu(cmd, conn, &datain,
					(struct iscsi_data_rsp *)tmpl, status);
		n = cxe_ops(c)->send_burst(c, &b);
		if (n < 0)
			return n;
		datasn += n;
		off += len;
	}
	cmd->data_sn = datasn;
	cmd->read_data_done = total;
	dr->dr_complete = DATAIN_COMPLETE_NORMAL;
	return 0;
}

static int cxe_xmit_pdu(struct iscsit_conn *conn, struct iscsit_cmd *cmd,
			struct iscsi_datain_req *dr, const void *buf, u32 buf_len)
{
	struct cxe_conn *c = conn->context;
	const struct iscsi_datain *datain = dr ? buf : NULL;
	struct iscsi_sess_ops *so = conn->sess->sess_ops;
	struct cxe_data src = { .buf = (void *)buf, .len = buf_len };
	int ret;

	/* the planner's model: ERL 0, PDUs and sequences in order */
	if (datain && c->iso && !datain->offset && !dr->recovery && !dr->dr_complete &&
	    cmd->se_cmd.data_length > datain->length && !so->ErrorRecoveryLevel &&
	    so->DataSequenceInOrder && so->DataPDUInOrder &&
	    cxe_iso_fits(c, so->MaxBurstLength))
		return cxe_send_datain_bursts(c, cmd, dr, datain->length);
	if (datain)
		src = (struct cxe_data) {
			.sgl = cmd->se_cmd.t_data_sg,
			.nents = cmd->se_cmd.t_data_nents,
			.offset = datain->offset,
			.len = datain->length,
			.walk = cxe_task_walk(cmd),
		};
	ret = cxe_ops(c)->send_pdu(c, cmd->pdu, &src);
	if (ret)
		pr_debug("xmit to %pISpc failed: %d\n", &c->peer, ret);
	return ret;
}

/* ---- responses sent inline ---------------------------------------------- */

/*
 * A command's Data-In and status go out from the thread that completed it
 * (LIO's completion work, or the RX thread) instead of waking LIO's TX
 * thread, when that thread has nothing waiting and the send will not wait
 * for the peer. LIO builds and sends them the same way in both
 * (iscsit_response_queue()); c->tx_lock around every send keeps PDUs
 * whole and StatSN in wire order.
 *
 * Not inline:
 * - where sleeping is not allowed, or the kernel cannot say (preemptible()
 *   is 0 without a preempt count): a send may sleep;
 * - at ERL > 0: connection recovery moves commands to another connection
 *   and LIO's close does not wait for them; at ERL 0 the close waits until
 *   every command of the connection is released (target_wait_for_cmds()
 *   in iscsit_release_commands_from_conn()), which a command being sent
 *   inline is not, so no such send outlives the connection;
 * - with anything queued for the TX thread, which keeps its order;
 * - once a Logout response is on its way (cxe_response_queue());
 * - on an adapter without tx_room (a chip's credit wait may be long).
 */

/* The bytes a command's response puts on the wire, at most */
static u32 cxe_rsp_bytes(struct iscsit_conn *conn, struct iscsit_cmd *cmd)
{
	u32 data = cmd->i_state == ISTATE_SEND_DATAIN ?
		   cmd->se_cmd.data_length : 0;
	u32 pdus = data / conn->conn_ops->MaxRecvDataSegmentLength + 2;

	return data + TRANSPORT_SENSE_BUFFER + 2 +
	       pdus * (ISCSI_HDR_LEN + 2 * ISCSI_CRC_LEN + 3);
}

static bool cxe_inline_allowed(struct cxe_conn *c, struct iscsit_conn *conn)
{
	return preemptible() && cxe_ops(c)->tx_room &&
	       READ_ONCE(c->logged_in) && !READ_ONCE(c->no_inline) &&
	       conn->conn_state == TARG_CONN_STATE_LOGGED_IN &&
	       !conn->sess->sess_ops->ErrorRecoveryLevel &&
	       list_empty_careful(&conn->immed_queue_list) &&
	       list_empty_careful(&conn->response_queue_list);
}

/* iscsit_queue_data_in and iscsit_queue_status (good status only) */
static int cxe_queue_rsp(struct iscsit_conn *conn, struct iscsit_cmd *cmd)
{
	struct cxe_conn *c = conn->context;
	int ret;

	if (!c || !cxe_inline_allowed(c, conn) || !mutex_trylock(&c->tx_lock))
		return iscsit_queue_rsp(conn, cmd);
	/* room is checked under the lock: no other send fills it meanwhile */
	if (c->no_inline || !cxe_ops(c)->tx_room(c, cxe_rsp_bytes(conn, cmd))) {
		mutex_unlock(&c->tx_lock);
		return iscsit_queue_rsp(conn, cmd);
	}
	ret = iscsit_response_queue(conn, cmd, cmd->i_state);
	if (ret < 0)
		WRITE_ONCE(c->no_inline, true);
	mutex_unlock(&c->tx_lock);
	if (ret < 0) {
		/* what the TX thread does when a send fails: the connection goes */
		pr_debug("inline send to %pISpc failed: dropping the connection\n",
			 &c->peer);
		iscsit_cause_connection_reinstatement(conn, 0);
		return 0;
	}
	/* 1: the immediate queue has work; its producer woke the TX thread */
	cxe_cstat(c, CXE_STAT_TX_INLINE, 1);
	return 0;
}

static int cxe_immediate_queue(struct iscsit_conn *conn, struct iscsit_cmd *cmd,
			       int state)
{
	struct cxe_conn *c = conn->context;
	int ret;

	mutex_lock(&c->tx_lock);
	ret = iscsit_immediate_queue(conn, cmd, state);
	mutex_unlock(&c->tx_lock);
	return ret;
}

static int cxe_response_queue(struct iscsit_conn *conn, struct iscsit_cmd *cmd,
			      int state)
{
	struct cxe_conn *c = conn->context;
	int ret;

	mutex_lock(&c->tx_lock);
	if (state != ISTATE_SEND_LOGOUTRSP) {
		ret = iscsit_response_queue(conn, cmd, state);
		mutex_unlock(&c->tx_lock);
		return ret;
	}
	/*
	 * After a Logout response LIO ends the connection or the session from
	 * this thread (iscsit_logout_post_handler()) and may wait there for
	 * the close: the lock is not held across that, and from here on the
	 * TX thread is the only sender.
	 */
	WRITE_ONCE(c->no_inline, true);
	mutex_unlock(&c->tx_lock);
	return iscsit_response_queue(conn, cmd, state);
}

/* ---- DDP tags -------------------------------------------------------------- */

static void cxe_get_r2t_ttt(struct iscsit_conn *conn, struct iscsit_cmd *cmd,
			    struct iscsi_r2t *r2t)
{
	struct cxe_conn *c = conn->context;
	u32 itt = be32_to_cpu((__force __be32)cmd->init_task_tag);
	bool place = c->ddp && cxe_ddp_fits(c, cmd, r2t->offset, r2t->xfer_len);
	struct cxe_data win = {
		.sgl = cmd->se_cmd.t_data_sg,
		.nents = cmd->se_cmd.t_data_nents,
		.offset = r2t->offset,
		.len = r2t->xfer_len,
	};

	r2t->targ_xfer_tag = cxe_ops(c)->ddp_reserve(c, iscsit_priv_cmd(cmd),
						     itt, &win, place);
}

/*
 * LIO frees the task's pages after this: the fencing rule (adapter.h) says
 * no tag of it may place a byte once ddp_release returns. An adapter that
 * returns with a tag still live has broken it; abort the connection so that
 * no further PDU is placed, and say so (a write already in flight cannot be
 * stopped from here). Without a connection (released already) the tags
 * were fenced by conn_release.
 */
static void cxe_unmap_cmd(struct iscsit_conn *conn, struct iscsit_cmd *cmd)
{
	struct cxe_conn *c = conn->context;
	struct cxe_task *task = iscsit_priv_cmd(cmd);

	if (!c)
		return;
	if (task->ddp_live) {
		cxe_ops(c)->ddp_release(c, task);
		if (WARN_ONCE(task->ddp_live,
			      "%pISpc: adapter %s released ITT 0x%08x with %u DDP tags live: aborting the connection\n",
			      &c->peer, c->adapter->name,
			      be32_to_cpu((__force __be32)cmd->init_task_tag),
			      task->ddp_live)) {
			/* a cached buffer could still be written: freed with c */
			iscsit_cause_connection_reinstatement(conn, 0);
			return;
		}
	}
	/* after the fence: no tag places into a buffer the cache takes back */
	cxe_dcache_return(c, task);
}

/* ---- receive ------------------------------------------------------------- */

/*
 * Refuse a PDU of a task LIO holds and end the connection: a Reject (which
 * takes no reference of the task) and an error that drops the connection.
 * Never iscsit_reject_cmd() for such a task: it drops a reference of a task
 * it leaves WRITE_PENDING on the connection's list, and the close then
 * frees that task a second time (a WARN in iscsit_release_cmd, then a
 * refcount underflow).
 */
static int cxe_refuse_task_pdu(struct iscsit_conn *conn, u8 reason, u8 *hdr,
			       int err)
{
	iscsit_add_reject(conn, reason, hdr);
	return err;
}

static int cxe_handle_scsi_cmd(struct cxe_conn *c, struct iscsit_cmd *cmd, u8 *hdr)
{
	struct iscsit_conn *conn = c->conn;
	struct iscsi_scsi_req *req = (struct iscsi_scsi_req *)hdr;
	u32 dlen = ntoh24(req->dlength);
	int rc, cmdsn_ret;
	bool bad;

	rc = iscsit_setup_scsi_cmd(conn, cmd, hdr);
	if (rc < 0)
		/* rejected (and queued for response): keep the stream in step */
		return cxe_discard(c, dlen);
	cxe_dcache_lend(c, cmd);

	rc = iscsit_process_scsi_cmd(conn, cmd, req);
	if (rc < 0)
		return rc;
	if (!dlen)
		return 0;
	if (rc > 0) {
		/* early CHECK CONDITION: the immediate data is not wanted */
		rc = cxe_discard(c, dlen);
		if (rc)
			return rc;
		bad = false;
	} else {
		u32 room = cmd->se_cmd.data_length - cmd->write_data_done;

		rc = cxe_recv_place(c, cmd, cmd->write_data_done,
				    min(room, dlen), dlen, &bad);
		if (rc)
			return rc;
		if (bad) {
			pr_err("%pISpc: immediate data digest error at ERL 0: dropping the connection\n",
			       &c->peer);
			return cxe_refuse_task_pdu(conn, ISCSI_REASON_DATA_DIGEST_ERROR,
						   hdr, -EBADMSG);
		}
		cmd->write_data_done += min(room, dlen);
		if (cmd->write_data_done == cmd->se_cmd.data_length) {
			spin_lock_bh(&cmd->istate_lock);
			cmd->cmd_flags |= ICF_GOT_LAST_DATAOUT;
			cmd->i_state = ISTATE_RECEIVED_LAST_DATAOUT;
			spin_unlock_bh(&cmd->istate_lock);
		}
	}

	cmdsn_ret = iscsit_sequence_cmd(conn, cmd, hdr, req->cmdsn);
	if (cmdsn_ret == CMDSN_ERROR_CANNOT_RECOVER)
		return -EPROTO;
	if (cmd->sense_reason || cmdsn_ret == CMDSN_LOWER_THAN_EXP)
		target_put_sess_cmd(&cmd->se_cmd);
	else if (cmd->unsolicited_data)
		iscsit_set_unsolicited_dataout(cmd);
	return 0;
}

/*
 * A Data-Out that completes a range placed by the adapter (CXE_RX_RANGE,
 * adapter.h): its task's data is taken as received from the range's start
 * up to this PDU, whose own checks LIO then makes as for any Data-Out
 * (DataSN, offset, burst length), as mainline cxgbit does for a T6's
 * completion. *start: where the range begins, for the tag's check. The
 * range must be exactly the task's next bytes, in a session whose
 * Data-Outs come in order, outside any recovery: else the connection
 * ends, rather than a task taking bytes nobody sent.
 */
static int cxe_data_out_range(struct cxe_conn *c, struct iscsi_data *d,
			      u32 *start)
{
	struct iscsit_conn *conn = c->conn;
	u32 off = be32_to_cpu(d->offset), skipped;
	struct iscsit_cmd *cmd;

	cmd = iscsit_find_cmd_from_itt(conn, d->itt);
	if (!cmd || !conn->sess->sess_ops->DataPDUInOrder ||
	    !conn->sess->sess_ops->DataSequenceInOrder ||
	    cmd->cmd_flags & ICF_WITHIN_COMMAND_RECOVERY ||
	    cmd->write_data_done != c->rx_range_start ||
	    c->rx_range_start >= off) {
		pr_err("%pISpc: Data-Out ITT 0x%08x offset %u completes a placed range from %u that is not the task's next data: dropping the connection\n",
		       &c->peer, be32_to_cpu((__force __be32)d->itt), off,
		       c->rx_range_start);
		return -EPROTO;
	}
	*start = c->rx_range_start;
	skipped = off - c->rx_range_start;
	atomic_long_add(skipped, &conn->sess->rx_data_octets);
	cxe_cstat(c, CXE_STAT_RANGE_BYTES, skipped);
	cmd->write_data_done = off;
	cmd->next_burst_len += skipped;
	cmd->data_sn = be32_to_cpu(d->datasn);
	return 0;
}

static int cxe_handle_data_out(struct cxe_conn *c, u8 *hdr)
{
	struct iscsi_data *d = (struct iscsi_data *)hdr;
	u32 dlen = ntoh24(d->dlength), off = be32_to_cpu(d->offset);
	u32 start = off;
	struct iscsit_cmd *cmd;
	bool bad, held, taken = false;
	int rc;

	/*
	 * As LIO: a Data-Out without data is ignored, whatever its TTT (a
	 * DDP window check would refuse a zero-length piece of it).
	 */
	if (!dlen)
		return 0;
	if (c->rx_flags & CXE_RX_RANGE) {
		rc = cxe_data_out_range(c, d, &start);
		if (rc)
			return rc;
	}
	if (d->ttt != cpu_to_be32(ISCSI_RESERVED_TAG) &&
	    !cxe_ops(c)->ddp_check(c, be32_to_cpu(d->ttt),
					be32_to_cpu((__force __be32)d->itt), start,
					off + dlen - start,
					d->flags & ISCSI_FLAG_CMD_FINAL)) {
		cxe_cstat(c, CXE_STAT_DDP_TAG_ERR, 1);
		pr_err("%pISpc: Data-Out ITT 0x%08x TTT 0x%08x offset %u length %u matches no R2T: dropping the connection\n",
		       &c->peer, be32_to_cpu((__force __be32)d->itt),
		       be32_to_cpu(d->ttt), off, dlen);
		return -EPROTO;
	}
	/* dlen is within MaxXmitDataSegmentLength: cxe_get_rx_pdu checked it */
	cmd = iscsit_find_cmd_from_itt_or_dump(c->conn, d->itt, dlen);
	if (!cmd)
		return cxe_ops(c)->data_taken(c);	/* LIO read it */
	/*
	 * Data past the task's transfer length: LIO would answer with
	 * iscsit_reject_cmd() (see cxe_refuse_task_pdu()). The checks LIO
	 * makes before this one (data for a task that is not a write) stay
	 * LIO's; a task that has all its data is not found above.
	 */
	if (cmd->data_direction == DMA_TO_DEVICE &&
	    (u64)off + dlen > cmd->se_cmd.data_length) {
		pr_err("%pISpc: Data-Out ITT 0x%08x offset %u length %u past the transfer length %u: dropping the connection\n",
		       &c->peer, be32_to_cpu((__force __be32)d->itt), off, dlen,
		       cmd->se_cmd.data_length);
		return cxe_refuse_task_pdu(c->conn, ISCSI_REASON_BOOKMARK_INVALID,
					   hdr, -EPROTO);
	}
	/* LIO checks DataSN, offsets and lengths; it dumps what it refuses */
	rc = __iscsit_check_dataout_hdr(c->conn, hdr, cmd, dlen, &taken);
	if (rc < 0)
		return rc;
	if (!taken)
		return cxe_ops(c)->data_taken(c);	/* refused, payload read by LIO */
	rc = cxe_recv_place(c, cmd, off, min(cmd->se_cmd.data_length, dlen),
			    dlen, &bad);
	if (rc)
		return rc;
	if (!bad)
		return iscsit_check_dataout_payload(cmd, d, false);
	/*
	 * A data digest error ends the connection at ERL 0, where LIO would
	 * answer it with iscsit_reject_cmd() (see cxe_refuse_task_pdu()).
	 */
	if (!c->conn->sess->sess_ops->ErrorRecoveryLevel) {
		pr_err("%pISpc: Data-Out ITT 0x%08x offset %u data digest error at ERL 0: dropping the connection\n",
		       &c->peer, be32_to_cpu((__force __be32)d->itt), off);
		return cxe_refuse_task_pdu(c->conn, ISCSI_REASON_DATA_DIGEST_ERROR,
					   hdr, -EBADMSG);
	}
	/*
	 * Above ERL 0 LIO asks for the data again with a recovery R2T, but
	 * first rejects the PDU with iscsit_reject_cmd(), which drops a
	 * reference of the task it keeps going: the task gets one for it.
	 * If LIO gives the task up instead, that reference goes back.
	 */
	held = !!cmd->se_cmd.se_tfo;
	if (held)
		kref_get(&cmd->se_cmd.cmd_kref);
	rc = iscsit_check_dataout_payload(cmd, d, true);
	if (rc < 0 && held)
		target_put_sess_cmd(&cmd->se_cmd);
	return rc;
}

/* A data segment into a new NUL-terminated buffer (ping data, text keys). */
static int cxe_recv_kbuf(struct cxe_conn *c, u32 dlen, u8 **out)
{
	u8 *buf = kzalloc(dlen + 1, GFP_KERNEL);
	bool bad;
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = cxe_recv_buf(c, buf, dlen, dlen, &bad);
	if (rc || bad) {
		kfree(buf);
		return rc ? rc : -EBADMSG;
	}
	*out = buf;
	return 0;
}

static int cxe_handle_nop_out(struct cxe_conn *c, struct iscsit_cmd *cmd, u8 *hdr)
{
	struct iscsi_nopout *nop = (struct iscsi_nopout *)hdr;
	u32 dlen = ntoh24(nop->dlength);
	u8 *ping;
	int rc;

	rc = iscsit_setup_nop_out(c->conn, cmd, nop);
	if (rc < 0)
		return rc;
	if (dlen) {
		rc = cxe_recv_kbuf(c, dlen, &ping);
		if (rc)
			return rc;
		if (cmd) {
			cmd->buf_ptr = ping;
			cmd->buf_ptr_size = dlen;
		} else {
			kfree(ping);
		}
	}
	return iscsit_process_nop_out(c->conn, cmd, nop);
}

static int cxe_handle_text(struct cxe_conn *c, struct iscsit_cmd *cmd, u8 *hdr)
{
	struct iscsi_text *t = (struct iscsi_text *)hdr;
	u32 dlen = ntoh24(t->dlength);
	u8 *text;
	int rc;

	rc = iscsit_setup_text_cmd(c->conn, cmd, t);
	if (rc < 0)
		return rc;
	if (dlen) {
		rc = cxe_recv_kbuf(c, dlen, &text);
		if (rc)
			return rc;
		cmd->text_in_ptr = text;
	}
	return iscsit_process_text_cmd(c->conn, cmd, t);
}

/*
 * Would LIO refuse this Data/R2T SNACK on the task it names? At ERL > 0 it
 * refuses one that asks for DataSNs (R2TSNs) the task never sent, or ones
 * a DataACK SNACK already acknowledged, and does so with
 * iscsit_reject_cmd(), which drops a reference of that task while the task
 * is still listed and in use: it is later freed twice (the fix in LIO
 * itself is upstream/0004-*.patch). Such a SNACK is refused here instead,
 * the task left alone. The test is LIO's own (iscsit_handle_r2t_snack(),
 * iscsit_handle_recovery_datain()), read in the same RX thread LIO would
 * read it in.
 */
static bool cxe_snack_would_reject_task(struct iscsit_conn *conn,
					const u8 *hdr)
{
	const struct iscsi_snack *s = (const struct iscsi_snack *)hdr;
	u32 begrun = be32_to_cpu(s->begrun);
	u32 runlength = be32_to_cpu(s->runlength);
	struct iscsit_cmd *cmd;

	if (!conn->sess->sess_ops->ErrorRecoveryLevel ||
	    (s->flags & ISCSI_FLAG_SNACK_TYPE_MASK) != ISCSI_FLAG_SNACK_TYPE_DATA)
		return false;
	cmd = iscsit_find_cmd_from_itt(conn, s->itt);
	if (!cmd)
		return false;
	if ((cmd->cmd_flags & ICF_GOT_DATACK_SNACK) &&
	    begrun <= cmd->acked_data_sn)
		return true;
	switch (cmd->data_direction) {
	case DMA_TO_DEVICE:
		return runlength && begrun + runlength > cmd->r2t_sn;
	case DMA_FROM_DEVICE:
		return (cmd->se_cmd.transport_state & CMD_T_COMPLETE) &&
		       begrun + runlength > cmd->data_sn - 1;
	default:
		return false;
	}
}

/*
 * Is a SCSI Command's CmdSN outside [ExpCmdSN, MaxCmdSN]? RFC 7143 4.2.2.1:
 * the target silently ignores it, and such a command never reaches LIO.
 * LIO ignores it too, in iscsit_sequence_cmd(), but only after
 * transport_generic_new_cmd() has made a WRITE with immediate data
 * TRANSPORT_WRITE_PENDING; it then drops the command's reference and
 * leaves it on the connection's list for the TX thread to remove. A
 * connection that closes before that completes the command as
 * WRITE_PENDING (iscsit_release_commands_from_conn()), the completion
 * drops the last reference while the command is still listed, and it is
 * freed twice (a WARN in iscsit_release_cmd(), then a use-after-free).
 * upstream/ has no patch for LIO for this one yet (upstream/README.md
 * lists those it has). ExpCmdSN and MaxCmdSN only grow: a command this
 * finds outside the window, LIO would find outside it too.
 */
static bool cxe_cmdsn_outside_window(struct cxe_conn *c, const u8 *hdr)
{
	const struct iscsi_scsi_req *req = (const struct iscsi_scsi_req *)hdr;
	struct iscsit_session *sess = c->conn->sess;
	u32 sn = be32_to_cpu(req->cmdsn), exp, max;

	if (req->opcode & ISCSI_OP_IMMEDIATE)
		return false;	/* not in the window's order: LIO rejects it */
	mutex_lock(&sess->cmdsn_mutex);
	exp = sess->exp_cmd_sn;
	max = (u32)atomic_read(&sess->max_cmd_sn);
	mutex_unlock(&sess->cmdsn_mutex);
	if (!iscsi_sna_lt(sn, exp) && !iscsi_sna_gt(sn, max))
		return false;
	pr_info_ratelimited("%pISpc: CmdSN 0x%08x outside [0x%08x, 0x%08x]: ignored\n",
			    &c->peer, sn, exp, max);
	return true;
}

static int cxe_rx_pdu(struct cxe_conn *c, u8 *hdr)
{
	struct iscsit_conn *conn = c->conn;
	struct iscsi_hdr *h = (struct iscsi_hdr *)hdr;
	u8 op = h->opcode & ISCSI_OPCODE_MASK;
	struct iscsit_cmd *cmd = NULL;
	int ret;

	if (conn->sess->sess_ops->SessionType &&
	    op != ISCSI_OP_TEXT && op != ISCSI_OP_LOGOUT && op != ISCSI_OP_NOOP_OUT) {
		pr_err("%pISpc: opcode 0x%02x in a discovery session\n", &c->peer, op);
		iscsit_add_reject(conn, ISCSI_REASON_PROTOCOL_ERROR, hdr);
		return -EPROTO;
	}

	switch (op) {
	case ISCSI_OP_SCSI_CMD:
		if (cxe_cmdsn_outside_window(c, hdr))
			return cxe_discard(c, cxe_bhs_dlen(hdr));
		fallthrough;
	case ISCSI_OP_SCSI_TMFUNC:
	case ISCSI_OP_LOGOUT:
		cmd = iscsit_allocate_cmd(conn, TASK_INTERRUPTIBLE);
		if (!cmd)
			return -ENOMEM;
		if (op == ISCSI_OP_SCSI_CMD)
			return cxe_handle_scsi_cmd(c, cmd, hdr);
		if (op == ISCSI_OP_SCSI_TMFUNC)
			return iscsit_handle_task_mgt_cmd(conn, cmd, hdr);
		ret = iscsit_handle_logout_cmd(conn, cmd, hdr);
		if (ret > 0)
			wait_for_completion_timeout(&conn->conn_logout_comp,
						    SECONDS_FOR_LOGOUT_COMP * HZ);
		return ret;
	case ISCSI_OP_SCSI_DATA_OUT:
		return cxe_handle_data_out(c, hdr);
	case ISCSI_OP_NOOP_OUT:
		if (h->ttt == cpu_to_be32(ISCSI_RESERVED_TAG)) {
			cmd = iscsit_allocate_cmd(conn, TASK_INTERRUPTIBLE);
			if (!cmd)
				return -ENOMEM;
		}
		return cxe_handle_nop_out(c, cmd, hdr);
	case ISCSI_OP_TEXT:
		if (h->ttt == cpu_to_be32(ISCSI_RESERVED_TAG)) {
			cmd = iscsit_allocate_cmd(conn, TASK_INTERRUPTIBLE);
			if (!cmd)
				return -ENOMEM;
			return cxe_handle_text(c, cmd, hdr);
		}
		/*
		 * A continuation: only of a Text task. LIO would take over
		 * whatever task has the ITT (a SCSI command too) and free it
		 * twice; refuse instead.
		 */
		cmd = iscsit_find_cmd_from_itt(conn, h->itt);
		if (!cmd || cmd->iscsi_opcode != ISCSI_OP_TEXT) {
			pr_err("%pISpc: Text PDU with TTT 0x%08x continues no Text task of ITT 0x%08x: dropping the connection\n",
			       &c->peer, be32_to_cpu(h->ttt),
			       be32_to_cpu((__force __be32)h->itt));
			iscsit_add_reject(conn, ISCSI_REASON_PROTOCOL_ERROR, hdr);
			return -EPROTO;
		}
		return cxe_handle_text(c, cmd, hdr);
	case ISCSI_OP_SNACK:
		if (cxe_snack_would_reject_task(conn, hdr)) {
			pr_err("%pISpc: SNACK asks task ITT 0x%08x for a run it never sent or was acknowledged: dropping the connection\n",
			       &c->peer, be32_to_cpu((__force __be32)h->itt));
			iscsit_add_reject(conn, ISCSI_REASON_BOOKMARK_INVALID, hdr);
			return -EPROTO;
		}
		return iscsit_handle_snack(conn, hdr);
	default:
		pr_err("%pISpc: unknown opcode 0x%02x: dropping the connection\n",
		       &c->peer, op);
		iscsit_add_reject(conn, ISCSI_REASON_CMD_NOT_SUPPORTED, hdr);
		return -EPROTO;
	}
}

/*
 * The connection's receive loop (LIO's RX thread). It returns when the
 * initiator closes, when LIO stops the thread, or on a protocol error,
 * after which LIO tears the connection down (ERL 0).
 */
static void cxe_rx_loop(struct iscsit_conn *conn)
{
	struct cxe_conn *c = conn->context;
	u8 hdr[ISCSI_HDR_LEN + CXE_MAX_AHS_LEN];
	/*
	 * LIO's names are the initiator's view: conn_ops->MaxRecvDataSegmentLength
	 * is what the initiator receives (our transmit limit) and
	 * MaxXmitDataSegmentLength what we declared we receive.
	 */
	u32 max_dlen = conn->conn_ops->MaxXmitDataSegmentLength;
	u32 dlen;
	u8 op;
	int ret;

	while (!kthread_should_stop()) {
		iscsit_thread_check_cpumask(conn, current, 0);
		ret = cxe_ops(c)->recv_hdr(c, hdr, &c->rx_flags);
		if (ret == -EBADMSG) {
			/* ERL 0: the lengths cannot be trusted, nor the stream */
			atomic_long_inc(&conn->sess->conn_digest_errors);
			pr_err("%pISpc: header digest error: dropping the connection\n",
			       &c->peer);
			goto drop;
		}
		if (ret == -ECONNABORTED)
			goto drop;	/* the adapter refused the stream */
		if (ret)
			return;
		if (conn->conn_state == TARG_CONN_STATE_IN_LOGOUT)
			return;
		op = cxe_bhs_opcode(hdr);
		dlen = cxe_bhs_dlen(hdr);
		if (!cxe_bhs_ahs_ok(hdr)) {
			pr_err("%pISpc: opcode 0x%02x with a malformed AHS: dropping the connection\n",
			       &c->peer, op);
			iscsit_add_reject(conn, ISCSI_REASON_PROTOCOL_ERROR, hdr);
			goto drop;
		}
		if (!cxe_bhs_cdb_ok(hdr)) {
			pr_err("%pISpc: SCSI Command whose CDB claims %u bytes, more than it carries: dropping the connection\n",
			       &c->peer, 8u + hdr[CXE_BHS_CDB_OFF + 7]);
			iscsit_add_reject(conn, ISCSI_REASON_PROTOCOL_ERROR, hdr);
			goto drop;
		}
		if (!cxe_bhs_data_ok(hdr)) {
			pr_err("%pISpc: SCSI Command without the W bit but with %u data bytes: dropping the connection\n",
			       &c->peer, dlen);
			iscsit_add_reject(conn, ISCSI_REASON_PROTOCOL_ERROR, hdr);
			goto drop;
		}
		if (!cxe_opcode_from_initiator(op) || dlen > max_dlen) {
			pr_err("%pISpc: opcode 0x%02x with %u data bytes (limit %u): dropping the connection\n",
			       &c->peer, op, dlen, max_dlen);
			iscsit_add_reject(conn, cxe_opcode_from_initiator(op) ?
					  ISCSI_REASON_PROTOCOL_ERROR :
					  ISCSI_REASON_CMD_NOT_SUPPORTED, hdr);
			goto drop;
		}
		ret = cxe_rx_pdu(c, hdr);
		if (ret == -EPROTO || ret == -EBADMSG)
			goto drop;
		if (ret < 0)
			return;
	}
	return;
drop:
	cxe_cstat(c, CXE_STAT_DROPS, 1);
}

/*
 * Once the receive loop is over LIO tears the connection down and waits
 * for every command of it, a command being sent inline too. A send that
 * waits for room the peer never makes (the room tx_room saw gone to
 * memory pressure) would hold that up for good: LIO's signal wakes its TX
 * thread, not the completing thread. So no response goes inline any more,
 * and a socket-based connection's stream is shut, which fails such a
 * send at once. A Logout response is on the wire by then: the loop ends
 * after LIO's wait for it.
 */
static void cxe_get_rx_pdu(struct iscsit_conn *conn)
{
	struct cxe_conn *c = conn->context;

	cxe_rx_loop(conn);
	WRITE_ONCE(c->no_inline, true);
	cxe_dcache_close(&c->dcache);
	if (cxe_ops(c)->tx_room && conn->sock)
		kernel_sock_shutdown(conn->sock, SHUT_RDWR);
}

static enum target_prot_op cxe_get_sup_prot_ops(struct iscsit_conn *conn)
{
	return TARGET_PROT_NORMAL;
}

struct iscsit_transport cxe_transport = {
	.name			= CXE_DRV_NAME,
	.transport_type		= ISCSI_CXGBIT,
	.rdma_shutdown		= false,
	.owner			= THIS_MODULE,
	.priv_size		= sizeof(struct cxe_task),
	.iscsit_setup_np	= cxe_setup_np,
	.iscsit_accept_np	= cxe_accept_np,
	.iscsit_free_np		= cxe_free_np,
	.iscsit_free_conn	= cxe_free_conn,
	.iscsit_get_login_rx	= cxe_get_login_rx,
	.iscsit_put_login_tx	= cxe_put_login_tx,
	.iscsit_immediate_queue	= cxe_immediate_queue,
	.iscsit_response_queue	= cxe_response_queue,
	.iscsit_get_dataout	= iscsit_build_r2ts_for_cmd,
	.iscsit_queue_data_in	= cxe_queue_rsp,
	.iscsit_queue_status	= cxe_queue_rsp,
	.iscsit_xmit_pdu	= cxe_xmit_pdu,
	.iscsit_get_r2t_ttt	= cxe_get_r2t_ttt,
	.iscsit_get_rx_pdu	= cxe_get_rx_pdu,
	.iscsit_validate_params	= cxe_validate_params,
	.iscsit_unmap_cmd	= cxe_unmap_cmd,
	.iscsit_aborted_task	= iscsit_aborted_task,
	.iscsit_get_sup_prot_ops = cxe_get_sup_prot_ops,
};
