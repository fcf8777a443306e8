/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgb4sim: a stand-in for cxgb4.ko below its API, for tests only (as
 * netdevsim stands in for a NIC). It exports the cxgb4 symbols that
 * Debian's cxgbit.ko and cxgbit_ext's cxgb4 backend import, with the
 * symbol versions of the kernel's own cxgb4.ko, and presents a T5 or T6
 * adapter: a fake PCI function, real-shaped cxgb4_lld_info, tid tables,
 * port netdevs whose private data is cxgb4's struct port_info, and the
 * ULD's response queues as NAPI instances that hand messages to the ULD
 * as cxgb4's SGE does (an RSS header, then the CPL in the IQ entry or in
 * free-list pages). Below it, the chip (sim_chip.c, sim_tcp.c, and the
 * chip model of tests/chipmodel) carries the ULD's connections
 * over the host's TCP. What crosses the API is recorded in debugfs
 * (cxgb4sim/trace: the queue, the opcode and the fields that tell
 * messages apart; errors, stats, fl_pages).
 *
 * Each sim_cxgb4_*.c, sim_l2t.c, sim_clip_tbl.c and sim_sge.c stands for
 * one of cxgb4's files and is compiled with that file's #include list
 * (generated from the kernel's source at build time), so that genksyms
 * gives each exported symbol the CRC cxgb4.ko's has: this header adds
 * cxgb4.h and the chip model's ppod.h, whose types no export uses.
 */
#ifndef C4SIM_H
#define C4SIM_H

#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/skbuff.h>
#include "cxgb4.h"
#include "ppod.h"

#define C4SIM_NRXQ	4		/* response queues per ULD */
#define C4SIM_RXQ_BASE	0x40		/* their absolute ids start here */
#define C4SIM_NSTIDS	64
#define C4SIM_NTIDS	1024
#define C4SIM_NL2T	64
#define C4SIM_IMM_LEN	64		/* an immediate response: IQ entry */
/*
 * the most of a message an IQ entry holds: 64 bytes less the RSS header
 * and the response descriptor (cxgb4's struct rsp_ctrl)
 */
#define C4SIM_IMM_MAX	(C4SIM_IMM_LEN - 8 - 16)
#define C4SIM_PDU_OVERHEAD	312		/* BHS, AHS, digests */
#define C4SIM_T5_IOLEN	16224
#define C4SIM_T6_IOLEN	(16384 + C4SIM_PDU_OVERHEAD)
#define C4SIM_TAGMASK	0x3fffffff	/* ULP_RX_ISCSI_TAGMASK */

/* A listening server, as the chip's server table holds it */
struct c4sim_server {
	bool			live;
	bool			v6;
	unsigned int		queue;		/* where its SYNs are reported */
	__be32			ip;		/* IPv4; 0: any */
	__be16			port;
};

struct c4sim_conn;	/* a TID's connection (sim_tcp.c) */

/* What the chip carried (debugfs cxgb4sim/stats, a line each) */
enum c4sim_stat {
	C4SIM_ESTABLISHED,	/* connections the chip's TCP brought up */
	C4SIM_TX_DATA_WRS,	/* data work requests sent */
	C4SIM_TX_GATHERED,	/* of them, with a gather list */
	C4SIM_TX_ISO,		/* of them, Data-In bursts the chip cuts (ISO) */
	C4SIM_TX_BYTES,		/* their bytes on the wire */
	C4SIM_POD_WRITES,	/* page pod writes */
	C4SIM_RX_BYTES,		/* TCP payload through the receive model */
	C4SIM_RX_PLACED,	/* of it, data placed through page pods */
	C4SIM_FW4_ACKS,		/* credit returns */
	C4SIM_RESET_CONNS,	/* connections a reset of the adapter ended */
	C4SIM_LOST_IN_RESET,	/* requests the ULD sent while the chip was reset */
	C4SIM_AFTER_DETACH,	/* calls of the ULD after cxgb4 detached it */
	C4SIM_RX_REFUSED,	/* connections reset for a stream the chip refuses */
	C4SIM_NSTATS
};

/*
 * What cxgb4 did to the adapter (debugfs cxgb4sim/state drives it,
 * sim_cxgb4_uld.c says how each maps to cxgb4's calls). Only C4SIM_UP
 * has a running chip; the others are after its reset.
 */
enum c4sim_state {
	C4SIM_UP,
	C4SIM_RECOVERY,		/* EEH: between error_detected and slot_reset */
	C4SIM_DOWN,		/* a function reset: reset_prepare to reset_done */
	C4SIM_DETACHED,		/* removed (remove_one), until a new probe */
};

/* the probes of the adapter a module's life sees, at most (c4sim_adapter.ppm_slots) */
#define C4SIM_PROBES	16

struct c4sim_rxq {
	struct napi_struct	napi;
	struct t4_lro_mgr	lro_mgr;
	struct sk_buff_head	pending;	/* messages for the ULD */
	unsigned short		abs_id;
	int			uld;
	bool			on;		/* delivering (pending.lock) */
};

struct c4sim_adapter {
	struct pci_dev		*pdev;
	struct net_device	*ports[4];
	struct net_device	*peers[4];	/* the wire's other end */
	unsigned int		nports;
	bool			t5;
	struct tid_info		tids;
	struct cxgb4_virt_res	vr;
	unsigned short		mtus[NMTUS];
	unsigned short		rxq_ids[C4SIM_NRXQ];
	unsigned int		nrxq, ntxq;	/* the ULD's, as cxgb4 sizes them */
	struct c4sim_server	servers[C4SIM_NSTIDS];
	struct c4sim_conn	*conns[C4SIM_NTIDS];
	spinlock_t		chip_lock;	/* state, servers, conns, lost_tids */
	enum c4sim_state	state;		/* changed under the ULD mutex too */
	/* TIDs whose connections a reset took, not since given to a new one */
	DECLARE_BITMAP(lost_tids, C4SIM_NTIDS);
	spinlock_t		ppm_lock;	/* pod writes and placement */
	struct cxe_model_ppm	ppm;		/* the iSCSI pod region */
	atomic64_t		stats[C4SIM_NSTATS];
	struct c4sim_rxq	rxq[C4SIM_NRXQ];
	bool			rxq_added;	/* the ULD's queues exist */
	bool			rxq_on;		/* and deliver */
	/*
	 * The cxgb4_lld_info.iscsi_ppm of each probe (the adapter's own
	 * field; a new probe's is another): libcxgb's pod manager, which
	 * clears it when the last reference goes. ppm_held, a bit a probe:
	 * the ULD still had one when cxgb4 removed the adapter.
	 */
	void			*ppm_slots[C4SIM_PROBES];
	unsigned long		ppm_held;
	unsigned int		probe;		/* this one's */
	/* the ULD registered with cxgb4, attached to the adapter or not */
	const struct cxgb4_uld_info *registered;
	const struct cxgb4_uld_info *uld;	/* CXGB4_ULD_ISCSIT, attached */
	void			*handle;
	unsigned int		clips;
};

extern struct c4sim_adapter *c4sim;

void c4sim_trace(const char *fmt, ...) __printf(1, 2);
/* hand an immediate message (RSS header filled in here) to queue abs_id */
int c4sim_deliver(unsigned int abs_id, const void *cpl, unsigned int len);
/* the same for a message the chip puts in free-list buffers */
int c4sim_deliver_fl(unsigned int abs_id, const void *msg, unsigned int len);
/* free-list pages a ULD took over and still holds; forgotten at unload */
unsigned long c4sim_fl_pages_held(void);
void c4sim_fl_pages_forget(void);
/* either, as the chip chooses (sim_cxgb4_uld.c) */
int c4sim_deliver_any(unsigned int abs_id, const void *msg, unsigned int len);
/*
 * The bytes of a work request cxgb4 writes into the queue (the rest it
 * gathers), as sim_chip.c took it in
 */
u32 c4sim_skb_imm(const struct sk_buff *skb);

/* the ULD's queues, once at load (sim_cxgb4_uld.c) */
void c4sim_uld_init(struct c4sim_adapter *a);
/*
 * debugfs cxgb4sim/state: the adapter's state now, and the change a word
 * asks for as cxgb4 makes it (-EINVAL: no such word, or not now)
 */
const char *c4sim_state_name(void);
int c4sim_state_write(const char *word);
/*
 * A ULD's call for the adapter once cxgb4 removed it: traced as an
 * error, true (the caller refuses it)
 */
bool c4sim_detached(const char *call);
/* what a ULD that held libcxgb's pod manager past the removal did since */
void c4sim_ppm_check(void);
/* a new probe's host tables: TIDs, STIDs (sim_cxgb4_main.c), L2T */
void c4sim_tables_fresh(struct c4sim_adapter *a);
void c4sim_l2t_fresh(void);

/* the chip: servers, SYNs off the wire, the ULD's work requests */
static inline bool c4sim_running(void)
{
	return READ_ONCE(c4sim->state) == C4SIM_UP;
}

/* false: the chip is reset and lost the request (traced, counted) */
bool c4sim_server_set(unsigned int stid, bool live, bool v6, __be32 ip,
		      __be16 port, unsigned int queue);
/*
 * The chip is reset under the ULD, the adapter in state from now on:
 * its connections, servers and page pods are gone (process context)
 */
void c4sim_chip_reset(enum c4sim_state state);
bool c4sim_chip_rx(unsigned int port, struct sk_buff *skb);
void c4sim_chip_tx(const char *via, struct sk_buff *skb);
void c4sim_chip_tid_release(unsigned int tid);
const char *c4sim_opname(unsigned int op);
static inline void c4sim_count(enum c4sim_stat s, u64 n)
{
	atomic64_add(n, &c4sim->stats[s]);
}

/* the TCP engine (sim_tcp.c) */
struct c4sim_conn *c4sim_conn_new(unsigned int tid, unsigned int port, struct sk_buff *syn,
				  __be32 saddr, __be16 sport, __be32 daddr, __be16 dport);
bool c4sim_conn_match(const struct c4sim_conn *c, __be32 saddr, __be16 sport,
		      __be32 daddr, __be16 dport);
void c4sim_conn_accepted(struct c4sim_conn *c, unsigned int queue, unsigned int mss_idx,
			 u32 rcv_win, bool rx_fc_off);
void c4sim_conn_tx(struct c4sim_conn *c, struct sk_buff *skb);
void c4sim_conn_peer_rst(struct c4sim_conn *c);
void c4sim_conn_release(struct c4sim_conn *c);
void c4sim_conns_halt(void);
/* every connection ends at the chip's reset; how many (process context) */
unsigned int c4sim_conns_reset(void);
int c4sim_tcp_init(void);
void c4sim_tcp_exit(void);

#endif /* C4SIM_H */
