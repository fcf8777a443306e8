/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What cxgb4's message headers (t4_msg.h, t4fw_api.h, t4_tcb.h) need of the
 * kernel to compile in user space: kernel integer types, byte order
 * helpers, struct_group() and ETH_ALEN. Used by the golden test only.
 */
#ifndef CXGB4_SHIM_H
#define CXGB4_SHIM_H

#include <endian.h>
#include <stdint.h>
#include <linux/types.h>
#include "cxe_env.h"

#define cpu_to_be16(x) htobe16(x)
#define cpu_to_be32(x) htobe32(x)
#define cpu_to_be64(x) htobe64(x)
#define be16_to_cpu(x) be16toh(x)
#define be32_to_cpu(x) be32toh(x)
#define be64_to_cpu(x) be64toh(x)
#define htonl(x) htobe32(x)
#define htons(x) htobe16(x)
#define ntohl(x) be32toh(x)
#define ntohs(x) be16toh(x)
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define roundup(x, y) (DIV_ROUND_UP(x, y) * (y))
#define ETH_ALEN 6
#define struct_group(NAME, MEMBERS...) \
	union { struct { MEMBERS }; struct { MEMBERS } NAME; }

#if __BYTE_ORDER == __LITTLE_ENDIAN
#ifndef __LITTLE_ENDIAN_BITFIELD
#define __LITTLE_ENDIAN_BITFIELD
#endif
#else
#ifndef __BIG_ENDIAN_BITFIELD
#define __BIG_ENDIAN_BITFIELD
#endif
#endif

#endif /* CXGB4_SHIM_H */
