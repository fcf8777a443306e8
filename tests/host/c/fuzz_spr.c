// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer on the agent channel's parser (pdu/cxe_spr.c): any bytes the
 * agent writes are parsed without reading or writing outside the line,
 * an accepted apply's parameter list lies inside it, and a serve or
 * hold names a target of at most CXE_SPR_NAME_MAX - 1 bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cxe_spr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cxe_spr_msg m;
	char *line;

	if (size > CXE_SPR_LINE_MAX)
		return 0;
	line = malloc(size + 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	if (cxe_spr_parse(line, size, &m)) {
		free(line);
		return 0;
	}
	if (m.verb == CXE_SPR_APPLY && m.plen &&
	    (m.param < (const u8 *)line || m.param + m.plen > (const u8 *)line + size))
		abort();
	if ((m.verb == CXE_SPR_SERVE || m.verb == CXE_SPR_HOLD) &&
	    (!m.nx.target[0] || strnlen(m.nx.target, CXE_SPR_NAME_MAX) >= CXE_SPR_NAME_MAX))
		abort();
	free(line);
	return 0;
}
