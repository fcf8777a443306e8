// SPDX-License-Identifier: GPL-2.0-only
/* cxgb4sim: the chip model's ulp_tx (sim_model.c says why it is here) */
#include "ulp_tx.c"
