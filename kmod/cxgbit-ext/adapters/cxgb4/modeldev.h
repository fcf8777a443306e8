/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgb4 backend: modelled adapters. Each stands in for a Chelsio T5/T6
 * below the device glue (dev.h), its one port a netdev of the host, so
 * that the glue's code runs where no Chelsio adapter exists.
 *
 * Made and removed by writing the control interface's cxgb4_models file:
 *   add NAME chip=t5|t6 netdev=IF [answer_ms=N] [table=N]
 *   unplug NAME
 *   del NAME
 * and read back from it, one model a line. A model with servers or
 * connections is not removed (-EBUSY). Unplugging is a surprise removal,
 * as a PCI removal under cxgb4 takes a live adapter (cxgb4's DETACH):
 * the model stops answering and placing at once, resets its host
 * connections (a pulled chip would send nothing; the host's TCP here
 * resets), and the glue hears that the adapter is gone; the model is
 * then removed with del once the glue let go of it. Its port is a netdev by name, as a
 * software adapter's (the writer's namespace first); when that netdev
 * goes the model has no port left and serves nothing new.
 *
 * The server table is the chip model's (model/ulp_lsn.c): its answers
 * come back to the glue's receive entry from a work item, after
 * answer_ms, as a chip's come on its receive queue.
 *
 * The TCP engine: the model's TCP is the host's own. Each server has a
 * kernel listening socket in the port's namespace, bound to the portal's
 * address on an ephemeral port; the glue steers the SYNs of the port to
 * it (syn_listener). Each connection the host's TCP completes there
 * becomes a TID of the model, reported as CPL_PASS_ACCEPT_REQ (after the
 * handshake: model/README.md says what that changes). From then on the
 * connection model (model/ulp_conn.c) takes the glue's messages on the
 * TID and says which connection messages the chip sends; the receive
 * model (model/ulp_rx.c) turns the socket's bytes into the chip's iSCSI
 * messages, within a receive window the glue reopens with
 * CPL_RX_DATA_ACK; the transmit model (model/ulp_tx.c) turns the glue's
 * work requests into the bytes the socket sends, and returns their
 * credits in CPL_FW4_ACK. The model's page pod memory (model/ppod.c) is
 * the adapter's: the glue writes it with FW_ULPTX_WRs on a connection's
 * flow, which the transmit work carries out in order, and the receive
 * model places a Data-Out's data into the pages the pods its TTT names
 * give (by their physical addresses, the model's stand-in for bus
 * addresses), under the lock a write takes, so that a clear written is a
 * fence. Per connection, one work item sends and one receives, each in
 * order; a mutex keeps their messages to the glue in order.
 */
#ifndef CXE_CXGB4_MODELDEV_H
#define CXE_CXGB4_MODELDEV_H

#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/skbuff.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "dev.h"
#include "../../model/ppod.h"
#include "../../model/ulp_conn.h"
#include "../../model/ulp_lsn.h"
#include "../../model/ulp_rx.h"
#include "../../model/ulp_tx.h"

#define CXE_C4MODEL_NAME	16

/* TIDs of a model's connections, 1.. (0 is never one) */
#define CXE_C4MODEL_TIDS	1024
/* bytes a connection receives before the glue returns them: the chip's window */
#define CXE_C4MODEL_RCV_WIN	(256 * 1024)
/* a connection's transmit credits, as cxgb4_lld_info reports a T5/T6's */
#define CXE_C4MODEL_WR_CRED	128
#define CXE_C4MODEL_BACKLOG	128
/* bytes one receive reads from the socket, at most */
#define CXE_C4MODEL_RBUF	(64 * 1024)
/* the wire bytes of one work request, at most (a runaway guard) */
#define CXE_C4MODEL_OUT_MAX	(64 * 1024 * 1024)
/* its page pod memory: 16384 pods (1 MiB) name 256 MiB of buffers */
#define CXE_C4MODEL_PODS	16384
#define CXE_C4MODEL_POD_BASE	0x100000	/* its address in adapter memory */
/*
 * its ULP_RX_ISCSI_TAGMASK: as wide as its pod indices need, as libcxgb's
 * cxgbi_tagmask_set() sizes it (fls(16384) = 15 index bits, the colour,
 * the no-pods bit)
 */
#define CXE_C4MODEL_TAGMASK	(1U << (15 + CXE_PPOD_TAG_COLOR_BITS))

struct cxe_c4model;

/* A server's listening socket */
struct cxe_c4model_srv {
	struct cxe_c4model	*m;
	u32			stid;
	struct sockaddr_storage	addr;		/* the portal's */
	struct socket		*sock;
	bool			listening;	/* opened, not being removed
						 * (m->lock)
						 */
	struct work_struct	accept;
};

/* A connection: a TID of the model over a socket of the host's TCP */
struct cxe_c4model_conn {
	struct cxe_c4model	*m;
	u32			tid;
	struct socket		*sock;
	struct sockaddr_storage	peer;		/* for the log */
	void			(*orig_data_ready)(struct sock *sk);
	void			(*orig_state_change)(struct sock *sk);

	spinlock_t		lock;		/* what follows, to mu */
	struct cxe_model_conn	mc;
	struct sk_buff_head	txq;
	u32			rcv_win;	/* bytes it may still receive */
	bool			rx_on;		/* CPL_PASS_ESTABLISH went */
	bool			fin_sent;	/* our FIN went to the socket */
	bool			eof;		/* the peer's FIN read */
	bool			released;	/* release_tid: nothing more to the glue */
	bool			reset_at_end;	/* released before it was over */
	bool			dead;		/* ending: no work queued */
	bool			release_pending; /* released, not judged yet */

	/* the works' own; their messages to the glue go in its order */
	struct mutex		mu;
	struct cxe_model_rx	rx;
	struct cxe_model_tx	tx;
	struct cxe_model_txcred	cred;
	u8			*data_msg;
	u8			*rbuf;
	u8			*gbuf;		/* a request's gathered payload */
	u8			*out;		/* its wire bytes */
	u32			gcap;
	u32			ocap;

	/* CPL_PASS_ACCEPT_REQ, for the receive work to tell first */
	u8			syn[CXE_MODEL_ACCEPT_REQ_MAX];
	u32			syn_len;

	struct work_struct	tx_work;
	struct work_struct	rx_work;
	struct work_struct	release_work;
	struct work_struct	abort_work;	/* our abort, ahead of the queue */
	struct list_head	halt_node;
};

struct cxe_c4model {
	struct cxe_c4dev	d;
	struct list_head	node;		/* cxe_c4models */
	char			name[CXE_C4MODEL_NAME];
	char			netdev[IFNAMSIZ];
	possible_net_t		net;		/* of its port, */
	int			ifindex;	/* 0: it has none */
	u32			answer_ms;
	/* the table, stids, servers, TIDs, conns, nconns, refused, stopped */
	spinlock_t		lock;
	struct cxe_model_lsn	table;
	unsigned long		stids[BITS_TO_LONGS(CXE_MODEL_LSN_STIDS)];
	struct cxe_c4model_srv	*srv[CXE_MODEL_LSN_STIDS];
	unsigned long		tids[BITS_TO_LONGS(CXE_C4MODEL_TIDS)];
	struct xarray		conns;		/* TID -> cxe_c4model_conn */
	u32			nconns;		/* TIDs taken */
	wait_queue_head_t	gone;		/* nconns fell */
	u32			refused;	/* requests the chip refused */
	atomic_t		refused_msgs;	/* connection messages refused */
	atomic_t		bad_releases;	/* TIDs released too early */
	/* pod writes carried out holding credits, and after the flow ended */
	atomic_t		pod_writes;
	atomic_t		pod_writes_late;
	bool			stopped;	/* no more answers: unloading */
	bool			unplugged;	/* gone by surprise: calls fail */
	struct delayed_work	answer;
	/*
	 * the pod memory; writes and placement under ppm_lock, as the
	 * pods the glue holds (its allocator, as libcxgb's is a real one's)
	 */
	spinlock_t		ppm_lock;
	struct cxe_model_ppm	ppm;
	unsigned long		*pod_map;
	u8			*pod_color;	/* each pod's, as libcxgb keeps */
};

/* the models' connection and listener works (made with the first model) */
extern struct workqueue_struct *cxe_c4model_wq;

static inline struct cxe_c4model *to_model(struct cxe_c4dev *d)
{
	return container_of(d, struct cxe_c4model, d);
}

/* modeldev.c: the servers' sockets */
/* the peer sees a RST (tcp_abort() sends one from any synchronized state) */
void cxe_c4model_rst(struct socket *sock);
/* a socket gets TCP's own data_ready back, and no user data of ours */
void cxe_c4model_tcp_callbacks(struct socket *sock);

/* modelconn.c: the connections (the TCP engine) */
/* a server's accept queue has connections: each becomes a TID */
void cxe_c4model_accept_work(struct work_struct *work);
/* the glue's device calls for connections (dev.h) */
int cxe_c4model_send(struct cxe_c4dev *d, u32 tid, struct sk_buff *skb);
void cxe_c4model_release_tid(struct cxe_c4dev *d, u32 tid, bool ipv6);
/* the connection ends (process context; its caller took it out of the map) */
void cxe_c4model_conn_end(struct cxe_c4model_conn *c, bool reset);

#endif /* CXE_CXGB4_MODELDEV_H */
