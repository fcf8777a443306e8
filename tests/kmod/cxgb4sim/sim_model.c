// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgb4sim: the chip model of tests/chipmodel (pure C; its README
 * says what it models), built into the stand-in: the connection, receive,
 * transmit and page pod models, and the message layer they use.
 */
#include "cpl.c"
