// SPDX-License-Identifier: GPL-2.0-only
/*
 * The life of a listening server in user space: the backend's state
 * machine (kmod/cxgbit-ext/adapters/cxgb4/listen.c) against the model of
 * the chip's server table (tests/chipmodel/ulp_lsn.c). The glue's
 * part is played here: it takes and frees STIDs, asks the model for what
 * the state machine's bits say, parses the model's answers with cpl.c and
 * feeds them back, and stands a wait's end in for an answer that is late.
 *
 * First each rule on its own, then random lives of several portals over
 * a table with room for fewer servers than STIDs: listens, unlistens,
 * waits that run out and the chip's answers interleaved at random. In
 * each, the model never refuses, no answer is a protocol error, every
 * wait is answered once, a listen told 0 has its server in the chip, an
 * STID is given back only when the chip holds no server on it and owes
 * no answer for it (and then once), connections are taken only where the
 * chip listens, and once every answer came no server is left and every
 * STID is back.
 */
#include <stdlib.h>
#include "check.h"
#include "cpl.h"
#include "listen.h"
#include "ulp_lsn.h"

#define STIDS	CXE_MODEL_LSN_STIDS

static u32 rnd(u32 n)
{
	return (u32)random() % n;
}

/* the glue: the STIDs it took, their listeners, and what was asked of it */
struct glue {
	struct cxe_model_lsn m;
	bool taken[STIDS];
	struct cxe_c4lsn l[STIDS];
	u32 wakes[STIDS];	/* answers its waiters had */
	u32 refused, eproto, early_free;
	bool flaky;		/* cxgb4 now and then cannot send an open */
};

static void glue_init(struct glue *g, u32 cap)
{
	memset(g, 0, sizeof(*g));
	cxe_model_lsn_init(&g->m, cap);
}

/* what the state machine's bits say, in their order */
/* over every random life: what its paths came to */
static u32 listens, up, full, timeouts, unsent, late_removed;

static void act(struct glue *g, u32 stid, int what)
{
	if (what < 0) {
		g->eproto++;
		return;
	}
	if ((what & CXE_C4L_REMOVE) && !g->l[stid].waiting)
		late_removed++;
	if ((what & CXE_C4L_REMOVE) && cxe_model_lsn_remove(&g->m, stid))
		g->refused++;
	if (what & CXE_C4L_FREE_STID) {
		if (g->m.open[stid] || g->m.owed[stid] || !g->taken[stid])
			g->early_free++;
		g->taken[stid] = false;
	}
	if (what & CXE_C4L_WAKE)
		g->wakes[stid]++;
}

/* a free STID, taken, and its server asked for; STIDS when none is free */
static u32 glue_listen(struct glue *g)
{
	u32 stid, start = rnd(STIDS), i;

	for (i = 0; i < STIDS; i++) {
		stid = (start + i) % STIDS;
		if (g->taken[stid])
			continue;
		g->taken[stid] = true;
		cxe_c4lsn_init(&g->l[stid], stid);
		g->wakes[stid] = 0;
		if (g->flaky && rnd(10) == 0) {	/* cxgb4 could not send it */
			act(g, stid, cxe_c4lsn_unsent(&g->l[stid], -ENOMEM));
			return stid;
		}
		if (cxe_model_lsn_open(&g->m, stid))
			g->refused++;
		return stid;
	}
	return STIDS;
}

/* the chip's next answer to the glue's receive handler; false when none */
static bool glue_deliver(struct glue *g)
{
	struct cxe_cpl_listen_rpl r;
	u8 buf[16];
	int len = cxe_model_lsn_next(&g->m, buf, sizeof(buf));

	if (!len)
		return false;
	if (cxe_cpl_opcode(buf, len) == CXE_CPL_PASS_OPEN_RPL) {
		CHECK(cxe_cpl_parse_pass_open_rpl(buf, len, &r) == len);
		CHECK(r.stid < STIDS && g->taken[r.stid]);
		act(g, r.stid, cxe_c4lsn_open_rpl(&g->l[r.stid], r.status));
	} else {
		CHECK(cxe_cpl_parse_close_listsrv_rpl(buf, len, &r) == len);
		CHECK(r.stid < STIDS && g->taken[r.stid]);
		act(g, r.stid, cxe_c4lsn_close_rpl(&g->l[r.stid], r.status));
	}
	return true;
}

static bool glue_clean(const struct glue *g)
{
	return !g->refused && !g->eproto && !g->early_free;
}

/* ---- each rule on its own ---- */

static void test_scripted(void)
{
	struct cxe_c4lsn l;
	struct glue g;
	u32 s, t;

	/* listen, answered; connections taken; unlisten, answered; STID back */
	glue_init(&g, 4);
	s = glue_listen(&g);
	CHECK(!cxe_c4lsn_may_accept(&g.l[s]));
	CHECK(glue_deliver(&g) && g.wakes[s] == 1 && g.l[s].err == 0);
	CHECK(cxe_c4lsn_may_accept(&g.l[s]) && g.m.open[s]);
	act(&g, s, cxe_c4lsn_unlisten(&g.l[s]));
	CHECK(!cxe_c4lsn_may_accept(&g.l[s]) && g.wakes[s] == 1);
	CHECK(glue_deliver(&g) && g.wakes[s] == 2 && g.l[s].err == 0);
	CHECK(!g.taken[s] && !g.m.servers && glue_clean(&g));

	/* a full table: the listen learns why, the STID goes back */
	glue_init(&g, 0);
	s = glue_listen(&g);
	CHECK(glue_deliver(&g) && g.wakes[s] == 1 && g.l[s].err == -ENOSPC);
	CHECK(!g.taken[s] && g.l[s].state == CXE_C4LSN_DONE && glue_clean(&g));

	/*
	 * The listen's wait runs out; the server comes up late and, unwanted,
	 * is removed; the STID goes back once the removal is answered (mainline
	 * keeps it for good).
	 */
	glue_init(&g, 4);
	s = glue_listen(&g);
	act(&g, s, cxe_c4lsn_timeout(&g.l[s]));
	CHECK(g.wakes[s] == 1 && g.l[s].err == -ETIMEDOUT);
	act(&g, s, cxe_c4lsn_timeout(&g.l[s]));	/* nobody waits: nothing */
	CHECK(g.wakes[s] == 1);
	CHECK(glue_deliver(&g) && g.m.open[s] == false && g.taken[s]);
	CHECK(!cxe_c4lsn_may_accept(&g.l[s]));
	CHECK(glue_deliver(&g) && !g.taken[s] && g.wakes[s] == 1);
	CHECK(!glue_deliver(&g) && glue_clean(&g));

	/* the portal goes while its open is out: it waits for both answers */
	glue_init(&g, 4);
	s = glue_listen(&g);
	act(&g, s, cxe_c4lsn_timeout(&g.l[s]));
	act(&g, s, cxe_c4lsn_unlisten(&g.l[s]));
	CHECK(g.wakes[s] == 1 && g.l[s].waiting);
	CHECK(glue_deliver(&g) && g.wakes[s] == 1);	/* up: removed */
	CHECK(glue_deliver(&g) && g.wakes[s] == 2 && g.l[s].err == 0);
	CHECK(!g.taken[s] && glue_clean(&g));

	/* the unlisten's wait runs out; the late removal gives the STID back */
	glue_init(&g, 4);
	s = glue_listen(&g);
	CHECK(glue_deliver(&g));
	act(&g, s, cxe_c4lsn_unlisten(&g.l[s]));
	act(&g, s, cxe_c4lsn_timeout(&g.l[s]));
	CHECK(g.wakes[s] == 2 && g.l[s].err == -ETIMEDOUT && g.taken[s]);
	/* the STID is not given out again meanwhile */
	t = glue_listen(&g);
	CHECK(t != s && t < STIDS);
	CHECK(glue_deliver(&g) && !g.taken[s]);
	CHECK(glue_deliver(&g) && g.wakes[t] == 1 && g.l[t].err == 0);
	CHECK(glue_clean(&g));

	/* unlisten of a server that never came up: answered at once */
	glue_init(&g, 0);
	s = glue_listen(&g);
	act(&g, s, cxe_c4lsn_timeout(&g.l[s]));
	CHECK(glue_deliver(&g) && !g.taken[s]);
	act(&g, s, cxe_c4lsn_unlisten(&g.l[s]));
	CHECK(g.wakes[s] == 2 && g.l[s].err == 0 && glue_clean(&g));

	/* a failed removal: the waiter hears -EIO and the STID stays taken */
	cxe_c4lsn_init(&l, 3);
	CHECK(cxe_c4lsn_open_rpl(&l, 0) == CXE_C4L_WAKE && l.err == 0);
	CHECK(cxe_c4lsn_unlisten(&l) == CXE_C4L_REMOVE);
	CHECK(cxe_c4lsn_close_rpl(&l, 2) == CXE_C4L_WAKE && l.err == -EIO);
	CHECK(l.kept && l.state == CXE_C4LSN_DONE);

	/* a request cxgb4 could not send: no answer comes */
	cxe_c4lsn_init(&l, 4);
	CHECK(cxe_c4lsn_unsent(&l, -ENOMEM) == (CXE_C4L_FREE_STID | CXE_C4L_WAKE));
	CHECK(l.err == -ENOMEM && l.state == CXE_C4LSN_DONE && !l.kept);
	cxe_c4lsn_init(&l, 4);
	CHECK(cxe_c4lsn_open_rpl(&l, 0) == CXE_C4L_WAKE);
	CHECK(cxe_c4lsn_unlisten(&l) == CXE_C4L_REMOVE);
	CHECK(cxe_c4lsn_unsent(&l, -ENOMEM) == CXE_C4L_WAKE && l.kept);
	CHECK(l.err == -ENOMEM && !cxe_c4lsn_may_accept(&l));
	CHECK(cxe_c4lsn_unsent(&l, -ENOMEM) == -EPROTO);

	/* answers that cannot come: refused, nothing changes */
	cxe_c4lsn_init(&l, 3);
	CHECK(cxe_c4lsn_close_rpl(&l, 0) == -EPROTO);
	CHECK(l.state == CXE_C4LSN_OPENING && l.waiting);
	CHECK(cxe_c4lsn_open_rpl(&l, 0) == CXE_C4L_WAKE);
	CHECK(cxe_c4lsn_open_rpl(&l, 0) == -EPROTO);
	CHECK(cxe_c4lsn_close_rpl(&l, 0) == -EPROTO);
	CHECK(cxe_c4lsn_may_accept(&l));
	CHECK(cxe_c4lsn_errno(0) == 0 && cxe_c4lsn_errno(3) == -ENOSPC &&
	      cxe_c4lsn_errno(1) == -EIO);

	/*
	 * The adapter goes: a server opening, one listening, one whose
	 * removal failed (kept) and one settled. Each STID is settled and
	 * given back once (a kept one too), a waiter told -ENODEV, no server
	 * accepts, nothing is asked of the chip; an unlisten then just ends.
	 */
	cxe_c4lsn_init(&l, 4);
	CHECK(cxe_c4lsn_gone(&l) == (CXE_C4L_FREE_STID | CXE_C4L_WAKE));
	CHECK(l.err == -ENODEV && l.state == CXE_C4LSN_DONE && !cxe_c4lsn_may_accept(&l));
	CHECK(cxe_c4lsn_gone(&l) == 0);
	CHECK(cxe_c4lsn_unlisten(&l) == CXE_C4L_WAKE && l.err == 0);
	cxe_c4lsn_init(&l, 5);
	CHECK(cxe_c4lsn_open_rpl(&l, 0) == CXE_C4L_WAKE);
	CHECK(cxe_c4lsn_gone(&l) == CXE_C4L_FREE_STID && !cxe_c4lsn_may_accept(&l));
	CHECK(cxe_c4lsn_unlisten(&l) == CXE_C4L_WAKE);
	cxe_c4lsn_init(&l, 6);
	CHECK(cxe_c4lsn_open_rpl(&l, 0) == CXE_C4L_WAKE);
	CHECK(cxe_c4lsn_unlisten(&l) == CXE_C4L_REMOVE);
	CHECK(cxe_c4lsn_close_rpl(&l, 1) == CXE_C4L_WAKE && l.kept);
	CHECK(cxe_c4lsn_gone(&l) == CXE_C4L_FREE_STID && !l.kept);
	CHECK(cxe_c4lsn_gone(&l) == 0);
	cxe_c4lsn_init(&l, 7);
	CHECK(cxe_c4lsn_open_rpl(&l, 1) == (CXE_C4L_FREE_STID | CXE_C4L_WAKE));
	CHECK(cxe_c4lsn_gone(&l) == 0);

	/* the model refuses what would leave it and the driver disagreeing */
	glue_init(&g, 4);
	CHECK(cxe_model_lsn_open(&g.m, STIDS) == -EPROTO);
	CHECK(cxe_model_lsn_open(&g.m, 1) == 0);
	CHECK(cxe_model_lsn_open(&g.m, 1) == -EPROTO);	/* answer on its way */
	CHECK(cxe_model_lsn_remove(&g.m, 1) == -EPROTO);
	CHECK(cxe_model_lsn_remove(&g.m, 2) == -EPROTO);	/* no server */
}

/* ---- random lives ---- */

#define PORTALS	24

enum portal_state { P_NONE, P_LISTENING_WAIT, P_UP, P_UNLISTEN_WAIT, P_GONE };

struct portals {
	enum portal_state p[PORTALS];
	u32 stid[PORTALS];
	u32 wakes_seen[PORTALS];
};

/* a waiter that had its answer goes on; ending: one that came up goes */
static void portals_settle(struct portals *ps, struct glue *g, bool ending)
{
	u32 i, s;

	for (i = 0; i < PORTALS; i++) {
		if (ps->p[i] != P_LISTENING_WAIT && ps->p[i] != P_UNLISTEN_WAIT)
			continue;
		s = ps->stid[i];
		if (g->wakes[s] == ps->wakes_seen[i])
			continue;
		CHECK(g->wakes[s] == ps->wakes_seen[i] + 1);
		ps->wakes_seen[i] = g->wakes[s];
		if (ps->p[i] == P_LISTENING_WAIT) {
			listens++;
			up += !g->l[s].err;
			full += g->l[s].err == -ENOSPC;
			timeouts += g->l[s].err == -ETIMEDOUT;
			unsent += g->l[s].err == -ENOMEM;
		}
		if (ps->p[i] == P_LISTENING_WAIT && !g->l[s].err) {
			CHECK(g->m.open[s] && cxe_c4lsn_may_accept(&g->l[s]));
			ps->p[i] = P_UP;
		} else {
			ps->p[i] = P_GONE;
		}
		if (ending && ps->p[i] == P_UP) {
			act(g, s, cxe_c4lsn_unlisten(&g->l[s]));
			ps->p[i] = P_UNLISTEN_WAIT;
		}
	}
}

static void test_random(u32 round)
{
	struct portals ps = { 0 };
	u32 i, k, s, steps;
	struct glue g;

	glue_init(&g, 1 + rnd(STIDS));
	g.flaky = true;
	for (steps = 0; steps < 4000; steps++) {
		k = rnd(PORTALS);
		s = ps.stid[k];
		switch (rnd(4) ? ps.p[k] : P_GONE + 1) {
		case P_NONE:
			s = glue_listen(&g);
			if (s == STIDS)
				break;	/* every STID taken: the portal stays stock */
			ps.stid[k] = s;
			ps.wakes_seen[k] = 0;
			ps.p[k] = P_LISTENING_WAIT;
			break;
		case P_LISTENING_WAIT:
		case P_UNLISTEN_WAIT:
			if (rnd(8) == 0)
				act(&g, s, cxe_c4lsn_timeout(&g.l[s]));
			break;
		case P_UP:
			CHECK(cxe_c4lsn_may_accept(&g.l[s]) && g.m.open[s]);
			if (rnd(3) == 0) {
				act(&g, s, cxe_c4lsn_unlisten(&g.l[s]));
				ps.p[k] = P_UNLISTEN_WAIT;
			}
			break;
		case P_GONE:
			ps.p[k] = P_NONE;	/* another portal, later */
			break;
		default:
			glue_deliver(&g);
			break;
		}
		portals_settle(&ps, &g, false);
	}
	/* every portal goes; the chip's answers all come */
	for (i = 0; i < PORTALS; i++) {
		if (ps.p[i] == P_UP) {
			act(&g, ps.stid[i], cxe_c4lsn_unlisten(&g.l[ps.stid[i]]));
			ps.p[i] = P_UNLISTEN_WAIT;
		}
	}
	do
		portals_settle(&ps, &g, true);
	while (glue_deliver(&g));
	portals_settle(&ps, &g, true);
	CHECK(!g.m.servers);
	for (i = 0; i < STIDS; i++)
		CHECK(!g.taken[i]);
	for (i = 0; i < PORTALS; i++)
		CHECK(ps.p[i] != P_LISTENING_WAIT && ps.p[i] != P_UNLISTEN_WAIT && ps.p[i] != P_UP);
	CHECK(glue_clean(&g));
	if (!glue_clean(&g))
		fprintf(stderr, "round %u: %u refused (%s), %u protocol errors, %u early frees\n",
			round, g.refused, g.m.why ? g.m.why : "-", g.eproto,
			g.early_free);
}

int main(void)
{
	u32 i;

	srandom(13);
	test_scripted();
	for (i = 0; i < 200; i++)
		test_random(i);
	printf("test_cxgb4_listen (seed 13): %u listens answered: %u up, %u table full, %u gave up waiting, %u not sent; %u servers removed with nobody waiting; %d checks, %d failures\n",
	       listens, up, full, timeouts, unsent, late_removed, checks, failures);
	return failures != 0;
}
