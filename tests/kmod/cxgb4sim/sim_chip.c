// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4sim (sim.h says what it is): the chip below cxgb4's queues, as far
 * as it goes so far. It keeps the server table, takes a SYN for a server
 * off the wire as the chip does and reports it (CPL_PASS_ACCEPT_REQ with
 * the frame, in free-list buffers, on the server's queue), and reads what
 * the ULD sends as cxgb4 and the firmware would: the queue an skb's
 * mapping names, the message, its fields. A condition where cxgb4 would
 * index past its queues or the firmware would refuse a request is traced
 * as "error: ...", which fails the tests.
 *
 * A work request is taken as cxgb4's SGE takes it (c4sim_wr_split()):
 * whole into the queue when it is short enough, else the bytes before
 * the skb's transport header into the queue and the rest gathered; what
 * would make cxgb4 BUG or WARN, or the firmware misread the request, is
 * an error. The TCP engine (sim_tcp.c) then carries the TID's
 * connection.
 */
#include <linux/etherdevice.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include "cxgb4.h"
#include "t4_msg.h"
#include "t4fw_api.h"
#include "sim.h"

/*
 * Widths of the fields t4_msg.h and t4fw_api.h give only a shift for:
 * up to the next field's shift there.
 */
#define C4SIM_L2T_IDX_M		0xfffULL	/* 36..47 */
#define C4SIM_TX_CHAN_M		0x3ULL		/* 2..3 */
#define C4SIM_SMAC_SEL_M	0xffULL		/* 28..35 */
#define C4SIM_WND_SCALE_M	0xfULL		/* 50..53 */
#define C4SIM_ULP_MODE_M	0xfULL		/* 8..11 */
#define C4SIM_FLOWID(x)		(((x) >> FW_WR_FLOWID_S) & 0xfffff)
#define C4SIM_LEN16(x)		(((x) >> FW_WR_LEN16_S) & 0xff)
#define C4SIM_NPARAMS(x)	(((x) >> FW_FLOWC_WR_NPARAMS_S) & 0xff)
#define C4SIM_RCV_BUFSIZ_M	0x3ffULL	/* 52..61 */

/* A request the ULD sent while the chip is reset: lost, as in a real one */
static void c4sim_lost(const char *what, unsigned int id)
{
	c4sim_count(C4SIM_LOST_IN_RESET, 1);
	c4sim_trace("chip: reset: %s %u lost", what, id);
}

bool c4sim_server_set(unsigned int stid, bool live, bool v6, __be32 ip,
		      __be16 port, unsigned int queue)
{
	struct c4sim_server *s;
	bool running;

	stid -= c4sim->tids.stid_base;
	if (stid >= C4SIM_NSTIDS)
		return true;	/* as before: the reply still comes */
	s = &c4sim->servers[stid];
	spin_lock_bh(&c4sim->chip_lock);
	running = c4sim_running();
	if (running) {
		s->live = live;
		s->v6 = v6;
		s->ip = ip;
		s->port = port;
		s->queue = queue;
	}
	spin_unlock_bh(&c4sim->chip_lock);
	if (!running)
		c4sim_lost("the request of stid", stid + c4sim->tids.stid_base);
	return running;
}

static int c4sim_server_find(__be32 ip, __be16 port)
{
	int i;

	for (i = 0; i < C4SIM_NSTIDS; i++) {
		const struct c4sim_server *s = &c4sim->servers[i];

		if (s->live && !s->v6 && s->port == port && (!s->ip || s->ip == ip))
			return i;
	}
	return -1;
}

/* no window scale option in the SYN: a shift above 14 (chtls reads it so) */
#define C4SIM_SYN_NO_WSCALE	15

/* The SYN's options, as the chip reports them */
static void c4sim_syn_opts(const struct tcphdr *th, struct tcp_options *o)
{
	const u8 *p = (const u8 *)(th + 1), *end = (const u8 *)th + th->doff * 4;

	o->wsf = C4SIM_SYN_NO_WSCALE;

	while (p < end) {
		u8 kind = p[0], len = kind > TCPOPT_NOP && p + 1 < end ? p[1] : 1;

		if (kind == TCPOPT_EOL)
			break;
		if (len < 1 || p + len > end)
			break;
		if (kind == TCPOPT_MSS && len == TCPOLEN_MSS)
			o->mss = get_unaligned((const __be16 *)(p + 2));
		else if (kind == TCPOPT_WINDOW && len == TCPOLEN_WINDOW)
			o->wsf = p[2];
		else if (kind == TCPOPT_SACK_PERM)
			o->sack = 1;
		else if (kind == TCPOPT_TIMESTAMP)
			o->tstamp = 1;
		p += len;
	}
}

/* The TID's connection of this segment's tuple, NULL if none (chip_lock held) */
static struct c4sim_conn *c4sim_conn_find(const struct iphdr *iph, const struct tcphdr *th)
{
	unsigned int tid;

	for (tid = 0; tid < C4SIM_NTIDS; tid++) {
		struct c4sim_conn *c = c4sim->conns[tid];

		if (c && c4sim_conn_match(c, iph->saddr, th->source, iph->daddr, th->dest))
			return c;
	}
	return NULL;
}

/* The peer's RST for a TID of the chip's: its TCP sees it (the host's too) */
static void c4sim_chip_rst(const struct iphdr *iph, const struct tcphdr *th)
{
	struct c4sim_conn *c;

	spin_lock_bh(&c4sim->chip_lock);
	c = c4sim_conn_find(iph, th);
	if (c)
		c4sim_conn_peer_rst(c);
	spin_unlock_bh(&c4sim->chip_lock);
}

/*
 * A frame from the wire for port: a SYN for a listening server is the
 * chip's (reported to the ULD, not to the host); everything else goes on
 * to the host's stack. Runs in the sender's context.
 */
bool c4sim_chip_rx(unsigned int port, struct sk_buff *skb)
{
	struct cpl_pass_accept_req *req;
	struct c4sim_conn *conn;
	const struct tcphdr *th;
	const struct iphdr *iph;
	unsigned int ethlen = ETH_HLEN, iplen, tcplen, len, tid;
	int stid, queue;
	u8 *msg;

	if (skb->protocol != htons(ETH_P_IP) && eth_hdr(skb)->h_proto != htons(ETH_P_IP))
		return false;
	if (skb_linearize(skb) || skb->len < ethlen + sizeof(*iph))
		return false;
	iph = (const struct iphdr *)(skb->data + ethlen);
	iplen = iph->ihl * 4;
	if (iph->protocol != IPPROTO_TCP || ip_is_fragment(iph) ||
	    skb->len < ethlen + iplen + sizeof(*th))
		return false;
	th = (const struct tcphdr *)((const u8 *)iph + iplen);
	tcplen = th->doff * 4;
	if (th->rst) {
		c4sim_chip_rst(iph, th);
		return false;
	}
	if (!th->syn || th->ack || skb->len < ethlen + iplen + tcplen)
		return false;
	spin_lock_bh(&c4sim->chip_lock);
	stid = c4sim_server_find(iph->daddr, th->dest);
	/* a SYN again for a TID the chip has: it holds the first */
	if (stid >= 0 && c4sim_conn_find(iph, th)) {
		spin_unlock_bh(&c4sim->chip_lock);
		kfree_skb(skb);
		return true;
	}
	for (tid = 0; stid >= 0 && tid < C4SIM_NTIDS; tid++)
		if (!c4sim->conns[tid])
			break;
	if (stid < 0 || tid == C4SIM_NTIDS) {
		spin_unlock_bh(&c4sim->chip_lock);
		return false;
	}
	queue = c4sim->servers[stid].queue;
	spin_unlock_bh(&c4sim->chip_lock);

	len = sizeof(*req) + ethlen + iplen + tcplen;
	msg = kzalloc(len, GFP_ATOMIC);
	if (!msg) {
		kfree_skb(skb);
		return true;	/* the chip dropped it: the peer retries */
	}
	req = (struct cpl_pass_accept_req *)msg;
	req->ot.opcode_tid = htonl(MK_OPCODE_TID(CPL_PASS_ACCEPT_REQ, tid));
	req->len = htons(ethlen + iplen + tcplen);
	if (c4sim->t5)
		req->hdr_len = htonl(SYN_RX_CHAN_V(port) | ETH_HDR_LEN_V(ethlen) |
				     IP_HDR_LEN_V(iplen) | TCP_HDR_LEN_V(tcplen));
	else
		req->hdr_len = htonl(SYN_RX_CHAN_V(port) | T6_ETH_HDR_LEN_V(ethlen) |
				     T6_IP_HDR_LEN_V(iplen) | T6_TCP_HDR_LEN_V(tcplen));
	req->l2info = htons(SYN_INTF_V(port));
	req->tos_stid = htonl(PASS_OPEN_TID_V(stid + c4sim->tids.stid_base) |
			      PASS_OPEN_TOS_V(iph->tos));
	c4sim_syn_opts(th, &req->tcpopt);
	memcpy(req + 1, skb->data, ethlen + iplen + tcplen);
	c4sim_trace("chip: SYN %pI4:%u -> %pI4:%u on port %u: tid=%u stid=%u",
		    &iph->saddr, ntohs(th->source), &iph->daddr, ntohs(th->dest),
		    port, tid, stid + c4sim->tids.stid_base);
	/* the SYN waits in the chip for the ULD's answer, the sender's no more */
	skb_orphan(skb);
	skb_set_transport_header(skb, ethlen + iplen);
	spin_lock_bh(&c4sim->chip_lock);
	/* not if the chip was reset meanwhile: it forgot the server */
	conn = c4sim->conns[tid] || !c4sim_running() ? NULL :
	       c4sim_conn_new(tid, port, skb, iph->saddr, th->source, iph->daddr, th->dest);
	if (conn) {
		c4sim->conns[tid] = conn;
		__clear_bit(tid, c4sim->lost_tids);
	}
	spin_unlock_bh(&c4sim->chip_lock);
	if (conn)
		c4sim_deliver_fl(queue, msg, len);
	else	/* no memory, the TID taken meanwhile, a reset: the peer retries */
		kfree_skb(skb);
	kfree(msg);
	return true;
}

/* The queue an skb's mapping names, as cxgb4's t4_ofld_send() reads it */
static bool c4sim_txq(const struct sk_buff *skb, char *name, size_t size)
{
	unsigned int map = skb_get_queue_mapping(skb), idx = map >> 1;
	bool ctrl = map & 1;
	unsigned int n = ctrl ? c4sim->nports : c4sim->ntxq;

	snprintf(name, size, "%s%u", ctrl ? "ctrl" : "ofld", idx);
	if (idx < n)
		return true;
	/* cxgb4 indexes its queue array with it: past the end */
	c4sim_trace("error: %s queue %u of %u: cxgb4 would use memory past its %s queues",
		    ctrl ? "control" : "offload", idx, n, ctrl ? "control" : "offload");
	return false;
}

/* The accept reply, traced; what the chip keeps of it goes to the connection */
static void c4sim_accept_rpl(const char *q, const struct cpl_t5_pass_accept_rpl *rpl,
			     unsigned int len)
{
	unsigned int tid = GET_TID(rpl), rss;
	u64 opt0;
	u32 opt2;
	bool ours;

	if (len < sizeof(*rpl) || tid >= C4SIM_NTIDS) {
		c4sim_trace("error: CPL_PASS_ACCEPT_RPL of %u bytes for tid %u", len, tid);
		return;
	}
	opt0 = be64_to_cpu(rpl->opt0);
	opt2 = be32_to_cpu(rpl->opt2);
	rss = RSS_QUEUE_G(opt2);
#define C4SIM_F0(f, m)	((opt0 >> f##_S) & (m))
	c4sim_trace("tx %s CPL_PASS_ACCEPT_RPL tid=%u", q, tid);
	c4sim_trace("  opt0 mss_idx=%llu l2t=%llu tx_chan=%llu smac=%llu wscale=%llu rcv_win=%lluK",
		    C4SIM_F0(MSS_IDX, MSS_IDX_M), C4SIM_F0(L2T_IDX, C4SIM_L2T_IDX_M),
		    C4SIM_F0(TX_CHAN, C4SIM_TX_CHAN_M), C4SIM_F0(SMAC_SEL, C4SIM_SMAC_SEL_M),
		    C4SIM_F0(WND_SCALE, C4SIM_WND_SCALE_M), C4SIM_F0(RCV_BUFSIZ, RCV_BUFSIZ_M));
	c4sim_trace("  opt0 ulp=%llu bypass=%d nagle=%d delack=%d",
		    C4SIM_F0(ULP_MODE, C4SIM_ULP_MODE_M), !!(opt0 & TCAM_BYPASS_F),
		    !!(opt0 & NAGLE_F), !!(opt0 & DELACK_F));
	c4sim_trace("  opt2 rss=%u%s rx_chan=%u fc_off=%d cong=%u tstamps=%d sack=%d",
		    rss, opt2 & RSS_QUEUE_VALID_F ? "" : "(invalid)",
		    (opt2 >> RX_CHANNEL_S) & 1, !!(opt2 & RX_FC_DISABLE_F),
		    CONG_CNTRL_G(opt2), !!(opt2 & TSTAMPS_EN_F), !!(opt2 & SACK_EN_F));
	c4sim_trace("  opt2 wscale_en=%d ecn=%d iss=%d valid=%d",
		    !!(opt2 & WND_SCALE_EN_F), !!(opt2 & CCTRL_ECN_F), !!(opt2 & T5_ISS_F),
		    !!(opt2 & T5_OPT_2_VALID_F));
	ours = rss >= C4SIM_RXQ_BASE && rss < C4SIM_RXQ_BASE + c4sim->nrxq;
	if (!ours)
		c4sim_trace("error: tid %u: opt2 names queue %u, not one of the ULD's", tid, rss);
	spin_lock_bh(&c4sim->chip_lock);
	if (c4sim_running() && c4sim->conns[tid])
		c4sim_conn_accepted(c4sim->conns[tid], rss, C4SIM_F0(MSS_IDX, MSS_IDX_M),
				    C4SIM_F0(RCV_BUFSIZ, C4SIM_RCV_BUFSIZ_M) << 10,
				    !!(opt2 & RX_FC_DISABLE_F));
	spin_unlock_bh(&c4sim->chip_lock);
#undef C4SIM_F0
}

/* The FLOWC's parameters, one line: mnemonic=value */
static void c4sim_flowc_params(const struct fw_flowc_wr *f, unsigned int len)
{
	unsigned int n = C4SIM_NPARAMS(be32_to_cpu(f->op_to_nparams)), i;
	char line[256];
	int at = 0;

	if (sizeof(*f) + n * sizeof(f->mnemval[0]) > len) {
		c4sim_trace("error: FW_FLOWC_WR of %u parameters in %u bytes", n, len);
		return;
	}
	for (i = 0; i < n && at < sizeof(line); i++)
		at += scnprintf(line + at, sizeof(line) - at, " %u=%u",
				f->mnemval[i].mnemonic, be32_to_cpu(f->mnemval[i].val));
	c4sim_trace("  flowc%s", line);
}

/* an error found by the first look at a request (q given), not traced again */
#define C4SIM_SPLIT_ERR(fmt, ...)			\
	do {						\
		if (q)					\
			c4sim_trace(fmt, __VA_ARGS__);	\
	} while (0)

/*
 * How cxgb4's SGE writes an offload work request (sge.c: is_ofld_imm(),
 * calc_tx_flits_ofld(), service_ofldq(); ctrl_xmit() for the control
 * queues): whole into the queue when it is short enough; else the bytes
 * before the transport header, then a gather list of the rest (the
 * linear part after it and each fragment). Returns the bytes written
 * into the queue, or -1 where cxgb4 would BUG, WARN and drop, or write a
 * request the firmware misreads (traced).
 */
static int c4sim_wr_split(const struct sk_buff *skb, const char *q)
{
	const struct work_request_hdr *wr = (const void *)skb->data;
	unsigned int op = FW_WR_OP_G(be32_to_cpu(wr->wr_hi)), hdr, flits, cnt, len16;
	bool ctrl = skb_get_queue_mapping(skb) & 1;

	if (ctrl) {
		if (skb->len <= SGE_MAX_WR_LEN)
			return skb->len;
		C4SIM_SPLIT_ERR("error: %s: %u bytes: cxgb4 WARNs, drops (control: at most %u)",
				q, skb->len, SGE_MAX_WR_LEN);
		return -1;
	}
	if (op == FW_ULPTX_WR ? skb->len <= MAX_IMM_ULPTX_WR_LEN :
	    skb->len <= MAX_IMM_OFLD_TX_DATA_WR_LEN)
		return skb->len;
	if (!skb_transport_header_was_set(skb)) {
		C4SIM_SPLIT_ERR("error: %s: FW op %#x, %u bytes, no transport header: %s",
				q, op, skb->len, "cxgb4 takes its offset for the request's length");
		return -1;
	}
	hdr = skb_transport_offset(skb);
	cnt = skb_shinfo(skb)->nr_frags + (skb_tail_pointer(skb) != skb_transport_header(skb));
	flits = hdr / 8 + (cnt ? (3 * (cnt - 1)) / 2 + ((cnt - 1) & 1) + 2 : 0);
	if (skb_transport_offset(skb) < 0 || hdr > skb_headlen(skb) || hdr % 8 || !cnt) {
		C4SIM_SPLIT_ERR("error: %s: FW op %#x: %d to transport, %u linear, %u pieces: %s",
				q, op, skb_transport_offset(skb), skb_headlen(skb), cnt,
				"cxgb4 writes a gather list the request does not frame");
		return -1;
	}
	if (flits > SGE_MAX_WR_LEN / 8) {
		C4SIM_SPLIT_ERR("error: %s: FW op %#x, %u flits: BUG in flits_to_desc (max %u)",
				q, op, flits, SGE_MAX_WR_LEN / 8);
		return -1;
	}
	len16 = C4SIM_LEN16(be32_to_cpu(wr->wr_mid));
	if (op != FW_ULPTX_WR && len16 != DIV_ROUND_UP(flits * 8, 16))
		C4SIM_SPLIT_ERR("error: %s: FW op %#x says %u 16-byte units, cxgb4 writes %u",
				q, op, len16, DIV_ROUND_UP(flits * 8, 16));
	return hdr;
}

/*
 * A work request or CPL from the ULD (via cxgb4_ofld_send or
 * cxgb4_l2t_send): checked as cxgb4 and the firmware would, the control
 * ones traced with the fields that tell them apart, then the TID's
 * connection's.
 */
void c4sim_chip_tx(const char *via, struct sk_buff *skb)
{
	const struct work_request_hdr *wr = (const void *)skb->data;
	unsigned int fw, tid, op = 0;
	struct c4sim_conn *c;
	bool running, lost;
	char q[16];
	int imm;

	if (!c4sim_txq(skb, q, sizeof(q)) || skb_headlen(skb) < sizeof(*wr)) {
		c4sim_trace("error: %s %s: %u bytes, %u linear: no work request header",
			    via, q, skb->len, skb_headlen(skb));
		goto drop;
	}
	/* the ULD may still hold the skb (cxgbit keeps it until acked): read only */
	imm = c4sim_wr_split(skb, q);
	if (imm < 0)
		goto drop;
	fw = FW_WR_OP_G(be32_to_cpu(wr->wr_hi));
	tid = C4SIM_FLOWID(be32_to_cpu(wr->wr_mid));
	if (fw == FW_FLOWC_WR) {
		const struct fw_flowc_wr *f = (const void *)wr;

		c4sim_trace("tx %s FW_FLOWC_WR tid=%u nparams=%u len16=%u", q, tid,
			    C4SIM_NPARAMS(be32_to_cpu(f->op_to_nparams)),
			    C4SIM_LEN16(be32_to_cpu(f->flowid_len16)));
		c4sim_flowc_params(f, skb_headlen(skb));
	} else if (fw == FW_TP_WR && skb_headlen(skb) >= sizeof(*wr) + 8) {
		op = skb->data[sizeof(*wr)];
		tid = GET_TID((const struct cpl_pass_open_rpl *)(skb->data + sizeof(*wr)));
		if (op == CPL_TID_RELEASE) {
			/*
			 * what cxgb4_remove_tid() sends, from the ULD itself
			 * (cxgbit gives back a TID it never entered so)
			 */
			c4sim_trace("tx %s CPL_TID_RELEASE tid=%u", q, tid);
			kfree_skb(skb);
			c4sim_chip_tid_release(tid);
			return;
		}
		if (op == CPL_PASS_ACCEPT_RPL)
			c4sim_accept_rpl(q, (const void *)skb->data, skb_headlen(skb));
		else if (op != CPL_RX_DATA_ACK)
			c4sim_trace("tx %s %s tid=%u len=%u", q, c4sim_opname(op) ?: "CPL", tid,
				    skb->len);
	} else if (fw != FW_OFLD_TX_DATA_WR && fw != FW_ISCSI_TX_DATA_WR && fw != FW_ULPTX_WR) {
		c4sim_trace("tx %s FW op %#x tid=%u len=%u", q, fw, tid, skb->len);
	}
	spin_lock_bh(&c4sim->chip_lock);
	running = c4sim_running();
	c = running && tid < C4SIM_NTIDS ? c4sim->conns[tid] : NULL;
	if (c)
		c4sim_conn_tx(c, skb);
	lost = !c && tid < C4SIM_NTIDS && test_bit(tid, c4sim->lost_tids);
	spin_unlock_bh(&c4sim->chip_lock);
	if (c)
		return;
	if (!running)
		c4sim_lost("a request for tid", tid);
	else
		c4sim_trace("error: %s: FW op %#x (CPL %#x) for tid %u, which the chip %s",
			    q, fw, op, tid,
			    lost ? "lost in a reset: the ULD uses it after UP" : "does not have");
drop:
	kfree_skb(skb);
}

/* what c4sim_wr_split() found when the request came, without a trace */
u32 c4sim_skb_imm(const struct sk_buff *skb)
{
	return c4sim_wr_split(skb, NULL);
}

void c4sim_chip_tid_release(unsigned int tid)
{
	struct c4sim_conn *c;
	bool running, lost;

	if (tid >= C4SIM_NTIDS)
		return;
	spin_lock_bh(&c4sim->chip_lock);
	running = c4sim_running();
	c = running ? c4sim->conns[tid] : NULL;
	if (c)
		c4sim_conn_release(c);
	lost = test_bit(tid, c4sim->lost_tids);
	spin_unlock_bh(&c4sim->chip_lock);
	if (c)
		return;
	if (!running)
		c4sim_lost("the release of tid", tid);
	else if (lost)	/* the chip may have given it to a new connection since */
		c4sim_trace("error: release of tid %u, which the chip lost in %s", tid,
			    "a reset: the ULD still uses it after UP");
	else
		c4sim_trace("error: release of tid %u, which is not in use", tid);
}

/*
 * The chip reset under the ULD (cxgb4's EEH, a function reset, the
 * adapter's removal): from now on the adapter is in state, which is not
 * C4SIM_UP, and the chip takes no request; the connections it carried
 * vanish without a message to the ULD (sim_tcp.c resets their peers),
 * the server table is empty, the page pod memory lost. Process context.
 */
void c4sim_chip_reset(enum c4sim_state state)
{
	unsigned int i, servers = 0, conns;

	spin_lock_bh(&c4sim->chip_lock);
	WRITE_ONCE(c4sim->state, state);
	for (i = 0; i < C4SIM_NSTIDS; i++)
		servers += c4sim->servers[i].live;
	memset(c4sim->servers, 0, sizeof(c4sim->servers));
	spin_unlock_bh(&c4sim->chip_lock);
	conns = c4sim_conns_reset();
	spin_lock_bh(&c4sim->ppm_lock);
	memset(c4sim->ppm.mem, 0, c4sim->ppm.size);
	spin_unlock_bh(&c4sim->ppm_lock);
	c4sim_trace("chip: reset: %u connections and %u servers gone, page pods lost",
		    conns, servers);
}
