// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reservations shared by gateways (SCSI-3 persistent reservations).
 *
 * Gateways that export one image as one logical unit each run a LIO of
 * their own, and LIO's reservation emulation keeps its state per gateway.
 * To share it, every gateway's LIO applies every PERSISTENT RESERVE OUT
 * of every gateway, in one order: the gateway's agent (user space; the
 * order is kept in the cluster) reads the PERSISTENT RESERVE OUT commands
 * received here, puts each in the cluster's order, and has this module
 * run it: a command received here on itself, another gateway's through an
 * internal I_T nexus with the initiator port (name, ISID) and the target
 * port (TPG) of the one that sent it. Every gateway's LIO has every
 * gateway's TPG (the gateway layout), so a registration made through a
 * remote target port is one its LIO can hold and enforce. LIO's emulation
 * decides everything: answers, conflicts, unit attentions, PREEMPT AND
 * ABORT's aborts.
 *
 * Which targets share: the agent links their TPGs, every TPG of the
 * target, into reservations/ (ln -s .../target/iscsi/<iqn>/tpgt_<n>
 * reservations/<name>); a link pins the TPG, as LIO's own links do. The
 * agent's channel is /dev/cxgbit_ext_pr, one opener, lines as in
 * pdu/cxe_spr.h. Only commands on offloaded connections pass here: a
 * stock portal of a sharing target would change one gateway's state
 * alone, so a sharing target's portals are all offloaded.
 *
 * A linked TPG is held from its link until the agent says it serves
 * (once it has applied the cluster's log), and again when the agent says
 * hold, closes the channel, or does not renew the serve within
 * CXE_SPR_LEASE_S (a hung agent, or one whose watch of the log is stale
 * and so stops renewing): a gateway that may lack another gateway's
 * reservation must not let a write by. A held TPG answers every command
 * but those cxe_spr_held_allows() names NOT READY, ASYMMETRIC ACCESS
 * STATE TRANSITION, as LIO answers in that ALUA state: initiators retry,
 * multipath's checkers take the path down until it serves.
 *
 * A PERSISTENT RESERVE OUT on a serving TPG fails with LOGICAL UNIT
 * COMMUNICATION FAILURE when the agent has gone meanwhile, when it says
 * so, or when it was not run within CXE_SPR_WAIT: one gateway changing
 * the state alone would split it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/configfs.h>
#include <linux/miscdevice.h>
#include <linux/poll.h>
#include <linux/rculist.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <scsi/scsi_proto.h>
#include <target/target_core_base.h>
#include <target/target_core_backend.h>
#include <target/target_core_fabric.h>
#include <target/iscsi/iscsi_target_core.h>
#include <target/iscsi/iscsi_transport.h>

#include "core.h"
#include "pdu/cxe_spr.h"

#define CXE_SPR_WAIT	(30 * HZ)

/* A TPG linked into reservations/ */
struct cxe_spr_tpg {
	struct list_head	node;		/* cxe_spr.tpgs, RCU */
	struct config_item	*item;		/* the link's target */
	struct se_portal_group	*se_tpg;
	/* jiffies the serve lasts until, 0 when held; under tpgs_lock */
	unsigned long		serve_until;
	int			applying;	/* applies using it; written under tpgs_lock */
	struct rcu_head		rcu;
};

enum cxe_spr_state {
	CXE_SPR_UNLINKED,	/* LIO's own reservations */
	CXE_SPR_HELD,
	CXE_SPR_SERVING,
};

/* A PERSISTENT RESERVE OUT received here, until the agent has it run */
struct cxe_spr_req {
	struct list_head	node;		/* cxe_spr.pending */
	struct list_head	gone;		/* the agent closed: to fail */
	u64			id;
	struct se_cmd		*se_cmd;
	sense_reason_t		(*execute)(struct se_cmd *se_cmd);
	struct work_struct	send;
	struct delayed_work	expire;
};

/* A line for the agent */
struct cxe_spr_line {
	struct list_head	node;
	size_t			len;
	char			text[];
};

static struct {
	spinlock_t		lock;		/* open, pending, lines, next_id */
	bool			open;
	struct list_head	pending;
	struct list_head	lines;
	u64			next_id;
	wait_queue_head_t	wait;
	/*
	 * tpgs' writers and each entry's applying. Never held while LIO runs
	 * a command: REGISTER AND MOVE and SPEC_I_PT take configfs locks,
	 * which configfs holds around allow_link.
	 */
	struct mutex		tpgs_lock;
	wait_queue_head_t	applied;	/* an entry's applying fell to 0 */
	struct list_head	tpgs;
	struct workqueue_struct	*wq;
} cxe_spr = {
	.lock		= __SPIN_LOCK_UNLOCKED(cxe_spr.lock),
	.pending	= LIST_HEAD_INIT(cxe_spr.pending),
	.lines		= LIST_HEAD_INIT(cxe_spr.lines),
	.wait		= __WAIT_QUEUE_HEAD_INITIALIZER(cxe_spr.wait),
	.tpgs_lock	= __MUTEX_INITIALIZER(cxe_spr.tpgs_lock),
	.applied	= __WAIT_QUEUE_HEAD_INITIALIZER(cxe_spr.applied),
	.tpgs		= LIST_HEAD_INIT(cxe_spr.tpgs),
};

static bool cxe_spr_serves(const struct cxe_spr_tpg *t)
{
	unsigned long until = READ_ONCE(t->serve_until);

	return until && time_before(jiffies, until);
}

static enum cxe_spr_state cxe_spr_state_of(struct se_portal_group *se_tpg)
{
	enum cxe_spr_state state = CXE_SPR_UNLINKED;
	struct cxe_spr_tpg *t;

	rcu_read_lock();
	list_for_each_entry_rcu(t, &cxe_spr.tpgs, node) {
		if (t->se_tpg == se_tpg) {
			state = cxe_spr_serves(t) ? CXE_SPR_SERVING : CXE_SPR_HELD;
			break;
		}
	}
	rcu_read_unlock();
	return state;
}

/* Queue a line for the agent; false when it could not be allocated */
static bool cxe_spr_say(const char *text, size_t len)
{
	struct cxe_spr_line *l = kmalloc(struct_size(l, text, len), GFP_KERNEL);

	if (!l)
		return false;
	memcpy(l->text, text, len);
	l->len = len;
	spin_lock_bh(&cxe_spr.lock);
	list_add_tail(&l->node, &cxe_spr.lines);
	spin_unlock_bh(&cxe_spr.lock);
	wake_up_interruptible(&cxe_spr.wait);
	return true;
}

static void cxe_spr_say_done(u64 tag, int ret)
{
	char line[48];
	int n = cxe_spr_format_done(line, sizeof(line), tag, ret);

	if (n < 0 || !cxe_spr_say(line, n))
		pr_warn_ratelimited("reservations: the agent misses the result of %llu\n", tag);
}

static void cxe_spr_fail(struct cxe_spr_req *r, sense_reason_t why)
{
	target_complete_cmd_with_sense(r->se_cmd, SAM_STAT_CHECK_CONDITION, why);
	kfree(r);
}

/*
 * Take r off the pending list, under cxe_spr.lock: true when it was there.
 * Whoever takes it (a run, a fail, the expiry, the agent's close) is its
 * only owner from then on; the others find it taken.
 */
static bool cxe_spr_unpend(struct cxe_spr_req *r)
{
	lockdep_assert_held(&cxe_spr.lock);
	if (list_empty(&r->node))
		return false;
	list_del_init(&r->node);
	return true;
}

/* Take request id off the pending list, NULL when it is not there */
static struct cxe_spr_req *cxe_spr_take(u64 id)
{
	struct cxe_spr_req *r, *found = NULL;

	spin_lock_bh(&cxe_spr.lock);
	list_for_each_entry(r, &cxe_spr.pending, node) {
		if (r->id == id) {
			found = r;
			cxe_spr_unpend(r);
			break;
		}
	}
	spin_unlock_bh(&cxe_spr.lock);
	return found;
}

static void cxe_spr_expire(struct work_struct *work)
{
	struct cxe_spr_req *r = container_of(to_delayed_work(work),
					     struct cxe_spr_req, expire);
	bool mine;

	spin_lock_bh(&cxe_spr.lock);
	mine = cxe_spr_unpend(r);
	spin_unlock_bh(&cxe_spr.lock);
	if (!mine)
		return;		/* being run or failed: its taker frees it */
	pr_warn_ratelimited("reservations: request %llu not run within %d s: failed\n",
			    r->id, CXE_SPR_WAIT / HZ);
	cxe_spr_fail(r, TCM_LOGICAL_UNIT_COMMUNICATION_FAILURE);
}

/* The nexus a command came in on, as the agent's lines name it */
static void cxe_spr_nexus_of(struct se_cmd *se_cmd, struct cxe_spr_nexus *nx)
{
	struct se_session *se_sess = se_cmd->se_sess;
	struct se_portal_group *se_tpg = se_sess->se_tpg;
	struct iscsit_session *sess = se_sess->fabric_sess_ptr;

	strscpy(nx->target, se_tpg->se_tpg_tfo->tpg_get_wwn(se_tpg),
		sizeof(nx->target));
	nx->tpgt = se_tpg->se_tpg_tfo->tpg_get_tag(se_tpg);
	nx->lun = se_cmd->orig_fe_lun;
	strscpy(nx->initiator, se_sess->se_node_acl->initiatorname,
		sizeof(nx->initiator));
	memcpy(nx->isid, sess->isid, CXE_SPR_ISID_LEN);
}

/* Process context: the request's line to the agent, or its failure */
static void cxe_spr_send(struct work_struct *work)
{
	struct cxe_spr_req *r = container_of(work, struct cxe_spr_req, send);
	struct se_cmd *se_cmd = r->se_cmd;
	struct cxe_spr_nexus nx;
	struct cxe_spr_line *l;
	u8 *param = NULL;
	int n;

	if (se_cmd->data_length > CXE_SPR_PARAM_MAX) {
		pr_warn_ratelimited("reservations: a parameter list of %u bytes (at most %u carried)\n",
				    se_cmd->data_length, CXE_SPR_PARAM_MAX);
		cxe_spr_fail(r, TCM_PARAMETER_LIST_LENGTH_ERROR);
		return;
	}
	l = kmalloc(struct_size(l, text, CXE_SPR_LINE_MAX), GFP_KERNEL);
	if (!l)
		goto fail;
	if (se_cmd->data_length) {
		param = transport_kmap_data_sg(se_cmd);
		if (!param)
			goto fail_line;
	}
	cxe_spr_nexus_of(se_cmd, &nx);
	spin_lock_bh(&cxe_spr.lock);
	if (!cxe_spr.open) {
		spin_unlock_bh(&cxe_spr.lock);
		pr_warn_ratelimited("reservations: no agent: PERSISTENT RESERVE OUT failed\n");
		goto fail_param;
	}
	r->id = ++cxe_spr.next_id;
	n = cxe_spr_format_out(l->text, CXE_SPR_LINE_MAX, r->id, &nx,
			       se_cmd->t_task_cdb, param, se_cmd->data_length);
	if (n < 0) {
		spin_unlock_bh(&cxe_spr.lock);
		goto fail_param;
	}
	l->len = n;
	list_add_tail(&r->node, &cxe_spr.pending);
	list_add_tail(&l->node, &cxe_spr.lines);
	/* under the lock: a close that fails r cannot come before this */
	schedule_delayed_work(&r->expire, CXE_SPR_WAIT);
	spin_unlock_bh(&cxe_spr.lock);
	if (param)
		transport_kunmap_data_sg(se_cmd);
	wake_up_interruptible(&cxe_spr.wait);
	return;

fail_param:
	if (param)
		transport_kunmap_data_sg(se_cmd);
fail_line:
	kfree(l);
fail:
	cxe_spr_fail(r, TCM_LOGICAL_UNIT_COMMUNICATION_FAILURE);
}

/*
 * LIO's execute_cmd of a PERSISTENT RESERVE OUT on a sharing TPG: the
 * command waits for the agent. Any context LIO executes in.
 */
static sense_reason_t cxe_spr_execute(struct se_cmd *se_cmd)
{
	struct iscsit_cmd *cmd = container_of(se_cmd, struct iscsit_cmd, se_cmd);
	struct cxe_task *task = iscsit_priv_cmd(cmd);
	struct cxe_spr_req *r;

	r = kzalloc(sizeof(*r), GFP_ATOMIC);
	if (!r)
		return TCM_OUT_OF_RESOURCES;
	INIT_LIST_HEAD(&r->node);
	r->se_cmd = se_cmd;
	r->execute = task->spr_execute;
	INIT_WORK(&r->send, cxe_spr_send);
	INIT_DELAYED_WORK(&r->expire, cxe_spr_expire);
	queue_work(cxe_spr.wq, &r->send);
	return TCM_NO_SENSE;
}

/* LIO's execute_cmd of a command a held TPG does not serve */
static sense_reason_t cxe_spr_held(struct se_cmd *se_cmd)
{
	return TCM_ALUA_STATE_TRANSITION;
}

void cxe_spr_hook(struct iscsit_cmd *cmd)
{
	struct se_cmd *se_cmd = &cmd->se_cmd;

	if (cmd->sense_reason || !se_cmd->execute_cmd || !se_cmd->se_dev)
		return;
	switch (cxe_spr_state_of(se_cmd->se_sess->se_tpg)) {
	case CXE_SPR_UNLINKED:
		return;
	case CXE_SPR_HELD:
		if (!cxe_spr_held_allows(se_cmd->t_task_cdb))
			se_cmd->execute_cmd = cxe_spr_held;
		return;
	case CXE_SPR_SERVING:
		break;
	}
	if (se_cmd->t_task_cdb[0] != PERSISTENT_RESERVE_OUT ||
	    !se_cmd->se_dev->dev_attrib.emulate_pr)
		return;
	((struct cxe_task *)iscsit_priv_cmd(cmd))->spr_execute = se_cmd->execute_cmd;
	se_cmd->execute_cmd = cxe_spr_execute;
}

/* run <id> <tag>: the command itself, by LIO's emulation, now */
static void cxe_spr_run(u64 id, u64 tag)
{
	struct cxe_spr_req *r = cxe_spr_take(id);
	sense_reason_t ret;

	if (!r) {
		cxe_spr_say_done(tag, -1);
		return;
	}
	cancel_delayed_work_sync(&r->expire);
	ret = r->execute(r->se_cmd);
	if (ret)
		cxe_spr_fail(r, ret);
	else
		kfree(r);
	cxe_spr_say_done(tag, (__force int)ret);
}

/* fail <id> */
static int cxe_spr_fail_id(u64 id)
{
	struct cxe_spr_req *r = cxe_spr_take(id);

	if (!r)
		return -ENOENT;
	cancel_delayed_work_sync(&r->expire);
	cxe_spr_fail(r, TCM_LOGICAL_UNIT_COMMUNICATION_FAILURE);
	return 0;
}

/* An internal command on an internal nexus: LIO's fabric ops for it */
struct cxe_spr_icmd {
	struct se_cmd		se_cmd;
	unsigned char		sense[TRANSPORT_SENSE_BUFFER];
	struct completion	done;
};

static int cxe_spr_icmd_state(struct se_cmd *se_cmd)
{
	return 0;
}

static void cxe_spr_icmd_release(struct se_cmd *se_cmd)
{
}

static int cxe_spr_icmd_stop_free(struct se_cmd *se_cmd)
{
	complete(&container_of(se_cmd, struct cxe_spr_icmd, se_cmd)->done);
	return 0;
}

static int cxe_spr_icmd_nothing(struct se_cmd *se_cmd)
{
	return 0;
}

static void cxe_spr_icmd_aborted(struct se_cmd *se_cmd)
{
}

static const struct target_core_fabric_ops cxe_spr_icmd_ops = {
	.fabric_name		= "cxgbit_ext-pr",
	.get_cmd_state		= cxe_spr_icmd_state,
	.release_cmd		= cxe_spr_icmd_release,
	.check_stop_free	= cxe_spr_icmd_stop_free,
	.write_pending		= cxe_spr_icmd_nothing,
	.queue_data_in		= cxe_spr_icmd_nothing,
	.queue_status		= cxe_spr_icmd_nothing,
	.aborted_task		= cxe_spr_icmd_aborted,
};

/*
 * serve (for the lease) or hold <target>: every linked TPG of it (-ENOENT
 * for none), or with target NULL every linked TPG (hold, when the agent
 * goes)
 */
static int cxe_spr_set_serving(const char *target, bool serving)
{
	struct cxe_spr_tpg *t;
	int ret = target ? -ENOENT : 0;

	mutex_lock(&cxe_spr.tpgs_lock);
	list_for_each_entry(t, &cxe_spr.tpgs, node) {
		struct se_portal_group *tpg = t->se_tpg;

		if (target && strcmp(tpg->se_tpg_tfo->tpg_get_wwn(tpg), target))
			continue;
		/* a renewal says nothing; an expired lease was held */
		if (cxe_spr_serves(t) != serving)
			pr_info("reservations of %s tpgt %u %s\n",
				tpg->se_tpg_tfo->tpg_get_wwn(tpg),
				tpg->se_tpg_tfo->tpg_get_tag(tpg),
				serving ? "served" : "held");
		/* never 0 while serving: 0 is held */
		WRITE_ONCE(t->serve_until,
			   serving ? (jiffies + CXE_SPR_LEASE_S * HZ) | 1 : 0);
		ret = 0;
	}
	mutex_unlock(&cxe_spr.tpgs_lock);
	return ret;
}

static struct cxe_spr_tpg *cxe_spr_find_tpg(const char *target, u16 tpgt)
{
	struct cxe_spr_tpg *t;

	lockdep_assert_held(&cxe_spr.tpgs_lock);
	list_for_each_entry(t, &cxe_spr.tpgs, node) {
		struct se_portal_group *tpg = t->se_tpg;

		if (tpg->se_tpg_tfo->tpg_get_tag(tpg) == tpgt &&
		    !strcmp(tpg->se_tpg_tfo->tpg_get_wwn(tpg), target))
			return t;
	}
	return NULL;
}

/*
 * The linked TPG target/tpgt for an apply, NULL when there is none: its
 * link (which pins the TPG) is not dropped until cxe_spr_put_tpg()
 */
static struct cxe_spr_tpg *cxe_spr_get_tpg(const char *target, u16 tpgt)
{
	struct cxe_spr_tpg *t;

	mutex_lock(&cxe_spr.tpgs_lock);
	t = cxe_spr_find_tpg(target, tpgt);
	if (t)
		WRITE_ONCE(t->applying, t->applying + 1);
	mutex_unlock(&cxe_spr.tpgs_lock);
	return t;
}

static void cxe_spr_put_tpg(struct cxe_spr_tpg *t)
{
	mutex_lock(&cxe_spr.tpgs_lock);
	WRITE_ONCE(t->applying, t->applying - 1);
	mutex_unlock(&cxe_spr.tpgs_lock);
	wake_up(&cxe_spr.applied);
}

/*
 * Run a PERSISTENT RESERVE OUT through LIO's emulation on an internal
 * nexus: a session of the initiator port (nx's name and ISID, as LIO's
 * iSCSI fabric reads them from its own session) in the linked TPG, its
 * command addressed to nx's LUN as that initiator sees it. LIO's sense
 * reason, 0 for GOOD.
 */
static sense_reason_t cxe_spr_apply(const struct cxe_spr_msg *m)
{
	struct se_portal_group *tpg;
	struct cxe_spr_tpg *t;
	struct se_node_acl *nacl;
	struct se_session *se_sess;
	struct iscsit_session *sess;
	struct cxe_spr_icmd *ic;
	struct se_cmd *se_cmd;
	struct scatterlist sg;
	sense_reason_t ret = TCM_LOGICAL_UNIT_COMMUNICATION_FAILURE;
	u8 *param;

	if (m->cdb[0] != PERSISTENT_RESERVE_OUT)
		return TCM_UNSUPPORTED_SCSI_OPCODE;
	t = cxe_spr_get_tpg(m->nx.target, m->nx.tpgt);
	if (!t) {
		pr_warn_ratelimited("reservations: %s tpgt %u is not linked\n",
				    m->nx.target, m->nx.tpgt);
		return ret;
	}
	tpg = t->se_tpg;
	nacl = core_tpg_check_initiator_node_acl(tpg, (unsigned char *)m->nx.initiator);
	if (!nacl) {
		/* neither an ACL of the initiator nor demo mode: no registration */
		pr_warn_ratelimited("reservations: %s has no ACL in %s tpgt %u\n",
				    m->nx.initiator, m->nx.target, m->nx.tpgt);
		goto out_put;
	}
	sess = kzalloc(sizeof(*sess), GFP_KERNEL);
	ic = kzalloc(sizeof(*ic), GFP_KERNEL);
	param = m->plen ? kmemdup(m->param, m->plen, GFP_KERNEL) : NULL;
	se_sess = transport_alloc_session(TARGET_PROT_NORMAL);
	if (!sess || !ic || (m->plen && !param) || IS_ERR(se_sess)) {
		ret = TCM_OUT_OF_RESOURCES;
		goto out_free;
	}
	memcpy(sess->isid, m->nx.isid, CXE_SPR_ISID_LEN);
	se_sess->se_tpg = tpg;
	se_sess->se_node_acl = nacl;
	se_sess->fabric_sess_ptr = sess;
	init_completion(&ic->done);
	se_cmd = &ic->se_cmd;
	__target_init_cmd(se_cmd, &cxe_spr_icmd_ops, se_sess, m->plen,
			  DMA_TO_DEVICE, TCM_SIMPLE_TAG, ic->sense, m->nx.lun, NULL);
	ret = target_cmd_init_cdb(se_cmd, (unsigned char *)m->cdb, GFP_KERNEL);
	if (!ret)
		ret = transport_lookup_cmd_lun(se_cmd);
	if (!ret)
		ret = target_cmd_parse_cdb(se_cmd);
	if (!ret && m->plen) {
		sg_init_one(&sg, param, m->plen);
		se_cmd->t_data_sg = &sg;
		se_cmd->t_data_nents = 1;
		se_cmd->se_cmd_flags |= SCF_PASSTHROUGH_SG_TO_MEM_NOALLOC;
	}
	if (!ret && !se_cmd->execute_cmd)
		ret = TCM_UNSUPPORTED_SCSI_OPCODE;
	if (!ret) {
		ret = se_cmd->execute_cmd(se_cmd);
		/* GOOD is completed through the ops: until check_stop_free */
		if (!ret)
			wait_for_completion(&ic->done);
	}
	transport_generic_free_cmd(se_cmd, 0);
out_free:
	if (!IS_ERR_OR_NULL(se_sess)) {
		se_sess->se_node_acl = NULL;
		transport_free_session(se_sess);
	}
	target_put_nacl(nacl);
	kfree(param);
	kfree(ic);
	kfree(sess);
out_put:
	cxe_spr_put_tpg(t);
	return ret;
}

static int cxe_spr_open(struct inode *inode, struct file *f)
{
	int ret = 0;

	spin_lock_bh(&cxe_spr.lock);
	if (cxe_spr.open)
		ret = -EBUSY;
	cxe_spr.open = true;
	spin_unlock_bh(&cxe_spr.lock);
	return ret ? ret : stream_open(inode, f);
}

/*
 * The agent is gone: its TPGs are held, what waited for it fails, its
 * lines are dropped
 */
static int cxe_spr_release(struct inode *inode, struct file *f)
{
	struct cxe_spr_req *r, *rn;
	struct cxe_spr_line *l, *ln;
	LIST_HEAD(pending);
	LIST_HEAD(lines);

	cxe_spr_set_serving(NULL, false);
	spin_lock_bh(&cxe_spr.lock);
	cxe_spr.open = false;
	list_for_each_entry_safe(r, rn, &cxe_spr.pending, node) {
		cxe_spr_unpend(r);
		list_add_tail(&r->gone, &pending);
	}
	list_splice_init(&cxe_spr.lines, &lines);
	spin_unlock_bh(&cxe_spr.lock);
	list_for_each_entry_safe(r, rn, &pending, gone) {
		cancel_delayed_work_sync(&r->expire);
		cxe_spr_fail(r, TCM_LOGICAL_UNIT_COMMUNICATION_FAILURE);
	}
	list_for_each_entry_safe(l, ln, &lines, node)
		kfree(l);
	return 0;
}

/* Whole lines, as many as fit; the first one always fits CXE_SPR_LINE_MAX */
static ssize_t cxe_spr_read(struct file *f, char __user *buf, size_t count,
			    loff_t *ppos)
{
	struct cxe_spr_line *l;
	size_t done = 0;
	int ret;

	for (;;) {
		spin_lock_bh(&cxe_spr.lock);
		l = list_first_entry_or_null(&cxe_spr.lines, struct cxe_spr_line, node);
		if (l && l->len <= count - done)
			list_del(&l->node);
		else
			l = NULL;
		spin_unlock_bh(&cxe_spr.lock);
		if (!l) {
			if (done)
				return done;
			if (count < CXE_SPR_LINE_MAX)
				return -EINVAL;
			if (f->f_flags & O_NONBLOCK)
				return -EAGAIN;
			ret = wait_event_interruptible(cxe_spr.wait,
						       !list_empty(&cxe_spr.lines));
			if (ret)
				return ret;
			continue;
		}
		if (copy_to_user(buf + done, l->text, l->len)) {
			/* back at the head: the agent reads it again */
			spin_lock_bh(&cxe_spr.lock);
			list_add(&l->node, &cxe_spr.lines);
			spin_unlock_bh(&cxe_spr.lock);
			return done ? done : -EFAULT;
		}
		done += l->len;
		kfree(l);
	}
}

static ssize_t cxe_spr_write(struct file *f, const char __user *buf,
			     size_t count, loff_t *ppos)
{
	struct cxe_spr_msg m;
	char *line;
	int ret;

	if (!count || count >= CXE_SPR_LINE_MAX)
		return -EINVAL;
	line = kmalloc(count + 1, GFP_KERNEL);
	if (!line)
		return -ENOMEM;
	if (copy_from_user(line, buf, count)) {
		ret = -EFAULT;
		goto out;
	}
	ret = cxe_spr_parse(line, count, &m);
	if (ret)
		goto out;
	switch (m.verb) {
	case CXE_SPR_RUN:
		cxe_spr_run(m.id, m.tag);
		break;
	case CXE_SPR_FAIL:
		ret = cxe_spr_fail_id(m.id);
		break;
	case CXE_SPR_APPLY:
		cxe_spr_say_done(m.tag, (__force int)cxe_spr_apply(&m));
		break;
	case CXE_SPR_SERVE:
	case CXE_SPR_HOLD:
		ret = cxe_spr_set_serving(m.nx.target, m.verb == CXE_SPR_SERVE);
		break;
	}
out:
	kfree(line);
	return ret ? ret : count;
}

static __poll_t cxe_spr_poll(struct file *f, poll_table *wait)
{
	__poll_t mask = EPOLLOUT | EPOLLWRNORM;

	poll_wait(f, &cxe_spr.wait, wait);
	spin_lock_bh(&cxe_spr.lock);
	if (!list_empty(&cxe_spr.lines))
		mask |= EPOLLIN | EPOLLRDNORM;
	spin_unlock_bh(&cxe_spr.lock);
	return mask;
}

static const struct file_operations cxe_spr_fops = {
	.owner		= THIS_MODULE,
	.open		= cxe_spr_open,
	.release	= cxe_spr_release,
	.read		= cxe_spr_read,
	.write		= cxe_spr_write,
	.poll		= cxe_spr_poll,
};

static struct miscdevice cxe_spr_dev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "cxgbit_ext_pr",
	.fops	= &cxe_spr_fops,
	.mode	= 0600,
};

/*
 * reservations/<name> -> an iSCSI TPG's directory, target/iscsi/<iqn>/
 * tpgt_<n>: LIO's tree is the only place its TPGs are named from outside.
 */
static int cxe_spr_allow_link(struct config_item *src, struct config_item *target)
{
	struct config_item *wwn = target->ci_parent;
	struct config_item *fabric = wwn ? wwn->ci_parent : NULL;
	struct config_item *root = fabric ? fabric->ci_parent : NULL;
	const char *name = config_item_name(target);
	struct se_portal_group *se_tpg;
	struct cxe_spr_tpg *t;
	u16 tag;

	if (!root || strcmp(config_item_name(root), "target") ||
	    strcmp(config_item_name(fabric), "iscsi") ||
	    strncmp(name, "tpgt_", 5) || kstrtou16(name + 5, 10, &tag))
		return -EINVAL;
	se_tpg = container_of(to_config_group(target), struct se_portal_group,
			      tpg_group);
	if (strcmp(se_tpg->se_tpg_tfo->fabric_name, "iSCSI") ||
	    se_tpg->se_tpg_tfo->tpg_get_tag(se_tpg) != tag)
		return -EINVAL;
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->item = target;
	t->se_tpg = se_tpg;
	mutex_lock(&cxe_spr.tpgs_lock);
	if (cxe_spr_find_tpg(se_tpg->se_tpg_tfo->tpg_get_wwn(se_tpg), tag)) {
		mutex_unlock(&cxe_spr.tpgs_lock);
		kfree(t);
		return -EEXIST;
	}
	list_add_tail_rcu(&t->node, &cxe_spr.tpgs);
	mutex_unlock(&cxe_spr.tpgs_lock);
	/* a link is configuration the module holds: no unload under it */
	__module_get(THIS_MODULE);
	pr_info("reservations of %s tpgt %u shared, held until the agent serves\n",
		se_tpg->se_tpg_tfo->tpg_get_wwn(se_tpg), tag);
	return 0;
}

static void cxe_spr_drop_link(struct config_item *src, struct config_item *target)
{
	struct cxe_spr_tpg *t, *found = NULL;

	mutex_lock(&cxe_spr.tpgs_lock);
	list_for_each_entry(t, &cxe_spr.tpgs, node) {
		if (t->item == target) {
			found = t;
			list_del_rcu(&t->node);
			break;
		}
	}
	mutex_unlock(&cxe_spr.tpgs_lock);
	if (!found)
		return;
	/* the link pins the TPG: until no apply uses it */
	wait_event(cxe_spr.applied, !READ_ONCE(found->applying));
	kfree_rcu(found, rcu);
	module_put(THIS_MODULE);
}

static struct configfs_item_operations cxe_spr_item_ops = {
	.allow_link	= cxe_spr_allow_link,
	.drop_link	= cxe_spr_drop_link,
};

static const struct config_item_type cxe_spr_type = {
	.ct_item_ops	= &cxe_spr_item_ops,
	.ct_owner	= THIS_MODULE,
};

struct config_group cxe_spr_group;

int cxe_spr_init(void)
{
	int ret;

	config_group_init_type_name(&cxe_spr_group, "reservations", &cxe_spr_type);
	cxe_spr.wq = alloc_workqueue("cxe_spr", WQ_MEM_RECLAIM, 0);
	if (!cxe_spr.wq)
		return -ENOMEM;
	ret = misc_register(&cxe_spr_dev);
	if (ret) {
		destroy_workqueue(cxe_spr.wq);
		return ret;
	}
	return 0;
}

/* Unload: no agent (its open file pins the module), no link (each does) */
void cxe_spr_exit(void)
{
	misc_deregister(&cxe_spr_dev);
	destroy_workqueue(cxe_spr.wq);
}
