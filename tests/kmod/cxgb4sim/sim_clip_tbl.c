// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4sim (sim.h says what it is): the compressed local IPv6 table.
 * Stands for clip_tbl.c, whose exported symbols it defines.
 */
#include "clip_tbl_inc.h"
#include "sim.h"

int cxgb4_clip_get(const struct net_device *dev, const u32 *lip, u8 v6)
{
	if (c4sim_detached("cxgb4_clip_get"))
		return -ENODEV;
	c4sim_trace("clip get dev=%s v6=%u", dev->name, v6);
	c4sim->clips++;
	return 0;
}
EXPORT_SYMBOL(cxgb4_clip_get);

void cxgb4_clip_release(const struct net_device *dev, const u32 *lip, u8 v6)
{
	if (c4sim_detached("cxgb4_clip_release"))
		return;
	c4sim_trace("clip release dev=%s v6=%u", dev->name, v6);
	c4sim->clips--;
}
EXPORT_SYMBOL(cxgb4_clip_release);
