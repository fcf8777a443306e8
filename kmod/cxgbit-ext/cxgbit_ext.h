/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgbit-ext: iSCSI PDU-offload transport for the LIO target.
 *
 * What a backend sees of the core, with adapter.h: the shared structs
 * (adapter, connection, portal), the helpers inlined on them, and what
 * the core exports. A backend module builds against this file, adapter.h
 * and the headers of pdu/; the core's own parts share core.h as well.
 */
#ifndef CXGBIT_EXT_H
#define CXGBIT_EXT_H

#include <linux/build_bug.h>
#include <linux/configfs.h>
#include <linux/stddef.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/atomic.h>
#include <linux/sizes.h>
#include <linux/netdevice.h>
#include <linux/scatterlist.h>
#include <net/net_namespace.h>

#include "adapter.h"

#define CXE_DRV_NAME	"cxgbit_ext"
#define CXE_VERSION	"0.3.0"

struct iscsi_np;
struct iscsit_conn;
struct iscsit_cmd;
struct sock;
struct scatterlist;
struct cxe_first_login;

/* Per-adapter counters, also summed from its connections */
enum cxe_stat {
	CXE_STAT_SYN_STEERED,	/* SYNs handed to the adapter's listener */
	CXE_STAT_CONNS,		/* connections accepted */
	CXE_STAT_PDUS_RX,
	CXE_STAT_PDUS_TX,
	CXE_STAT_BYTES_PLACED,	/* write data placed straight into command pages */
	CXE_STAT_BYTES_COPIED,	/* write data that went through a bounce buffer */
	CXE_STAT_HDIGEST_ERR,
	CXE_STAT_DDIGEST_ERR,
	CXE_STAT_DDP_TAG_ERR,	/* Data-Out whose TTT is not a live DDP tag */
	CXE_STAT_DROPS,		/* connections dropped on a protocol error */
	CXE_STAT_BURSTS,	/* Data-In bursts the adapter segmented */
	CXE_STAT_BURST_PDUS,	/* Data-In PDUs those bursts became */
	CXE_STAT_RX_WAITS,	/* times RX found nothing queued and slept */
	CXE_STAT_HANDED_BACK,	/* logins given to the stock listener */
	CXE_STAT_LOGINS_HELD,	/* refusals answered here: the target was held */
	CXE_STAT_MODEL_CPLS,	/* messages a Chelsio chip handed up */
	CXE_STAT_MODEL_WRS,	/* work requests sent to a chip */
	CXE_STAT_RANGE_BYTES,	/* placed bytes a later Data-Out completed */
	CXE_STAT_TX_INLINE,	/* responses sent by the thread that completed them */
	CXE_STAT_DCACHE_HITS,	/* data buffers lent from the connection's cache */
	CXE_STAT_DCACHE_MISSES,	/* data buffers the cache had to allocate */
	CXE_STAT_WALK_STARTS,	/* walks of a command's pages begun at its start */
	CXE_STAT_LOGINS_STALLED, /* connections closed before a whole first Login request */
	CXE_STAT_PI_BLOCKS,	/* blocks whose T10-PI the adapter made, not LIO */
	CXE_STAT_PI_PASSES,	/* writes whose T10-PI took a pass of its own (pi.c) */
	CXE_STAT_PI_CHECKED,	/* read blocks whose T10-PI the PDU layer checked, not LIO */
	CXE_STAT_MAX,
};

/*
 * An adapter: what serves offloaded connections on some netdevs. Software
 * adapters honour the contract with the kernel's TCP stack on any netdev;
 * soft0 exists from module load (serving every netdev unless the
 * soft0_netdev parameter says otherwise), more are made with mkdir in
 * adapters/. The configfs item's reference count is the adapter's: each
 * connection holds one, so an adapter removed with rmdir lives on until
 * its last connection ends.
 */
struct cxe_adapter {
	struct config_group	group;
	struct list_head	node;		/* cxe_adapters */
	char			name[IFNAMSIZ];
	const struct cxe_backend *backend;	/* what it is an instance of */
	/*
	 * cxe_adapters_lock: the netdev served, by identity (ifindex within
	 * net; 0: "*" = all or "" = none), and its name as it is now
	 */
	char			netdev[IFNAMSIZ];
	int			ifindex;
	possible_net_t		net;
	/* toggles, read when a connection starts (READ_ONCE) */
	bool			ddp;
	bool			iso;
	/* per CPU, summed when read: every connection's threads bump them */
	struct cxe_stats __percpu *stats;
};

struct cxe_stats {
	u64			v[CXE_STAT_MAX];
};

static inline void cxe_stat_add(struct cxe_adapter *a, enum cxe_stat s, u64 v)
{
	this_cpu_add(a->stats->v[s], v);
}

/* ---- walks of a scatterlist (struct cxe_sg_pos, adapter.h) ---- */

/* sgl from its first byte on (struct cxe_sg_pos) */
static inline void cxe_sg_pos_init(struct cxe_sg_pos *p,
				   struct scatterlist *sgl, u32 nents)
{
	p->sgl = sgl;
	p->sg = sgl;
	p->start = 0;
	p->left = nents;
}

/*
 * p, ready to seek byte pos of sgl: from where it is, or from sgl's start
 * (true). A command's walk starts once per direction unless its data is
 * sent again, so the starts per command say that placing and sending stay
 * linear in the data (sg_walk_starts).
 */
static inline bool cxe_sg_pos_at(struct cxe_sg_pos *p,
				 struct scatterlist *sgl, u32 nents, u32 pos)
{
	if (p->sgl == sgl && pos >= p->start)
		return false;
	cxe_sg_pos_init(p, sgl, nents);
	return true;
}

/*
 * The entry after sg, which is not the list's last (the walk counts its
 * entries): sg_next() less its last-entry test, inline, as a walk takes
 * this step once per page it places or sends.
 */
static inline struct scatterlist *cxe_sg_step(struct scatterlist *sg)
{
	sg++;
	return sg_is_chain(sg) ? sg_chain_ptr(sg) : sg;
}

/* to the entry holding byte pos, at or after the current one; false: past the end */
static inline bool cxe_sg_seek(struct cxe_sg_pos *p, u32 pos)
{
	while (p->left && pos >= p->start + p->sg->length) {
		p->start += p->sg->length;
		p->sg = --p->left ? cxe_sg_step(p->sg) : NULL;
	}
	return p->left;
}

/*
 * After a seek to pos: the page holding byte pos, its offset there, and
 * how many bytes from pos on are in that page and entry.
 */
static inline struct page *cxe_sg_page(const struct cxe_sg_pos *p, u32 pos,
				       u32 *off, u32 *avail)
{
	u32 in = p->sg->offset + pos - p->start;

	*off = offset_in_page(in);
	*avail = min_t(u32, p->start + p->sg->length - pos, PAGE_SIZE - *off);
	return nth_page(sg_page(p->sg), in >> PAGE_SHIFT);
}

/* A connection's data buffer cache (dcache.c). */
#define CXE_DCACHE_MAX_PAGES	(SZ_512K / PAGE_SIZE)	/* larger: LIO's own */
struct cxe_dcache {
	struct list_head	node;		/* every connection's, for the shrinker */
	spinlock_t		lock;		/* the lists, pages and closing */
	struct list_head	lent;		/* buffers commands hold */
	struct list_head	lru;		/* cached, returned longest ago first */
	struct list_head	free[CXE_DCACHE_MAX_PAGES];	/* cached, by page count */
	unsigned int		pages;		/* cached */
	unsigned int		cap;		/* pages */
	bool			closing;
};

/*
 * Why a connection's Data-In is not cut into bursts by its adapter (ISO):
 * the adapter's toggle when it was accepted, or its session's parameters,
 * for which the burst planner has no model (transport.c).
 */
enum cxe_iso_off {
	CXE_ISO_OFF_ADAPTER,	/* iso 0 on the adapter at accept */
	CXE_ISO_OFF_ERL,	/* ErrorRecoveryLevel > 0 */
	CXE_ISO_OFF_ORDER,	/* DataSequenceInOrder or DataPDUInOrder No */
};

/* One offloaded connection, as the PDU layer and its adapter share it. */
struct cxe_conn {
	struct list_head	node;		/* cxe_conns */
	struct iscsit_conn	*conn;
	struct cxe_adapter	*adapter;
	struct sockaddr_storage	peer;
	struct sockaddr_storage	local;
	bool			hdigest;
	bool			ddigest;
	bool			ddp;		/* the adapter's toggles at accept */
	bool			iso;		/* cleared at login: see iso_off */
	/*
	 * enum cxe_iso_off, set by the PDU layer: why iso is off. It sits in
	 * the padding before limits, so the layout backends build against is
	 * unchanged.
	 */
	u8			iso_off;
	/*
	 * What the adapter carrying it can do: its backend's limits unless
	 * accept narrowed them (one adapter of a backend may be smaller)
	 */
	const struct cxe_limits	*limits;
	u32			rx_flags;	/* recv_hdr's for the PDU in hand */
	u32			rx_range_start;	/* with CXE_RX_RANGE: set by recv_hdr */
	bool			answered;	/* a Login response went out */
	bool			logged_in;	/* the last Login response went out */
	/*
	 * Every send after login: LIO's TX thread and a response sent inline
	 * (transport.c, "Responses sent inline") take it, so PDUs do not
	 * interleave and StatSN goes out in the order LIO hands it out.
	 */
	struct mutex		tx_lock;
	/*
	 * No more inline sends: set, never cleared, after a Logout response
	 * or a failed inline send (under tx_lock) and when the receive loop
	 * ends (without it); read again under tx_lock before a send.
	 */
	bool			no_inline;
	struct cxe_dcache	dcache;
	atomic64_t		stats[CXE_STAT_MAX];
	void			*priv;		/* an adopting backend's (adopt) */
	/* the PDU layer's: the first Login request, when accept read it */
	struct cxe_first_login	*first;
};

/*
 * A backend keeps its own per-connection state in a struct that begins
 * with the shared one and gets to it with container_of(); the PDU layer
 * allocates (zeroed) and frees conn_size bytes. This states the size and
 * that the shared part comes first.
 */
#define CXE_CONN_SIZE(type, member) \
	(sizeof(type) + BUILD_BUG_ON_ZERO(offsetof(type, member)))

static inline void cxe_cstat(struct cxe_conn *c, enum cxe_stat s, u64 v)
{
	atomic64_add(v, &c->stats[s]);
	cxe_stat_add(c->adapter, s, v);
}

/*
 * A connection's scratch buffer *buf of *cap bytes, grown to len when
 * shorter (process context); NULL when it cannot be, the old one kept
 */
static inline u8 *cxe_buf_grow(u8 **buf, u32 *cap, u32 len)
{
	u8 *n;

	if (len <= *cap)
		return *buf;
	n = kvmalloc(len, GFP_KERNEL);
	if (!n)
		return NULL;
	kvfree(*buf);
	*buf = n;
	*cap = len;
	return n;
}

/* The ops of the backend a connection's adapter is an instance of */
static inline const struct cxe_adapter_ops *cxe_ops(const struct cxe_conn *c)
{
	return c->adapter->backend->ops;
}

/*
 * An adapter's reference count is its configfs item's (see struct
 * cxe_adapter): dropping one needs nothing of the control interface.
 */
static inline void cxe_adapter_put(struct cxe_adapter *a)
{
	config_item_put(&a->group.cg_item);
}

/*
 * One offloaded network portal: what LIO's np "cxgbit" attribute created.
 * The backend listens for it in its own way (the software adapter on a
 * socket of its own, hardware on its ports) and keeps what that takes in
 * priv, from listen to unlisten.
 */
struct cxe_np {
	struct list_head	node;		/* the PDU layer's portals */
	struct iscsi_np		*np;
	const struct cxe_backend *backend;	/* the backend that listens */
	struct sockaddr_storage	addr;
	struct net		*net;		/* its netdevs take its logins */
	void			*priv;		/* the backend's */
	/* accept waits here for a backend to say it may have a connection */
	wait_queue_head_t	accept_wq;
	atomic_t		ready;		/* times a backend said so */
};

/* a backend may have a connection for the portal: accept looks again (any context) */
void cxe_np_ready(struct cxe_np *cnp);

/*
 * What the core exports to backend modules (EXPORT_SYMBOL_GPL), beside
 * cxe_np_ready() above and the pure PDU helpers of pdu/ (CXE_EXPORT).
 * backend.c: register and unregister (process context, may sleep).
 */
int cxe_backend_register(const struct cxe_backend *b);
void cxe_backend_unregister(const struct cxe_backend *b);
/* adapters.c: the portal's address, NULL for a wildcard; its netdev (RCU held) */
const void *cxe_portal_ip(const struct cxe_np *cnp);
struct net_device *cxe_portal_netdev(const struct cxe_np *cnp, const void *ip);
/* an adapter of a backend with devices of its own (DEVICES), not listed */
struct cxe_adapter *cxe_adapter_add(const char *name,
				    const struct cxe_backend *b);
/* a's counters, summed over CPUs, "[prefix ]name value" a line, in size */
size_t cxe_adapter_counters_emit(const struct cxe_adapter *a,
				 const char *prefix, char *buf, size_t size);
/*
 * configfs.c: an adapter of b (CXE_BACKEND_SOCKETS) serving netdev (a
 * name, "*" or ""), in adapters/ with a software adapter's attributes
 * until cxe_adapter_unpublish(); an ERR_PTR when the name is taken or bad
 * or the netdev is served already. Process context.
 */
struct cxe_adapter *cxe_adapter_publish(const char *name,
					const struct cxe_backend *b,
					const char *netdev);
void cxe_adapter_unpublish(struct cxe_adapter *a);
/*
 * pi.c: bytes [pos, pos + len) of a task's data, at va, just placed
 * (struct cxe_pi_dout); any context
 */
void cxe_pi_placed(struct cxe_pi_dout *pi, u32 pos, const void *va, u32 len);
/*
 * adapters/soft/cm.c: the software path's per-connection ops, for a
 * CXE_BACKEND_SOCKETS backend to start its own from (listen, unlisten,
 * accept and adopt are NULL)
 */
extern const struct cxe_adapter_ops cxe_sock_conn_ops;

#endif /* CXGBIT_EXT_H */
