// SPDX-License-Identifier: GPL-2.0-only
/*
 * Login holds: targets whose logins are answered on the offloaded portal
 * even when LIO finds no TPG of theirs behind it, instead of being handed
 * to the stock portal (portal.c, cxe_hand_back()).
 *
 * Why: LIO looks for an enabled TPG when it reads a login's first PDU.
 * A login for a target whose TPG (with offload on this portal) is still
 * disabled finds none on the offloaded portal and is handed to the stock
 * portal, its request unread. If the stock portal reads it after the TPG
 * was enabled, LIO finds the TPG through its stock portal and the session
 * is on stock TCP. Whoever enables such a TPG holds its target first: its
 * refused logins are then refused here (as the stock portal would have
 * refused them: the TPG is disabled), and the logins already handed back
 * that the stock portal has not answered are reset, so that none of them
 * is read after the enable. The initiators log in again and, once the TPG
 * is enabled, are served here.
 *
 * A hold ends when its time is up, so that one left by a writer that died
 * does not outlive it for long.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/jiffies.h>
#include <linux/kstrtox.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <target/iscsi/iscsi_target_core.h>

#include "core.h"

#define CXE_MAX_HOLDS	64
#define CXE_HOLD_MAX_S	600

struct cxe_hold {
	char		target[ISCSI_IQN_LEN];	/* "" when the slot is free */
	unsigned long	until;			/* jiffies */
};

static struct cxe_hold cxe_holds[CXE_MAX_HOLDS];
static DEFINE_SPINLOCK(cxe_holds_lock);

/* A live hold's slot, or NULL. cxe_holds_lock held. */
static struct cxe_hold *cxe_hold_find(const char *target, size_t len)
{
	struct cxe_hold *h;

	for (h = cxe_holds; h < cxe_holds + CXE_MAX_HOLDS; h++) {
		if (!h->target[0])
			continue;
		if (time_after_eq(jiffies, h->until)) {
			h->target[0] = '\0';	/* its time is up */
			continue;
		}
		if (strlen(h->target) == len && !memcmp(h->target, target, len))
			return h;
	}
	return NULL;
}

bool cxe_hold_has(const char *target, size_t len)
{
	bool held;

	spin_lock(&cxe_holds_lock);
	held = cxe_hold_find(target, len);
	spin_unlock(&cxe_holds_lock);
	return held;
}

/* "target seconds": hold for that long (again), 0 to end the hold */
ssize_t cxe_holds_store(const char *page, size_t count)
{
	const char *sp = strpbrk(page, " \t");
	char target[ISCSI_IQN_LEN];
	struct cxe_hold *h;
	unsigned int secs;
	size_t len;
	int ret = 0;

	if (!sp || sp == page || sp - page >= ISCSI_IQN_LEN ||
	    kstrtouint(skip_spaces(sp), 10, &secs) || secs > CXE_HOLD_MAX_S)
		return -EINVAL;
	len = sp - page;
	memcpy(target, page, len);
	target[len] = '\0';
	spin_lock(&cxe_holds_lock);
	h = cxe_hold_find(target, len);
	if (!h && secs) {
		for (h = cxe_holds; h < cxe_holds + CXE_MAX_HOLDS; h++)
			if (!h->target[0])
				break;
		if (h < cxe_holds + CXE_MAX_HOLDS)
			memcpy(h->target, target, len + 1);
		else
			h = NULL;
	}
	if (h && secs)
		h->until = jiffies + secs * HZ;
	else if (h)
		h->target[0] = '\0';
	else
		ret = secs ? -ENOSPC : -ENOENT;
	spin_unlock(&cxe_holds_lock);
	if (ret)
		return ret;
	if (secs) {
		smp_mb();	/* the hold before the records: see cxe_handed_add() */
		cxe_backends_reset_handed_back(target);
	}
	return count;
}

/* "target ms-left" per live hold */
ssize_t cxe_holds_show(char *page)
{
	struct cxe_hold *h;
	ssize_t len = 0;

	spin_lock(&cxe_holds_lock);
	for (h = cxe_holds; h < cxe_holds + CXE_MAX_HOLDS; h++)
		if (h->target[0] && time_before(jiffies, h->until))
			len += sysfs_emit_at(page, len, "%s %u\n", h->target,
					     jiffies_to_msecs(h->until - jiffies));
	spin_unlock(&cxe_holds_lock);
	return len;
}
