"""perf/perflib.py: the plan, the CPU accounting, fio parsing, ratios, report."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from perf import perflib
from perf.perflib import Cost, PlanError, Ratio, Snap, Stat

TOP = Path(__file__).resolve().parents[2]
MATRIX = TOP / "perf/matrix.toml"


def test_committed_matrix_is_the_papers_workload() -> None:
    plan = perflib.load_plan(MATRIX)
    assert plan.rw == ("randread", "randwrite")
    assert [perflib.bs_bytes(b) for b in plan.bs] == [4096 << i for i in range(8)]
    assert (plan.iodepth, plan.numjobs, plan.ioengine) == (32, 2, "libaio")
    assert set(plan.transport) == {"stock", "offload"} and set(plan.digest) == {"off", "on"}
    assert plan.repeats >= 3
    # the default run must fit 30 minutes: points x (runtime + ~3 s of fio start and snapshots)
    n = len(perflib.sessions(plan)) * len(plan.rw) * len(plan.bs)
    assert n * (plan.runtime + 3) < 27 * 60


def test_sessions_interleave_transports_within_each_repeat() -> None:
    plan = perflib.load_plan(MATRIX)
    order = [(s.rep, s.digest, s.transport) for s in perflib.sessions(plan)]
    assert order[:4] == [(0, "off", "stock"), (0, "off", "offload"), (0, "on", "stock"), (0, "on", "offload")]
    assert len(order) == plan.repeats * 4
    # the next repeat starts with the other transport, so neither always goes first
    assert order[4:8] == [(1, "off", "offload"), (1, "off", "stock"), (1, "on", "offload"), (1, "on", "stock")]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.replace('"stock", "offload"', '"stock", "rdma"'), "unknown ['rdma']"),
        (lambda s: s.replace('"4k", "8k"', '"4k", "8q"'), "block size '8q'"),
        (lambda s: s.replace("repeats = 3", "repeats = 0"), "repeats = 0"),
        (lambda s: s.replace("warmup = 2 ", "warmup = -1 "), "warmup = -1"),
        (lambda s: s.replace("iodepth = 32", 'iodepth = "32"'), "expected int"),
        (lambda s: s.replace("[link]", "[links]"), "section [link] is missing"),
        (lambda s: s.replace('"4k", "8k"', '"4k", "4k"'), "duplicates"),
        (lambda s: s + "\n[[broken", "Expected"),
        (lambda s: s.replace('memory = "2G"', 'memory = "2G"\npi_prot_type = 2'), "pi_prot_type = 2"),
    ],
)
def test_bad_plans_are_refused_with_the_reason(tmp_path: Path, edit: object, message: str) -> None:
    bad = tmp_path / "m.toml"
    bad.write_text(edit(MATRIX.read_text()))  # type: ignore[operator]
    with pytest.raises(PlanError, match=message.replace("[", r"\[").replace("]", r"\]")):
        perflib.load_plan(bad)


def test_the_pi_matrix_puts_type_1_pi_on_the_lun() -> None:
    assert perflib.load_plan(MATRIX).pi_prot_type == 0
    plan = perflib.load_plan(TOP / "perf/pi.toml")
    assert (plan.pi_prot_type, plan.rw, set(plan.transport)) == (1, ("randwrite",), {"stock", "offload"})
    reads = perflib.load_plan(TOP / "perf/pi-read.toml")
    # a never-written PI block escapes every check: the reads need a filled LUN
    assert (reads.pi_prot_type, reads.rw, reads.fill) == (1, ("randread",), True)
    assert not plan.fill


def test_a_fill_writes_the_whole_device_once(tmp_path: Path) -> None:
    args = perflib.fill_args("/dev/sdx")
    assert "--rw=write" in args and "--filename=/dev/sdx" in args
    # no size, no runtime: fio writes the device end to end and stops
    assert not any(a.startswith(("--size", "--runtime", "--time_based")) for a in args)
    bad = tmp_path / "m.toml"
    bad.write_text(MATRIX.read_text().replace('memory = "2G"', 'memory = "2G"\nfill = 1'))
    with pytest.raises(PlanError, match="fill = 1: expected bool"):
        perflib.load_plan(bad)


def test_each_login_warms_up_unmeasured_on_its_first_point() -> None:
    plan = perflib.load_plan(MATRIX)
    assert plan.warmup > 0
    assert f"--runtime={plan.runtime}" in perflib.fio_args(plan, "/dev/sdx", "randread", "4k")
    warm = perflib.fio_args(plan, "/dev/sdx", "randread", "4k", runtime=plan.warmup)
    assert f"--runtime={plan.warmup}" in warm
    assert f"--runtime={plan.runtime}" not in warm


def test_cpu_jiffies_counts_softirq_and_irq_as_busy_not_iowait() -> None:
    stat = "cpu  100 5 50 1000 40 7 30 3 0 0\ncpu0 100 5 50 1000 40 7 30 3 0 0\nintr 1\n"
    assert perflib.cpu_jiffies(stat) == (100 + 5 + 50 + 7 + 30 + 3, 195 + 1000 + 40)
    real = perflib.cpu_jiffies(Path("/proc/stat").read_text())
    assert 0 < real[0] <= real[1]


def test_cost_subtracts_the_idle_rate() -> None:
    a = Snap(10.0, 1000, 5000, 1_000_000, 0, {"pdus_rx": 5})
    b = Snap(12.0, 1150, 5200, 9_000_000, 1, {"pdus_rx": 905})
    c = perflib.cost(a, b, idle_insn_per_s=1_000_000)
    assert c == Cost(seconds=2.0, busy_s=1.5, cpu_pct=75.0, insn=8_000_000, insn_net=6_000_000.0)
    assert perflib.counter_delta(a, b) == {"pdus_rx": 900}
    with pytest.raises(ValueError, match="out of order"):
        perflib.cost(b, a)


def test_tcp_counters_of_the_host_move_with_real_traffic() -> None:
    """The initiator's TCP counters per point: parsed from this host's own
    /proc/net files, and a real loopback connection moves them."""

    def now() -> dict[str, int]:
        return perflib.net_counters(Path("/proc/net/snmp").read_text(), Path("/proc/net/netstat").read_text())

    a = now()
    assert {"Tcp.OutSegs", "Tcp.InSegs", "TcpExt.DelayedACKs"} <= set(a)
    assert not any(k.startswith(("Ip.", "Udp")) for k in a)
    with socket.create_server(("127.0.0.1", 0)) as srv, socket.create_connection(srv.getsockname()) as c:
        peer, _ = srv.accept()
        with peer:
            c.sendall(b"x" * 50_000)
            got = 0
            while got < 50_000:
                got += len(peer.recv(65536))
    d = perflib.net_delta(a, now())
    assert d["Tcp.ActiveOpens"] >= 1 and d["Tcp.OutSegs"] >= 3
    assert "Tcp.CurrEstab" not in d


def test_stat_counters_read_switches_interrupts_and_softirqs() -> None:
    stat = "cpu  1 2 3 4 5 6 7 0 0 0\nintr 9000 12 0 34\nctxt 4567\nbtime 1700000000\nsoftirq 800 1 2 3\n"
    assert perflib.stat_counters(stat) == {"Stat.intr": 9000, "Stat.ctxt": 4567, "Stat.softirq": 800}


def test_kernel_counters_move_with_this_hosts_own_switches() -> None:
    """What each VM records per point: TCP and /proc/stat's totals together,
    and a thread that sleeps and wakes moves the context switches."""
    a = perflib.kernel_counters()
    assert {"Tcp.OutSegs", "Stat.ctxt", "Stat.intr", "Stat.softirq"} <= set(a)
    for _ in range(5):
        t = threading.Thread(target=time.sleep, args=(0.001,))
        t.start()
        t.join()
    assert perflib.net_delta(a, perflib.kernel_counters())["Stat.ctxt"] >= 5
    # /proc/stat as a caller already read it (the target's snapshot reads it once)
    assert perflib.kernel_counters("ctxt 5\nintr 7 1\n")["Stat.ctxt"] == 5


def test_a_target_snapshot_without_kernel_counters_still_loads() -> None:
    """Raw results from before the target recorded its kernel counters."""
    d = {"t": 1.0, "busy": 2, "total": 3, "insn": 4, "offload_conns": 0, "counters": {}}
    assert Snap.load(d).kernel == {}
    assert Snap.load(d | {"kernel": {"Stat.ctxt": 7}}).kernel == {"Stat.ctxt": 7}


def test_disk_bytes_counts_both_directions_in_512_byte_sectors() -> None:
    stats = (
        "   8       0 sda 10 0 80 5 20 0 160 9 0 0 0 0 0 0 0 0 0\n"
        "   8      16 sdb 3 0 2048 1 7 0 4096 2 0 0 0 0 0 0 0 0 0\n"
    )
    assert perflib.disk_bytes(stats, "sdb") == (2048 + 4096) * 512
    with pytest.raises(ValueError, match="no block device sdc"):
        perflib.disk_bytes(stats, "sdc")


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (make deps installs it)")
def test_fio_metrics_from_a_real_fio_run(tmp_path: Path) -> None:
    plan = perflib.load_plan(MATRIX)
    args = perflib.fio_args(plan, str(tmp_path / "f"), "randwrite", "8k")
    # the host has no block device for us: a file, psync, no O_DIRECT, 1 s
    args = [a for a in args if not a.startswith(("--ioengine", "--direct", "--runtime"))]
    args += ["--ioengine=psync", "--size=8M", "--runtime=1"]
    out = subprocess.run(["fio", "--output-format=json", *args], capture_output=True, text=True, check=True)
    # fio prints notes (iodepth capped for psync) before the JSON, as in testbed/fio.py
    m = perflib.fio_metrics(json.loads(out.stdout[out.stdout.find("{") :]), "randwrite", plan.percentiles)
    assert m["iops"] > 0 and m["ios"] > 0
    assert m["mbps"] == pytest.approx(m["iops"] * 8192 / 1e6, rel=0.05)
    assert 0 < m["lat_p50_us"] <= m["lat_p99_us"] <= m["lat_p99.9_us"]


def _point(
    transport: str, bs: str, rep: int, mbps: float, insn: float, ini: float = 40.0, ini_insn: float | None = None
) -> dict[str, object]:
    p = {
        "transport": transport, "digest": "off", "rw": "randread", "bs": bs, "rep": rep,
        "iops": mbps * 1e6 / perflib.bs_bytes(bs), "mbps": mbps, "lat_p50_us": 100.0, "lat_p99_us": 200.0,
        "lat_p99.9_us": 300.0, "lat_stddev_us": 20.0, "target_cpu_pct": 50.0,
        "target_busy_us_per_io": 10.0, "target_insn_per_io": insn, "initiator_cpu_pct": ini,
    }  # fmt: skip
    if ini_insn is not None:
        p["initiator_insn_per_io"] = ini_insn
    return p


def test_ratios_flag_a_spread_that_crosses_one() -> None:
    pts = []
    for rep, (s, o) in enumerate([(10.0, 14.0), (11.0, 15.0), (12.0, 16.0)]):
        pts += [_point("stock", "4k", rep, s, 100e3), _point("offload", "4k", rep, o, 50e3)]
    for rep, (s, o) in enumerate([(10.0, 9.0), (11.0, 12.0), (12.0, 11.0)]):
        pts += [_point("stock", "8k", rep, s, 100e3), _point("offload", "8k", rep, o, 100e3 + rep)]
    r = perflib.ratios(perflib.summarize(pts))
    fast = r[("off", "randread", "4k")]
    assert fast["mbps"].value == pytest.approx(15 / 11)
    assert (fast["mbps"].lo, fast["mbps"].hi) == (pytest.approx(14 / 12), pytest.approx(16 / 10))
    assert not fast["mbps"].crosses_one
    assert fast["target_insn_per_io"].value == pytest.approx(0.5)
    assert r[("off", "randread", "8k")]["mbps"].crosses_one
    assert fast["lat_p99_us"].value == pytest.approx(1.0)
    # a slower tail on offload in every repeat: above 1, not a crossing
    slow = [{**p, "lat_p99_us": 300.0 + p["rep"]} if p["transport"] == "offload" else p for p in pts]
    p99 = perflib.ratios(perflib.summarize(slow))[("off", "randread", "4k")]["lat_p99_us"]
    assert p99.value == pytest.approx(301 / 200) and p99.lo == pytest.approx(1.5) and not p99.crosses_one
    assert Ratio.of(Stat.of([1.0]), Stat.of([0.0])).value != Ratio.of(Stat.of([1.0]), Stat.of([0.0])).value  # NaN


def test_one_sided_ranges_are_counted_beside_what_chance_gives() -> None:
    """1 in C(6, 3) = 20 orderings puts all 3 of one path below all 3 of the
    other; the report counts ranges on each side of 1 against that."""
    assert perflib.separation_chance(3, 3) == pytest.approx(1 / 20)
    assert perflib.separation_chance(2, 1) == pytest.approx(1 / 3)
    pts = []
    for rep, (s, o) in enumerate([(10.0, 14.0), (11.0, 15.0), (12.0, 16.0)]):  # offload wholly faster
        pts += [_point("stock", "4k", rep, s, 1e5), _point("offload", "4k", rep, o, 1e5)]
    for rep, (s, o) in enumerate([(10.0, 9.0), (11.0, 12.0), (12.0, 11.0)]):  # crossing
        pts += [_point("stock", "8k", rep, s, 1e5), _point("offload", "8k", rep, o, 1e5)]
    for rep, (s, o) in enumerate([(10.0, 7.0), (11.0, 8.0)]):  # wholly slower, 2 repeats
        pts += [_point("stock", "16k", rep, s, 1e5), _point("offload", "16k", rep, o, 1e5)]
    above, below, crossing, chance = perflib.one_sided(perflib.summarize(pts), "mbps")
    assert (above, below, crossing) == (1, 1, 1)
    assert chance == pytest.approx(2 / 20 + 1 / 6)


def test_markdown_and_plots_from_a_result(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plan = perflib.load_plan(MATRIX)
    pts = [_point(t, "4k", rep, 10.0 + rep, 1e5) for rep in range(3) for t in ("stock", "offload")]
    result = {
        "kernel": "6.1.0-test", "date": "2026-11-22T00:00:00+00:00", "commit": "abc", "command": "perf/run",
        "wall_s": 60.0, "plan": plan.dump(), "points": pts,
        "link": {"iperf": [{"gbps": 1.0}, {"gbps": 1.2}], "idle": {"insn_per_s": 2e7, "cpu_pct": 1.0}},
    }  # fmt: skip
    md = perflib.markdown(result)
    assert "| off | randread | 4k | 1.00 (0.83 to 1.20) ⚠ |" in md
    assert "1.100 Gbit/s" in md
    made = perflib.plot(result, tmp_path)
    assert [p.name for p in made] == ["throughput.png", "cpu.png", "insn_per_io.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in made)


def test_a_run_is_saved_as_its_summary_and_its_points_compressed(tmp_path: Path) -> None:
    """perf.json holds the run without its points and names the xz file
    beside it that holds them; load_result puts them back, and reads a
    perf.json that holds its points itself as it is."""
    pts = [_point(t, "4k", rep, 10.0 + rep, 1e5) for rep in range(3) for t in ("stock", "offload")]
    pts[0]["kernel_functions_per_io"] = {"tcp_sendmsg_locked": 283.3049524762381}
    result = {"kernel": "6.1.0-test", "commit": "abc", "points": pts, "summary": [{"bs": "4k"}]}
    perf_json, points = perflib.save_result(result, tmp_path / "run/perf.json")
    assert points == tmp_path / "run" / perflib.POINTS_FILE == tmp_path / "run/points.json.xz"
    head = json.loads(perf_json.read_text())
    assert "points" not in head and head["points_file"] == "points.json.xz" and head["summary"] == [{"bs": "4k"}]
    # a table's rows one per line
    assert '"summary": [\n  {"bs": "4k"}\n ]' in perf_json.read_text()
    assert points.read_bytes()[:6] == b"\xfd7zXZ\x00"
    assert perflib.load_result(perf_json) == result
    # a run written before the split
    (tmp_path / "old.json").write_text(json.dumps(result, indent=1))
    assert perflib.load_result(tmp_path / "old.json") == result


def test_both_link_directions_and_an_initiator_bound_point_are_reported() -> None:
    pts = [_point(t, "4k", rep, 12.0 if t == "offload" else 10.0, 1e5, ini=95.0 if t == "offload" else 60.0,
                  ini_insn=(110e3 if t == "offload" else 100e3) + rep * 10e3)
           for rep in range(2) for t in ("stock", "offload")]  # fmt: skip
    pts += [_point(t, "8k", rep, 24.0 if t == "offload" else 20.0, 1e5)
            for rep in range(2) for t in ("stock", "offload")]  # fmt: skip
    # a run from before the field: initiator CPU from the point's own cost
    legacy = {k: v for k, v in _point("stock", "16k", 0, 30.0, 1e5).items() if k != "initiator_cpu_pct"}
    pts += [{**legacy, "initiator": {"cpu_pct": 50.0}}, _point("offload", "16k", 0, 36.0, 1e5)]
    result = {
        "kernel": "6.1.0-test", "date": "2026-11-27T00:00:00+00:00", "commit": "abc", "command": "perf/run",
        "wall_s": 60.0, "plan": perflib.load_plan(MATRIX).dump(), "points": pts,
        "link": {"iperf": [{"gbps": 0.4, "target_cpu_pct": 60.0, "initiator_cpu_pct": 70.0}],
                 "iperf_reverse": [{"gbps": 0.2, "target_cpu_pct": 80.0, "initiator_cpu_pct": 50.0}],
                 "idle": {"insn_per_s": 2e7, "cpu_pct": 1.0}},
    }  # fmt: skip
    md = perflib.markdown(result)
    assert "- initiator → target (writes): 0.400 Gbit/s" in md and "initiator 70% CPU" in md
    assert "- target → initiator (reads): 0.200 Gbit/s" in md
    assert "| off | randread | 4k | 1.20 (1.20 to 1.20) ⓘ |" in md
    # the initiator's steady work per I/O: 115k / 105k, widest 110k / 110k to 120k / 100k
    assert "| 60 / 95 | 1.10 (1.00 to 1.20) ⚠ |" in md
    # a point of a run from before the initiator's steady window: no ratio, not an error
    assert "| 50 / 40 | n/a |" in md
    assert "| off | randread | 8k | 1.20 (1.20 to 1.20) |" in md
    assert "| off | randread | 16k | 1.20 (1.20 to 1.20) |" in md and "| 50 / 40 |" in md
    # p99 latency, offload ÷ stock, beside throughput: the same 200 µs on both paths
    assert "| off | randread | 8k | 1.20 (1.20 to 1.20) | 1.00 (1.00 to 1.00) ⚠ |" in md
    # chance per side: 1/C(4, 2) at 4k and 8k, 1/C(2, 1) at 16k
    assert "about 0.8 points per side of this table's 3. Throughput: 3 wholly above 1, 0 wholly below" in md
    assert "p99 latency: 0 wholly above 1 (worse), 0 wholly below (better), 3 crossing." in md
    # reads' share of the link is of the reverse direction: 10 MB/s of 25 MB/s
    assert "| stock | off | randread | 4k | 2441 ± 0 | 10.00 ± 0.00 | 40% |" in md


def test_a_run_is_dirty_only_for_changes_outside_its_results(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)  # fmt: skip

    (tmp_path / "perf/results").mkdir(parents=True)
    (tmp_path / "perf/results/micro.json").write_text("{}\n")
    (tmp_path / "io.c").write_text("int x;\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "base")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip
    assert perflib.measured_commit(tmp_path) == head
    # make perf rewrites its micro-benchmark figures before the VMs boot
    (tmp_path / "perf/results/micro.json").write_text('{"ns": 1}\n')
    assert perflib.measured_commit(tmp_path) == head
    (tmp_path / "io.c").write_text("int y;\n")
    assert perflib.measured_commit(tmp_path) == head + "-dirty"


def test_a_run_refuses_a_module_older_than_its_sources(tmp_path: Path) -> None:
    src = tmp_path / "kmod/cxgbit-ext/adapters/soft"
    src.mkdir(parents=True)
    (src / "io.c").write_text("int x;\n")
    ko = tmp_path / "build/6.1.0-56-amd64/cxgbit_ext.ko"
    assert perflib.stale_module(tmp_path, ko) == f"{ko} is not built"
    ko.parent.mkdir(parents=True)
    ko.write_bytes(b"\x7fELF")
    os.utime(src / "io.c", (1000, 1000))
    os.utime(ko, (2000, 2000))
    assert perflib.stale_module(tmp_path, ko) is None
    # a source edited after the build: the module is not what the commit says
    os.utime(src / "io.c", (3000, 3000))
    assert perflib.stale_module(tmp_path, ko) == f"{ko} is older than kmod/cxgbit-ext/adapters/soft/io.c"


def test_make_perf_runs_the_matrix_on_every_kernel_into_its_own_results() -> None:
    """The issue's "make perf reruns the whole matrix on both kernels": one
    run per kernel of perflib.KERNELS, each writing where results_dir says."""
    top = Path(__file__).resolve().parents[2]
    assert perflib.KERNELS == ("6.1", "6.12")
    assert perflib.results_dir("6.1") == "perf/results" and perflib.results_dir("6.12") == "perf/results/6.12"
    out = subprocess.run(["make", "-n", "perf"], cwd=top, capture_output=True, text=True, check=True).stdout
    runs = [ln for ln in out.splitlines() if "perf/run" in ln]
    assert runs and all("for k in 6.1 6.12;" in ln and "perf/run --kernel $k" in ln for ln in runs), out
