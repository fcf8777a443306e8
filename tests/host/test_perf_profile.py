"""perf/profile.py: a plugin dump mapped to kallsyms and bucketed."""

from __future__ import annotations

import pytest

from perf import profile

KALLSYMS = """\
ffffffff81000000 T _stext
ffffffff81001000 T tcp_sendmsg_locked
ffffffff81002000 t __schedule
ffffffff81003000 T memcpy
ffffffff81004000 D some_data
ffffffff81005000 T default_idle
ffffffff81006000 T vfs_read
ffffffffc0800000 t cxe_rx_data_cb\t[cxgbit_ext]
ffffffffc0801000 t iscsit_handle_scsi_cmd\t[iscsi_target_mod]
ffffffffc0802000 t crc32c_pcl_intel_update\t[crc32c_intel]
"""


def test_dump_is_bucketed_by_symbol_and_module() -> None:
    syms = profile.load_kallsyms(KALLSYMS)
    dump = "\n".join([
        "1 500",                    # user space
        "ffffffff81001010 100",     # tcp_sendmsg_locked
        "ffffffff81002004 7",       # __schedule
        "ffffffff81003000 40",      # memcpy
        "ffffffff81004010 3",       # after the data symbol: still memcpy's text
        "ffffffff81005001 9",       # default_idle
        "ffffffff81006000 11",      # vfs_read: other kernel
        "ffffffffc0800010 20",      # cxgbit_ext
        "ffffffffc0801010 30",      # iscsi_target_mod
        "ffffffffc0802040 60",      # crc32c_intel
    ])  # fmt: skip
    b = profile.buckets(dump, syms)
    assert b["user space"] == 500
    assert b["TCP/IP + skb"] == 100
    assert b["scheduler"] == 7
    assert b["copy"] == 43
    assert b["idle"] == 9
    assert b["other kernel"] == 11
    assert b["cxgbit_ext"] == 20 and b["iscsi_target_mod"] == 30 and b["crc32c"] == 60
    assert sum(b.values()) == 780
    assert set(b) == set(profile.BUCKETS)


def test_address_below_every_symbol_is_unknown_not_an_error() -> None:
    syms = profile.load_kallsyms(KALLSYMS)
    assert syms.lookup(0xFFFF800000000000) == ("?", "")
    assert profile.buckets("ffff800000000000 5", syms)["other kernel"] == 5


def test_points_get_buckets_per_io_and_a_table(tmp_path) -> None:
    (tmp_path / "kallsyms").write_text(KALLSYMS)
    (tmp_path / "insn.prof.s00002").write_text("ffffffff81001010 200000\nffffffffc0800010 100000\n")
    points = [
        {"digest": "off", "rw": "randread", "bs_bytes": 4096, "transport": "offload", "ios": 100.0,
         "target_prof": "s00002"},
        {"digest": "off", "rw": "randread", "bs_bytes": 4096, "transport": "stock", "ios": 100.0,
         "target_prof": "s00004"},  # no such dump: left alone
    ]  # fmt: skip
    assert profile.per_io(points, tmp_path) == 1
    assert points[0]["target_buckets_per_io"]["TCP/IP + skb"] == 2000
    assert points[0]["target_buckets_per_io"]["cxgbit_ext"] == 1000
    assert "target_buckets_per_io" not in points[1]
    md = profile.markdown(points)
    assert "| off | randread | 4K | offload | " in md and "| 3.0 |" in md


def test_a_dump_that_is_not_its_windows_is_left_out(tmp_path) -> None:
    """A dump holding another window's instructions (the counter says the
    window ran 3000 per I/O, the dump has 1000) gets no buckets, and the
    table says a point was left out."""
    (tmp_path / "kallsyms").write_text(KALLSYMS)
    (tmp_path / "insn.prof.s00002").write_text("ffffffff81001010 200000\nffffffffc0800010 100000\n")
    (tmp_path / "insn.prof.s00004").write_text("ffffffff81001010 100000\n")
    points = [
        {"digest": "off", "rw": "randread", "bs_bytes": 4096, "transport": "offload", "ios": 100.0,
         "target_prof": "s00002", "target_insn_per_io": 2950.0},
        {"digest": "off", "rw": "randread", "bs_bytes": 4096, "transport": "stock", "ios": 100.0,
         "target_prof": "s00004", "target_insn_per_io": 3000.0},
    ]  # fmt: skip
    assert profile.per_io(points, tmp_path) == 1
    assert "target_buckets_per_io" in points[0]
    assert "target_buckets_per_io" not in points[1]
    assert round(points[1]["target_prof_mismatch"], 3) == 0.333
    assert "1 of 2 points are left out" in profile.markdown(points)


def test_transport_layer_is_listed_by_function() -> None:
    syms = profile.load_kallsyms(KALLSYMS)
    dump = "1 500\nffffffffc0800010 20\nffffffffc0800020 5\nffffffffc0801010 30\nffffffff81001010 100\n"
    assert profile.by_function(dump, syms) == {"cxe_rx_data_cb": 25, "iscsit_handle_scsi_cmd": 30}
    points = [
        {"digest": "on", "rw": "randwrite", "bs_bytes": 8192, "transport": "offload", "ios": 10.0,
         "transport_functions_per_io": {"cxe_rx_data_cb": 2.5, "iscsit_handle_scsi_cmd": 3.0}},
        {"digest": "on", "rw": "randwrite", "bs_bytes": 8192, "transport": "offload", "ios": 10.0,
         "transport_functions_per_io": {"cxe_rx_data_cb": 4.5}},
    ]  # fmt: skip
    md = profile.markdown([{**p, "target_buckets_per_io": dict.fromkeys(profile.BUCKETS, 0.0)} for p in points])
    # mean over the two repeats, costliest first; a function missing from a repeat counts 0 there
    assert "| on | randwrite | 8K | offload | 5 | cxe_rx_data_cb 4, iscsit_handle_scsi_cmd 2 |" in md


def test_hardware_model_takes_out_what_the_card_does() -> None:
    def point(rw: str, transport: str, **b: float) -> dict[str, object]:
        return {"digest": "on", "rw": rw, "bs_bytes": 65536, "transport": transport,
                "target_buckets_per_io": {**dict.fromkeys(profile.BUCKETS, 0.0), **b}}  # fmt: skip

    points = [
        point("randwrite", "offload", crc32c=10, copy=50, checksum=5, **{"TCP/IP + skb": 20, "cxgbit_ext": 15}),
        point("randwrite", "stock", crc32c=10, copy=60, checksum=5, **{"TCP/IP + skb": 25, "iscsi_target_mod": 20}),
        point("randread", "offload", copy=30, **{"TCP/IP + skb": 10}),
        point("randread", "stock", copy=30, **{"TCP/IP + skb": 12}),
    ]
    model = profile.hardware_model(points)
    # write: 100 measured less crc 10, checksum 5, TCP 20, placement copy 50 - 30 = 20: 45 of stock's 120
    assert model[("on", "randwrite", 65536)] == (45.0, 45.0 / 120.0)
    # read: 40 less TCP 10; no placement copy
    assert model[("on", "randread", 65536)] == (30.0, 30.0 / 42.0)
    assert "| on | randwrite | 64K | 0.0 | 0.38 |" in profile.markdown(points)


def test_ratio_outside_the_copy_routines() -> None:
    def point(transport: str, **b: float) -> dict[str, object]:
        return {"digest": "off", "rw": "randwrite", "bs_bytes": 524288, "transport": transport,
                "target_buckets_per_io": {**dict.fromkeys(profile.BUCKETS, 0.0), **b}}  # fmt: skip

    # offload copies the same bytes with a routine TCG counts lower, and does more elsewhere
    points = [point("offload", copy=200, cxgbit_ext=120), point("stock", copy=400, iscsi_target_mod=100)]
    assert profile.outside_copy(points) == {("off", "randwrite", 524288): (320 / 500, 120 / 100)}
    assert "| off | randwrite | 512K | 0.64 | 1.20 | 0.12 / 0.10 = 1.20 |" in profile.markdown(points)


def test_transport_layer_counts_both_modules_and_the_crc() -> None:
    def point(transport: str, **b: float) -> dict[str, object]:
        return {"digest": "on", "rw": "randread", "bs_bytes": 4096, "transport": transport,
                "target_buckets_per_io": {**dict.fromkeys(profile.BUCKETS, 0.0), **b}}  # fmt: skip

    points = [
        point("offload", cxgbit_ext=1300, iscsi_target_mod=1300, crc32c=1100, copy=25000),
        point("stock", cxgbit_ext=100, iscsi_target_mod=2300, crc32c=800, copy=26000, **{"other kernel": 500}),
    ]
    assert profile.transport_layer(points) == {("on", "randread", 4096): (3700, 3200)}
    assert "| 3.70 / 3.20 = 1.16 |" in profile.markdown(points)


def test_kernel_functions_outside_transport_and_copy_are_differenced(tmp_path) -> None:
    """Each point keeps its kernel functions outside the transport layer;
    the section lists offload less stock by function, the copy routines
    left out, so a gap in the TCP/IP bucket is named."""
    (tmp_path / "kallsyms").write_text(KALLSYMS)
    (tmp_path / "insn.prof.s00002").write_text(
        "ffffffff81001010 3000\nffffffff81002000 500\nffffffff81003000 9000\nffffffffc0800010 700\n"
    )
    (tmp_path / "insn.prof.s00004").write_text("ffffffff81001010 2000\nffffffff81002000 800\nffffffff81003000 50\n")
    points = [
        {"digest": "on", "rw": "randwrite", "bs_bytes": 524288, "transport": "offload", "ios": 10.0,
         "target_prof": "s00002"},
        {"digest": "on", "rw": "randwrite", "bs_bytes": 524288, "transport": "stock", "ios": 10.0,
         "target_prof": "s00004"},
    ]  # fmt: skip
    assert profile.per_io(points, tmp_path) == 2
    assert points[0]["kernel_functions_per_io"] == {"tcp_sendmsg_locked": 300.0, "__schedule": 50.0, "memcpy": 900.0}
    assert profile.differences(points) == {
        ("on", "randwrite", 524288): {"tcp_sendmsg_locked": 100.0, "__schedule": -30.0}
    }
    md = profile.markdown(points)
    assert "| on | randwrite | 512K | +70 | tcp_sendmsg_locked +100 | __schedule -30 |" in md


def test_stacked_bars_of_the_buckets_at_4k_and_256k(tmp_path) -> None:
    """perf/results' buckets.png: drawn from the points of 4K and 256K with
    buckets, none without such points."""
    pytest.importorskip("matplotlib")

    def point(bs: int, transport: str, **b: float) -> dict[str, object]:
        return {"digest": "off", "rw": "randread", "bs_bytes": bs, "transport": transport,
                "target_buckets_per_io": {**dict.fromkeys(profile.BUCKETS, 0.0), **b}}  # fmt: skip

    points = [point(s, t, copy=100.0, **{"TCP/IP + skb": 50.0}) for s in (4096, 262144) for t in ("stock", "offload")]
    png = profile.plot_buckets(points, tmp_path, "test")
    assert png == tmp_path / "buckets.png" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert profile.plot_buckets([point(8192, "stock", copy=1.0)], tmp_path / "none", "test") is None
    assert profile.plot_buckets([{k: v for k, v in points[0].items() if k != "target_buckets_per_io"}],
                                tmp_path / "none", "test") is None  # fmt: skip
