// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext PDU layer: the iscsit_transport LIO selects through the np
 * "cxgbit" attribute (targetcli enable_offload, rtslib
 * NetworkPortal.offload).
 *
 * LIO core keeps login negotiation, sessions, SCSI, R2T building and error
 * recovery; this file moves PDUs. It reads a PDU header, checks its digest,
 * and lands the data segment directly where it belongs: write data in the
 * command's pages (Data-Out by its R2T's DDP tag, immediate and unsolicited
 * data by offset), other payloads in LIO's buffers. It sends PDUs with
 * digests and padding. Digest maths, padding and DDP tags come from pdu/.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <linux/kthread.h>
#include <linux/net.h>
#include <linux/uio.h>
#include <linux/tcp.h>
#include <net/tcp.h>
#include <linux/vmalloc.h>
#include <net/sock.h>
#include <scsi/iscsi_proto.h>
#include <target/target_core_base.h>
#include <target/target_core_fabric.h>
#include <target/iscsi/iscsi_target_core.h>
#include <target/iscsi/iscsi_transport.h>

#include "cxgbit_ext.h"
#include "pdu/cxe_bhs.h"
#include "pdu/cxe_ddp.h"
#include "pdu/cxe_seg.h"

#define CXE_DDP_SLOTS	1024	/* live R2T tags per connection */
/* TTT of an R2T that got no DDP slot: its data is checked by LIO alone */
#define CXE_NODDP_IDX	(CXE_DDP_MAX_TAGS - 1)

struct cxe_ddp_slot {
	struct iscsit_cmd	*cmd;
	u32			gen;
	u32			offset;
	u32			len;
};

/* Our side of one offloaded connection; conn->context points here. */
struct cxe_conn {
	struct list_head	node;		/* cxe_conns */
	struct iscsit_conn	*conn;
	struct cxe_adapter	*adapter;
	struct socket		*sock;		/* == conn->sock, released by LIO */
	struct sockaddr_storage	peer;
	struct sockaddr_storage	local;
	bool			hdigest;
	bool			ddigest;
	u32			max_recv_dlen;
	spinlock_t		ddp_lock;	/* ddp[] */
	struct cxe_ddp_slot	*ddp;		/* CXE_DDP_SLOTS */
	atomic64_t		stats[CXE_STAT_MAX];
};

static LIST_HEAD(cxe_conns);
static DEFINE_SPINLOCK(cxe_conns_lock);

const char *const cxe_stat_names[CXE_STAT_MAX] = {
	[CXE_STAT_SYN_STEERED]	= "syn_steered",
	[CXE_STAT_CONNS]	= "connections",
	[CXE_STAT_PDUS_RX]	= "pdus_rx",
	[CXE_STAT_PDUS_TX]	= "pdus_tx",
	[CXE_STAT_BYTES_PLACED]	= "bytes_placed",
	[CXE_STAT_BYTES_COPIED]	= "bytes_copied",
	[CXE_STAT_HDIGEST_ERR]	= "hdigest_errors",
	[CXE_STAT_DDIGEST_ERR]	= "ddigest_errors",
	[CXE_STAT_DDP_TAG_ERR]	= "ddp_tag_errors",
	[CXE_STAT_DROPS]	= "drops",
	[CXE_STAT_BURSTS]	= "bursts",
	[CXE_STAT_BURST_PDUS]	= "burst_pdus",
	[CXE_STAT_RX_WAITS]	= "rx_waits",
};

static void cxe_cstat(struct cxe_conn *c, enum cxe_stat s, u64 v)
{
	atomic64_add(v, &c->stats[s]);
	cxe_stat_add(c->adapter, s, v);
}

/* ---- portals ------------------------------------------------------------ */

static void cxe_np_release(struct kref *kref)
{
	kfree(container_of(kref, struct cxe_np, kref));
}

static int cxe_setup_np(struct iscsi_np *np, struct sockaddr_storage *addr)
{
	struct cxe_np *cnp;
	int ret;

	cnp = kzalloc(sizeof(*cnp), GFP_KERNEL);
	if (!cnp)
		return -ENOMEM;
	kref_init(&cnp->kref);
	cnp->np = np;
	cnp->adapter = &cxe_soft0;
	memcpy(&cnp->addr, addr, sizeof(cnp->addr));

	ret = cxe_soft_listen(cnp);
	if (ret) {
		kfree(cnp);
		return ret;
	}
	np->np_context = cnp;
	/* LIO matches portals (and answers SendTargets) by np_sockaddr */
	memcpy(&np->np_sockaddr, addr, sizeof(np->np_sockaddr));
	pr_info("offload portal %pISpc set up on adapter %s\n", addr,
		cnp->adapter->name);
	return 0;
}

static int cxe_accept_np(struct iscsi_np *np, struct iscsit_conn *conn)
{
	struct cxe_np *cnp = np->np_context;
	struct socket *sock;
	struct cxe_conn *c;
	int ret;

	/* interrupted by LIO's SIGINT when the portal thread resets or stops */
	ret = kernel_accept(cnp->listener, &sock, 0);
	if (ret < 0)
		return ret;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (c)
		c->ddp = kvcalloc(CXE_DDP_SLOTS, sizeof(*c->ddp), GFP_KERNEL);
	if (!c || !c->ddp) {
		kfree(c);
		sock_release(sock);
		return -ENOMEM;
	}
	c->conn = conn;
	c->sock = sock;
	c->adapter = cnp->adapter;
	c->max_recv_dlen = 8192;	/* login: LIO's own limit applies */
	spin_lock_init(&c->ddp_lock);
	tcp_sock_set_nodelay(sock->sk);

	kernel_getpeername(sock, (struct sockaddr *)&c->peer);
	kernel_getsockname(sock, (struct sockaddr *)&c->local);
	conn->sock = sock;
	conn->context = c;
	conn->login_family = AF_INET;
	memcpy(&conn->login_sockaddr, &c->peer, sizeof(c->peer));
	memcpy(&conn->local_sockaddr, &c->local, sizeof(c->local));

	/*
	 * A connection outlives its portal (offload off, portal deleted): it
	 * pins the module until LIO frees it, as the portal did.
	 */
	__module_get(THIS_MODULE);
	spin_lock(&cxe_conns_lock);
	list_add_tail(&c->node, &cxe_conns);
	spin_unlock(&cxe_conns_lock);
	cxe_cstat(c, CXE_STAT_CONNS, 1);
	pr_info("connection %pISpc -> %pISpc offloaded on %s\n", &c->peer,
		&c->local, c->adapter->name);
	return 0;
}

static void cxe_free_np(struct iscsi_np *np)
{
	struct cxe_np *cnp = np->np_context;

	cxe_soft_unlisten(cnp);
	pr_info("offload portal %pISpc released\n", &cnp->addr);
	np->np_context = NULL;
	kref_put(&cnp->kref, cxe_np_release);
}

ssize_t cxe_np_show_all(char *buf)
{
	struct cxe_np *cnp;
	ssize_t len = 0;

	rcu_read_lock();
	list_for_each_entry_rcu(cnp, &cxe_nps, node)
		len += scnprintf(buf + len, PAGE_SIZE - len, "%pISpc\n",
				 &cnp->addr);
	rcu_read_unlock();
	return len;
}

ssize_t cxe_conn_show_all(char *buf)
{
	struct cxe_conn *c;
	ssize_t len = 0;

	spin_lock(&cxe_conns_lock);
	list_for_each_entry(c, &cxe_conns, node)
		len += scnprintf(buf + len, PAGE_SIZE - len,
				 "%pISpc %pISpc adapter=%s hdigest=%d ddigest=%d pdus_rx=%lld pdus_tx=%lld bytes_placed=%lld bytes_copied=%lld\n",
				 &c->peer, &c->local, c->adapter->name,
				 c->hdigest, c->ddigest,
				 atomic64_read(&c->stats[CXE_STAT_PDUS_RX]),
				 atomic64_read(&c->stats[CXE_STAT_PDUS_TX]),
				 atomic64_read(&c->stats[CXE_STAT_BYTES_PLACED]),
				 atomic64_read(&c->stats[CXE_STAT_BYTES_COPIED]));
	spin_unlock(&cxe_conns_lock);
	return len;
}

static void cxe_free_conn(struct iscsit_conn *conn)
{
	struct cxe_conn *c = conn->context;

	if (!c)
		return;
	spin_lock(&cxe_conns_lock);
	list_del(&c->node);
	spin_unlock(&cxe_conns_lock);
	conn->context = NULL;
	kvfree(c->ddp);
	kfree(c);
	module_put(THIS_MODULE);
}

/* ---- socket I/O ---------------------------------------------------------- */

static int cxe_recv(struct cxe_conn *c, void *buf, size_t len)
{
	struct msghdr msg = { .msg_flags = MSG_WAITALL };
	struct kvec iov = { .iov_base = buf, .iov_len = len };
	int ret;

	while (iov.iov_len) {
		ret = kernel_recvmsg(c->sock, &msg, &iov, 1, iov.iov_len,
				     MSG_WAITALL);
		if (ret <= 0)
			return ret ? ret : -ECONNRESET;
		iov.iov_base += ret;
		iov.iov_len -= ret;
	}
	return 0;
}

static int cxe_send(struct cxe_conn *c, const void *buf, size_t len, bool more)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0) };
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
	int ret;

	while (iov.iov_len) {
		ret = kernel_sendmsg(c->sock, &msg, &iov, 1, iov.iov_len);
		if (ret <= 0)
			return ret ? ret : -ECONNRESET;
		iov.iov_base += ret;
		iov.iov_len -= ret;
	}
	return 0;
}

/* Discard len bytes of payload (a PDU LIO chose not to take). */
static int cxe_discard(struct cxe_conn *c, u32 len)
{
	u8 *buf = kmalloc(min_t(u32, len, PAGE_SIZE), GFP_KERNEL);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (len && !ret) {
		u32 n = min_t(u32, len, PAGE_SIZE);

		ret = cxe_recv(c, buf, n);
		len -= n;
	}
	kfree(buf);
	return ret;
}

/*
 * Walk [off, off + len) of a scatterlist one page piece at a time: the
 * placement and transmit paths both go straight to the command's pages.
 */
typedef int (*cxe_sg_fn)(struct cxe_conn *c, u8 *p, u32 n, u32 *crc, bool more);

static int cxe_sg_walk(struct cxe_conn *c, struct scatterlist *sgl, u32 nents,
		       u32 off, u32 len, u32 *crc, bool more, cxe_sg_fn fn)
{
	struct scatterlist *sg;
	int i, ret = 0;

	for_each_sg(sgl, sg, nents, i) {
		u32 sg_off = sg->offset, sg_len = sg->length;

		if (!len)
			break;
		if (off >= sg_len) {
			off -= sg_len;
			continue;
		}
		sg_off += off;
		sg_len -= off;
		off = 0;
		while (sg_len && len && !ret) {
			struct page *pg = nth_page(sg_page(sg), sg_off >> PAGE_SHIFT);
			u32 pg_off = offset_in_page(sg_off);
			u32 n = min3(sg_len, len, (u32)PAGE_SIZE - pg_off);
			u8 *p = kmap_local_page(pg);

			ret = fn(c, p + pg_off, n, crc, more || len > n);
			kunmap_local(p);
			sg_off += n;
			sg_len -= n;
			len -= n;
		}
		if (ret)
			return ret;
	}
	return len ? -EINVAL : 0;
}

static int cxe_sg_recv_fn(struct cxe_conn *c, u8 *p, u32 n, u32 *crc, bool more)
{
	int ret = cxe_recv(c, p, n);

	if (!ret && crc)
		*crc = cxe_crc32c(*crc, p, n);
	return ret;
}

static int cxe_sg_send_fn(struct cxe_conn *c, u8 *p, u32 n, u32 *crc, bool more)
{
	if (crc)
		*crc = cxe_crc32c(*crc, p, n);
	return cxe_send(c, p, n, more);
}

/* Read pad + data digest after a data segment whose running CRC is crc. */
static int cxe_recv_trailer(struct cxe_conn *c, u32 dlen, u32 crc, bool *bad)
{
	u8 pad[4], dig[CXE_DIGEST_LEN];
	u32 padlen = cxe_pad_len(dlen);
	int ret;

	*bad = false;
	if (padlen) {
		ret = cxe_recv(c, pad, padlen);
		if (ret)
			return ret;
		crc = cxe_crc32c(crc, pad, padlen);
	}
	if (!c->ddigest)
		return 0;
	ret = cxe_recv(c, dig, sizeof(dig));
	if (ret)
		return ret;
	if (cxe_get_le32(dig) != ~crc) {
		*bad = true;
		cxe_cstat(c, CXE_STAT_DDIGEST_ERR, 1);
	}
	return 0;
}

/* Receive a data segment into a kernel buffer (text, ping, login). */
static int cxe_recv_buf(struct cxe_conn *c, void *buf, u32 dlen, bool *bad)
{
	int ret = cxe_recv(c, buf, dlen);

	if (ret)
		return ret;
	return cxe_recv_trailer(c, dlen, c->ddigest ? cxe_crc32c(~0u, buf, dlen) : ~0u, bad);
}

/* Receive a data segment straight into the command's pages at off. */
static int cxe_recv_place(struct cxe_conn *c, struct iscsit_cmd *cmd, u32 off,
			  u32 len, u32 dlen, bool *bad)
{
	struct se_cmd *se = &cmd->se_cmd;
	u32 crc = ~0u;
	int ret;

	ret = cxe_sg_walk(c, se->t_data_sg, se->t_data_nents, off, len,
			  c->ddigest ? &crc : NULL, false, cxe_sg_recv_fn);
	if (ret)
		return ret;
	cxe_cstat(c, CXE_STAT_BYTES_PLACED, len);
	/* bytes past the command's buffer (overflow) are read and dropped */
	while (dlen > len) {
		u8 tmp[64];
		u32 n = min_t(u32, dlen - len, sizeof(tmp));

		ret = cxe_recv(c, tmp, n);
		if (ret)
			return ret;
		if (c->ddigest)
			crc = cxe_crc32c(crc, tmp, n);
		len += n;
	}
	return cxe_recv_trailer(c, dlen, crc, bad);
}

/* ---- login --------------------------------------------------------------- */

static int cxe_get_login_rx(struct iscsit_conn *conn, struct iscsi_login *login)
{
	struct cxe_conn *c = conn->context;
	struct iscsi_login_req *req = (struct iscsi_login_req *)login->req;
	u32 dlen;
	int ret;

	ret = cxe_recv(c, login->req, ISCSI_HDR_LEN);
	if (ret)
		return -1;
	dlen = ntoh24(req->dlength);
	if (login->first_request) {
		login->leading_connection = !req->tsih;
		login->current_stage = ISCSI_LOGIN_CURRENT_STAGE(req->flags);
		login->version_min = req->min_version;
		login->version_max = req->max_version;
		memcpy(login->isid, req->isid, 6);
		login->cmd_sn = be32_to_cpu(req->cmdsn);
		login->init_task_tag = req->itt;
		login->initial_exp_statsn = be32_to_cpu(req->exp_statsn);
		login->cid = be16_to_cpu(req->cid);
		login->tsih = be16_to_cpu(req->tsih);
	}
	/* checks the opcode, flags, stages and dlen <= MAX_KEY_VALUE_PAIRS */
	if (iscsi_target_check_login_request(conn, login) < 0)
		return -1;
	memset(login->req_buf, 0, MAX_KEY_VALUE_PAIRS);
	ret = cxe_recv(c, login->req_buf, dlen + cxe_pad_len(dlen));
	if (ret)
		return -1;
	cxe_cstat(c, CXE_STAT_PDUS_RX, 1);
	return 0;
}

static int cxe_put_login_tx(struct iscsit_conn *conn, struct iscsi_login *login,
			    u32 length)
{
	struct cxe_conn *c = conn->context;
	static const u8 zeros[4];
	int ret;

	ret = cxe_send(c, login->rsp, ISCSI_HDR_LEN, length);
	if (!ret && length)
		ret = cxe_send(c, login->rsp_buf, length, cxe_pad_len(length));
	if (!ret && cxe_pad_len(length))
		ret = cxe_send(c, zeros, cxe_pad_len(length), false);
	if (ret)
		return -1;
	cxe_cstat(c, CXE_STAT_PDUS_TX, 1);
	return 0;
}

/* The software adapter takes every value LIO negotiates. */
static int cxe_validate_params(struct iscsit_conn *conn)
{
	return 0;
}

/* ---- transmit ------------------------------------------------------------ */

/*
 * Send one PDU: the 48-byte header, then dlen bytes of data from the
 * command's pages at off (sg) or from buf, with padding and the digests
 * the connection negotiated.
 */
static int cxe_send_pdu(struct cxe_conn *c, const u8 *bhs, struct iscsit_cmd *cmd,
			u32 off, const void *buf, u32 dlen, bool more)
{
	u8 hdr[ISCSI_HDR_LEN + CXE_DIGEST_LEN];
	u32 hlen = ISCSI_HDR_LEN, crc = ~0u, padlen = cxe_pad_len(dlen);
	static const u8 zeros[4];
	u8 dig[CXE_DIGEST_LEN];
	bool tail = padlen || c->ddigest;
	int ret;

	memcpy(hdr, bhs, ISCSI_HDR_LEN);
	if (c->hdigest) {
		cxe_put_le32(hdr + ISCSI_HDR_LEN, cxe_digest(hdr, ISCSI_HDR_LEN));
		hlen += CXE_DIGEST_LEN;
	}
	ret = cxe_send(c, hdr, hlen, dlen || more);
	if (ret || !dlen)
		goto out;
	if (cmd)
		ret = cxe_sg_walk(c, cmd->se_cmd.t_data_sg, cmd->se_cmd.t_data_nents,
				  off, dlen, c->ddigest ? &crc : NULL, tail || more,
				  cxe_sg_send_fn);
	else
		ret = cxe_sg_send_fn(c, (u8 *)buf, dlen, c->ddigest ? &crc : NULL,
				     tail || more);
	if (!ret && padlen) {
		crc = cxe_crc32c(crc, zeros, padlen);
		ret = cxe_send(c, zeros, padlen, c->ddigest || more);
	}
	if (!ret && c->ddigest) {
		cxe_put_le32(dig, ~crc);
		ret = cxe_send(c, dig, sizeof(dig), more);
	}
out:
	if (!ret)
		cxe_cstat(c, CXE_STAT_PDUS_TX, 1);
	return ret;
}

/*
 * Segmentation offload: LIO hands us the first Data-In of a command; the
 * adapter sends the command's whole read data instead, burst by burst
 * (MaxBurstLength sequences, F on the last PDU of each), each burst cut
 * into MaxRecvDataSegmentLength PDUs by the pure planner, status in the
 * last PDU unless sense data must follow in a SCSI Response.
 */
static int cxe_send_datain_bursts(struct cxe_conn *c, struct iscsit_cmd *cmd,
				  struct iscsi_datain_req *dr, u32 first_len)
{
	struct iscsit_conn *conn = c->conn;
	u32 total = cmd->se_cmd.data_length;
	u32 mrdsl = conn->conn_ops->MaxRecvDataSegmentLength;
	u32 mbl = conn->sess->sess_ops->MaxBurstLength;
	bool sense = cmd->se_cmd.se_cmd_flags & SCF_TRANSPORT_TASK_SENSE;
	u32 off = 0, datasn = 0;
	int ret;

	atomic_long_add(total - first_len, &conn->sess->tx_data_octets);
	while (off < total) {
		struct cxe_seg_burst b = {
			.offset = off,
			.len = min(mbl, total - off),
			.max_pdu = mrdsl,
			.datasn = datasn,
			.status = off + min(mbl, total - off) == total && !sense,
		};
		u32 i, n = cxe_seg_count(&b);
		struct cxe_seg_pdu pdu;

		for (i = 0; cxe_seg_pdu(&b, i, &pdu); i++) {
			struct iscsi_datain datain = {
				.flags = (pdu.final ? ISCSI_FLAG_CMD_FINAL : 0) |
					 (pdu.status ? ISCSI_FLAG_DATA_STATUS : 0),
				.data_sn = pdu.datasn,
				.length = pdu.len,
				.offset = pdu.offset,
			};
			u8 bhs[ISCSI_HDR_LEN];

			if (pdu.status) {
				iscsit_increment_maxcmdsn(cmd, conn->sess);
				cmd->stat_sn = conn->stat_sn++;
			}
			memset(bhs, 0, sizeof(bhs));
			iscsit_build_datain_pdu(cmd, conn, &datain,
						(struct iscsi_data_rsp *)bhs, pdu.status);
			ret = cxe_send_pdu(c, bhs, cmd, pdu.offset, NULL, pdu.len,
					   !pdu.status || i + 1 < n);
			if (ret)
				return ret;
		}
		cxe_cstat(c, CXE_STAT_BURSTS, 1);
		cxe_cstat(c, CXE_STAT_BURST_PDUS, n);
		datasn += n;
		off += b.len;
	}
	cmd->data_sn = datasn;
	cmd->read_data_done = total;
	dr->dr_complete = DATAIN_COMPLETE_NORMAL;
	return 0;
}

static int cxe_xmit_pdu(struct iscsit_conn *conn, struct iscsit_cmd *cmd,
			struct iscsi_datain_req *dr, const void *buf, u32 buf_len)
{
	struct cxe_conn *c = conn->context;
	const struct iscsi_datain *datain = dr ? buf : NULL;
	struct iscsi_sess_ops *so = conn->sess->sess_ops;
	int ret;

	/* the planner's model: ERL 0, PDUs and sequences in order */
	if (datain && !datain->offset && !dr->recovery && !dr->dr_complete &&
	    cmd->se_cmd.data_length > datain->length && !so->ErrorRecoveryLevel &&
	    so->DataSequenceInOrder && so->DataPDUInOrder)
		ret = cxe_send_datain_bursts(c, cmd, dr, datain->length);
	else if (datain)
		ret = cxe_send_pdu(c, cmd->pdu, cmd, datain->offset, NULL,
				   datain->length, false);
	else
		ret = cxe_send_pdu(c, cmd->pdu, NULL, 0, buf, buf_len, false);
	if (ret)
		pr_debug("xmit to %pISpc failed: %d\n", &c->peer, ret);
	return ret;
}

/* ---- DDP tags -------------------------------------------------------------- */

static void cxe_get_r2t_ttt(struct iscsit_conn *conn, struct iscsit_cmd *cmd,
			    struct iscsi_r2t *r2t)
{
	struct cxe_conn *c = conn->context;
	u32 i;

	spin_lock_bh(&c->ddp_lock);
	for (i = 0; i < CXE_DDP_SLOTS; i++) {
		struct cxe_ddp_slot *s = &c->ddp[i];

		if (s->cmd)
			continue;
		s->cmd = cmd;
		s->gen = cxe_ddp_next_gen(s->gen, i);
		s->offset = r2t->offset;
		s->len = r2t->xfer_len;
		r2t->targ_xfer_tag = cxe_ddp_tag(i, s->gen);
		spin_unlock_bh(&c->ddp_lock);
		return;
	}
	spin_unlock_bh(&c->ddp_lock);
	/* every slot busy: a tag without placement rights, LIO checks the data */
	r2t->targ_xfer_tag = cxe_ddp_tag(CXE_NODDP_IDX, 0);
	pr_warn_ratelimited("%pISpc: all %u DDP tags in use\n", &c->peer, CXE_DDP_SLOTS);
}

/*
 * The DDP tag of a Data-Out: the live slot its TTT names, for this
 * command and inside the R2T's window. False means the TTT is stale,
 * forged or out of its window: no byte of it may be placed.
 */
static bool cxe_ddp_check(struct cxe_conn *c, u32 ttt, itt_t itt, u32 off,
			  u32 len, bool final)
{
	u32 i = cxe_ddp_tag_idx(ttt);
	struct cxe_ddp_slot *s;
	bool ok;

	if (i == CXE_NODDP_IDX)
		return true;
	if (i >= CXE_DDP_SLOTS)
		return false;
	spin_lock_bh(&c->ddp_lock);
	s = &c->ddp[i];
	ok = s->cmd && s->gen == cxe_ddp_tag_gen(ttt) &&
	     s->cmd->init_task_tag == itt &&
	     cxe_ddp_in_window(s->offset, s->len, off, len);
	if (ok && final && off + len == s->offset + s->len)
		s->cmd = NULL;	/* the R2T is satisfied */
	spin_unlock_bh(&c->ddp_lock);
	return ok;
}

static void cxe_unmap_cmd(struct iscsit_conn *conn, struct iscsit_cmd *cmd)
{
	struct cxe_conn *c = conn->context;
	u32 i;

	if (!c)
		return;
	spin_lock_bh(&c->ddp_lock);
	for (i = 0; i < CXE_DDP_SLOTS; i++)
		if (c->ddp[i].cmd == cmd)
			c->ddp[i].cmd = NULL;
	spin_unlock_bh(&c->ddp_lock);
}

/* ---- receive ------------------------------------------------------------- */

static int cxe_handle_scsi_cmd(struct cxe_conn *c, struct iscsit_cmd *cmd, u8 *hdr)
{
	struct iscsit_conn *conn = c->conn;
	struct iscsi_scsi_req *req = (struct iscsi_scsi_req *)hdr;
	u32 dlen = ntoh24(req->dlength);
	int rc, cmdsn_ret;
	bool bad;

	rc = iscsit_setup_scsi_cmd(conn, cmd, hdr);
	if (rc < 0)
		/* rejected (and queued for response): keep the stream in step */
		return dlen ? cxe_discard(c, dlen + cxe_pad_len(dlen) +
					  (c->ddigest ? CXE_DIGEST_LEN : 0)) : 0;

	rc = iscsit_process_scsi_cmd(conn, cmd, req);
	if (rc < 0)
		return rc;
	if (!dlen)
		return 0;
	if (rc > 0) {
		/* early CHECK CONDITION: the immediate data is not wanted */
		rc = cxe_discard(c, dlen + cxe_pad_len(dlen) +
				 (c->ddigest ? CXE_DIGEST_LEN : 0));
		if (rc)
			return rc;
		bad = false;
	} else {
		u32 room = cmd->se_cmd.data_length - cmd->write_data_done;

		rc = cxe_recv_place(c, cmd, cmd->write_data_done,
				    min(room, dlen), dlen, &bad);
		if (rc)
			return rc;
		if (bad) {
			pr_err("%pISpc: immediate data digest error at ERL 0: dropping the connection\n",
			       &c->peer);
			iscsit_reject_cmd(cmd, ISCSI_REASON_DATA_DIGEST_ERROR, hdr);
			return -EBADMSG;
		}
		cmd->write_data_done += min(room, dlen);
		if (cmd->write_data_done == cmd->se_cmd.data_length) {
			spin_lock_bh(&cmd->istate_lock);
			cmd->cmd_flags |= ICF_GOT_LAST_DATAOUT;
			cmd->i_state = ISTATE_RECEIVED_LAST_DATAOUT;
			spin_unlock_bh(&cmd->istate_lock);
		}
	}

	cmdsn_ret = iscsit_sequence_cmd(conn, cmd, hdr, req->cmdsn);
	if (cmdsn_ret == CMDSN_ERROR_CANNOT_RECOVER)
		return -EPROTO;
	if (cmd->sense_reason || cmdsn_ret == CMDSN_LOWER_THAN_EXP)
		target_put_sess_cmd(&cmd->se_cmd);
	else if (cmd->unsolicited_data)
		iscsit_set_unsolicited_dataout(cmd);
	return 0;
}

static int cxe_handle_data_out(struct cxe_conn *c, u8 *hdr)
{
	struct iscsi_data *d = (struct iscsi_data *)hdr;
	u32 dlen = ntoh24(d->dlength), off = be32_to_cpu(d->offset);
	struct iscsit_cmd *cmd = NULL;
	bool bad;
	int rc;

	if (d->ttt != cpu_to_be32(ISCSI_RESERVED_TAG) &&
	    !cxe_ddp_check(c, be32_to_cpu(d->ttt), d->itt, off, dlen,
			   d->flags & ISCSI_FLAG_CMD_FINAL)) {
		cxe_cstat(c, CXE_STAT_DDP_TAG_ERR, 1);
		pr_err("%pISpc: Data-Out ITT 0x%08x TTT 0x%08x offset %u length %u matches no R2T: dropping the connection\n",
		       &c->peer, be32_to_cpu((__force __be32)d->itt),
		       be32_to_cpu(d->ttt), off, dlen);
		return -EPROTO;
	}
	/* LIO checks DataSN, offsets and lengths; it dumps what it refuses */
	rc = iscsit_check_dataout_hdr(c->conn, hdr, &cmd);
	if (rc < 0)
		return rc;
	if (!cmd)
		return 0;
	rc = cxe_recv_place(c, cmd, off, min(cmd->se_cmd.data_length, dlen),
			    dlen, &bad);
	if (rc)
		return rc;
	return iscsit_check_dataout_payload(cmd, d, bad);
}

static int cxe_handle_nop_out(struct cxe_conn *c, struct iscsit_cmd *cmd, u8 *hdr)
{
	struct iscsi_nopout *nop = (struct iscsi_nopout *)hdr;
	u32 dlen = ntoh24(nop->dlength);
	u8 *ping = NULL;
	bool bad;
	int rc;

	rc = iscsit_setup_nop_out(c->conn, cmd, nop);
	if (rc < 0)
		return rc;
	if (dlen) {
		ping = kzalloc(dlen + 1, GFP_KERNEL);
		if (!ping)
			return -ENOMEM;
		rc = cxe_recv_buf(c, ping, dlen, &bad);
		if (rc || bad) {
			kfree(ping);
			return rc ? rc : -EBADMSG;
		}
		if (cmd) {
			cmd->buf_ptr = ping;
			cmd->buf_ptr_size = dlen;
		} else {
			kfree(ping);
		}
	}
	return iscsit_process_nop_out(c->conn, cmd, nop);
}

static int cxe_handle_text(struct cxe_conn *c, struct iscsit_cmd *cmd, u8 *hdr)
{
	struct iscsi_text *t = (struct iscsi_text *)hdr;
	u32 dlen = ntoh24(t->dlength);
	u8 *text = NULL;
	bool bad;
	int rc;

	rc = iscsit_setup_text_cmd(c->conn, cmd, t);
	if (rc < 0)
		return rc;
	if (dlen) {
		text = kzalloc(dlen + 1, GFP_KERNEL);
		if (!text)
			return -ENOMEM;
		rc = cxe_recv_buf(c, text, dlen, &bad);
		if (rc || bad) {
			kfree(text);
			return rc ? rc : -EBADMSG;
		}
		text[dlen] = '\0';
		cmd->text_in_ptr = text;
	}
	return iscsit_process_text_cmd(c->conn, cmd, t);
}

static int cxe_rx_pdu(struct cxe_conn *c, u8 *hdr)
{
	struct iscsit_conn *conn = c->conn;
	struct iscsi_hdr *h = (struct iscsi_hdr *)hdr;
	u8 op = h->opcode & ISCSI_OPCODE_MASK;
	struct iscsit_cmd *cmd = NULL;
	int ret;

	if (conn->sess->sess_ops->SessionType &&
	    op != ISCSI_OP_TEXT && op != ISCSI_OP_LOGOUT && op != ISCSI_OP_NOOP_OUT) {
		pr_err("%pISpc: opcode 0x%02x in a discovery session\n", &c->peer, op);
		iscsit_add_reject(conn, ISCSI_REASON_PROTOCOL_ERROR, hdr);
		return -EPROTO;
	}

	switch (op) {
	case ISCSI_OP_SCSI_CMD:
	case ISCSI_OP_SCSI_TMFUNC:
	case ISCSI_OP_LOGOUT:
		cmd = iscsit_allocate_cmd(conn, TASK_INTERRUPTIBLE);
		if (!cmd)
			return -ENOMEM;
		if (op == ISCSI_OP_SCSI_CMD)
			return cxe_handle_scsi_cmd(c, cmd, hdr);
		if (op == ISCSI_OP_SCSI_TMFUNC)
			return iscsit_handle_task_mgt_cmd(conn, cmd, hdr);
		ret = iscsit_handle_logout_cmd(conn, cmd, hdr);
		if (ret > 0)
			wait_for_completion_timeout(&conn->conn_logout_comp,
						    SECONDS_FOR_LOGOUT_COMP * HZ);
		return ret;
	case ISCSI_OP_SCSI_DATA_OUT:
		return cxe_handle_data_out(c, hdr);
	case ISCSI_OP_NOOP_OUT:
		if (h->ttt == cpu_to_be32(ISCSI_RESERVED_TAG)) {
			cmd = iscsit_allocate_cmd(conn, TASK_INTERRUPTIBLE);
			if (!cmd)
				return -ENOMEM;
		}
		return cxe_handle_nop_out(c, cmd, hdr);
	case ISCSI_OP_TEXT:
		if (h->ttt != cpu_to_be32(ISCSI_RESERVED_TAG))
			cmd = iscsit_find_cmd_from_itt(conn, h->itt);
		else
			cmd = iscsit_allocate_cmd(conn, TASK_INTERRUPTIBLE);
		if (!cmd)
			return -EPROTO;
		return cxe_handle_text(c, cmd, hdr);
	case ISCSI_OP_SNACK:
		return iscsit_handle_snack(conn, hdr);
	default:
		pr_err("%pISpc: unknown opcode 0x%02x: dropping the connection\n",
		       &c->peer, op);
		iscsit_add_reject(conn, ISCSI_REASON_CMD_NOT_SUPPORTED, hdr);
		return -EPROTO;
	}
}

/*
 * The connection's receive loop (LIO's RX thread). It returns when the
 * initiator closes, when LIO stops the thread, or on a protocol error,
 * after which LIO tears the connection down (ERL 0).
 */
static void cxe_get_rx_pdu(struct iscsit_conn *conn)
{
	struct cxe_conn *c = conn->context;
	u8 hdr[ISCSI_HDR_LEN + CXE_MAX_AHS_LEN + CXE_DIGEST_LEN];
	u32 hlen, dlen;
	u8 op;
	int ret;

	/* full feature phase: the negotiated digests and limits apply */
	c->hdigest = conn->conn_ops->HeaderDigest;
	c->ddigest = conn->conn_ops->DataDigest;
	/*
	 * LIO's names are the initiator's view: conn_ops->MaxRecvDataSegmentLength
	 * is what the initiator receives (our transmit limit) and
	 * MaxXmitDataSegmentLength what we declared we receive.
	 */
	c->max_recv_dlen = conn->conn_ops->MaxXmitDataSegmentLength;

	while (!kthread_should_stop()) {
		iscsit_thread_check_cpumask(conn, current, 0);
		/*
		 * Receive aggregation: every PDU already queued is handled
		 * before sleeping again; pdus_rx / rx_waits is the batch size.
		 */
		if (!tcp_inq(c->sock->sk))
			cxe_cstat(c, CXE_STAT_RX_WAITS, 1);
		if (cxe_recv(c, hdr, ISCSI_HDR_LEN))
			return;
		hlen = ISCSI_HDR_LEN + cxe_bhs_ahs_len(hdr);
		if (hlen > ISCSI_HDR_LEN &&
		    cxe_recv(c, hdr + ISCSI_HDR_LEN, hlen - ISCSI_HDR_LEN))
			return;
		if (c->hdigest) {
			if (cxe_recv(c, hdr + hlen, CXE_DIGEST_LEN))
				return;
			if (cxe_get_le32(hdr + hlen) != cxe_digest(hdr, hlen)) {
				/* ERL 0: the lengths cannot be trusted, nor the stream */
				cxe_cstat(c, CXE_STAT_HDIGEST_ERR, 1);
				atomic_long_inc(&conn->sess->conn_digest_errors);
				pr_err("%pISpc: header digest error: dropping the connection\n",
				       &c->peer);
				goto drop;
			}
		}
		cxe_cstat(c, CXE_STAT_PDUS_RX, 1);
		if (conn->conn_state == TARG_CONN_STATE_IN_LOGOUT)
			return;
		op = cxe_bhs_opcode(hdr);
		dlen = cxe_bhs_dlen(hdr);
		if (!cxe_opcode_from_initiator(op) || dlen > c->max_recv_dlen) {
			pr_err("%pISpc: opcode 0x%02x with %u data bytes (limit %u): dropping the connection\n",
			       &c->peer, op, dlen, c->max_recv_dlen);
			iscsit_add_reject(conn, cxe_opcode_from_initiator(op) ?
					  ISCSI_REASON_PROTOCOL_ERROR :
					  ISCSI_REASON_CMD_NOT_SUPPORTED, hdr);
			goto drop;
		}
		ret = cxe_rx_pdu(c, hdr);
		if (ret == -EPROTO || ret == -EBADMSG)
			goto drop;
		if (ret < 0)
			return;
	}
	return;
drop:
	cxe_cstat(c, CXE_STAT_DROPS, 1);
}

static enum target_prot_op cxe_get_sup_prot_ops(struct iscsit_conn *conn)
{
	return TARGET_PROT_NORMAL;
}

struct iscsit_transport cxe_transport = {
	.name			= CXE_DRV_NAME,
	.transport_type		= ISCSI_CXGBIT,
	.rdma_shutdown		= false,
	.owner			= THIS_MODULE,
	.iscsit_setup_np	= cxe_setup_np,
	.iscsit_accept_np	= cxe_accept_np,
	.iscsit_free_np		= cxe_free_np,
	.iscsit_free_conn	= cxe_free_conn,
	.iscsit_get_login_rx	= cxe_get_login_rx,
	.iscsit_put_login_tx	= cxe_put_login_tx,
	.iscsit_immediate_queue	= iscsit_immediate_queue,
	.iscsit_response_queue	= iscsit_response_queue,
	.iscsit_get_dataout	= iscsit_build_r2ts_for_cmd,
	.iscsit_queue_data_in	= iscsit_queue_rsp,
	.iscsit_queue_status	= iscsit_queue_rsp,
	.iscsit_xmit_pdu	= cxe_xmit_pdu,
	.iscsit_get_r2t_ttt	= cxe_get_r2t_ttt,
	.iscsit_get_rx_pdu	= cxe_get_rx_pdu,
	.iscsit_validate_params	= cxe_validate_params,
	.iscsit_unmap_cmd	= cxe_unmap_cmd,
	.iscsit_aborted_task	= iscsit_aborted_task,
	.iscsit_get_sup_prot_ops = cxe_get_sup_prot_ops,
};
