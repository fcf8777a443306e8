// SPDX-License-Identifier: GPL-2.0-only
/* cxgb4sim: the digests and BHS fields the chip model uses (sim_model.c says why it is here) */
/* a copy of the module's own: cxgbit_ext.ko exports these, not the stand-in */
#define CXE_EXPORT(sym) extern int cxe_export_ ## sym
#include "cxe_bhs.c"
