/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgb4 backend: a Chelsio adapter as the backend's device glue (dev.c)
 * sees it, and what the glue asks of one. A real adapter (main.c) does
 * it through cxgb4; a modelled one (modeldev.c) through the chip model,
 * so that the glue's own code runs where no Chelsio adapter exists. The
 * glue never calls cxgb4 itself.
 *
 * What the glue does today: for each offloaded portal, a listening server
 * on every adapter that serves the portal's address (listen.h keeps each
 * server's life), and the answers the chip sends about them. It accepts
 * no connection yet, so only a modelled adapter serves portals: a real
 * one would take the portal's SYNs into the chip with nothing behind
 * them, and keeps its portals on the software adapter until the backend
 * carries connections (docs/cxgb4.md).
 */
#ifndef CXE_CXGB4_DEV_H
#define CXE_CXGB4_DEV_H

#include <linux/kref.h>
#include <linux/netdevice.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>

#include "limits.h"

struct cxe_c4dev;

struct cxe_c4dev_ops {
	/* cxgb4_alloc_stid(): an STID for a server of family, or < 0 */
	int (*alloc_stid)(struct cxe_c4dev *d, int family);
	void (*free_stid)(struct cxe_c4dev *d, u32 stid, int family);
	/*
	 * cxgb4_create_server{,6}() and cxgb4_remove_server(), in process
	 * context: 0 when the request went to the chip, whose answer then
	 * comes to cxe_c4dev_rx().
	 */
	int (*create_server)(struct cxe_c4dev *d, u32 stid,
			     const struct sockaddr_storage *addr);
	int (*remove_server)(struct cxe_c4dev *d, u32 stid, bool ipv6);
	/* whether nd is one of its ports (rcu_read_lock held) */
	bool (*has_port)(struct cxe_c4dev *d, const struct net_device *nd);
	/* the last reference is gone */
	void (*release)(struct cxe_c4dev *d);
};

struct cxe_c4dev {
	struct list_head	node;		/* the glue's adapters */
	struct kref		ref;		/* the list's, each server's */
	const struct cxe_c4dev_ops *ops;
	const char		*name;		/* PCI name, or the model's */
	const char		*kind;		/* "T5", "T6", "T6model", ... */
	u32			nports;
	struct cxe_cxgb4_limits	limits;
	bool			up;		/* CXGB4_STATE_UP, not since
						 * RECOVERY or DETACH
						 */
	bool			serves;		/* may listen for portals */
	spinlock_t		lock;		/* its servers' states */
	struct xarray		servers;	/* STID -> struct cxe_c4srv */
	u32			unwaited;	/* answers nobody waited for */
	u32			stray;		/* answers no server expects */
	atomic64_t		cpl_dropped;	/* messages nothing takes yet */
};

/* ref 1 (the list's) and the lock; the owner sets the rest */
void cxe_c4dev_init(struct cxe_c4dev *d, const struct cxe_c4dev_ops *ops);
/* listed: portals set up from now on may listen on it */
void cxe_c4dev_add(struct cxe_c4dev *d);
/*
 * Unlisted when it has no server (-EBUSY otherwise); the caller then
 * drops the list's reference
 */
int cxe_c4dev_del(struct cxe_c4dev *d);
void cxe_c4dev_put(struct cxe_c4dev *d);
/*
 * At unload, every adapter of ops: unlisted, whatever late answers left
 * of its servers dropped (no portal is left to wait on one)
 */
void cxe_c4dev_drop_all(const struct cxe_c4dev_ops *ops);
/* one CPL message from the adapter (the RSS header stripped); any context */
void cxe_c4dev_rx(struct cxe_c4dev *d, const void *cpl, size_t len);

/* main.c: the real adapters, through cxgb4's ULD slot */
int cxe_c4real_init(void);
void cxe_c4real_exit(void);

/*
 * modeldev.c: modelled adapters, made and removed through configfs
 * (cxgb4_models). At unload: stop answering, then drop them.
 */
void cxe_c4model_stop(void);
void cxe_c4model_exit(void);
ssize_t cxe_c4model_show(char *page);
ssize_t cxe_c4model_store(const char *page, size_t count);
void cxe_c4model_netdev_gone(const struct net_device *nd);

#endif /* CXE_CXGB4_DEV_H */
