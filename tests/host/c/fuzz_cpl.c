// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the CPL parsers of adapters/cxgb4/cpl.c on arbitrary
 * bytes. The first byte picks the parser and the chip; the rest is the
 * message, in a buffer of exactly its length (so ASan sees any read past
 * it). Whatever the input, a parser returns -EBADMSG or the length of its
 * CPL, never more than it was given, and never anything else.
 */
#include <stdint.h>
#include <stdlib.h>
#include "cpl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum cxe_chip chip;
	union {
		struct cxe_cpl_accept_req a;
		struct cxe_cpl_established e;
		struct cxe_cpl_iscsi_pdu p;
		struct cxe_cpl_fw4_ack f;
		struct cxe_cpl_conn c;
		struct cxe_cpl_tcb_rpl t;
		struct cxe_cpl_listen_rpl l;
		struct cxe_cpl_tcb_field tf;
		struct cxe_cpl_rx_ack ra;
	} out;
	u8 mask, val;
	u8 *msg;
	size_t len;
	int ret, want;

	if (size < 1)
		return 0;
	chip = data[0] & 0x80 ? CXE_CHIP_T6 : CXE_CHIP_T5;
	len = size - 1;
	msg = malloc(len ? len : 1);
	if (!msg)
		return 0;
	memcpy(msg, data + 1, len);
	switch (data[0] % 17) {
	case 0:
		ret = cxe_cpl_parse_pass_accept_req(msg, len, chip, &out.a);
		want = CXE_CPL_PASS_ACCEPT_REQ_LEN;
		break;
	case 1:
		ret = cxe_cpl_parse_pass_establish(msg, len, &out.e);
		want = CXE_CPL_PASS_ESTABLISH_LEN;
		break;
	case 2:
		ret = cxe_cpl_parse_iscsi_hdr(msg, len, &out.p);
		want = CXE_CPL_ISCSI_HDR_LEN;
		break;
	case 3:
		ret = cxe_cpl_parse_iscsi_data(msg, len, &out.p);
		want = CXE_CPL_ISCSI_DATA_LEN;
		break;
	case 4:
		ret = cxe_cpl_parse_rx_iscsi_ddp(msg, len, &out.p);
		want = CXE_CPL_RX_ISCSI_DDP_LEN;
		break;
	case 5:
		ret = cxe_cpl_parse_rx_iscsi_cmp(msg, len, &out.p);
		want = CXE_CPL_RX_ISCSI_CMP_LEN;
		break;
	case 6:
		ret = cxe_cpl_parse_fw4_ack(msg, len, &out.f);
		want = CXE_CPL_FW4_ACK_LEN;
		break;
	case 7:
		ret = cxe_cpl_parse_peer_close(msg, len, &out.c);
		want = CXE_CPL_PEER_CLOSE_LEN;
		break;
	case 8:
		ret = cxe_cpl_parse_close_con_rpl(msg, len, &out.c);
		want = CXE_CPL_CLOSE_CON_RPL_LEN;
		break;
	case 9:
		ret = cxe_cpl_parse_abort_req_rss(msg, len, &out.c);
		want = CXE_CPL_ABORT_REQ_RSS_LEN;
		break;
	case 10:
		ret = cxe_cpl_parse_abort_rpl_rss(msg, len, &out.c);
		want = CXE_CPL_ABORT_RPL_RSS_LEN;
		break;
	case 11:
		ret = cxe_cpl_parse_set_tcb_rpl(msg, len, &out.t);
		want = CXE_CPL_SET_TCB_RPL_LEN;
		break;
	case 12:
		ret = cxe_cpl_parse_pass_open_rpl(msg, len, &out.l);
		want = CXE_CPL_PASS_OPEN_RPL_LEN;
		break;
	case 13:
		ret = cxe_cpl_parse_close_listsrv_rpl(msg, len, &out.l);
		want = CXE_CPL_CLOSE_LISTSRV_RPL_LEN;
		break;
	case 14:
		/* what the chip model reads of the glue's TCB writes */
		ret = cxe_cpl_parse_set_tcb_field(msg, len, &out.tf);
		want = 40;
		if (ret == want && cxe_cpl_tcb_submode(&out.tf, &mask, &val) &&
		    ((mask | val) & ~(CXE_ULP_CRC_HEADER | CXE_ULP_CRC_DATA) ||
		     val & ~mask))
			abort();
		break;
	case 15:
		ret = cxe_cpl_parse_rx_data_ack(msg, len, &out.ra);
		want = 24;
		break;
	default:
		ret = cxe_cpl_opcode(msg, len);
		want = len ? msg[0] : -EBADMSG;
		if (ret != want)
			abort();
		free(msg);
		return 0;
	}
	if (ret != -EBADMSG && (ret != want || (size_t)ret > len))
		abort();
	free(msg);
	return 0;
}
