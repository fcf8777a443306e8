// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One WRITE(10) with immediate data through libiscsi, as an application
 * makes it: log in to ISCSI_PORTAL, write one block, report how it ended.
 * The prototypes are libiscsi 1.19.0's (include/iscsi.h); built against
 * the installed libiscsi.so.7 without its development package.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct iscsi_context;
struct scsi_task;

struct iscsi_context *iscsi_create_context(const char *initiator_name);
int iscsi_set_targetname(struct iscsi_context *iscsi, const char *targetname);
int iscsi_set_session_type(struct iscsi_context *iscsi, int session_type);
int iscsi_connect_sync(struct iscsi_context *iscsi, const char *portal);
int iscsi_login_sync(struct iscsi_context *iscsi);
const char *iscsi_get_error(struct iscsi_context *iscsi);
int iscsi_set_noautoreconnect(struct iscsi_context *iscsi, int state);
struct scsi_task *iscsi_write10_sync(struct iscsi_context *iscsi, int lun, uint32_t lba,
				     unsigned char *data, uint32_t datalen, int blocksize,
				     int wrprotect, int dpo, int fua, int fua_nv, int group_number);

#define ISCSI_SESSION_NORMAL 2

int main(int argc, char **argv)
{
	static unsigned char block[512];
	struct iscsi_context *iscsi;

	if (argc != 3) {
		fprintf(stderr, "usage: %s HOST:PORT TARGET_IQN\n", argv[0]);
		return 2;
	}
	iscsi = iscsi_create_context("iqn.2026-11.org.cxgbit-ext:libiscsi-repro");
	if (!iscsi || iscsi_set_targetname(iscsi, argv[2]) ||
	    iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL) ||
	    iscsi_connect_sync(iscsi, argv[1]) || iscsi_login_sync(iscsi)) {
		fprintf(stderr, "login: %s\n", iscsi ? iscsi_get_error(iscsi) : "no context");
		return 2;
	}
	/* a lost connection fails the command, as iscsi-test-cu has it */
	iscsi_set_noautoreconnect(iscsi, 1);
	memset(block, 0xa5, sizeof(block));
	if (!iscsi_write10_sync(iscsi, 0, 0, block, sizeof(block), sizeof(block), 0, 0, 0, 0, 0))
		printf("write failed: %s\n", iscsi_get_error(iscsi));
	else
		printf("write ended\n");
	return 0;
}
