"""cxe-initiator against the real open-iscsi and an offloaded target: every
target of a portal, N sessions each, through an iface bound to one NIC;
clear errors for an unreachable portal; logout of everything."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cxgbit_ext import topology
from iscsi_initiator import cli, iscsiadm
from testbed import topo

from .conftest import connection_lines, offloaded_target

# a tool's or stock LIO's behaviour, not a kernel difference of ours
pytestmark = pytest.mark.dealt

IQNS = [f"iqn.2026-11.org.cxgbit-ext:many{i}" for i in range(3)]
OFF = topo.LINKS[0]
IFACES = ("cxe0", "cxe1")


@pytest.fixture
def three_targets(iscsid: None, module_ko: Path) -> Iterator[None]:
    tops = [
        topology.Topology(iqn=iqn, backstores=("ramdisk",), lun_size=8 * topology.MiB,
                          portals=((OFF.tgt_ip, 3260),), offload=True, name_prefix=f"m{i}")
        for i, iqn in enumerate(IQNS)
    ]  # fmt: skip
    with offloaded_target(module_ko, tops[0]):
        with topo.in_netns():
            for t in tops[1:]:
                topology.create(t)
        try:
            yield
        finally:
            iscsiadm.logout()
            iscsiadm.delete_nodes()
            # the ifaces go too: later discoveries would make records through them
            for iface in IFACES:
                iscsiadm.iface_delete(iface)
            for iqn in IQNS[1:]:
                topology.delete(iqn)


def test_login_every_target_with_two_sessions_through_an_iface(three_targets: None, capsys) -> None:
    rc = cli.main(["--json", "login", "--portal", OFF.tgt_ip, "--sessions", "2", "--iface", "cxe0",
                   "--netdev", OFF.ini_dev])  # fmt: skip
    assert rc == 0, capsys.readouterr()
    logged = json.loads(capsys.readouterr().out)
    assert sorted(t["iqn"] for t in logged) == IQNS
    sess = iscsiadm.sessions()
    assert sorted(s.iqn for s in sess) == sorted(IQNS * 2)
    ifaces = {Path(f"/sys/class/iscsi_session/session{s.sid}/ifacename").read_text().strip() for s in sess}
    assert ifaces == {"cxe0"}
    # all six connections are served by the adapter
    assert len(connection_lines()) == 6
    assert cli.main(["logout"]) == 0
    assert iscsiadm.sessions() == []


# the first series: on the second it took 44 s with its setup (ad71889),
# on the first 31 s, and the two batches were within 54 s of each other
@pytest.mark.dealt(share=0)
def test_unreachable_portal_and_unknown_netdev_are_clear_errors(three_targets: None, capsys) -> None:
    assert cli.main(["login", "--portal", "198.18.0.77"]) == 1
    assert "portal 198.18.0.77 is unreachable" in capsys.readouterr().err
    assert cli.main(["login", "--portal", OFF.tgt_ip, "--iface", "cxe1", "--netdev", "nosuch0"]) == 1
    assert "no netdev 'nosuch0'" in capsys.readouterr().err
    assert iscsiadm.sessions() == []
