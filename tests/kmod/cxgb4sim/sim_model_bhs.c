// SPDX-License-Identifier: GPL-2.0-only
/* cxgb4sim: the digests and BHS fields the chip model uses (sim_model.c says why it is here) */
#include "cxe_bhs.c"
