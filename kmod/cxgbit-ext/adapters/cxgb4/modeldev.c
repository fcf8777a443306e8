// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: modelled adapters. Each stands in for a Chelsio T5/T6
 * below the device glue (dev.h), its one port a netdev of the host, so
 * that the glue's code runs where no Chelsio adapter exists: what the
 * glue asks of it goes to the chip model (model/ulp_lsn.c, the server
 * table), whose answers come back to the glue's receive entry from a
 * work item, after answer_ms, as a chip's come on its receive queue.
 *
 * Made and removed by writing the control interface's cxgb4_models file:
 *   add NAME chip=t5|t6 netdev=IF [answer_ms=N] [table=N]
 *   del NAME
 * and read back from it, one model a line. A model with servers is not
 * removed (-EBUSY). Its port is a netdev by name, as a software
 * adapter's (the writer's namespace first); when that netdev goes the
 * model has no port left and serves nothing.
 *
 * It models what the glue does with it today: the server table. It
 * takes no connection and carries no data (docs/cxgb4.md).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include "../../cxgbit_ext.h"
#include "dev.h"
#include "../../model/ulp_lsn.h"

#define CXE_C4MODEL_NAME	16

struct cxe_c4model {
	struct cxe_c4dev	d;
	struct list_head	node;		/* cxe_c4models */
	char			name[CXE_C4MODEL_NAME];
	char			netdev[IFNAMSIZ];
	possible_net_t		net;		/* of its port, */
	int			ifindex;	/* 0: it has none */
	u32			answer_ms;
	spinlock_t		lock;		/* the table, stids, refused */
	struct cxe_model_lsn	table;
	unsigned long		stids[BITS_TO_LONGS(CXE_MODEL_LSN_STIDS)];
	u32			refused;	/* requests the chip refused */
	bool			stopped;	/* no more answers: unloading */
	struct delayed_work	answer;
};

static LIST_HEAD(cxe_c4models);
static DEFINE_MUTEX(cxe_c4models_lock);	/* adds and removals */
/* the list too, for the netdev notifier (under rtnl: no mutex it may wait on) */
static DEFINE_SPINLOCK(cxe_c4models_list_lock);

static struct cxe_c4model *to_model(struct cxe_c4dev *d)
{
	return container_of(d, struct cxe_c4model, d);
}

static int cxe_c4model_alloc_stid(struct cxe_c4dev *d, int family)
{
	struct cxe_c4model *m = to_model(d);
	int stid;

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

/*
 * A request the chip took is answered at most answer_ms after it (all owed
 * answers go when the first one's time comes); one it refused, never
 */
static int cxe_c4model_request(struct cxe_c4model *m, u32 stid, bool open)
{
	int ret;

	spin_lock_bh(&m->lock);
	ret = open ? cxe_model_lsn_open(&m->table, stid) :
		     cxe_model_lsn_remove(&m->table, stid);
	if (ret) {
		m->refused++;
		pr_warn("cxgb4 model %s: server %u: %s refused: %s\n", m->name,
			stid, open ? "open" : "removal", m->table.why);
	} else if (!m->stopped) {
		queue_delayed_work(system_wq, &m->answer,
				   msecs_to_jiffies(m->answer_ms));
	}
	spin_unlock_bh(&m->lock);
	return ret ? -EIO : 0;
}

static int cxe_c4model_create_server(struct cxe_c4dev *d, u32 stid,
				     const struct sockaddr_storage *addr)
{
	return cxe_c4model_request(to_model(d), stid, true);
}

static int cxe_c4model_remove_server(struct cxe_c4dev *d, u32 stid, bool ipv6)
{
	return cxe_c4model_request(to_model(d), stid, false);
}

/* The answers the chip owes, to the glue, in order */
static void cxe_c4model_answer(struct work_struct *work)
{
	struct cxe_c4model *m = container_of(to_delayed_work(work),
					     struct cxe_c4model, answer);
	u8 msg[CXE_CPL_PASS_OPEN_RPL_LEN];
	int len;

	for (;;) {
		spin_lock_bh(&m->lock);
		len = m->stopped ? 0 : cxe_model_lsn_next(&m->table, msg, sizeof(msg));
		spin_unlock_bh(&m->lock);
		if (!len)
			return;
		cxe_c4dev_rx(&m->d, msg, len);
	}
}

static bool cxe_c4model_has_port(struct cxe_c4dev *d,
				 const struct net_device *nd)
{
	struct cxe_c4model *m = to_model(d);

	return READ_ONCE(m->ifindex) && nd->ifindex == READ_ONCE(m->ifindex) &&
	       net_eq(dev_net(nd), read_pnet(&m->net));
}

static void cxe_c4model_release(struct cxe_c4dev *d)
{
	kfree(to_model(d));
}

static const struct cxe_c4dev_ops cxe_c4model_ops = {
	.alloc_stid	= cxe_c4model_alloc_stid,
	.free_stid	= cxe_c4model_free_stid,
	.create_server	= cxe_c4model_create_server,
	.remove_server	= cxe_c4model_remove_server,
	.has_port	= cxe_c4model_has_port,
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

static int cxe_c4model_add(char *args)
{
	struct cxe_cxgb4_hw hw = {
		.page_size	= PAGE_SIZE,
		.max_frags	= MAX_SKB_FRAGS,
		.fw_vers	= CXE_CXGB4_ISO_FW,
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
	ret = cxe_cxgb4_limits(&hw, &m->d.limits);
	if (!ret) {
		ret = cxe_c4model_port(m, netdev);
		if (ret)
			pr_err("cxgb4_models: %s: %s netdev %s\n", name,
			       ret == -EEXIST ? "several network namespaces have a" :
			       "no network namespace has a", netdev);
	}
	if (ret) {
		kfree(m);
		return ret;
	}
	strscpy(m->name, name, sizeof(m->name));
	m->answer_ms = answer_ms;
	spin_lock_init(&m->lock);
	cxe_model_lsn_init(&m->table, table);
	INIT_DELAYED_WORK(&m->answer, cxe_c4model_answer);
	cxe_c4dev_init(&m->d, &cxe_c4model_ops);
	m->d.name = m->name;
	m->d.kind = hw.chip == CXE_CHIP_T5 ? "T5model" : "T6model";
	m->d.nports = 1;
	m->d.serves = true;
	m->d.up = true;

	mutex_lock(&cxe_c4models_lock);
	if (cxe_c4model_find(name)) {
		mutex_unlock(&cxe_c4models_lock);
		pr_err("cxgb4_models: %s exists\n", name);
		kfree(m);
		return -EEXIST;
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

/* no more answers: whatever is owed stays unsent */
static void cxe_c4model_halt(struct cxe_c4model *m)
{
	spin_lock_bh(&m->lock);
	m->stopped = true;
	spin_unlock_bh(&m->lock);
	cancel_delayed_work_sync(&m->answer);
}

static int cxe_c4model_del(const char *name)
{
	struct cxe_c4model *m;
	int ret;

	mutex_lock(&cxe_c4models_lock);
	m = cxe_c4model_find(name);
	if (!m) {
		mutex_unlock(&cxe_c4models_lock);
		pr_err("cxgb4_models: no model %s\n", name);
		return -ENOENT;
	}
	/* with no server left, no answer is owed */
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
	else
		ret = -EINVAL;
	if (ret == -EINVAL && strcmp(verb, "add"))
		pr_err("cxgb4_models: write 'add NAME chip=t5|t6 netdev=IF [answer_ms=N] [table=N]' or 'del NAME'\n");
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
		len += sysfs_emit_at(page, len, " answer_ms=%u table=%u servers=%u refused=%u\n",
				     m->answer_ms, m->table.cap,
				     m->table.servers, m->refused);
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

void cxe_c4model_exit(void)
{
	struct cxe_c4model *m, *tmp;

	mutex_lock(&cxe_c4models_lock);
	spin_lock_bh(&cxe_c4models_list_lock);
	list_for_each_entry_safe(m, tmp, &cxe_c4models, node)
		list_del(&m->node);
	spin_unlock_bh(&cxe_c4models_list_lock);
	mutex_unlock(&cxe_c4models_lock);
	cxe_c4dev_drop_all(&cxe_c4model_ops);
}
