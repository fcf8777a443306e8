/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgbit-ext pure protocol code: the environment it compiles in.
 *
 * The files in pdu/ hold iSCSI protocol logic with no kernel dependency so
 * that the same source builds into cxgbit_ext.ko and into user-space unit
 * tests and fuzzers. This header is the only place that differs: the
 * kernel build uses the kernel's crc32c() and crc_t10dif_update(); user
 * space links a CRC32C and a CRC-16 T10-DIF the test harness provides.
 * CXE_EXPORT() exports what backend modules call (EXPORT_SYMBOL_GPL), and
 * is nothing in user space.
 */
#ifndef CXE_ENV_H
#define CXE_ENV_H

#ifdef __KERNEL__
#include <linux/bits.h>
#include <linux/types.h>
#include <linux/string.h>
#include <linux/errno.h>
#include <linux/crc32c.h>
#include <linux/crc-t10dif.h>
#include <linux/export.h>

/* a module that builds its own copy (the cxgb4 stand-in) exports none */
#ifndef CXE_EXPORT
#define CXE_EXPORT(sym)	EXPORT_SYMBOL_GPL(sym)
#endif

/* Raw CRC32C update (no pre/post inversion), like the kernel's crc32c(). */
static inline u32 cxe_crc32c(u32 crc, const void *buf, size_t len)
{
	return crc32c(crc, buf, len);
}

/* CRC-16 T10-DIF update (initial 0), like the kernel's crc_t10dif_update() */
static inline u16 cxe_crc_t10dif(u16 crc, const void *buf, size_t len)
{
	return crc_t10dif_update(crc, buf, len);
}
#else
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <errno.h>

typedef __UINT8_TYPE__ u8;
typedef __UINT16_TYPE__ u16;
typedef __UINT32_TYPE__ u32;
typedef __UINT64_TYPE__ u64;

#define BIT(nr) (1UL << (nr))
#define fallthrough __attribute__((__fallthrough__))
#define CXE_EXPORT(sym)	extern int cxe_export_ ## sym

/* Provided by the user-space harness; same contract as the kernel's. */
u32 cxe_crc32c(u32 crc, const void *buf, size_t len);
u16 cxe_crc_t10dif(u16 crc, const void *buf, size_t len);
#endif

#endif /* CXE_ENV_H */
