/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cxgbit-ext: what the core's parts share beyond the contract
 * (cxgbit_ext.h), from the bottom up: adapters.c (the adapters and what
 * each serves), backend.c (the backend registry, what listens for each
 * portal, the hardware's limits), holds.c (login holds), portal.c
 * (portals, connections, login), transport.c (the PDU path LIO talks
 * to), pi.c (T10 protection information), adapters/soft/ (the software
 * adapter), configfs.c (the control interface) and main.c (entry).
 * Backend modules never include it.
 */
#ifndef CXE_CORE_H
#define CXE_CORE_H

#include <target/target_core_base.h>

#include "cxgbit_ext.h"

/* adapters.c: the counters' names, in enum cxe_stat's order */
extern const char *const cxe_stat_names[CXE_STAT_MAX];

/*
 * adapters.c: the adapters. The listed ones (made by name) serve netdevs:
 * steering and accept look them up; those of backends with devices of
 * their own are not listed.
 */
int cxe_adapters_init(void);
void cxe_adapters_exit(void);
bool cxe_adapter_steer(const struct net_device *dev, bool syn);
struct cxe_adapter *cxe_adapter_get_for_sk(const struct sock *sk);
/* where a portal's logins go, appended to page from at (portal_state) */
ssize_t cxe_portal_state(const struct cxe_np *cnp, char *page, ssize_t at);
struct cxe_adapter *cxe_adapter_new(const char *name,
				    const struct cxe_backend *b,
				    const struct config_item_type *type);
void cxe_adapter_unlist(struct cxe_adapter *a);
void cxe_adapter_release(struct config_item *item);
/* serve netdev name: "*" all, "" none; -EBUSY when another one serves it */
int cxe_adapter_bind(struct cxe_adapter *a, const char *name);
void cxe_adapter_netdev_name(struct cxe_adapter *a, char name[IFNAMSIZ]);

/*
 * backend.c: the backend registry. This module's backends register at
 * its load; other modules' at theirs, whenever that is (process context,
 * may sleep). It lists the portals and has each backend listen for them.
 */
int cxe_backends_get(const struct cxe_backend **out, int n,
		     unsigned long flags);
void cxe_backends_put(const struct cxe_backend **b, int n);
const struct cxe_backend *cxe_backend_find(unsigned long flags);
ssize_t cxe_backends_counters_read(void *buf, size_t size);
ssize_t cxe_caps_show(unsigned long caps, const char *sep, char *page,
		      ssize_t at);
ssize_t cxe_backend_show_all(char *page);
void cxe_backends_reset_handed_back(const char *target);
int cxe_portal_listen(struct cxe_np *cnp);
void cxe_portal_unlisten(struct cxe_np *cnp);
int cxe_portals_each(int (*fn)(const struct cxe_np *cnp, void *arg), void *arg);
/* the backend's limits (struct cxe_limits) as the PDU layer keeps to them */
int cxe_validate_params(struct iscsit_conn *conn);
void cxe_limit_send(struct cxe_conn *c);
bool cxe_iso_fits(const struct cxe_conn *c, u32 mbl);
bool cxe_ddp_fits(const struct cxe_conn *c, struct iscsit_cmd *cmd,
		  u32 off, u32 len);

/* holds.c: targets whose refused logins are not handed back */
bool cxe_hold_has(const char *target, size_t len);
ssize_t cxe_holds_store(const char *page, size_t count);
ssize_t cxe_holds_show(char *page);

/* portal.c: LIO's portal, connection and login calls */
struct iscsi_login;
int cxe_setup_np(struct iscsi_np *np, struct sockaddr_storage *addr);
int cxe_accept_np(struct iscsi_np *np, struct iscsit_conn *conn);
void cxe_free_np(struct iscsi_np *np);
void cxe_free_conn(struct iscsit_conn *conn);
int cxe_get_login_rx(struct iscsit_conn *conn, struct iscsi_login *login);
int cxe_put_login_tx(struct iscsit_conn *conn, struct iscsi_login *login,
		     u32 length);
ssize_t cxe_conn_show_all(char *buf, size_t size);

/* Receive a data segment of dlen bytes, len of them into buf. */
static inline int cxe_recv_buf(struct cxe_conn *c, void *buf, u32 len,
			       u32 dlen, bool *bad)
{
	struct cxe_data dst = { .buf = buf, .len = len };

	return cxe_ops(c)->recv_data(c, &dst, dlen, bad);
}

/* tpgs.c: LIO's TPGs behind an offloaded portal, from its configfs tree */
int cxe_tpg_behind(const char *target, const struct sockaddr_storage *addr);
int cxe_tpgs_init(void);
void cxe_tpgs_exit(void);

/* configfs.c: the control interface */
int cxe_configfs_init(void);
void cxe_configfs_exit(void);

/*
 * This module's backend; main.c registers it (adapters/soft/cm.c). The
 * cxgb4 one is a module of its own (adapters/cxgb4, cxgbit_ext_cxgb4.ko).
 */
extern const struct cxe_backend cxe_soft_backend;
void cxe_soft_exit(void);

/* transport.c */
extern struct iscsit_transport cxe_transport;

/* pi.c: T10 protection information */
enum target_prot_op cxe_pi_sup_prot_ops(struct iscsit_conn *conn);
void cxe_pi_session_check(struct iscsit_conn *conn);
struct cxe_pi_dout *cxe_pi_dout(struct cxe_conn *c, struct iscsit_cmd *cmd);
void cxe_pi_dout_finish(struct cxe_conn *c, struct iscsit_cmd *cmd);
sense_reason_t cxe_pi_din_check(struct cxe_conn *c, struct iscsit_cmd *cmd);

/* spr.c: reservations shared by gateways */
void cxe_spr_hook(struct iscsit_cmd *cmd);
extern struct config_group cxe_spr_group;
int cxe_spr_init(void);
void cxe_spr_exit(void);

/* dcache.c */
struct iscsit_cmd;
struct cxe_task;
void cxe_dcache_init(struct cxe_dcache *dc);
void cxe_dcache_lend(struct cxe_conn *c, struct iscsit_cmd *cmd);
void cxe_dcache_return(struct cxe_conn *c, struct cxe_task *task);
void cxe_dcache_close(struct cxe_dcache *dc);
void cxe_dcache_destroy(struct cxe_dcache *dc);
unsigned int cxe_dcache_kib(const struct cxe_dcache *dc);
int cxe_dcache_module_init(void);
void cxe_dcache_module_exit(void);

#endif /* CXE_CORE_H */
