// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext PDU layer: the iscsit_transport LIO selects through the np
 * "cxgbit" attribute (targetcli enable_offload, rtslib
 * NetworkPortal.offload).
 *
 * LIO core keeps login negotiation, sessions, SCSI, R2T building and error
 * recovery. This PDU layer dispatches PDUs to LIO's helpers and tells the
 * adapter (adapter.h) where each data segment belongs: write data in the
 * command's pages (Data-Out by its R2T's DDP tag, immediate and unsolicited
 * data by offset), other payloads in LIO's buffers. Digests, placement,
 * segmentation and the tag table are the adapter's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/kthread.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/scatterlist.h>
#include <net/sock.h>
#include <scsi/iscsi_proto.h>
#include <target/target_core_base.h>
#include <target/target_core_fabric.h>
#include <target/iscsi/iscsi_target_core.h>
#include <target/iscsi/iscsi_transport.h>

#include "iscsi_target_erl0.h"
#include "iscsi_target_parameters.h"
#include "iscsi_target_login.h"

#include "core.h"
#include "pdu/cxe_bhs.h"

/* The adapter's walk of the command's pages (struct cxe_sg_pos) */
static struct cxe_sg_pos *cxe_task_walk(struct iscsit_cmd *cmd)
{
	struct cxe_task *task = iscsit_priv_cmd(cmd);

	return &task->walk;
}

static struct cxe_din *cxe_task_din(struct iscsit_cmd *cmd)
{
	struct cxe_task *task = iscsit_priv_cmd(cmd);

	return &task->din;
}

/* Receive a data segment straight into the command's pages at off. */
static int cxe_recv_place(struct cxe_conn *c, struct iscsit_cmd *cmd, u32 off,
			  u32 len, u32 dlen, bool *bad)
{
	struct cxe_data dst = {
		.sgl = cmd->se_cmd.t_data_sg,
		.nents = cmd->se_cmd.t_data_nents,
		.offset = off,
		.len = len,
		.walk = cxe_task_walk(cmd),
		.pi = cxe_pi_dout(c, cmd),
	};

	return cxe_ops(c)->recv_data(c, &dst, dlen, bad);
}

/* Drop a data segment nobody takes (keeps the stream in step). */
static int cxe_discard(struct cxe_conn *c, u32 dlen)
{
	bool bad;

	if (!dlen)
		return 0;
	return cxe_recv_buf(c, NULL, 0, dlen, &bad);
}

/* ---- transmit ------------------------------------------------------------ */

/*
 * Segmentation offload: LIO hands us the first Data-In of a command; the
 * command's whole read data goes to the adapter instead, one burst per
 * MaxBurstLength sequence, and the adapter cuts each into PDUs. The
 * template header is the one LIO builds for a burst's last PDU: status in
 * it for the command's last burst unless sense data must follow in a SCSI
 * Response.
 */
static int cxe_send_datain_bursts(struct cxe_conn *c, struct iscsit_cmd *cmd,
				  struct iscsi_datain_req *dr, u32 first_len)
{
	struct iscsit_conn *conn = c->conn;
	struct cxe_sg_pos *walk = cxe_task_walk(cmd);
	u32 total = cmd->se_cmd.data_length;
	u32 mbl = conn->sess->sess_ops->MaxBurstLength;
	bool sense = cmd->se_cmd.se_cmd_flags & SCF_TRANSPORT_TASK_SENSE;
	u32 off = 0, datasn = 0;
	int n;

	atomic_long_add(total - first_len, &conn->sess->tx_data_octets);
	while (off < total) {
		u32 len = min(mbl, total - off);
		bool status = off + len == total && !sense;
		struct iscsi_datain datain = {
			.flags = ISCSI_FLAG_CMD_FINAL |
				 (status ? ISCSI_FLAG_DATA_STATUS : 0),
		};
		u8 tmpl[ISCSI_HDR_LEN] = {};
		struct cxe_burst b = {
			.tmpl = tmpl,
			.sgl = cmd->se_cmd.t_data_sg,
			.nents = cmd->se_cmd.t_data_nents,
			.offset = off,
			.len = len,
			.max_pdu = conn->conn_ops->MaxRecvDataSegmentLength,
			.datasn = datasn,
			.status = status,
			.walk = walk,
			.din = cxe_task_din(cmd),
		};

		if (status) {
			iscsit_increment_maxcmdsn(cmd, conn->sess);
			cmd->stat_sn = conn->stat_sn++;
		}
		iscsit_build_datain_pdu(cmd, conn, &datain,
					(struct iscsi_data_rsp *)tmpl, status);
		n = cxe_ops(c)->send_burst(c, &b);
		if (n < 0)
			return n;
		datasn += n;
		off += len;
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
	struct cxe_data src = { .buf = (void *)buf, .len = buf_len };
	int ret;

	/* c->iso: the session fits the planner's model (cxe_login_iso()) */
	if (datain && c->iso && !datain->offset && !dr->recovery && !dr->dr_complete &&
	    cmd->se_cmd.data_length > datain->length &&
	    cxe_iso_fits(c, so->MaxBurstLength))
		return cxe_send_datain_bursts(c, cmd, dr, datain->length);
	if (datain)
		src = (struct cxe_data) {
			.sgl = cmd->se_cmd.t_data_sg,
			.nents = cmd->se_cmd.t_data_nents,
			.offset = datain->offset,
			.len = datain->length,
			.walk = cxe_task_walk(cmd),
			.din = cxe_task_din(cmd),
		};
	ret = cxe_ops(c)->send_pdu(c, cmd->pdu, &src);
	if (ret)
		pr_debug("xmit to %pISpc failed: %d\n", &c->peer, ret);
	return ret;
}

/* ---- responses sent inline ---------------------------------------------- */

/*
 * A command's Data-In and status go out from the thread that completed it
 * (LIO's completion work, or the RX thread) instead of waking LIO's TX
 * thread, when that thread has nothing waiting and the send will not wait
 * for the peer. LIO builds and sends them the same way in both
 * (iscsit_response_queue()); c->tx_lock around every send keeps PDUs
 * whole and StatSN in wire order.
 *
 * Not inline:
 * - where sleeping is not allowed, or the kernel cannot say (preemptible()
 *   is 0 without a preempt count): a send may sleep;
 * - at ERL > 0: connection recovery moves commands to another connection
 *   and LIO's close does not wait for them; at ERL 0 the close waits until
 *   every command of the connection is released (target_wait_for_cmds()
 *   in iscsit_release_commands_from_conn()), which a command being sent
 *   inline is not, so no such send outlives the connection;
 * - with anything queued for the TX thread, which keeps its order;
 * - once a Logout response is on its way (cxe_response_queue());
 * - on an adapter without tx_room (a chip's credit wait may be long).
 */

/* The bytes a command's response puts on the wire, at most */
static u32 cxe_rsp_bytes(struct iscsit_conn *conn, struct iscsit_cmd *cmd)
{
	u32 data = cmd->i_state == ISTATE_SEND_DATAIN ?
		   cmd->se_cmd.data_length : 0;
	u32 pdus = data / conn->conn_ops->MaxRecvDataSegmentLength + 2;

	return data + TRANSPORT_SENSE_BUFFER + 2 +
	       pdus * (ISCSI_HDR_LEN + 2 * ISCSI_CRC_LEN + 3);
}

static bool cxe_inline_allowed(struct cxe_conn *c, struct iscsit_conn *conn)
{
	return preemptible() && cxe_ops(c)->tx_room &&
	       READ_ONCE(c->logged_in) && !READ_ONCE(c->no_inline) &&
	       conn->conn_state == TARG_CONN_STATE_LOGGED_IN &&
	       !conn->sess->sess_ops->ErrorRecoveryLevel &&
	       list_empty_careful(&conn->immed_queue_list) &&
	       list_empty_careful(&conn->response_queue_list);
}

/* iscsit_queue_status (good status only), and Data-In once checked */
static int cxe_queue_rsp(struct iscsit_conn *conn, struct iscsit_cmd *cmd)
{
	struct cxe_conn *c = conn->context;
	int ret;

	if (!c || !cxe_inline_allowed(c, conn) || !mutex_trylock(&c->tx_lock))
		return iscsit_queue_rsp(conn, cmd);
	/* room is checked under the lock: no other send fills it meanwhile */
	if (c->no_inline || !cxe_ops(c)->tx_room(c, cxe_rsp_bytes(conn, cmd))) {
		mutex_unlock(&c->tx_lock);
		return iscsit_queue_rsp(conn, cmd);
	}
	ret = iscsit_response_queue(conn, cmd, cmd->i_state);
	if (ret < 0)
		WRITE_ONCE(c->no_inline, true);
	mutex_unlock(&c->tx_lock);
	if (ret < 0) {
		/* what the TX thread does when a send fails: the connection goes */
		pr_debug("inline send to %pISpc failed: dropping the connection\n",
			 &c->peer);
		iscsit_cause_connection_reinstatement(conn, 0);
		return 0;
	}
	/* 1: the immediate queue has work; its producer woke the TX thread */
	cxe_cstat(c, CXE_STAT_TX_INLINE, 1);
	return 0;
}

/*
 * iscsit_queue_data_in: a read whose PI LIO left to the transport is
 * checked before anything of it is sent (pi.c); one that fails is answered
 * as LIO's core answers it (target_complete_ok_work()), with no data.
 */
static int cxe_queue_data_in(struct iscsit_conn *conn, struct iscsit_cmd *cmd)
{
	struct cxe_conn *c = conn->context;
	sense_reason_t rc = c ? cxe_pi_din_check(c, cmd) : 0;

	if (rc)
		return transport_send_check_condition_and_sense(&cmd->se_cmd,
								rc, 0);
	return cxe_queue_rsp(conn, cmd);
}

static int cxe_immediate_queue(struct iscsit_conn *conn, struct iscsit_cmd *cmd,
			       int state)
{
	struct cxe_conn *c = conn->context;
	int ret;

	mutex_lock(&c->tx_lock);
	ret = iscsit_immediate_queue(conn, cmd, state);
	mutex_unlock(&c->tx_lock);
	return ret;
}

static int cxe_response_queue(struct iscsit_conn *conn, struct iscsit_cmd *cmd,
			      int state)
{
	struct cxe_conn *c = conn->context;
	int ret;

	mutex_lock(&c->tx_lock);
	if (state != ISTATE_SEND_LOGOUTRSP) {
		ret = iscsit_response_queue(conn, cmd, state);
		mutex_unlock(&c->tx_lock);
		return ret;
	}
	/*
	 * After a Logout response LIO ends the connection or the session from
	 * this thread (iscsit_logout_post_handler()) and may wait there for
	 * the close: the lock is not held across that, and from here on the
	 * TX thread is the only sender.
	 */
	WRITE_ONCE(c->no_inline, true);
	mutex_unlock(&c->tx_lock);
	return iscsit_response_queue(conn, cmd, state);
}

/* ---- DDP tags -------------------------------------------------------------- */

static void cxe_get_r2t_ttt(struct iscsit_conn *conn, struct iscsit_cmd *cmd,
			    struct iscsi_r2t *r2t)
{
	struct cxe_conn *c = conn->context;
	u32 itt = be32_to_cpu((__force __be32)cmd->init_task_tag);
	bool place = c->ddp && cxe_ddp_fits(c, cmd, r2t->offset, r2t->xfer_len);
	struct cxe_data win = {
		.sgl = cmd->se_cmd.t_data_sg,
		.nents = cmd->se_cmd.t_data_nents,
		.offset = r2t->offset,
		.len = r2t->xfer_len,
	};

	r2t->targ_xfer_tag = cxe_ops(c)->ddp_reserve(c, iscsit_priv_cmd(cmd),
						     itt, &win, place);
}

/*
 * LIO frees the task's pages after this: the fencing rule (adapter.h) says
 * no tag of it may place a byte once ddp_release returns. An adapter that
 * returns with a tag still live has broken it; abort the connection so that
 * no further PDU is placed, and say so (a write already in flight cannot be
 * stopped from here). Without a connection (released already) the tags
 * were fenced by conn_release.
 */
static void cxe_unmap_cmd(struct iscsit_conn *conn, struct iscsit_cmd *cmd)
{
	struct cxe_conn *c = conn->context;
	struct cxe_task *task = iscsit_priv_cmd(cmd);

	if (!c)
		return;
	if (task->ddp_live) {
		cxe_ops(c)->ddp_release(c, task);
		if (WARN_ONCE(task->ddp_live,
			      "%pISpc: adapter %s released ITT 0x%08x with %u DDP tags live: aborting the connection\n",
			      &c->peer, c->adapter->name,
			      be32_to_cpu((__force __be32)cmd->init_task_tag),
			      task->ddp_live)) {
			/* a cached buffer could still be written: freed with c */
			iscsit_cause_connection_reinstatement(conn, 0);
			return;
		}
	}
	/* after the fence: no tag places into a buffer the cache takes back */
	cxe_dcache_return(c, task);
}

/* ---- receive ------------------------------------------------------------- */

/*
 * Refuse a PDU of a task LIO holds and end the connection: a Reject (which
 * takes no reference of the task) and an error that drops the connection.
 * Never iscsit_reject_cmd() for such a task: it drops a reference of a task
 * it leaves WRITE_PENDING on the connection's list, and the close then
 * frees that task a second time (a WARN in iscsit_release_cmd, then a
 * refcount underflow).
 */
static int cxe_refuse_task_pdu(struct iscsit_conn *conn, u8 reason, u8 *hdr,
			       int err)
{
	iscsit_add_reject(conn, reason, hdr);
	return err;
}

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
		return cxe_discard(c, dlen);
	cxe_spr_hook(cmd);
	cxe_dcache_lend(c, cmd);

	rc = iscsit_process_scsi_cmd(conn, cmd, req);
	if (rc < 0)
		return rc;
	if (!dlen)
		return 0;
	if (rc > 0) {
		/* early CHECK CONDITION: the immediate data is not wanted */
		rc = cxe_discard(c, dlen);
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
			return cxe_refuse_task_pdu(conn, ISCSI_REASON_DATA_DIGEST_ERROR,
						   hdr, -EBADMSG);
		}
		cmd->write_data_done += min(room, dlen);
		if (cmd->write_data_done == cmd->se_cmd.data_length) {
			cxe_pi_dout_finish(c, cmd);
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

/*
 * A Data-Out that completes a range placed by the adapter (CXE_RX_RANGE,
 * adapter.h): its task's data is taken as received from the range's start
 * up to this PDU, whose own checks LIO then makes as for any Data-Out
 * (DataSN, offset, burst length), as mainline cxgbit does for a T6's
 * completion. *start: where the range begins, for the tag's check. The
 * range must be exactly the task's next bytes, in a session whose
 * Data-Outs come in order, outside any recovery: else the connection
 * ends, rather than a task taking bytes nobody sent.
 */
static int cxe_data_out_range(struct cxe_conn *c, struct iscsi_data *d,
			      u32 *start)
{
	struct iscsit_conn *conn = c->conn;
	u32 off = be32_to_cpu(d->offset), skipped;
	struct iscsit_cmd *cmd;

	cmd = iscsit_find_cmd_from_itt(conn, d->itt);
	if (!cmd || !conn->sess->sess_ops->DataPDUInOrder ||
	    !conn->sess->sess_ops->DataSequenceInOrder ||
	    cmd->cmd_flags & ICF_WITHIN_COMMAND_RECOVERY ||
	    cmd->write_data_done != c->rx_range_start ||
	    c->rx_range_start >= off) {
		pr_err("%pISpc: Data-Out ITT 0x%08x offset %u completes a placed range from %u that is not the task's next data: dropping the connection\n",
		       &c->peer, be32_to_cpu((__force __be32)d->itt), off,
		       c->rx_range_start);
		return -EPROTO;
	}
	*start = c->rx_range_start;
	skipped = off - c->rx_range_start;
	atomic_long_add(skipped, &conn->sess->rx_data_octets);
	cxe_cstat(c, CXE_STAT_RANGE_BYTES, skipped);
	cmd->write_data_done = off;
	cmd->next_burst_len += skipped;
	cmd->data_sn = be32_to_cpu(d->datasn);
	return 0;
}

static int cxe_handle_data_out(struct cxe_conn *c, u8 *hdr)
{
	struct iscsi_data *d = (struct iscsi_data *)hdr;
	u32 dlen = ntoh24(d->dlength), off = be32_to_cpu(d->offset);
	u32 start = off;
	struct iscsit_cmd *cmd;
	bool bad, held, taken = false;
	int rc;

	/*
	 * As LIO: a Data-Out without data is ignored, whatever its TTT (a
	 * DDP window check would refuse a zero-length piece of it).
	 */
	if (!dlen)
		return 0;
	if (c->rx_flags & CXE_RX_RANGE) {
		rc = cxe_data_out_range(c, d, &start);
		if (rc)
			return rc;
	}
	if (d->ttt != cpu_to_be32(ISCSI_RESERVED_TAG) &&
	    !cxe_ops(c)->ddp_check(c, be32_to_cpu(d->ttt),
					be32_to_cpu((__force __be32)d->itt), start,
					off + dlen - start,
					d->flags & ISCSI_FLAG_CMD_FINAL)) {
		cxe_cstat(c, CXE_STAT_DDP_TAG_ERR, 1);
		pr_err("%pISpc: Data-Out ITT 0x%08x TTT 0x%08x offset %u length %u matches no R2T: dropping the connection\n",
		       &c->peer, be32_to_cpu((__force __be32)d->itt),
		       be32_to_cpu(d->ttt), off, dlen);
		return -EPROTO;
	}
	/* dlen is within MaxXmitDataSegmentLength: cxe_get_rx_pdu checked it */
	cmd = iscsit_find_cmd_from_itt_or_dump(c->conn, d->itt, dlen);
	if (!cmd)
		return cxe_ops(c)->data_taken(c);	/* LIO read it */
	/*
	 * Data past the task's transfer length: LIO would answer with
	 * iscsit_reject_cmd() (see cxe_refuse_task_pdu()). The checks LIO
	 * makes before this one (data for a task that is not a write) stay
	 * LIO's; a task that has all its data is not found above.
	 */
	if (cmd->data_direction == DMA_TO_DEVICE &&
	    (u64)off + dlen > cmd->se_cmd.data_length) {
		pr_err("%pISpc: Data-Out ITT 0x%08x offset %u length %u past the transfer length %u: dropping the connection\n",
		       &c->peer, be32_to_cpu((__force __be32)d->itt), off, dlen,
		       cmd->se_cmd.data_length);
		return cxe_refuse_task_pdu(c->conn, ISCSI_REASON_BOOKMARK_INVALID,
					   hdr, -EPROTO);
	}
	/* LIO checks DataSN, offsets and lengths; it dumps what it refuses */
	rc = __iscsit_check_dataout_hdr(c->conn, hdr, cmd, dlen, &taken);
	if (rc < 0)
		return rc;
	if (!taken)
		return cxe_ops(c)->data_taken(c);	/* refused, payload read by LIO */
	rc = cxe_recv_place(c, cmd, off, min(cmd->se_cmd.data_length, dlen),
			    dlen, &bad);
	if (rc)
		return rc;
	if (!bad) {
		/* LIO's own test (iscsit_dataout_post_crc_passed()): it executes next */
		if (cmd->write_data_done + dlen == cmd->se_cmd.data_length)
			cxe_pi_dout_finish(c, cmd);
		return iscsit_check_dataout_payload(cmd, d, false);
	}
	/*
	 * A data digest error ends the connection at ERL 0, where LIO would
	 * answer it with iscsit_reject_cmd() (see cxe_refuse_task_pdu()).
	 */
	if (!c->conn->sess->sess_ops->ErrorRecoveryLevel) {
		pr_err("%pISpc: Data-Out ITT 0x%08x offset %u data digest error at ERL 0: dropping the connection\n",
		       &c->peer, be32_to_cpu((__force __be32)d->itt), off);
		return cxe_refuse_task_pdu(c->conn, ISCSI_REASON_DATA_DIGEST_ERROR,
					   hdr, -EBADMSG);
	}
	/*
	 * Above ERL 0 LIO asks for the data again with a recovery R2T, but
	 * first rejects the PDU with iscsit_reject_cmd(), which drops a
	 * reference of the task it keeps going: the task gets one for it.
	 * If LIO gives the task up instead, that reference goes back.
	 */
	held = !!cmd->se_cmd.se_tfo;
	if (held)
		kref_get(&cmd->se_cmd.cmd_kref);
	rc = iscsit_check_dataout_payload(cmd, d, true);
	if (rc < 0 && held)
		target_put_sess_cmd(&cmd->se_cmd);
	return rc;
}

/* A data segment into a new NUL-terminated buffer (ping data, text keys). */
static int cxe_recv_kbuf(struct cxe_conn *c, u32 dlen, u8 **out)
{
	u8 *buf = kzalloc(dlen + 1, GFP_KERNEL);
	bool bad;
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = cxe_recv_buf(c, buf, dlen, dlen, &bad);
	if (rc || bad) {
		kfree(buf);
		return rc ? rc : -EBADMSG;
	}
	*out = buf;
	return 0;
}

static int cxe_handle_nop_out(struct cxe_conn *c, struct iscsit_cmd *cmd, u8 *hdr)
{
	struct iscsi_nopout *nop = (struct iscsi_nopout *)hdr;
	u32 dlen = ntoh24(nop->dlength);
	u8 *ping;
	int rc;

	rc = iscsit_setup_nop_out(c->conn, cmd, nop);
	if (rc < 0)
		return rc;
	if (dlen) {
		rc = cxe_recv_kbuf(c, dlen, &ping);
		if (rc)
			return rc;
		if (cmd) {
			cmd->buf_ptr = ping;
			cmd->buf_ptr_size = dlen;
		} else {
			kfree(ping);
		}
	}
	return iscsit_process_nop_out(c->conn, cmd, nop);
}

/*
 * LIO refuses a Text request it does not take (keys other than
 * SendTargets, too long, several PDUs) by turning its task into a Reject
 * with iscsit_reject_cmd(), which lists the task nowhere: nothing would
 * ever free it or its text (the fix in LIO itself is upstream/0014-*). A
 * refused task on no list goes on the connection's, as LIO puts every new
 * task it refuses (iscsit_add_reject_cmd()): freed once the initiator
 * acknowledges the Reject's StatSN, or with the connection.
 */
static int cxe_text_done(struct iscsit_conn *conn, struct iscsit_cmd *cmd,
			 int rc)
{
	if (rc >= 0 || cmd->iscsi_opcode != ISCSI_OP_REJECT)
		return rc;
	spin_lock_bh(&conn->cmd_lock);
	if (list_empty(&cmd->i_conn_node))
		list_add_tail(&cmd->i_conn_node, &conn->conn_cmd_list);
	spin_unlock_bh(&conn->cmd_lock);
	return rc;
}

static int cxe_handle_text(struct cxe_conn *c, struct iscsit_cmd *cmd, u8 *hdr)
{
	struct iscsi_text *t = (struct iscsi_text *)hdr;
	u32 dlen = ntoh24(t->dlength);
	u8 *text;
	int rc;

	rc = iscsit_setup_text_cmd(c->conn, cmd, t);
	if (rc < 0)
		return cxe_text_done(c->conn, cmd, rc);
	if (dlen) {
		rc = cxe_recv_kbuf(c, dlen, &text);
		if (rc)
			return rc;
		cmd->text_in_ptr = text;
	}
	return cxe_text_done(c->conn, cmd,
			     iscsit_process_text_cmd(c->conn, cmd, t));
}

/*
 * Would LIO refuse this Data/R2T SNACK on the task it names? At ERL > 0 it
 * refuses one that asks for DataSNs (R2TSNs) the task never sent, or ones
 * a DataACK SNACK already acknowledged, and does so with
 * iscsit_reject_cmd(), which drops a reference of that task while the task
 * is still listed and in use: it is later freed twice (the fix in LIO
 * itself is upstream/0004-*.patch). Such a SNACK is refused here instead,
 * the task left alone. The test is LIO's own (iscsit_handle_r2t_snack(),
 * iscsit_handle_recovery_datain()), read in the same RX thread LIO would
 * read it in.
 */
static bool cxe_snack_would_reject_task(struct iscsit_conn *conn,
					const u8 *hdr)
{
	const struct iscsi_snack *s = (const struct iscsi_snack *)hdr;
	u32 begrun = be32_to_cpu(s->begrun);
	u32 runlength = be32_to_cpu(s->runlength);
	struct iscsit_cmd *cmd;

	if (!conn->sess->sess_ops->ErrorRecoveryLevel ||
	    (s->flags & ISCSI_FLAG_SNACK_TYPE_MASK) != ISCSI_FLAG_SNACK_TYPE_DATA)
		return false;
	cmd = iscsit_find_cmd_from_itt(conn, s->itt);
	if (!cmd)
		return false;
	if ((cmd->cmd_flags & ICF_GOT_DATACK_SNACK) &&
	    begrun <= cmd->acked_data_sn)
		return true;
	switch (cmd->data_direction) {
	case DMA_TO_DEVICE:
		return runlength && begrun + runlength > cmd->r2t_sn;
	case DMA_FROM_DEVICE:
		return (cmd->se_cmd.transport_state & CMD_T_COMPLETE) &&
		       begrun + runlength > cmd->data_sn - 1;
	default:
		return false;
	}
}

/*
 * Is a SCSI Command's CmdSN outside [ExpCmdSN, MaxCmdSN]? RFC 7143 4.2.2.1:
 * the target silently ignores it, and such a command never reaches LIO.
 * LIO ignores it too, in iscsit_sequence_cmd(), but only after
 * transport_generic_new_cmd() has made a WRITE with immediate data
 * TRANSPORT_WRITE_PENDING; it then drops the command's reference and
 * leaves it on the connection's list for the TX thread to remove. A
 * connection that closes before that completes the command as
 * WRITE_PENDING (iscsit_release_commands_from_conn()), the completion
 * drops the last reference while the command is still listed, and it is
 * freed twice (a WARN in iscsit_release_cmd(), then a use-after-free).
 * upstream/ has no patch for LIO for this one yet (upstream/README.md
 * lists those it has). ExpCmdSN and MaxCmdSN only grow: a command this
 * finds outside the window, LIO would find outside it too.
 */
static bool cxe_cmdsn_outside_window(struct cxe_conn *c, const u8 *hdr)
{
	const struct iscsi_scsi_req *req = (const struct iscsi_scsi_req *)hdr;
	struct iscsit_session *sess = c->conn->sess;
	u32 sn = be32_to_cpu(req->cmdsn), exp, max;

	if (req->opcode & ISCSI_OP_IMMEDIATE)
		return false;	/* not in the window's order: LIO rejects it */
	mutex_lock(&sess->cmdsn_mutex);
	exp = sess->exp_cmd_sn;
	max = (u32)atomic_read(&sess->max_cmd_sn);
	mutex_unlock(&sess->cmdsn_mutex);
	if (!iscsi_sna_lt(sn, exp) && !iscsi_sna_gt(sn, max))
		return false;
	pr_info_ratelimited("%pISpc: CmdSN 0x%08x outside [0x%08x, 0x%08x]: ignored\n",
			    &c->peer, sn, exp, max);
	return true;
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
		if (cxe_cmdsn_outside_window(c, hdr))
			return cxe_discard(c, cxe_bhs_dlen(hdr));
		fallthrough;
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
		if (h->ttt == cpu_to_be32(ISCSI_RESERVED_TAG)) {
			cmd = iscsit_allocate_cmd(conn, TASK_INTERRUPTIBLE);
			if (!cmd)
				return -ENOMEM;
			return cxe_handle_text(c, cmd, hdr);
		}
		/*
		 * A continuation: only of a Text task. LIO would take over
		 * whatever task has the ITT (a SCSI command too) and free it
		 * twice; refuse instead.
		 */
		cmd = iscsit_find_cmd_from_itt(conn, h->itt);
		if (!cmd || cmd->iscsi_opcode != ISCSI_OP_TEXT) {
			pr_err("%pISpc: Text PDU with TTT 0x%08x continues no Text task of ITT 0x%08x: dropping the connection\n",
			       &c->peer, be32_to_cpu(h->ttt),
			       be32_to_cpu((__force __be32)h->itt));
			iscsit_add_reject(conn, ISCSI_REASON_PROTOCOL_ERROR, hdr);
			return -EPROTO;
		}
		return cxe_handle_text(c, cmd, hdr);
	case ISCSI_OP_SNACK:
		if (cxe_snack_would_reject_task(conn, hdr)) {
			pr_err("%pISpc: SNACK asks task ITT 0x%08x for a run it never sent or was acknowledged: dropping the connection\n",
			       &c->peer, be32_to_cpu((__force __be32)h->itt));
			iscsit_add_reject(conn, ISCSI_REASON_BOOKMARK_INVALID, hdr);
			return -EPROTO;
		}
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
static void cxe_rx_loop(struct iscsit_conn *conn)
{
	struct cxe_conn *c = conn->context;
	u8 hdr[ISCSI_HDR_LEN + CXE_MAX_AHS_LEN];
	/*
	 * LIO's names are the initiator's view: conn_ops->MaxRecvDataSegmentLength
	 * is what the initiator receives (our transmit limit) and
	 * MaxXmitDataSegmentLength what we declared we receive.
	 */
	u32 max_dlen = conn->conn_ops->MaxXmitDataSegmentLength;
	u32 dlen;
	u8 op;
	int ret;

	while (!kthread_should_stop()) {
		iscsit_thread_check_cpumask(conn, current, 0);
		ret = cxe_ops(c)->recv_hdr(c, hdr, &c->rx_flags);
		if (ret == -EBADMSG) {
			/* ERL 0: the lengths cannot be trusted, nor the stream */
			atomic_long_inc(&conn->sess->conn_digest_errors);
			pr_err("%pISpc: header digest error: dropping the connection\n",
			       &c->peer);
			goto drop;
		}
		if (ret == -ECONNABORTED)
			goto drop;	/* the adapter refused the stream */
		if (ret)
			return;
		if (conn->conn_state == TARG_CONN_STATE_IN_LOGOUT)
			return;
		op = cxe_bhs_opcode(hdr);
		dlen = cxe_bhs_dlen(hdr);
		if (!cxe_bhs_ahs_ok(hdr)) {
			pr_err("%pISpc: opcode 0x%02x with a malformed AHS: dropping the connection\n",
			       &c->peer, op);
			iscsit_add_reject(conn, ISCSI_REASON_PROTOCOL_ERROR, hdr);
			goto drop;
		}
		if (!cxe_bhs_cdb_ok(hdr)) {
			pr_err("%pISpc: SCSI Command whose CDB claims %u bytes, more than it carries: dropping the connection\n",
			       &c->peer, 8u + hdr[CXE_BHS_CDB_OFF + 7]);
			iscsit_add_reject(conn, ISCSI_REASON_PROTOCOL_ERROR, hdr);
			goto drop;
		}
		if (!cxe_bhs_data_ok(hdr)) {
			pr_err("%pISpc: SCSI Command without the W bit but with %u data bytes: dropping the connection\n",
			       &c->peer, dlen);
			iscsit_add_reject(conn, ISCSI_REASON_PROTOCOL_ERROR, hdr);
			goto drop;
		}
		if (!cxe_opcode_from_initiator(op) || dlen > max_dlen) {
			pr_err("%pISpc: opcode 0x%02x with %u data bytes (limit %u): dropping the connection\n",
			       &c->peer, op, dlen, max_dlen);
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

/*
 * Once the receive loop is over LIO tears the connection down and waits
 * for every command of it, a command being sent inline too. A send that
 * waits for room the peer never makes (the room tx_room saw gone to
 * memory pressure) would hold that up for good: LIO's signal wakes its TX
 * thread, not the completing thread. So no response goes inline any more,
 * and a socket-based connection's stream is shut, which fails such a
 * send at once. A Logout response is on the wire by then: the loop ends
 * after LIO's wait for it.
 */
static void cxe_get_rx_pdu(struct iscsit_conn *conn)
{
	struct cxe_conn *c = conn->context;

	cxe_pi_session_check(conn);
	cxe_rx_loop(conn);
	WRITE_ONCE(c->no_inline, true);
	cxe_dcache_close(&c->dcache);
	if (cxe_ops(c)->tx_room && conn->sock)
		kernel_sock_shutdown(conn->sock, SHUT_RDWR);
}

struct iscsit_transport cxe_transport = {
	.name			= CXE_DRV_NAME,
	.transport_type		= ISCSI_CXGBIT,
	.rdma_shutdown		= false,
	.owner			= THIS_MODULE,
	.priv_size		= sizeof(struct cxe_task),
	.iscsit_setup_np	= cxe_setup_np,
	.iscsit_accept_np	= cxe_accept_np,
	.iscsit_free_np		= cxe_free_np,
	.iscsit_free_conn	= cxe_free_conn,
	.iscsit_get_login_rx	= cxe_get_login_rx,
	.iscsit_put_login_tx	= cxe_put_login_tx,
	.iscsit_immediate_queue	= cxe_immediate_queue,
	.iscsit_response_queue	= cxe_response_queue,
	.iscsit_get_dataout	= iscsit_build_r2ts_for_cmd,
	.iscsit_queue_data_in	= cxe_queue_data_in,
	.iscsit_queue_status	= cxe_queue_rsp,
	.iscsit_xmit_pdu	= cxe_xmit_pdu,
	.iscsit_get_r2t_ttt	= cxe_get_r2t_ttt,
	.iscsit_get_rx_pdu	= cxe_get_rx_pdu,
	.iscsit_validate_params	= cxe_validate_params,
	.iscsit_unmap_cmd	= cxe_unmap_cmd,
	.iscsit_aborted_task	= iscsit_aborted_task,
	.iscsit_get_sup_prot_ops = cxe_pi_sup_prot_ops,
};
