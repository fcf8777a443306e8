// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext backend registry: the implementations of the adapter
 * contract (adapter.h), this module's own and those of other modules
 * (cxgbit_ext_cxgb4.ko), which register and unregister at any time. The
 * PDU layer and the control interface ask it for a backend by what they
 * need of one (the flags of struct cxe_backend), never by a backend's
 * name or ops table, so that a new backend is one more
 * cxe_backend_register() call. It also keeps what listens for what (the
 * portals LIO has set up and the backends listening for each), and the
 * limits of a backend's hardware as the PDU layer keeps to them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/errno.h>
#include <linux/sysfs.h>
#include <linux/scatterlist.h>
#include <net/sock.h>
#include <target/iscsi/iscsi_target_core.h>
#include <target/iscsi/iscsi_transport.h>

#include "iscsi_target_parameters.h"

#include "core.h"

#define CXE_MAX_BACKENDS	4

/*
 * Two locks. cxe_listen_lock says what listens for what: portals are set
 * up and freed under it (cxe_portal_listen(), before cxe_portals_lock), and
 * a backend registering or unregistering holds it while it listens for
 * every portal or stops, so that each portal is listened for once by each
 * backend and unlistened before the backend goes; listen and unlisten run
 * under it and may sleep. cxe_backends_lock guards the array only, for as
 * long as a copy of it takes: no backend's code runs under it. Every other
 * call into a backend holds a reference of its module (cxe_backends_get).
 */
static DEFINE_MUTEX(cxe_listen_lock);
static DEFINE_MUTEX(cxe_backends_lock);
static const struct cxe_backend *cxe_backends[CXE_MAX_BACKENDS];
/* the offloaded portals LIO has set up, in that order (the portals file) */
static LIST_HEAD(cxe_portals);
static DEFINE_MUTEX(cxe_portals_lock);

/*
 * Those of the registered backends that have every one of flags, at most
 * n, in the order they registered; with hold, only those whose module is
 * not going, each with a reference of it.
 */
static int cxe_backends_pick(const struct cxe_backend **out, int n,
			     unsigned long flags, bool hold)
{
	int i, got = 0;

	mutex_lock(&cxe_backends_lock);
	for (i = 0; i < ARRAY_SIZE(cxe_backends) && got < n; i++)
		if (cxe_backends[i] &&
		    (cxe_backends[i]->flags & flags) == flags &&
		    (!hold || try_module_get(cxe_backends[i]->owner)))
			out[got++] = cxe_backends[i];
	mutex_unlock(&cxe_backends_lock);
	return got;
}

/* Held so: their code stays until cxe_backends_put() */
int cxe_backends_get(const struct cxe_backend **out, int n,
		     unsigned long flags)
{
	return cxe_backends_pick(out, n, flags, true);
}

void cxe_backends_put(const struct cxe_backend **b, int n)
{
	while (n-- > 0)
		module_put(b[n]->owner);
}

/* b listens for cnp on its devices; a portal works whether it does or not */
static void cxe_backend_listen(const struct cxe_backend *b, struct cxe_np *cnp)
{
	int ret = b->ops->listen(cnp);

	if (ret)
		pr_warn("portal %pISpc: backend %s does not listen for it (%d)\n",
			&cnp->addr, b->name, ret);
}

/* A backend registering: it listens for every portal (listen lock held) */
static void cxe_np_listen_all(const struct cxe_backend *b)
{
	struct cxe_np *cnp;

	mutex_lock(&cxe_portals_lock);
	list_for_each_entry(cnp, &cxe_portals, node)
		cxe_backend_listen(b, cnp);
	mutex_unlock(&cxe_portals_lock);
}

/* A backend unregistering: it stops listening for each (listen lock held) */
static void cxe_np_unlisten_all(const struct cxe_backend *b)
{
	struct cxe_np *cnp;

	mutex_lock(&cxe_portals_lock);
	list_for_each_entry_reverse(cnp, &cxe_portals, node)
		b->ops->unlisten(cnp);
	mutex_unlock(&cxe_portals_lock);
}

/* Why b may not register, or NULL */
static const char *cxe_backend_refused(const struct cxe_backend *b)
{
	/*
	 * Portals and the adapters made by name hold their backend for as
	 * long as they live, which no module reference covers: those are
	 * this module's own. A module's backend has devices of its own.
	 */
	if ((b->flags & (CXE_BACKEND_PORTALS | CXE_BACKEND_MKDIR)) &&
	    b->owner != THIS_MODULE)
		return "a module's backend serves its own devices only (DEVICES or SOCKETS)";
	/* one that can be found (flags) is asked to listen, or for connections */
	if (!b->name || (b->flags && !b->ops))
		return "no name or ops";
	if ((b->flags & (CXE_BACKEND_PORTALS | CXE_BACKEND_MKDIR)) &&
	    b->conn_size < sizeof(struct cxe_conn))
		return "no connection size";
	if ((b->flags & CXE_BACKEND_DEVICES) &&
	    (!b->ops->listen || !b->ops->unlisten))
		return "no listen or unlisten";
	if ((b->flags & CXE_BACKEND_SOCKETS) &&
	    (!b->ops->adopt || !b->ops->conn_release))
		return "no adopt or conn_release";
	if (b->ops && b->ops->accept &&
	    (b->conn_size < sizeof(struct cxe_conn) || !b->ops->conn_release))
		return "no connection size or conn_release";
	return NULL;
}

int cxe_backend_register(const struct cxe_backend *b)
{
	const char *why;
	int i, ret = 0, free = -1;

	if (b->contract != CXE_BACKEND_CONTRACT) {
		pr_err("backend %s: built for contract version %u, cxgbit_ext %s has version %u: not registered\n",
		       b->name ?: "?", b->contract, CXE_VERSION,
		       CXE_BACKEND_CONTRACT);
		return -EPROTO;
	}
	why = cxe_backend_refused(b);
	if (why) {
		pr_err("backend %s: %s: not registered\n", b->name ?: "?", why);
		return -EINVAL;
	}
	mutex_lock(&cxe_listen_lock);
	mutex_lock(&cxe_backends_lock);
	for (i = 0; i < ARRAY_SIZE(cxe_backends); i++) {
		if (cxe_backends[i] && !strcmp(cxe_backends[i]->name, b->name))
			ret = -EEXIST;
		else if (!cxe_backends[i] && free < 0)
			free = i;
	}
	if (!ret && free < 0)
		ret = -ENOSPC;
	if (!ret)
		cxe_backends[free] = b;
	mutex_unlock(&cxe_backends_lock);
	if (!ret && (b->flags & CXE_BACKEND_DEVICES))
		cxe_np_listen_all(b);
	mutex_unlock(&cxe_listen_lock);
	if (ret == -EEXIST)
		pr_err("backend %s: registered already\n", b->name);
	else if (ret)
		pr_err("backend %s: all %d backend slots in use\n", b->name,
		       CXE_MAX_BACKENDS);
	else
		pr_info("backend %s registered (contract version %u)\n",
			b->name, b->contract);
	return ret;
}
EXPORT_SYMBOL_GPL(cxe_backend_register);

/*
 * After it returns the registry hands b to nobody, and none of the
 * portals' listens on b's devices is left; whoever holds a reference of
 * b's module (its connections, until they end) may still call it.
 */
void cxe_backend_unregister(const struct cxe_backend *b)
{
	bool found = false;
	int i;

	mutex_lock(&cxe_listen_lock);
	mutex_lock(&cxe_backends_lock);
	for (i = 0; i < ARRAY_SIZE(cxe_backends); i++) {
		if (cxe_backends[i] == b) {
			cxe_backends[i] = NULL;
			found = true;
		}
	}
	mutex_unlock(&cxe_backends_lock);
	if (found && (b->flags & CXE_BACKEND_DEVICES))
		cxe_np_unlisten_all(b);
	mutex_unlock(&cxe_listen_lock);
}
EXPORT_SYMBOL_GPL(cxe_backend_unregister);

/*
 * The first backend registered that has every one of flags; NULL if none.
 * One of this module's own (cxe_backend_refused()), so it outlives the
 * caller's use.
 */
const struct cxe_backend *cxe_backend_find(unsigned long flags)
{
	const struct cxe_backend *b;

	return cxe_backends_pick(&b, 1, flags, false) ? b : NULL;
}

/*
 * The backends that listen for a portal on their own devices, beside the
 * portal's (CXE_BACKEND_DEVICES): after it listens, and before it stops.
 * cxe_listen_lock held: none registers or unregisters meanwhile.
 */
static void cxe_backends_listen(struct cxe_np *cnp)
{
	const struct cxe_backend *b[CXE_MAX_BACKENDS];
	int i, n;

	lockdep_assert_held(&cxe_listen_lock);
	n = cxe_backends_pick(b, ARRAY_SIZE(b), CXE_BACKEND_DEVICES, false);
	for (i = 0; i < n; i++)
		cxe_backend_listen(b[i], cnp);
}

static void cxe_backends_unlisten(struct cxe_np *cnp)
{
	const struct cxe_backend *b[CXE_MAX_BACKENDS];
	int n;

	lockdep_assert_held(&cxe_listen_lock);
	n = cxe_backends_pick(b, ARRAY_SIZE(b), CXE_BACKEND_DEVICES, false);
	while (n-- > 0)
		b[n]->ops->unlisten(cnp);
}

/*
 * A portal set up: its backend listens for it, then every backend with
 * devices of its own, each once however they register meanwhile; then
 * it is listed. 0, or the error of its backend's listen.
 */
int cxe_portal_listen(struct cxe_np *cnp)
{
	int ret;

	mutex_lock(&cxe_listen_lock);
	ret = cnp->backend->ops->listen(cnp);
	if (!ret) {
		cxe_backends_listen(cnp);
		mutex_lock(&cxe_portals_lock);
		list_add_tail(&cnp->node, &cxe_portals);
		mutex_unlock(&cxe_portals_lock);
	}
	mutex_unlock(&cxe_listen_lock);
	return ret;
}

/* A portal freed: unlisted, then unlistened in the reverse order */
void cxe_portal_unlisten(struct cxe_np *cnp)
{
	mutex_lock(&cxe_listen_lock);
	mutex_lock(&cxe_portals_lock);
	list_del(&cnp->node);
	mutex_unlock(&cxe_portals_lock);
	cxe_backends_unlisten(cnp);
	cnp->backend->ops->unlisten(cnp);
	mutex_unlock(&cxe_listen_lock);
}

/*
 * fn for each portal in the order they were set up, until it returns
 * nonzero (that value). fn may not sleep for long: setup waits.
 */
int cxe_portals_each(int (*fn)(const struct cxe_np *cnp, void *arg), void *arg)
{
	const struct cxe_np *cnp;
	int ret = 0;

	mutex_lock(&cxe_portals_lock);
	list_for_each_entry(cnp, &cxe_portals, node) {
		ret = fn(cnp, arg);
		if (ret)
			break;
	}
	mutex_unlock(&cxe_portals_lock);
	return ret;
}

/*
 * Each backend's counters of the adapters not under adapters/
 * (counters_read), one after another: their length; with buf NULL the
 * size to allocate.
 */
ssize_t cxe_backends_counters_read(void *buf, size_t size)
{
	const struct cxe_backend *b[CXE_MAX_BACKENDS];
	size_t len = 0;
	ssize_t got;
	int i, n;

	n = cxe_backends_get(b, ARRAY_SIZE(b), 0);
	for (i = 0; i < n; i++) {
		if (!b[i]->counters_read)
			continue;
		got = b[i]->counters_read(buf ? (char *)buf + len : NULL,
					  buf ? size - len : 0);
		if (got > 0)
			len += got;
	}
	cxe_backends_put(b, n);
	return len;
}

void cxe_backends_reset_handed_back(const char *target)
{
	const struct cxe_backend *b[CXE_MAX_BACKENDS];
	int i, n;

	n = cxe_backends_get(b, ARRAY_SIZE(b), 0);
	for (i = 0; i < n; i++)
		if (b[i]->reset_handed_back)
			b[i]->reset_handed_back(target);
	cxe_backends_put(b, n);
}

/* The words the tools know the offloads by (enum cxe_cap, adapter.h) */
static const char *const cxe_cap_names[CXE_CAP_MAX] = {
	[CXE_CAP_HCRC]	= "hcrc",
	[CXE_CAP_DCRC]	= "dcrc",
	[CXE_CAP_DDP]	= "ddp",
	[CXE_CAP_ISO]	= "iso",
	[CXE_CAP_RXAGG]	= "rxagg",
	[CXE_CAP_T10PI]	= "t10pi",
};

/*
 * The words of caps (BIT(enum cxe_cap)) in enum cxe_cap's order, each
 * preceded by sep but the first, appended to page from offset at.
 */
ssize_t cxe_caps_show(unsigned long caps, const char *sep, char *page,
		      ssize_t at)
{
	ssize_t len = 0;
	int i;

	for (i = 0; i < CXE_CAP_MAX; i++)
		if (caps & BIT(i))
			len += sysfs_emit_at(page, at + len, "%s%s",
					     len ? sep : "", cxe_cap_names[i]);
	return len;
}

/*
 * The backends file: one line per backend, in the order they registered,
 * "name on|off [why [detail...]] caps=w,w,..." (struct cxe_backend's
 * show_state decides on or off and why).
 */
ssize_t cxe_backend_show_all(char *page)
{
	const struct cxe_backend *b[CXE_MAX_BACKENDS];
	ssize_t len = 0;
	int i, n;

	n = cxe_backends_get(b, ARRAY_SIZE(b), 0);
	for (i = 0; i < n; i++) {
		len += sysfs_emit_at(page, len, "%s", b[i]->name);
		if (b[i]->show_state)
			len += b[i]->show_state(page, len);
		else
			len += sysfs_emit_at(page, len, " on");
		len += sysfs_emit_at(page, len, " caps=");
		len += cxe_caps_show(b[i]->caps, ",", page, len);
		len += sysfs_emit_at(page, len, "\n");
	}
	cxe_backends_put(b, n);
	return len;
}

/* ---- the backend's limits ------------------------------------------------ */

/*
 * What the adapter's hardware cannot go beyond (struct cxe_limits), kept
 * here and nowhere else in the module:
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

int cxe_validate_params(struct iscsit_conn *conn)
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
void cxe_limit_send(struct cxe_conn *c)
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
bool cxe_iso_fits(const struct cxe_conn *c, u32 mbl)
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
bool cxe_ddp_fits(const struct cxe_conn *c, struct iscsit_cmd *cmd,
		  u32 off, u32 len)
{
	const struct cxe_limits *l = cxe_limits(c);

	if (len < l->ddp_min_len)
		return false;
	return l->ddp_align <= 1 ||
	       cxe_sgl_aligned(cmd->se_cmd.t_data_sg, cmd->se_cmd.t_data_nents,
			       off, len, l->ddp_align);
}

