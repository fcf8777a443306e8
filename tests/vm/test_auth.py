"""Authentication and access on an offloaded portal (RFC 7143 11.1.4, 11.7):
CHAP one-way and mutual with each algorithm LIO implements (MD5, SHA-1,
SHA-256, SHA3-256), a wrong secret refused, discovery authentication,
an initiator outside the ACLs refused; open-iscsi's CHAP too. Every login
that succeeds is checked to be served by cxgbit_ext."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cxgbit_ext import topology
from iscsi_initiator import chap, iscsiadm
from iscsi_initiator.session import Connection, ConnectionClosed, LoginError
from testbed import topo

from .conftest import PDU_INITIATOR, offloaded_peers, offloaded_target

IQN = "iqn.2026-11.org.cxgbit-ext:auth"
OFF, STOCK = topo.LINKS  # soft0 serves tgt0; tgt1 stays stock TCP
USER, SECRET = "cxe-user", "s3cret-0123ab"  # 13 characters
MUSER, MSECRET = "cxe-target", "tgt-s3cret-987"
DISCOVERY = Path("/sys/kernel/config/target/iscsi/discovery_auth")


@pytest.fixture(scope="module")
def auth_target(iscsid: None, module_ko: Path) -> Iterator[None]:
    # open-iscsi's own name (the guest may have the host's initiatorname.iscsi)
    ini = iscsiadm.INITIATORNAME.read_text().split("InitiatorName=", 1)[1].split()[0]
    t = topology.Topology(iqn=IQN, backstores=("ramdisk",), lun_size=8 * topology.MiB, portals=(("0.0.0.0", 3260),),
                          offload=True, acls=(PDU_INITIATOR, ini), chap=(USER, SECRET))  # fmt: skip
    with offloaded_target(module_ko, t):
        from rtslib_fb import FabricModule

        (target,) = [x for x in FabricModule("iscsi").targets if x.wwn == IQN]
        for acl in next(target.tpgs).node_acls:
            acl.chap_mutual_userid, acl.chap_mutual_password = MUSER, MSECRET
        yield


def login(ip: str = OFF.tgt_ip, **kw: str) -> Connection:
    """A CHAP login as the PDU initiator (or kw's initiator) to ip."""
    c = Connection(ip)
    c.login(kw.pop("initiator", PDU_INITIATOR), IQN, **kw)  # type: ignore[arg-type]
    return c


def outcome(ip: str, discovery: bool = False, **kw: str) -> str:
    """How a login that must fail fails: the Login Response status class,
    or the connection closed without one."""
    c = Connection(ip)
    try:
        c.login(kw.pop("initiator", PDU_INITIATOR), None if discovery else IQN, discovery=discovery, **kw)  # type: ignore[arg-type]
        return "logged in"
    except LoginError as e:
        return f"class 0x{e.status_class:02x}"
    except ConnectionClosed:
        return "closed"
    finally:
        c.close()


def refused_alike(case: str, discovery: bool = False, **kw: str) -> None:
    """The offloaded and the stock portal of the target refuse the login
    alike: RFC 7143 11.13.5 class 2 (initiator error), or, where LIO itself
    does so, the connection closed without a response."""
    got = {ip: outcome(ip, discovery, **kw) for ip in (OFF.tgt_ip, STOCK.tgt_ip)}
    print(f"{case}: offload {got[OFF.tgt_ip]}, stock {got[STOCK.tgt_ip]}")
    assert got[OFF.tgt_ip] == got[STOCK.tgt_ip] and got[OFF.tgt_ip] in ("class 0x02", "closed")


def no_connection_left() -> None:
    deadline = time.monotonic() + 10
    while offloaded_peers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert offloaded_peers() == [], "refused logins must not leave connections behind"


def test_one_way_and_mutual_chap_log_in_offloaded(auth_target: None) -> None:
    for kw in ({}, {"mutual_user": MUSER, "mutual_secret": MSECRET}):
        c = login(chap_user=USER, chap_secret=SECRET, **kw)
        try:
            local = c.sock.getsockname()
            assert f"{local[0]}:{local[1]}" in offloaded_peers()
            c.scsi_write(0, b"\xa5" * 4096)
            assert c.scsi_read(0, 8) == b"\xa5" * 4096
            c.logout()
        finally:
            c.close()


# The CHAP_A values LIO implements (iscsi_target_auth.c)
ALGORITHMS = {"MD5": str(chap.MD5), "SHA-1": str(chap.SHA1), "SHA-256": str(chap.SHA256),
              "SHA3-256": str(chap.SHA3_256)}  # fmt: skip


@pytest.mark.parametrize("alg", list(ALGORITHMS))
def test_each_chap_algorithm_logs_in_as_on_stock(auth_target: None, alg: str) -> None:
    """Each CHAP algorithm, offered alone and after one no target knows,
    one-way and mutual: offloaded and stock portals both log in with it
    (the response is that algorithm's hash, so a target that chose another
    would refuse it), the offloaded login is served by cxgbit_ext, and a
    wrong secret is refused alike."""
    mutual = {"mutual_user": MUSER, "mutual_secret": MSECRET}
    for offered in (ALGORITHMS[alg], f"200,{ALGORITHMS[alg]}"):
        for kw in ({}, mutual):
            for ip in (OFF.tgt_ip, STOCK.tgt_ip):
                c = login(ip, chap_user=USER, chap_secret=SECRET, chap_algs=offered, **kw)
                try:
                    local = c.sock.getsockname()
                    assert (f"{local[0]}:{local[1]}" in offloaded_peers()) == (ip == OFF.tgt_ip)
                    assert c.nop(b"ping").data == b"ping"
                    c.logout()
                finally:
                    c.close()
    refused_alike(f"{alg}, wrong secret", chap_user=USER, chap_secret="not-the-secret1", chap_algs=ALGORITHMS[alg])


def test_an_unknown_chap_algorithm_alone_is_refused_as_on_stock(auth_target: None) -> None:
    refused_alike("CHAP_A=200 alone", chap_user=USER, chap_secret=SECRET, chap_algs="200")
    no_connection_left()


REFUSED = {
    "wrong secret": {"chap_user": USER, "chap_secret": "not-the-secret1"},
    "no CHAP": {},
    "initiator outside the ACLs": {"initiator": "iqn.2026-11.org.example:stranger", "chap_user": USER,
                                   "chap_secret": SECRET},
}  # fmt: skip


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_logins_fail_as_on_stock(auth_target: None, case: str) -> None:
    refused_alike(case, **REFUSED[case])


def test_mutual_chap_with_a_wrong_target_secret_is_caught(auth_target: None) -> None:
    """The target answering mutual CHAP with another secret is caught by us."""
    got = outcome(OFF.tgt_ip, chap_user=USER, chap_secret=SECRET, mutual_user=MUSER, mutual_secret="other-secret-12")
    assert got == "class 0xfd"
    no_connection_left()


def test_discovery_authentication(auth_target: None) -> None:
    (DISCOVERY / "userid").write_text(USER)
    (DISCOVERY / "password").write_text(SECRET)
    (DISCOVERY / "enforce_discovery_auth").write_text("1")
    try:
        refused_alike("discovery without CHAP", discovery=True)
        c = Connection(OFF.tgt_ip)
        try:
            c.login(PDU_INITIATOR, None, discovery=True, chap_user=USER, chap_secret=SECRET)
            assert c.text({"SendTargets": "All"}).get("TargetName") == IQN
            c.logout()
        finally:
            c.close()
    finally:
        (DISCOVERY / "enforce_discovery_auth").write_text("0")


@contextmanager
def open_iscsi_chap_node(**auth: str) -> Iterator[str]:
    """open-iscsi's node for the offloaded portal, discovered and set to
    CHAP with the node.session.auth settings given; its portal. Logged
    out and deleted after."""
    portal = f"{OFF.tgt_ip}:3260"
    iscsiadm.discover(OFF.tgt_ip)
    try:
        for name, value in {"authmethod": "CHAP", "username": USER, **auth}.items():
            iscsiadm.set_node(IQN, portal, f"node.session.auth.{name}", value)
        yield portal
    finally:
        iscsiadm.logout()
        iscsiadm.delete_nodes()


def logged_in_offloaded(portal: str) -> None:
    iscsiadm.login(IQN, portal)
    iscsiadm.session_disks(IQN, expect=1)
    assert len(offloaded_peers()) == 1


def test_open_iscsi_chap_sha3_256_offloaded(auth_target: None) -> None:
    """open-iscsi offering SHA3-256 alone (node.session.auth.chap_algs)
    logs in offloaded: LIO chose SHA3-256, or the login would fail."""
    with open_iscsi_chap_node(password=SECRET, chap_algs="SHA3-256") as portal:
        logged_in_offloaded(portal)


def test_open_iscsi_chap_offloaded_and_wrong_secret_refused(auth_target: None) -> None:
    with open_iscsi_chap_node(password="wrong-secret-00") as portal:
        with pytest.raises(iscsiadm.IscsiadmError, match="exit 24"):  # ISCSI_ERR_LOGIN_AUTH_FAILED
            iscsiadm.login(IQN, portal)
        iscsiadm.set_node(IQN, portal, "node.session.auth.password", SECRET)
        logged_in_offloaded(portal)
