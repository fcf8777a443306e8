/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgbit-ext: iSCSI PDU-offload transport for the LIO target.
 *
 * Shared declarations of the module's parts (main.c, transport.c,
 * configfs.c). The adapter contract lives in adapter.h.
 */
#ifndef CXGBIT_EXT_H
#define CXGBIT_EXT_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/completion.h>
#include <linux/socket.h>

#define CXE_DRV_NAME	"cxgbit_ext"
#define CXE_VERSION	"0.1.0"

struct iscsi_np;

/*
 * One offloaded network portal: what LIO's np "cxgbit" attribute created.
 * Lives from iscsit_setup_np() to iscsit_free_np(); the configfs status
 * files take references while they print it.
 */
struct cxe_np {
	struct kref		kref;
	struct list_head	node;		/* cxe_nps */
	struct iscsi_np		*np;
	struct sockaddr_storage	addr;
	struct completion	accept_comp;
};

extern struct iscsit_transport cxe_transport;

int cxe_configfs_init(void);
void cxe_configfs_exit(void);

/* Print every offloaded portal, one per line, into buf (a PAGE_SIZE buffer). */
ssize_t cxe_np_show_all(char *buf);

#endif /* CXGBIT_EXT_H */
