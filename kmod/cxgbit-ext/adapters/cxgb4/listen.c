// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4 backend: the life of a listening server; see listen.h.
 */
#include "listen.h"

/* CPL_ERR_TCAM_FULL: the chip's server table has no room */
#define CPL_ERR_TCAM_FULL	3

void cxe_c4lsn_init(struct cxe_c4lsn *l, u32 stid)
{
	memset(l, 0, sizeof(*l));
	l->stid = stid;
	l->state = CXE_C4LSN_OPENING;
	l->wanted = true;
	l->waiting = true;
}

int cxe_c4lsn_errno(u8 status)
{
	if (!status)
		return 0;
	return status == CPL_ERR_TCAM_FULL ? -ENOSPC : -EIO;
}

/* the waiter, if one waits, has its answer */
static int answer(struct cxe_c4lsn *l, int err)
{
	if (!l->waiting)
		return 0;
	l->waiting = false;
	l->err = err;
	return CXE_C4L_WAKE;
}

int cxe_c4lsn_open_rpl(struct cxe_c4lsn *l, u8 status)
{
	if (l->state != CXE_C4LSN_OPENING)
		return -EPROTO;
	l->status = status;
	if (status) {
		/* no server: a listen learns why, an unlisten that it is over */
		int err = l->wanted ? cxe_c4lsn_errno(status) : 0;

		l->state = CXE_C4LSN_DONE;
		l->wanted = false;
		return CXE_C4L_FREE_STID | answer(l, err);
	}
	if (!l->wanted) {
		/* up when nobody wants it: the unlisten, if any, waits on */
		l->state = CXE_C4LSN_CLOSING;
		return CXE_C4L_REMOVE;
	}
	l->state = CXE_C4LSN_LISTENING;
	return answer(l, 0);
}

int cxe_c4lsn_close_rpl(struct cxe_c4lsn *l, u8 status)
{
	if (l->state != CXE_C4LSN_CLOSING)
		return -EPROTO;
	l->status = status;
	l->state = CXE_C4LSN_DONE;
	if (status) {
		/* the chip may still hold the server: its STID stays taken */
		l->kept = true;
		return answer(l, -EIO);
	}
	return CXE_C4L_FREE_STID | answer(l, 0);
}

int cxe_c4lsn_unsent(struct cxe_c4lsn *l, int err)
{
	switch (l->state) {
	case CXE_C4LSN_OPENING:
		l->state = CXE_C4LSN_DONE;
		if (!l->wanted)
			err = 0;
		l->wanted = false;
		return CXE_C4L_FREE_STID | answer(l, err);
	case CXE_C4LSN_CLOSING:
		l->state = CXE_C4LSN_DONE;
		l->kept = true;
		return answer(l, err);
	default:
		return -EPROTO;
	}
}

int cxe_c4lsn_unlisten(struct cxe_c4lsn *l)
{
	l->wanted = false;
	switch (l->state) {
	case CXE_C4LSN_LISTENING:
		l->state = CXE_C4LSN_CLOSING;
		l->waiting = true;
		return CXE_C4L_REMOVE;
	case CXE_C4LSN_OPENING:
	case CXE_C4LSN_CLOSING:
		l->waiting = true;
		return 0;
	case CXE_C4LSN_DONE:
	default:
		l->waiting = true;
		return answer(l, 0);
	}
}

int cxe_c4lsn_timeout(struct cxe_c4lsn *l)
{
	if (!l->waiting)
		return 0;
	/* a listen that gave up does not want the server it asked for */
	if (l->state == CXE_C4LSN_OPENING)
		l->wanted = false;
	return answer(l, -ETIMEDOUT);
}

int cxe_c4lsn_gone(struct cxe_c4lsn *l)
{
	bool settled = l->state == CXE_C4LSN_DONE && !l->kept;

	l->state = CXE_C4LSN_DONE;
	l->kept = false;
	if (settled)
		return 0;
	return CXE_C4L_FREE_STID | answer(l, -ENODEV);
}
