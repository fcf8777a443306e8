"""Topology input checks happen before anything is created."""

from __future__ import annotations

import pytest

from cxgbit_ext import topology


def test_defaults_are_the_reference_topology() -> None:
    t = topology.Topology(iqn="iqn.2026-11.org.cxgbit-ext:t")
    assert t.backstores == ("ramdisk",) * 4 and t.lun_size == 64 * topology.MiB
    assert t.portals == (("0.0.0.0", 3260),)
    assert [t.so_name(i) for i in range(4)] == [f"cxe_ramdisk{i}" for i in range(4)]


@pytest.mark.parametrize("kw", [{"backstores": ()}, {"lun_size": 4096}], ids=["no-luns", "tiny-luns"])
def test_bad_topology_is_refused_before_touching_lio(kw: dict[str, object]) -> None:
    with pytest.raises(topology.TopologyError, match="at least one LUN of at least 1 MiB"):
        topology.create(topology.Topology(iqn="iqn.2026-11.org.cxgbit-ext:t", **kw))  # type: ignore[arg-type]
