// SPDX-License-Identifier: GPL-2.0-only
/*
 * Does LIO have a TPG of a target behind an offloaded portal? Asked of a
 * login before LIO reads it (portal.c), so that one LIO would refuse here
 * and serve on its stock portal goes there without LIO logging a failure
 * that did not happen. LIO's own lookup (iscsit_get_tpg_from_np) is not
 * exported; its configuration is, in its configfs tree, and the answer is
 * read from there as LIO's lookup reads it from its lists: an enabled TPG
 * of the target (tpgt_N/enable) with a portal at the address whose offload
 * is on (tpgt_N/np/<address>/cxgbit).
 *
 * The tree is read by a worker the asking login thread waits for, never by
 * the login thread itself: removing a portal or a TPG holds the directory
 * locks of the tree while LIO stops that thread, so a login thread waiting
 * on such a lock would never stop. LIO's stop interrupts the wait instead,
 * and the worker finishes on its own once the removal is through. When the
 * answer is not known (interrupted, configfs not mounted, a read failed),
 * LIO decides as it reads the login.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/fs.h>
#include <linux/inet.h>
#include <linux/in6.h>
#include <linux/namei.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <target/iscsi/iscsi_target_core.h>

#include "core.h"

#define CXE_LIO_ROOT		"/sys/kernel/config/target/iscsi"
#define CXE_TPG_NAMES		64	/* directory entries read at a time */
#define CXE_TPG_NAME_LEN	80	/* "tpgt_65535", "[v6%scope]:port" */
#define CXE_TPG_PATH_LEN	(sizeof(CXE_LIO_ROOT) + ISCSI_IQN_LEN + 2 * CXE_TPG_NAME_LEN + 32)
#define CXE_TPG_WAIT		(5 * HZ)

struct cxe_tpg_query {
	struct work_struct	work;
	struct completion	done;
	refcount_t		ref;	/* the asker's and the worker's */
	struct sockaddr_storage	addr;
	int			found;	/* 1, 0, or -errno: not known */
	char			target[ISCSI_IQN_LEN];
	char			path[CXE_TPG_PATH_LEN];
	char			tpgs[CXE_TPG_NAMES][CXE_TPG_NAME_LEN];
	char			nps[CXE_TPG_NAMES][CXE_TPG_NAME_LEN];
};

static struct workqueue_struct *cxe_tpg_wq;

/* A directory's entries whose names start with prefix */
struct cxe_dir_names {
	struct dir_context	ctx;
	const char		*prefix;
	char			(*names)[CXE_TPG_NAME_LEN];
	int			n;
	bool			overflow;
};

static bool cxe_dir_actor(struct dir_context *ctx, const char *name, int len,
			  loff_t off, u64 ino, unsigned int type)
{
	struct cxe_dir_names *d = container_of(ctx, struct cxe_dir_names, ctx);
	size_t plen = strlen(d->prefix);

	/* "." and ".." are no TPG or portal */
	if (type != DT_DIR || name[0] == '.' || len < plen ||
	    strncmp(name, d->prefix, plen))
		return true;
	if (d->n == CXE_TPG_NAMES || len >= CXE_TPG_NAME_LEN) {
		d->overflow = true;
		return false;
	}
	memcpy(d->names[d->n], name, len);
	d->names[d->n][len] = '\0';
	d->n++;
	return true;
}

/* The subdirectories of path named prefix...: how many, or -errno */
static int cxe_dir_read(const char *path, const char *prefix,
			char (*names)[CXE_TPG_NAME_LEN])
{
	struct cxe_dir_names d = {
		.ctx.actor = cxe_dir_actor, .prefix = prefix, .names = names,
	};
	struct file *f;
	int ret;

	f = filp_open(path, O_RDONLY | O_DIRECTORY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	ret = iterate_dir(f, &d.ctx);
	filp_close(f, NULL);
	if (ret)
		return ret;
	return d.overflow ? -E2BIG : d.n;
}

/* An attribute that reads 0 or 1: which, or -errno */
static int cxe_attr_flag(const char *path)
{
	char buf[4] = {};
	loff_t pos = 0;
	struct file *f;
	ssize_t n;

	f = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_read(f, buf, sizeof(buf) - 1, &pos);
	filp_close(f, NULL);
	if (n < 0)
		return n;
	return buf[0] == '1';
}

/*
 * Does a portal directory's name ("ip:port", "[ip6]:port", as LIO parses
 * it) name addr? 1 or 0; -EINVAL for a name not parsed here, which must
 * not pass for another address's
 */
static int cxe_portal_is(const char *name, const struct sockaddr_storage *addr)
{
	char buf[CXE_TPG_NAME_LEN], *ip = buf, *port;
	struct sockaddr_storage ss = {};
	const struct sockaddr_in6 *a6 = (const void *)addr, *s6 = (const void *)&ss;
	const struct sockaddr_in *a4 = (const void *)addr, *s4 = (const void *)&ss;

	strscpy(buf, name, sizeof(buf));
	if (buf[0] == '[') {
		port = strstr(buf, "]:");
		if (!port)
			return -EINVAL;
		ip = buf + 1;
		*port = '\0';
		port += 2;
	} else {
		port = strrchr(buf, ':');
		if (!port)
			return -EINVAL;
		*port++ = '\0';
	}
	if (inet_pton_with_scope(&init_net, AF_UNSPEC, ip, port, &ss))
		return -EINVAL;
	if (ss.ss_family != addr->ss_family)
		return 0;
	if (ss.ss_family == AF_INET)
		return s4->sin_port == a4->sin_port &&
		       s4->sin_addr.s_addr == a4->sin_addr.s_addr;
	return s6->sin6_port == a6->sin6_port &&
	       ipv6_addr_equal(&s6->sin6_addr, &a6->sin6_addr);
}

/* Has tpg (a directory under the target's) the portal, offloaded? */
static int cxe_tpg_has(struct cxe_tpg_query *q, const char *tpg)
{
	int i, n, ret;

	snprintf(q->path, sizeof(q->path), CXE_LIO_ROOT "/%s/%s/enable",
		 q->target, tpg);
	ret = cxe_attr_flag(q->path);
	if (ret <= 0)
		return ret;
	snprintf(q->path, sizeof(q->path), CXE_LIO_ROOT "/%s/%s/np",
		 q->target, tpg);
	n = cxe_dir_read(q->path, "", q->nps);
	for (i = 0; i < n; i++) {
		ret = cxe_portal_is(q->nps[i], &q->addr);
		if (ret < 0)
			return ret;
		if (!ret)
			continue;
		snprintf(q->path, sizeof(q->path), CXE_LIO_ROOT "/%s/%s/np/%s/cxgbit",
			 q->target, tpg, q->nps[i]);
		return cxe_attr_flag(q->path);
	}
	return n < 0 ? n : 0;
}

static void cxe_tpg_query_put(struct cxe_tpg_query *q)
{
	if (refcount_dec_and_test(&q->ref))
		kvfree(q);
}

/* Is LIO's tree there (configfs mounted, LIO loaded)? */
static bool cxe_lio_tree(void)
{
	struct path p;

	if (kern_path(CXE_LIO_ROOT, LOOKUP_DIRECTORY, &p))
		return false;
	path_put(&p);
	return true;
}

static void cxe_tpg_work(struct work_struct *work)
{
	struct cxe_tpg_query *q = container_of(work, struct cxe_tpg_query, work);
	int i, n, ret = 0;

	snprintf(q->path, sizeof(q->path), CXE_LIO_ROOT "/%s", q->target);
	n = cxe_dir_read(q->path, "tpgt_", q->tpgs);
	if (n == -ENOENT && cxe_lio_tree())
		n = 0;	/* no such target */
	for (i = 0; i < n && !ret; i++)
		ret = cxe_tpg_has(q, q->tpgs[i]);
	q->found = n < 0 ? n : ret;
	complete(&q->done);
	cxe_tpg_query_put(q);
}

/*
 * 1: LIO has an enabled TPG of target with the offloaded portal at addr,
 * 0: it has none, -errno: not known. Process context; may sleep until the
 * answer or a signal.
 */
int cxe_tpg_behind(const char *target, const struct sockaddr_storage *addr)
{
	struct cxe_tpg_query *q;
	int ret;

	/* a name that would leave the target's own directory has none */
	if (!*target || strchr(target, '/') || !strcmp(target, ".") ||
	    !strcmp(target, ".."))
		return 0;
	q = kvzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	INIT_WORK(&q->work, cxe_tpg_work);
	init_completion(&q->done);
	refcount_set(&q->ref, 2);
	q->addr = *addr;
	strscpy(q->target, target, sizeof(q->target));
	queue_work(cxe_tpg_wq, &q->work);
	ret = wait_for_completion_interruptible_timeout(&q->done, CXE_TPG_WAIT);
	ret = ret > 0 ? q->found : (ret ?: -ETIMEDOUT);
	cxe_tpg_query_put(q);
	return ret;
}

int cxe_tpgs_init(void)
{
	cxe_tpg_wq = alloc_workqueue("cxgbit_ext_tpgs", WQ_UNBOUND, 0);
	return cxe_tpg_wq ? 0 : -ENOMEM;
}

/* after the last portal: queries a stopped login thread left finish first */
void cxe_tpgs_exit(void)
{
	destroy_workqueue(cxe_tpg_wq);
}
