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
 * It has no TCP engine yet: once the ULD has answered a SYN, the peer
 * resets the connection (CPL_ABORT_REQ_RSS on the queue the answer
 * named), and the ULD must clean up as it would on a chip.
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

void c4sim_server_set(unsigned int stid, bool live, bool v6, __be32 ip,
		      __be16 port, unsigned int queue)
{
	struct c4sim_server *s;

	stid -= c4sim->tids.stid_base;
	if (stid >= C4SIM_NSTIDS)
		return;
	s = &c4sim->servers[stid];
	spin_lock_bh(&c4sim->chip_lock);
	s->live = live;
	s->v6 = v6;
	s->ip = ip;
	s->port = port;
	s->queue = queue;
	spin_unlock_bh(&c4sim->chip_lock);
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

/* The SYN's options, as the chip reports them */
static void c4sim_syn_opts(const struct tcphdr *th, struct tcp_options *o)
{
	const u8 *p = (const u8 *)(th + 1), *end = (const u8 *)th + th->doff * 4;

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

/*
 * A frame from the wire for port: a SYN for a listening server is the
 * chip's (reported to the ULD, not to the host); everything else goes on
 * to the host's stack. Runs in the sender's context.
 */
bool c4sim_chip_rx(unsigned int port, struct sk_buff *skb)
{
	struct cpl_pass_accept_req *req;
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
	if (!th->syn || th->ack || skb->len < ethlen + iplen + tcplen)
		return false;
	spin_lock_bh(&c4sim->chip_lock);
	stid = c4sim_server_find(iph->daddr, th->dest);
	for (tid = 0; stid >= 0 && tid < C4SIM_NTIDS; tid++)
		if (!c4sim->conns[tid].live)
			break;
	if (stid < 0 || tid == C4SIM_NTIDS) {
		spin_unlock_bh(&c4sim->chip_lock);
		return false;
	}
	c4sim->conns[tid] = (struct c4sim_tid){ .live = true, .port = port };
	queue = c4sim->servers[stid].queue;
	spin_unlock_bh(&c4sim->chip_lock);

	len = sizeof(*req) + ethlen + iplen + tcplen;
	msg = kzalloc(len, GFP_ATOMIC);
	if (!msg)
		return true;	/* the chip dropped it: the peer retries */
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
	c4sim_deliver_fl(queue, msg, len);
	kfree(msg);
	kfree_skb(skb);
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

static void c4sim_peer_reset(unsigned int tid)
{
	struct cpl_abort_req_rss rst = {};
	unsigned int queue;

	spin_lock_bh(&c4sim->chip_lock);
	queue = c4sim->conns[tid].rss_queue;
	spin_unlock_bh(&c4sim->chip_lock);
	rst.ot.opcode_tid = htonl(MK_OPCODE_TID(CPL_ABORT_REQ_RSS, tid));
	rst.status = CPL_ERR_CONN_RESET;
	c4sim_trace("chip: the peer resets tid=%u (no TCP engine yet)", tid);
	c4sim_deliver(queue, &rst, sizeof(rst));
}

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
#undef C4SIM_F0
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
	c4sim->conns[tid].rss_queue = rss;
	spin_unlock_bh(&c4sim->chip_lock);
	if (ours)
		c4sim_peer_reset(tid);
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

/*
 * A work request or CPL from the ULD (via cxgb4_ofld_send or
 * cxgb4_l2t_send): traced with the fields that tell it apart, checked as
 * cxgb4 and the firmware would; consumed.
 */
void c4sim_chip_tx(const char *via, struct sk_buff *skb)
{
	const struct work_request_hdr *wr = (const void *)skb->data;
	unsigned int fw, tid = C4SIM_NTIDS, op;
	char q[16];

	if (!c4sim_txq(skb, q, sizeof(q)) || skb->len < sizeof(*wr) + 4) {
		c4sim_trace("%s %s: %u bytes dropped", via, q, skb->len);
		goto out;
	}
	fw = FW_WR_OP_G(be32_to_cpu(wr->wr_hi));
	if (fw == FW_FLOWC_WR) {
		const struct fw_flowc_wr *f = (const void *)wr;

		tid = C4SIM_FLOWID(be32_to_cpu(f->flowid_len16));
		c4sim_trace("tx %s FW_FLOWC_WR tid=%u nparams=%u len16=%u", q, tid,
			    C4SIM_NPARAMS(be32_to_cpu(f->op_to_nparams)),
			    C4SIM_LEN16(be32_to_cpu(f->flowid_len16)));
		c4sim_flowc_params(f, skb->len);
		if (tid < C4SIM_NTIDS)
			c4sim->conns[tid].flowc = true;
		goto out;
	}
	if (fw != FW_TP_WR && fw != FW_ULPTX_WR) {
		c4sim_trace("tx %s FW op %#x len=%u", q, fw, skb->len);
		goto out;
	}
	op = skb->data[sizeof(*wr)];
	tid = GET_TID((const struct cpl_pass_open_rpl *)(skb->data + sizeof(*wr)));
	if (op == CPL_PASS_ACCEPT_RPL)
		c4sim_accept_rpl(q, (const void *)skb->data, skb->len);
	else
		c4sim_trace("tx %s %s tid=%u len=%u", q, c4sim_opname(op) ?: "CPL", tid,
			    skb->len);
	/* on an offload queue, the firmware takes nothing of a flow before its FLOWC */
	if (!(skb_get_queue_mapping(skb) & 1) && tid < C4SIM_NTIDS &&
	    !c4sim->conns[tid].flowc)
		c4sim_trace("error: tid %u: %s on an offload queue before FW_FLOWC_WR", tid,
			    c4sim_opname(op) ?: "a message");
out:
	kfree_skb(skb);
}

void c4sim_chip_tid_release(unsigned int tid)
{
	if (tid >= C4SIM_NTIDS)
		return;
	spin_lock_bh(&c4sim->chip_lock);
	if (!c4sim->conns[tid].live)
		c4sim_trace("error: release of tid %u, which is not in use", tid);
	c4sim->conns[tid] = (struct c4sim_tid){};
	spin_unlock_bh(&c4sim->chip_lock);
}
