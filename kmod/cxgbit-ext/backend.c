// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext backend registry: the implementations of the adapter
 * contract (adapter.h) this module carries. The PDU layer and the control
 * interface ask it for a backend by what they need of one (the flags of
 * struct cxe_backend), never by a backend's name or ops table, so that a
 * new backend is one more cxe_backend_register() call at load.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/errno.h>
#include <linux/sysfs.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/net.h>
#include <linux/sockptr.h>
#include <net/sock.h>

#include "cxgbit_ext.h"

#define CXE_MAX_BACKENDS	4

/*
 * Written only at module load and unload, while nothing else of the
 * module runs (see cxgbit_ext.h): read without a lock.
 */
static const struct cxe_backend *cxe_backends[CXE_MAX_BACKENDS];

int cxe_backend_register(const struct cxe_backend *b)
{
	int i;

	/* one that can be found (flags) is asked to listen, or for connections */
	if (!b->name || (b->flags && !b->ops) ||
	    ((b->flags & (CXE_BACKEND_PORTALS | CXE_BACKEND_MKDIR)) &&
	     b->conn_size < sizeof(struct cxe_conn))) {
		pr_err("backend %s: no name, ops or connection size: not registered\n",
		       b->name ?: "?");
		return -EINVAL;
	}
	for (i = 0; i < ARRAY_SIZE(cxe_backends); i++) {
		if (!cxe_backends[i]) {
			cxe_backends[i] = b;
			return 0;
		}
	}
	pr_err("backend %s: all %d backend slots in use\n", b->name,
	       CXE_MAX_BACKENDS);
	return -ENOSPC;
}

void cxe_backend_unregister(const struct cxe_backend *b)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(cxe_backends); i++)
		if (cxe_backends[i] == b)
			cxe_backends[i] = NULL;
}

/* The first backend registered that has every one of flags; NULL if none */
const struct cxe_backend *cxe_backend_find(unsigned long flags)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(cxe_backends); i++)
		if (cxe_backends[i] &&
		    (cxe_backends[i]->flags & flags) == flags)
			return cxe_backends[i];
	return NULL;
}

/*
 * The backends that listen for a portal on their own devices, beside the
 * portal's (CXE_BACKEND_DEVICES): after it listens, and before it stops.
 */
void cxe_backends_listen(struct cxe_np *cnp)
{
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(cxe_backends); i++) {
		if (!cxe_backends[i] ||
		    !(cxe_backends[i]->flags & CXE_BACKEND_DEVICES))
			continue;
		ret = cxe_backends[i]->ops->listen(cnp);
		if (ret)
			pr_warn("portal %pISpc: backend %s does not listen for it (%d)\n",
				&cnp->addr, cxe_backends[i]->name, ret);
	}
}

/* Those of them that take connections too, in out (at most n); how many */
int cxe_backends_accepting(const struct cxe_backend **out, int n)
{
	int i, got = 0;

	for (i = 0; i < ARRAY_SIZE(cxe_backends) && got < n; i++)
		if (cxe_backends[i] &&
		    (cxe_backends[i]->flags & CXE_BACKEND_DEVICES) &&
		    cxe_backends[i]->ops->accept)
			out[got++] = cxe_backends[i];
	return got;
}

void cxe_backends_unlisten(struct cxe_np *cnp)
{
	int i;

	for (i = ARRAY_SIZE(cxe_backends) - 1; i >= 0; i--)
		if (cxe_backends[i] &&
		    (cxe_backends[i]->flags & CXE_BACKEND_DEVICES))
			cxe_backends[i]->ops->unlisten(cnp);
}

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
int cxe_steered_listener(struct socket *sock)
{
	return cxe_sock_set_transparent(sock, 1);
}

/*
 * A connection accepted on such a listener is made what the stock
 * listener's would be: not transparent (clearing needs no capability
 * and cannot fail on an inet socket).
 */
void cxe_steered_child(struct socket *sock)
{
	cxe_sock_set_transparent(sock, 0);
}

void cxe_backends_reset_handed_back(const char *target)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(cxe_backends); i++)
		if (cxe_backends[i] && cxe_backends[i]->reset_handed_back)
			cxe_backends[i]->reset_handed_back(target);
}

/* The words the tools know the offloads by (enum cxe_cap, adapter.h) */
static const char *const cxe_cap_names[CXE_CAP_MAX] = {
	[CXE_CAP_HCRC]	= "hcrc",
	[CXE_CAP_DCRC]	= "dcrc",
	[CXE_CAP_DDP]	= "ddp",
	[CXE_CAP_ISO]	= "iso",
	[CXE_CAP_RXAGG]	= "rxagg",
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
	const struct cxe_backend *b;
	ssize_t len = 0;
	int i;

	for (i = 0; i < ARRAY_SIZE(cxe_backends); i++) {
		b = cxe_backends[i];
		if (!b)
			continue;
		len += sysfs_emit_at(page, len, "%s", b->name);
		if (b->show_state)
			len += b->show_state(page, len);
		else
			len += sysfs_emit_at(page, len, " on");
		len += sysfs_emit_at(page, len, " caps=");
		len += cxe_caps_show(b->caps, ",", page, len);
		len += sysfs_emit_at(page, len, "\n");
	}
	return len;
}
