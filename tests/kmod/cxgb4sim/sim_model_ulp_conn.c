// SPDX-License-Identifier: GPL-2.0-only
/* cxgb4sim: the chip model's ulp_conn (sim_model.c says why it is here) */
#include "ulp_conn.c"
