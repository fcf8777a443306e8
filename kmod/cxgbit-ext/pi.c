// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext: T10 protection information on offloaded connections.
 *
 * Behind a backstore formatted with PI, LIO's core inserts PI into a
 * write's protection buffer before the backstore sees it, and checks and
 * strips it on a read after, each in a pass of its own over the data
 * (sbc_dif_generate(), sbc_dif_verify()), unless the session's transport
 * says it does so itself (se_session->sup_prot_ops, which LIO asks the
 * transport for at each login of the session). iSCSI/TCP carries no PI:
 * only insert on writes and strip on reads can apply, never PASS.
 *
 * Writes: an adapter that can (CXE_CAP_T10PI) makes each block's tuple as
 * it places the block's bytes in the command's pages (pdu/cxe_pi.c),
 * while they are still in the cache; where it could not follow the data
 * in order (data sent again in recovery), the PDU layer makes the tuples
 * in a pass of its own before LIO executes the command.
 *
 * Reads: the PDU layer checks each block's tuple in one pass over the data
 * before any of it is sent, as LIO's core would, and makes the data
 * digests of the read's PDUs in the same pass, which the software adapter
 * sends instead of reading the data a second time (struct cxe_din). A
 * tuple that fails is answered as the core answers it: no data, CHECK
 * CONDITION naming the check and the block's LBA.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <target/target_core_base.h>
#include <target/iscsi/iscsi_target_core.h>
#include <target/iscsi/iscsi_transport.h>

#include "core.h"

/*
 * The connection's adapter makes PI as it places data. Not with highmem,
 * where the generator's window into the protection buffer (cxe_pi_map())
 * would need a mapping of its own: LIO's core makes it there.
 */
static bool cxe_pi_conn_inserts(const struct cxe_conn *c)
{
	return !IS_ENABLED(CONFIG_HIGHMEM) &&
	       c->adapter->backend->caps & BIT(CXE_CAP_T10PI);
}

/*
 * What the session's transport does for PI (iscsit_get_sup_prot_ops), the
 * one owner of the rule. LIO keeps one value per session, set at each
 * login from the connection logging in:
 * - TARGET_PROT_DOUT_INSERT when this connection's adapter makes the
 *   tuples of writes and so does every other connection of the session;
 *   a session with a stock connection, or one on an adapter that cannot,
 *   must never say it, as the writes that connection receives would go to
 *   disk without PI;
 * - TARGET_PROT_DIN_STRIP when every connection of the session is on this
 *   transport, whose PDU layer checks every read's tuples itself whatever
 *   the session says (cxe_pi_din_check()): a read the core checked as well
 *   (the session said NORMAL when it completed) is checked twice, never
 *   not at all.
 * Not with highmem (cxe_pi_conn_inserts()).
 */
enum target_prot_op cxe_pi_sup_prot_ops(struct iscsit_conn *conn)
{
	struct cxe_conn *c = conn->context;
	struct iscsit_session *sess = conn->sess;
	struct iscsit_conn *o;
	bool strip = c && !IS_ENABLED(CONFIG_HIGHMEM);
	bool insert = strip && cxe_pi_conn_inserts(c);

	if (!strip || !sess)
		return TARGET_PROT_NORMAL;
	spin_lock_bh(&sess->conn_lock);
	list_for_each_entry(o, &sess->sess_conn_list, conn_list) {
		if (o == conn)
			continue;
		if (o->conn_transport != &cxe_transport || !o->context)
			strip = false;
		else if (!cxe_pi_conn_inserts(o->context))
			insert = false;
	}
	spin_unlock_bh(&sess->conn_lock);
	return (strip ? TARGET_PROT_DIN_STRIP : 0) |
	       (strip && insert ? TARGET_PROT_DOUT_INSERT : 0);
}

/*
 * Once the connection is in its session's list (its receive loop starts):
 * another connection that logged in to the session at the same time,
 * through another transport, was not in the list when this one's login
 * said INSERT or STRIP. Whatever LIO set since, less is always safe.
 */
void cxe_pi_session_check(struct iscsit_conn *conn)
{
	struct se_session *se_sess = conn->sess->se_sess;
	int ops = READ_ONCE(se_sess->sup_prot_ops);
	int keep = ops & cxe_pi_sup_prot_ops(conn);

	if (keep != ops)
		WRITE_ONCE(se_sess->sup_prot_ops, keep);
}

/*
 * The protection buffer from block idx's tuple to the end of the page
 * holding it, for the generator to write tuples into while the data's
 * pieces come. It keeps the window across pieces, each a call of
 * cxe_pi_placed(): without highmem (cxe_pi_conn_inserts()) a page's
 * address is its mapping, valid in any context for as long as LIO holds
 * the buffer.
 */
static bool cxe_pi_map(void *ctx, u32 idx, struct cxe_pi_win *w)
{
	struct cxe_pi_dout *pi = ctx;
	u32 pos = idx * CXE_PI_TUPLE_LEN, off, n;
	struct page *pg;

	cxe_sg_pos_at(&pi->walk, pi->sgl, pi->nents, pos);
	/* the generator makes no more tuples than the buffer holds */
	if (WARN_ON_ONCE(!cxe_sg_seek(&pi->walk, pos)))
		return false;
	pg = cxe_sg_page(&pi->walk, pos, &off, &n);
	/* LIO's buffers are whole pages: a tuple never straddles two */
	if (WARN_ON_ONCE(n < CXE_PI_TUPLE_LEN))
		return false;
	w->t = (u8 *)page_address(pg) + off;
	w->first = idx;
	w->end = idx + n / CXE_PI_TUPLE_LEN;
	return true;
}

void cxe_pi_placed(struct cxe_pi_dout *pi, u32 pos, const void *va, u32 len)
{
	cxe_pi_gen_feed(&pi->gen, pos, va, len, cxe_pi_map, pi);
}
EXPORT_SYMBOL_GPL(cxe_pi_placed);

/*
 * The tuples LIO's sbc_dif_generate() makes: one per block of the data,
 * as many as the protection buffer holds, the reference tag the LBA in
 * type 1 only.
 */
static void cxe_pi_dout_init(struct iscsit_cmd *cmd, struct cxe_pi_dout *pi)
{
	struct se_cmd *se = &cmd->se_cmd;

	pi->sgl = se->t_prot_sg;
	pi->nents = se->t_prot_nents;
	pi->walk = (struct cxe_sg_pos) {};
	cxe_pi_gen_init(&pi->gen, se->se_dev->dev_attrib.block_size,
			se->data_length, se->prot_length / CXE_PI_TUPLE_LEN,
			se->t_task_lba, se->prot_type == TARGET_DIF_TYPE1_PROT);
	pi->on = true;
}

/*
 * A write whose PI is inserted and which LIO leaves to the transport: the
 * session says so (read again for each command: a login may change it).
 */
static bool cxe_pi_inserted(const struct se_cmd *se)
{
	return se->prot_op == TARGET_PROT_DOUT_INSERT && se->t_prot_sg &&
	       READ_ONCE(se->se_sess->sup_prot_ops) & TARGET_PROT_DOUT_INSERT;
}

/*
 * The PI the adapter makes as it places a write's data into its pages
 * (struct cxe_data's pi), or NULL: not such a write, or an adapter that
 * cannot.
 */
struct cxe_pi_dout *cxe_pi_dout(struct cxe_conn *c, struct iscsit_cmd *cmd)
{
	struct cxe_task *task = iscsit_priv_cmd(cmd);

	if (!cxe_pi_inserted(&cmd->se_cmd) || !cxe_pi_conn_inserts(c))
		return NULL;
	if (!task->pi.on)
		cxe_pi_dout_init(cmd, &task->pi);
	return &task->pi;
}

/*
 * A write's data is all in (LIO executes it next): its PI is whole, made
 * as the data was placed, or is made now in a pass over the data. Only
 * where LIO's core will not make it: a session that said INSERT when the
 * data began coming but not now gets it from the core (and a session that
 * says it now but did not then, from the pass).
 */
void cxe_pi_dout_finish(struct cxe_conn *c, struct iscsit_cmd *cmd)
{
	struct se_cmd *se = &cmd->se_cmd;
	struct cxe_pi_dout *pi = &((struct cxe_task *)iscsit_priv_cmd(cmd))->pi;
	struct cxe_sg_pos walk = {};
	u32 pos, off, n;
	struct page *pg;
	u8 *va;

	if (!cxe_pi_inserted(se))
		return;
	if (pi->on && cxe_pi_gen_done(&pi->gen)) {
		cxe_cstat(c, CXE_STAT_PI_BLOCKS, pi->gen.idx);
		return;
	}
	cxe_pi_dout_init(cmd, pi);
	cxe_sg_pos_init(&walk, se->t_data_sg, se->t_data_nents);
	for (pos = 0; pos < pi->gen.len; pos += n) {
		if (!cxe_sg_seek(&walk, pos))
			break;
		pg = cxe_sg_page(&walk, pos, &off, &n);
		n = min(n, pi->gen.len - pos);
		va = kmap_local_page(pg);
		cxe_pi_placed(pi, pos, va + off, n);
		kunmap_local(va);
	}
	/* the data buffer holds data_length bytes: the pass reaches its end */
	WARN_ON_ONCE(!cxe_pi_gen_done(&pi->gen));
	cxe_cstat(c, CXE_STAT_PI_PASSES, 1);
}

/*
 * The tuple checks LIO's core makes on a read (sbc_dif_verify() with the
 * command's prot_checks): the reference tag is the LBA in type 1, and
 * counts from 0 in type 2 as the core counts it there; type 3 has none.
 */
static bool cxe_pi_chk_setup(struct se_cmd *se, struct cxe_pi_dout *pi)
{
	u8 checks = 0;
	u32 ref0 = 0;

	if (se->prot_checks & TARGET_DIF_CHECK_GUARD)
		checks |= CXE_PI_CHECK_GUARD;
	if (se->prot_checks & TARGET_DIF_CHECK_REFTAG &&
	    (se->prot_type == TARGET_DIF_TYPE1_PROT ||
	     se->prot_type == TARGET_DIF_TYPE2_PROT))
		checks |= CXE_PI_CHECK_REF;
	if (se->prot_type == TARGET_DIF_TYPE1_PROT)
		ref0 = (u32)se->t_task_lba;
	pi->sgl = se->t_prot_sg;
	pi->nents = se->t_prot_nents;
	pi->walk = (struct cxe_sg_pos) {};
	pi->on = false;
	return cxe_pi_chk_init(&pi->gen, se->se_dev->dev_attrib.block_size,
			       se->data_length, se->prot_length / CXE_PI_TUPLE_LEN,
			       ref0, checks);
}

/* The digests of a read's PDUs, if the connection sends data digests */
static void cxe_din_init(struct cxe_conn *c, struct iscsit_cmd *cmd,
			 struct cxe_din *d)
{
	struct iscsit_conn *conn = c->conn;

	*d = (struct cxe_din) {};
	if (!c->ddigest)
		return;
	d->mbl = conn->sess->sess_ops->MaxBurstLength;
	d->mrdsl = conn->conn_ops->MaxRecvDataSegmentLength;
	d->len = cmd->se_cmd.data_length;
}

/*
 * A read LIO's core leaves to the transport (TARGET_PROT_DIN_STRIP with a
 * protection buffer), before any of its data goes: each block's tuple
 * checked and, where the connection sends data digests, the digests of its
 * first PDUs made, in one pass over the data. Returns 0, or the sense LIO
 * answers a failed check with, the block's LBA in se_cmd->sense_info as
 * sbc_dif_verify() leaves it. Checked whatever the session says now: the
 * core decided with what it said when the read completed.
 */
sense_reason_t cxe_pi_din_check(struct cxe_conn *c, struct iscsit_cmd *cmd)
{
	struct se_cmd *se = &cmd->se_cmd;
	struct cxe_task *task = iscsit_priv_cmd(cmd);
	struct cxe_pi_dout *pi = &task->pi;
	struct cxe_din *d = &task->din;
	struct cxe_sg_pos walk = {};
	u32 pos, off, n, end, bad, crc = ~0u;
	bool digests;
	struct page *pg;
	u8 *va;

	if (IS_ENABLED(CONFIG_HIGHMEM) || se->prot_op != TARGET_PROT_DIN_STRIP ||
	    !se->t_prot_sg)
		return 0;
	/* LIO's block sizes are powers of 2 from 512: never refused */
	if (WARN_ON_ONCE(!cxe_pi_chk_setup(se, pi)))
		return TCM_LOGICAL_UNIT_COMMUNICATION_FAILURE;
	cxe_din_init(c, cmd, d);
	digests = d->len;
	end = digests ? cxe_din_pdu_end(d, 0) : se->data_length;
	cxe_sg_pos_init(&walk, se->t_data_sg, se->t_data_nents);
	for (pos = 0; pos < se->data_length; pos += n) {
		if (!cxe_sg_seek(&walk, pos))
			break;
		pg = cxe_sg_page(&walk, pos, &off, &n);
		n = min(n, end - pos);
		va = kmap_local_page(pg);
		cxe_pi_gen_feed(&pi->gen, pos, va + off, n, cxe_pi_map, pi);
		if (digests)
			crc = cxe_crc32c(crc, va + off, n);
		kunmap_local(va);
		if (pi->gen.fail)
			break;
		if (pos + n < end)
			continue;
		if (digests) {
			d->crc[d->n++] = crc;
			crc = ~0u;
			digests = d->n < CXE_DIN_CRCS;
		}
		end = digests ? cxe_din_pdu_end(d, end) : se->data_length;
	}
	switch (cxe_pi_chk_failed(&pi->gen, &bad)) {
	case CXE_PI_OK:
		cxe_cstat(c, CXE_STAT_PI_CHECKED, bad);
		return 0;
	case CXE_PI_BAD_GUARD:
		se->pi_err = TCM_LOGICAL_BLOCK_GUARD_CHECK_FAILED;
		break;
	case CXE_PI_BAD_REF:
		se->pi_err = TCM_LOGICAL_BLOCK_REF_TAG_CHECK_FAILED;
		break;
	}
	cxe_cstat(c, CXE_STAT_PI_CHECKED, bad + 1);
	d->n = 0;
	se->sense_info = se->t_task_lba + bad;
	return se->pi_err;
}
