/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgbit-ext adapter contract: what the PDU layer (transport.c) asks of an
 * adapter. The PDU layer never computes a digest, never cuts a burst into
 * PDUs and never copies write data into command pages itself; it calls
 * these. The software adapter (adapters/soft/) implements them with the
 * kernel's TCP stack on any netdev; a hardware adapter implements the same
 * ops.
 *
 * A backend (struct cxe_backend) is one implementation of the contract:
 * its name, what it can do, and its ops. Adapters are instances of a
 * backend. The PDU layer and the control interface know backends only
 * through the registry (cxgbit_ext.h), never by name. A backend may be a
 * module of its own (the cxgb4 one is), built against these headers: it
 * calls what cxgbit_ext.ko exports (EXPORT_SYMBOL_GPL) and declares the
 * contract version it was built for.
 */
#ifndef CXE_ADAPTER_H
#define CXE_ADAPTER_H

#include <linux/types.h>
#include <linux/bits.h>
#include <linux/limits.h>
#include <target/target_core_base.h>

#include "pdu/cxe_seg.h"
#include "pdu/cxe_pi.h"

struct cxe_np;
struct cxe_conn;
struct module;
struct scatterlist;
struct sock;
struct net_device;

/*
 * A place in a scatterlist, walked forward only: byte start of list sgl is
 * where entry sg begins, and left entries are there from sg on. A task
 * keeps one (struct cxe_task) for its data: its PDUs and bursts go in
 * order, however they interleave with other tasks' on the connection, so
 * that placing or sending a task's data is one walk of its list, not one
 * from the list's start per PDU. The adapter owns the walk; zeroed (sgl
 * NULL), it is at no list yet.
 */
struct cxe_sg_pos {
	struct scatterlist	*sgl;
	struct scatterlist	*sg;
	u32			start;
	u32			left;
};

/*
 * The T10 protection information a task's write data gets as it is placed
 * (pdu/cxe_pi.h), into the command's protection buffer sgl: the PDU
 * layer's, in struct cxe_task. An adapter that can make it (CXE_CAP_T10PI)
 * is given one with the data's destination and hands it every byte it
 * places there, while the bytes are still in the cache: cxe_pi_placed().
 */
struct cxe_pi_dout {
	struct cxe_pi_gen	gen;
	struct scatterlist	*sgl;
	u32			nents;
	struct cxe_sg_pos	walk;	/* in sgl */
	bool			on;	/* gen set up for the task's data */
};

/*
 * A data segment's destination (receive) or source (send): the command's
 * pages from byte offset on, or a kernel buffer.
 */
struct cxe_data {
	struct scatterlist	*sgl;	/* command pages, or NULL for buf */
	u32			nents;
	u32			offset;	/* into sgl */
	void			*buf;
	u32			len;	/* bytes that belong in sgl/buf */
	struct cxe_sg_pos	*walk;	/* the task's, with sgl; or NULL */
	struct cxe_pi_dout	*pi;	/* receive, with sgl: see above; or NULL */
	struct cxe_din		*din;	/* send, with sgl: the task's, or NULL */
};

/* One Data-In burst for the adapter to segment into PDUs. */
struct cxe_burst {
	const u8		*tmpl;	/* BHS of the burst's last PDU */
	struct scatterlist	*sgl;
	u32			nents;
	u32			offset;	/* Buffer Offset of the burst */
	u32			len;
	u32			max_pdu; /* initiator's MaxRecvDataSegmentLength */
	u32			datasn;	/* DataSN of the first PDU */
	bool			status;	/* the last PDU carries status (S) */
	struct cxe_sg_pos	*walk;	/* the task's, or NULL */
	struct cxe_din		*din;	/* the task's, or NULL */
};

/* The burst as the pure planner (pdu/cxe_seg.h) cuts it into PDUs */
static inline struct cxe_seg_burst cxe_burst_plan(const struct cxe_burst *b)
{
	return (struct cxe_seg_burst) {
		.offset		= b->offset,
		.len		= b->len,
		.max_pdu	= b->max_pdu,
		.datasn		= b->datasn,
		.status		= b->status,
	};
}

/*
 * What the PDU layer keeps per task for the adapter, in LIO's per-command
 * area (.priv_size): zeroed when LIO hands the command out.
 */
struct cxe_dbuf;
struct cxe_task {
	u32		ddp_live;	/* DDP tags of this task not yet completed */
	struct cxe_sg_pos walk;		/* the adapter's, in the task's pages */
	/* the PDU layer's own: the data buffer lent from its cache (dcache.c) */
	struct cxe_dbuf	*dbuf;
	/*
	 * and the protection information the adapter makes (pi.c), or, on a
	 * read, the PDU layer checks; the read's data digests made then
	 */
	struct cxe_pi_dout pi;
	struct cxe_din	din;
	/* LIO's execute_cmd of a shared PERSISTENT RESERVE OUT (spr.c) */
	sense_reason_t	(*spr_execute)(struct se_cmd *se_cmd);
};

struct cxe_adapter_ops {
	/* Portals: listen for the portal on this adapter's netdevs. */
	int (*listen)(struct cxe_np *cnp);
	void (*unlisten)(struct cxe_np *cnp);
	/*
	 * The next connection, if one is ready: 0, or -EAGAIN when none is
	 * (it never blocks: the portal's accept waits for every backend that
	 * takes its connections, and a backend says when one may be ready
	 * with cxe_np_ready()). c is zeroed, conn_size bytes (CXE_CONN_SIZE),
	 * c->conn set, c->limits the backend's; accept sets c->adapter (with
	 * a reference), the toggles and addresses, and points c->limits at
	 * narrower ones of its own when the adapter that took the connection
	 * has them. On an error it leaves nothing to release: c is freed as
	 * it is.
	 */
	int (*accept)(struct cxe_np *cnp, struct cxe_conn *c);
	/*
	 * A backend whose adapters ride the kernel's TCP (CXE_BACKEND_SOCKETS)
	 * takes c: a connection the software path accepted on a socket, for
	 * one of its adapters (c->adapter), before anything was read. c is the
	 * software path's (its ops, cxe_sock_conn_ops, still work on it); the
	 * backend keeps its own state in c->priv. 0, or an error: the
	 * connection is then closed (the initiator retries). Process context.
	 */
	int (*adopt)(struct cxe_conn *c);
	/*
	 * An adapter with hand_back returns from accept only connections
	 * whose first Login request is whole, so that the PDU layer reads it
	 * at accept without waiting (the software path's gate, gate.c) and
	 * decides the hand-back before LIO sees the connection. Until the
	 * first send, that request stays unread on the connection
	 * (recv_hdr/recv_data deliver it all the same). hand_back
	 * gives the connection in that state to the host's own listener for
	 * its address (LIO's stock iSCSI/TCP portal), taking back from LIO
	 * whatever it lent it (a socket); 0 when it did, and the PDU layer
	 * then forgets the connection. target: the login's TargetName, NULL
	 * for a discovery session; a login for a target that is held
	 * (holds.c) is not handed back (-EAGAIN), and one handed back is
	 * reset if its target becomes held before the stock portal answered
	 * it (reset_handed_back). Optional.
	 */
	int (*hand_back)(struct cxe_conn *c, const char *target);
	/*
	 * The connection is gone: every tag it still has is fenced (see
	 * "Fencing" below) before this returns, and c is freed after.
	 */
	void (*conn_release)(struct cxe_conn *c);
	/* Full feature phase: digests and our MaxRecvDataSegmentLength. */
	void (*set_params)(struct cxe_conn *c, bool hdigest, bool ddigest,
			   u32 max_recv_dlen);

	/*
	 * RX. recv_hdr: next BHS + AHS into hdr (room for 48 + 1020 bytes)
	 * and what the adapter says of the PDU in *flags (CXE_RX_*, below);
	 * -EBADMSG on a header digest error (the stream is lost at ERL 0),
	 * -ECONNABORTED on a stream the adapter cannot carry on (TCP urgent
	 * data, a chip's refusal): the connection is dropped.
	 * recv_data: the data segment of dlen bytes into dst (placed straight
	 * into pages when dst->sgl; bytes past dst->len are dropped), then pad
	 * and data digest; *bad on a data digest error. Data the adapter
	 * placed before the header came (hardware DDP) is not copied again.
	 * With dst->pi, every byte placed in the pages also goes to
	 * cxe_pi_placed(), in the order placed.
	 */
	int (*recv_hdr)(struct cxe_conn *c, u8 *hdr, u32 *flags);
	int (*recv_data)(struct cxe_conn *c, const struct cxe_data *dst,
			 u32 dlen, bool *bad);
	/*
	 * LIO read the data segment of the PDU just received from the
	 * socket itself (a Data-Out it refused: iscsit_dump_data_payload);
	 * a socket-based adapter, one that lent LIO its socket as
	 * conn->sock, skips it. Nonzero: the stream is lost.
	 */
	int (*data_taken)(struct cxe_conn *c);

	/* TX: one PDU (header + data + padding + digests), or a burst. */
	int (*send_pdu)(struct cxe_conn *c, const u8 *bhs,
			const struct cxe_data *src);
	int (*send_burst)(struct cxe_conn *c, const struct cxe_burst *b);
	/*
	 * Sending bytes more now would not wait for the peer (room in the
	 * send buffer, credits in hand), so that the thread that completed a
	 * command may send its response itself. Called under c->tx_lock.
	 * Optional: without it, LIO's TX thread sends every response.
	 */
	bool (*tx_room)(struct cxe_conn *c, u32 bytes);

	/*
	 * DDP: a tag (the R2T's TTT) for the window [win->offset,
	 * win->offset + win->len) of task's pages (win->sgl; with place
	 * false, when the connection's ddp toggle is off or the window is
	 * outside the backend's limits: a TTT that places nothing);
	 * check that a Data-Out may be placed by it (the tag completes with
	 * the window's last byte); release the task's tags still live. The
	 * adapter counts a task's live tags in task->ddp_live, so that a task
	 * without any (reads, NOPs, completed writes) is released at no cost:
	 * ddp_release is called only when task->ddp_live is not 0.
	 *
	 * Fencing. Hardware may write into a task's pages for as long as one
	 * of its tags is valid on the chip, whatever LIO thinks of the task;
	 * and LIO frees the pages right after it releases the task (unmap_cmd,
	 * also for a task aborted before all its data arrived). So:
	 * - ddp_release returns only once no tag of the task can place another
	 *   byte, with task->ddp_live 0. A tag the adapter cannot invalidate
	 *   there and then (placement in flight: part of a burst placed, an
	 *   invalidation the chip has not acknowledged) is fenced by aborting
	 *   the connection, and ddp_release waits until the hardware has
	 *   stopped placing for it, as mainline cxgbit aborts the connection
	 *   when it unmaps a command whose data did not all arrive.
	 * - conn_release fences every tag of the connection in the same way.
	 * The PDU layer checks the first (cxe_unmap_cmd()) and aborts the
	 * connection itself, loudly, when an adapter breaks it: that stops
	 * further placement but cannot take back a write already under way,
	 * which is why the fence is the adapter's. An adapter that places
	 * synchronously, in the thread that receives the PDU (the software
	 * one), fences a tag by clearing it under the lock ddp_check takes.
	 */
	u32 (*ddp_reserve)(struct cxe_conn *c, struct cxe_task *task, u32 itt,
			   const struct cxe_data *win, bool place);
	bool (*ddp_check)(struct cxe_conn *c, u32 ttt, u32 itt, u32 off,
			  u32 len, bool final);
	void (*ddp_release)(struct cxe_conn *c, struct cxe_task *task);
};

/*
 * What recv_hdr says of a PDU. CXE_RX_RANGE: a Data-Out whose data the
 * adapter placed, completing with it the Data-Outs of its R2T placed
 * before it that were never handed up (a T6 completes a run of them in
 * one message), from byte c->rx_range_start of the task's buffer, which
 * recv_hdr sets. The adapter vouches that every byte from there to this
 * PDU's end was placed. The PDU layer takes them as received only where
 * they are exactly the task's next bytes, Data-Outs come in order, and
 * no recovery is under way; anything else ends the connection.
 */
#define CXE_RX_RANGE		BIT(0)

/*
 * Offloads a backend can perform, in the order and the words the control
 * interface shows them (adapters/<name>/caps): CRC32C header and data
 * digests, direct data placement of write data, Data-In segmentation (a
 * burst handed down once), receive aggregation (hardware that coalesces
 * the receive completions of several PDUs into one; the software adapter
 * has none: it hands up one PDU per recv_hdr as it parses the stream),
 * T10 protection information inserted as write data is placed.
 */
enum cxe_cap {
	CXE_CAP_HCRC,
	CXE_CAP_DCRC,
	CXE_CAP_DDP,
	CXE_CAP_ISO,
	CXE_CAP_RXAGG,
	CXE_CAP_T10PI,	/* T10-PI made as write data is placed (cxe_pi_dout) */
	CXE_CAP_MAX,
};

/*
 * What a backend's hardware cannot go beyond. The PDU layer keeps to them
 * in one place (transport.c, "the backend's limits"): it clamps what it
 * declares and what it sends, and asks for segmentation and placement only
 * within them. CXE_NO_LIMIT (and 0 or 1 for the DDP pair) where the
 * backend has none: the software adapter's, so nothing is clamped there.
 */
#define CXE_NO_LIMIT	U32_MAX

struct cxe_limits {
	u32	max_recv_dlen;	/* largest data segment it receives */
	u32	max_send_dlen;	/* largest data segment it sends */
	u32	max_iso_burst;	/* most bytes one send_burst segments */
	u32	ddp_min_len;	/* shortest R2T window worth a DDP tag */
	u32	ddp_align;	/* placed SGL entries start (and all but the
				 * window's last end) on a multiple of this
				 */
};

/* What the registry lets other parts ask a backend for (cxe_backend_find) */
#define CXE_BACKEND_MKDIR	BIT(0)	/* adapters made with mkdir, soft0 */
#define CXE_BACKEND_PORTALS	BIT(1)	/* one listener per portal serves all its adapters */
/*
 * Listens for every portal on its own devices too, beside the portal's
 * backend (listen and unlisten are asked of it, and accept when it has
 * one; a portal works whether it listens or not)
 */
#define CXE_BACKEND_DEVICES	BIT(2)
/*
 * Its adapters serve netdevs as software adapters do (published in
 * adapters/ with cxe_adapter_publish()) and ride the kernel's TCP: the
 * portal's listener accepts the connections steered to them and the
 * backend adopts each (adopt), its ops starting from the software path's
 * (cxe_sock_conn_ops) and replacing what its NIC does: a NIC whose offloads
 * sit beside the host's TCP stack (digests, placement), not a TOE
 */
#define CXE_BACKEND_SOCKETS	BIT(3)

/*
 * The contract's version. A backend sets .contract to the value it was
 * built with, and cxe_backend_register() refuses any other: it changes
 * whenever a backend's code would have to: this file, struct cxe_conn,
 * cxe_np and cxe_adapter, enum cxe_stat, and what cxgbit_ext.h declares
 * or inlines for backends.
 */
#define CXE_BACKEND_CONTRACT	5

struct cxe_backend {
	/* these two first, in every version: a mismatch can still be named */
	u32			contract;	/* CXE_BACKEND_CONTRACT */
	const char		*name;	/* adapters/<name>/type */
	/*
	 * THIS_MODULE: each connection it carries holds a reference, and so
	 * does each call of the registry's into it but listen and unlisten,
	 * so that its module cannot unload under them; the portals' listens
	 * on its devices end when it unregisters.
	 */
	struct module		*owner;
	unsigned long		caps;	/* BIT(enum cxe_cap) */
	unsigned long		flags;	/* CXE_BACKEND_* */
	size_t			conn_size; /* CXE_CONN_SIZE(its struct, member) */
	struct cxe_limits	limits;
	const struct cxe_adapter_ops *ops;	/* NULL with no flags */
	/*
	 * Whether it can carry offloaded connections now, appended to page
	 * from offset at (as sysfs_emit_at): " on", or " off", one word for
	 * why and any detail. NULL: always " on". The backends file shows it.
	 */
	ssize_t (*show_state)(char *page, ssize_t at);
	/*
	 * The counters of its adapters that are not under adapters/ (a
	 * backend with devices of its own), "<backend> <adapter> <counter>
	 * <value>" a line, as cxe_adapter_counters_emit() writes them, into
	 * buf of size bytes; with buf NULL, the size it may need. The
	 * device_counters file shows them. Optional.
	 */
	ssize_t (*counters_read)(void *buf, size_t size);
	/*
	 * Reset the connections for target it handed back (hand_back) that
	 * the stock portal has not answered yet. Optional.
	 */
	void (*reset_handed_back)(const char *target);
};

#endif /* CXE_ADAPTER_H */
