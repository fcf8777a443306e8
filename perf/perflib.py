"""The performance suite's pure parts: the plan, the measurements, the summary.

Nothing here touches a VM; perf/run (host), perf/target_vm.py and
perf/initiator_vm.py (guests) use it, and tests/host/test_perf.py tests it.

Target CPU is measured on a VM of its own: the target and the initiator run
in two qemu (TCG) VMs of one vCPU each, joined by a virtio-net link, so every
cycle the target VM spends (softirq, kthreads, LIO's workqueues, our module)
is the target's. Two signals per point:

* busy time: the target VM's /proc/stat (user+nice+system+irq+softirq+steal
  jiffies) over the point, as %CPU of the target's one vCPU and as busy µs
  per I/O;
* instructions: the target qemu's instruction count (perf/plugin, a TCG
  plugin counting each executed translation block's length), less the target
  VM's idle rate measured before the matrix, per I/O. TCG executes guest
  instructions deterministically, so this is the steadier signal; wall-clock
  figures under TCG are slow and noisy and only their ratios mean anything.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import lzma
import math
import statistics
import subprocess
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RWS = ("randread", "randwrite")
TRANSPORTS = ("stock", "offload")
DIGESTS = ("off", "on")
USER_HZ = 100  # /proc/stat unit on every Linux architecture we boot


class PlanError(Exception):
    """The matrix file is malformed."""


@dataclass(frozen=True)
class Plan:
    rw: tuple[str, ...]
    bs: tuple[str, ...]
    transport: tuple[str, ...]
    digest: tuple[str, ...]
    repeats: int
    ioengine: str
    iodepth: int
    numjobs: int
    runtime: int
    warmup: int  # seconds of the session's first point run unmeasured after login
    percentiles: tuple[float, ...]
    lun: str
    lun_size_mib: int
    target_memory: str
    initiator_memory: str
    mtu: int
    subnet: str
    iperf_seconds: int
    iperf_repeats: int
    idle_seconds: int
    # T10-PI on the LUN (rd_mcp pi_prot_type): 0 none, 1 or 3. LIO's core
    # makes and checks it on stock; on offload soft0 makes a write's
    pi_prot_type: int = 0
    # each path's LUN written end to end once, after its first login and
    # before any measured point: a never-written block of a PI LUN carries
    # the escape application tag, so reading it checks nothing
    fill: bool = False

    @property
    def target_ip(self) -> str:
        return f"{self.subnet}.1"

    @property
    def initiator_ip(self) -> str:
        return f"{self.subnet}.2"

    def dump(self) -> dict[str, Any]:
        return asdict(self)


# what runs write: a change there does not change what is measured
RESULTS_DIR = "perf/results"
# make perf's kernels; the first one's results are RESULTS_DIR itself (as
# before there were two), each other's a directory of its own in it
KERNELS = ("6.1", "6.12")


def results_dir(kernel: str) -> str:
    """Where a kernel's matrix goes by default, relative to the project's top."""
    return RESULTS_DIR if kernel == KERNELS[0] else f"{RESULTS_DIR}/{kernel}"


# A run's every point (each repeat, with its counters and its per-symbol
# figures) is most of its size: it goes beside perf.json, xz-compressed.
POINTS_FILE = "points.json.xz"


def save_result(result: dict[str, Any], perf_json: Path) -> tuple[Path, Path]:
    """Write a run: ``perf_json`` holds everything but the points (the plan,
    the commands, the link, the summary, the ratios, micro) and names the
    file beside it that holds them (POINTS_FILE, xz-compressed JSON)."""
    points = perf_json.parent / POINTS_FILE
    head = {k: v for k, v in result.items() if k not in ("points", "points_file")}
    head["points_file"] = POINTS_FILE
    perf_json.parent.mkdir(parents=True, exist_ok=True)
    perf_json.write_text(_rows_json(head))
    data = json.dumps(result["points"], separators=(",", ":")).encode()
    points.write_bytes(lzma.compress(data, preset=9))
    return perf_json, points


def _rows_json(d: dict[str, Any]) -> str:
    """``d`` as indented JSON, save that a list of objects (the summary,
    the ratios) has one object per line, as a table has one row per line."""
    out = []
    for k, v in d.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            rows = ",\n".join("  " + json.dumps(x, ensure_ascii=False) for x in v)
            val = f"[\n{rows}\n ]"
        else:
            val = json.dumps(v, indent=1, ensure_ascii=False).replace("\n", "\n ")
        out.append(f" {json.dumps(k)}: {val}")
    return "{\n" + ",\n".join(out) + "\n}\n"


def load_result(perf_json: Path) -> dict[str, Any]:
    """A run as save_result wrote it, its points read back from the file
    beside it; a perf.json that holds its points itself (one written before
    they were split off) is read as it is."""
    result: dict[str, Any] = json.loads(perf_json.read_text())
    if not isinstance(result.get("points"), list):
        points = perf_json.parent / result.pop("points_file", POINTS_FILE)
        result["points"] = json.loads(lzma.decompress(points.read_bytes()))
    return result


def measured_commit(top: Path) -> str:
    """The commit the VMs run, "-dirty" when a tracked file outside perf/results/ differs from it.

    make perf writes perf/results/micro.json before the VMs boot: that alone is not a change
    to what is measured.
    """

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=top, capture_output=True, text=True, check=True).stdout.strip()

    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", f":(exclude){RESULTS_DIR}")
    return git("rev-parse", "HEAD") + ("-dirty" if changed else "")


def stale_module(top: Path, ko: Path) -> str | None:
    """Why ko is not the module of top's sources (missing, or older than one of
    kmod/cxgbit-ext's files), or None. perf/run loads the module that is built:
    the commit it records says what was measured only if that module was built
    from the tree as it is (make perf builds it first)."""
    if not ko.exists():
        return f"{ko} is not built"
    built = ko.stat().st_mtime
    newer = sorted(str(f.relative_to(top)) for f in (top / "kmod/cxgbit-ext").rglob("*")
                   if f.is_file() and f.stat().st_mtime > built)  # fmt: skip
    if not newer:
        return None
    more = " and more" if len(newer) > 3 else ""
    return f"{ko} is older than {', '.join(newer[:3])}{more}"


def bs_bytes(bs: str) -> int:
    """'4k' -> 4096, '512k' -> 524288, '1m' -> 1048576, '512' -> 512."""
    s = bs.strip().lower()
    mult = {"k": 1 << 10, "m": 1 << 20}.get(s[-1:], 1)
    digits = s[:-1] if s[-1:] in "km" else s
    if not digits.isdigit() or int(digits) == 0:
        raise PlanError(f"block size {bs!r}: expected a number with an optional k or m suffix")
    return int(digits) * mult


def _pick(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in table:
        raise PlanError(f"[{where}] {key} is missing")
    v = table[key]
    if kind is float and isinstance(v, int):
        v = float(v)
    if not isinstance(v, kind) or (kind is not bool and isinstance(v, bool)):
        raise PlanError(f"[{where}] {key} = {v!r}: expected {kind.__name__}")
    return v


def _choices(table: dict[str, Any], key: str, allowed: Sequence[str] | None, where: str) -> tuple[str, ...]:
    vals = _pick(table, key, list, where)
    if not vals or not all(isinstance(v, str) for v in vals):
        raise PlanError(f"[{where}] {key} must be a non-empty list of strings")
    if allowed is not None:
        bad = [v for v in vals if v not in allowed]
        if bad:
            raise PlanError(f"[{where}] {key}: unknown {bad}; choose from {list(allowed)}")
    if len(set(vals)) != len(vals):
        raise PlanError(f"[{where}] {key} has duplicates: {vals}")
    return tuple(vals)


def load_plan(path: Path) -> Plan:
    try:
        cfg = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise PlanError(f"{path}: {e}") from e
    for section in ("fio", "matrix", "target", "initiator", "link"):
        if not isinstance(cfg.get(section), dict):
            raise PlanError(f"{path}: section [{section}] is missing")
    fio, mx, tgt, ini, link = (cfg[s] for s in ("fio", "matrix", "target", "initiator", "link"))
    bs = _choices(mx, "bs", None, "matrix")
    for b in bs:
        bs_bytes(b)
    plan = Plan(
        rw=_choices(mx, "rw", RWS, "matrix"),
        bs=bs,
        transport=_choices(mx, "transport", TRANSPORTS, "matrix"),
        digest=_choices(mx, "digest", DIGESTS, "matrix"),
        repeats=_pick(mx, "repeats", int, "matrix"),
        ioengine=_pick(fio, "ioengine", str, "fio"),
        iodepth=_pick(fio, "iodepth", int, "fio"),
        numjobs=_pick(fio, "numjobs", int, "fio"),
        runtime=_pick(fio, "runtime", int, "fio"),
        warmup=_pick(fio, "warmup", int, "fio"),
        percentiles=tuple(float(p) for p in _pick(fio, "percentiles", list, "fio")),
        lun=_pick(tgt, "lun", str, "target"),
        lun_size_mib=_pick(tgt, "lun_size_mib", int, "target"),
        target_memory=_pick(tgt, "memory", str, "target"),
        initiator_memory=_pick(ini, "memory", str, "initiator"),
        mtu=_pick(link, "mtu", int, "link"),
        subnet=_pick(link, "subnet", str, "link"),
        iperf_seconds=_pick(link, "iperf_seconds", int, "link"),
        iperf_repeats=_pick(link, "iperf_repeats", int, "link"),
        idle_seconds=_pick(link, "idle_seconds", int, "link"),
        pi_prot_type=_pick(tgt, "pi_prot_type", int, "target") if "pi_prot_type" in tgt else 0,
        fill=_pick(tgt, "fill", bool, "target") if "fill" in tgt else False,
    )
    for name in ("repeats", "iodepth", "numjobs", "runtime", "lun_size_mib", "iperf_seconds", "iperf_repeats"):
        if getattr(plan, name) < 1:
            raise PlanError(f"{name} = {getattr(plan, name)}: must be at least 1")
    if plan.warmup < 0:
        raise PlanError(f"warmup = {plan.warmup}: must be 0 or more")
    if plan.pi_prot_type not in (0, 1, 3):
        raise PlanError(f"[target] pi_prot_type = {plan.pi_prot_type}: choose from 0, 1, 3")
    if plan.lun != "ramdisk":
        raise PlanError(f"[target] lun = {plan.lun!r}: only 'ramdisk' is supported")
    return plan


@dataclass(frozen=True)
class Session:
    """One login: the points measured over it, in order."""

    rep: int
    digest: str
    transport: str
    points: tuple[tuple[str, str], ...]  # (rw, bs)


def sessions(plan: Plan) -> list[Session]:
    """Repeats outermost and transports interleaved, their order reversed
    every other repeat, so drift over the run (host load, page cache) lands
    on both transports alike, and going first too with an even number of
    repeats."""
    pts = tuple(itertools.product(plan.rw, plan.bs))
    return [
        Session(rep, d, t, pts)
        for rep in range(plan.repeats)
        for d in plan.digest
        for t in (plan.transport if rep % 2 == 0 else plan.transport[::-1])
    ]


# ---- snapshots -------------------------------------------------------------


def cpu_jiffies(proc_stat: str) -> tuple[int, int]:
    """(busy, total) jiffies of the aggregate 'cpu' line of /proc/stat.

    busy = user+nice+system+irq+softirq+steal; idle and iowait are not busy.
    guest/guest_nice are already inside user/nice and are not added again.
    """
    for line in proc_stat.splitlines():
        f = line.split()
        if f and f[0] == "cpu":
            v = [int(x) for x in f[1:9]]
            v += [0] * (8 - len(v))
            user, nice, system, idle, iowait, irq, softirq, steal = v
            busy = user + nice + system + irq + softirq + steal
            return busy, busy + idle + iowait
    raise ValueError("no aggregate cpu line in /proc/stat")


@dataclass(frozen=True)
class Snap:
    """One VM's state at an instant (from the target's control server)."""

    t: float  # guest CLOCK_MONOTONIC, seconds
    busy: int  # jiffies
    total: int
    insn: int  # instructions executed by the VM so far (TCG plugin)
    offload_conns: int
    counters: dict[str, int]
    prof: str = ""  # the plugin's profile dump since the previous snapshot
    kernel: dict[str, int] = field(default_factory=dict)  # kernel_counters()

    @classmethod
    def load(cls, d: dict[str, Any]) -> Snap:
        return cls(
            d["t"], d["busy"], d["total"], d["insn"], d["offload_conns"], dict(d["counters"]), d.get("prof", ""),
            dict(d.get("kernel", {})),
        )  # fmt: skip


@dataclass(frozen=True)
class Cost:
    seconds: float
    busy_s: float
    cpu_pct: float  # of the VM's one vCPU over the window
    insn: int
    insn_net: float  # less the idle rate

    def dump(self) -> dict[str, Any]:
        return asdict(self)


def cost(a: Snap, b: Snap, idle_insn_per_s: float = 0.0) -> Cost:
    secs = b.t - a.t
    if secs <= 0:
        raise ValueError(f"snapshots out of order ({a.t} -> {b.t})")
    busy = (b.busy - a.busy) / USER_HZ
    total = (b.total - a.total) / USER_HZ
    insn = b.insn - a.insn
    return Cost(
        seconds=secs,
        busy_s=busy,
        cpu_pct=100.0 * busy / total if total > 0 else 0.0,
        insn=insn,
        insn_net=max(0.0, insn - idle_insn_per_s * secs),
    )


def counter_delta(a: Snap, b: Snap) -> dict[str, int]:
    return {k: b.counters.get(k, 0) - v for k, v in a.counters.items() if b.counters.get(k, 0) != v}


def request_prof_dump(insn_file: Path, label: str) -> None:
    """Ask the TCG plugin (on the host, polling every 10 ms) to dump where
    this VM's instructions went since its last dump, to insn.prof.<label>
    beside insn_file. The plugin may take the request before the guest has
    closed it."""
    with contextlib.suppress(FileNotFoundError):
        insn_file.with_name(f"insn.prof.req.{label}").touch()


def disk_bytes(diskstats: str, dev: str) -> int:
    """Bytes read and written by block device ``dev`` (sdb, not /dev/sdb),
    from a /proc/diskstats (its sector counts are of 512 bytes whatever the
    device's block size). Bytes, not requests: the block layer may split a
    request at the device's transfer limit."""
    for line in diskstats.splitlines():
        f = line.split()
        if len(f) >= 10 and f[2] == dev:
            return (int(f[5]) + int(f[9])) * 512
    raise ValueError(f"no block device {dev} in /proc/diskstats")


def net_counters(snmp: str, netstat: str) -> dict[str, int]:
    """The TCP counters of /proc/net/snmp (Tcp) and /proc/net/netstat
    (TcpExt) as "Tcp.Name": value; each is a header line and a value line."""
    out: dict[str, int] = {}
    for text in (snmp, netstat):
        lines = text.splitlines()
        for head, vals in zip(lines[::2], lines[1::2], strict=False):
            proto, _, names = head.partition(":")
            if proto not in ("Tcp", "TcpExt") or not vals.startswith(proto + ":"):
                continue
            for name, v in zip(names.split(), vals.partition(":")[2].split(), strict=True):
                out[f"{proto}.{name}"] = int(v)
    return out


def stat_counters(proc_stat: str) -> dict[str, int]:
    """The scheduler's and interrupts' totals of /proc/stat as "Stat.Name":
    context switches (ctxt), interrupts (intr, its first field) and softirqs
    (softirq, likewise): with TCP's, where a VM's time goes besides its
    instructions (thread hops, device interrupts)."""
    out: dict[str, int] = {}
    for line in proc_stat.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0] in ("ctxt", "intr", "softirq"):
            out[f"Stat.{f[0]}"] = int(f[1])
    return out


def kernel_counters(proc_stat: str | None = None) -> dict[str, int]:
    """This VM's TCP counters and /proc/stat totals, read now; proc_stat:
    /proc/stat as the caller already read it."""
    net = net_counters(Path("/proc/net/snmp").read_text(), Path("/proc/net/netstat").read_text())
    return net | stat_counters(proc_stat if proc_stat is not None else Path("/proc/stat").read_text())


def net_delta(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    """What moved between two kernel_counters() (or net_counters()),
    counters only (gauges such as Tcp.CurrEstab and the RTO settings left
    out)."""
    gauges = {"Tcp.RtoAlgorithm", "Tcp.RtoMin", "Tcp.RtoMax", "Tcp.MaxConn", "Tcp.CurrEstab"}
    return {k: b[k] - v for k, v in a.items() if k in b and k not in gauges and b[k] != v}


# ---- fio -------------------------------------------------------------------


def fio_args(plan: Plan, dev: str, rw: str, bs: str, runtime: int | None = None) -> list[str]:
    """fio's command line for one point; runtime: other than the plan's (the warm-up)."""
    pct = ":".join(f"{p:g}" for p in plan.percentiles)
    return [
        "--name=perf", f"--filename={dev}", f"--rw={rw}", f"--bs={bs}",
        f"--ioengine={plan.ioengine}", "--direct=1", f"--iodepth={plan.iodepth}",
        f"--numjobs={plan.numjobs}", "--group_reporting=1", "--time_based",
        f"--runtime={plan.runtime if runtime is None else runtime}", "--norandommap", "--randrepeat=0",
        f"--percentile_list={pct}",
    ]  # fmt: skip


def fill_args(dev: str) -> list[str]:
    """fio's command line that writes all of ``dev`` once, in 1 MiB writes."""
    return [
        "--name=fill", f"--filename={dev}", "--rw=write", "--bs=1M", "--ioengine=libaio", "--direct=1",
        "--iodepth=8", "--group_reporting=1",
    ]  # fmt: skip


def fio_metrics(report: dict[str, Any], rw: str, percentiles: Iterable[float]) -> dict[str, float]:
    """IOPS, MB/s (10^6), I/Os, runtime and completion latency (µs) of the one
    group-reported job of ``report``."""
    (job,) = report["jobs"]
    if job["error"]:
        raise ValueError(f"fio job error {job['error']}")
    d = job["read" if rw.endswith("read") else "write"]
    clat = d["clat_ns"]
    out = {
        "iops": float(d["iops"]),
        "mbps": d["bw_bytes"] / 1e6,
        "ios": float(d["total_ios"]),
        "runtime_s": d["runtime"] / 1000.0,
        "lat_mean_us": clat["mean"] / 1000.0,
        "lat_stddev_us": clat["stddev"] / 1000.0,
    }
    table = clat.get("percentile", {})
    for p in percentiles:
        key = f"{p:.6f}"
        if key not in table:
            raise ValueError(f"fio report has no clat percentile {key}")
        out[f"lat_p{p:g}_us"] = table[key] / 1000.0
    return out


def point_record(
    session: Session, rw: str, bs: str, fio: dict[str, float], tgt: Cost, ini: Cost, ini_mid_cpu_pct: float,
    counters: dict[str, int]
) -> dict[str, Any]:  # fmt: skip
    """One point; ini_mid_cpu_pct: the initiator VM's CPU over the middle of
    the fio run (ini is over the whole window)."""
    ios = fio["ios"] or math.nan
    return {
        "rep": session.rep, "digest": session.digest, "transport": session.transport,
        "rw": rw, "bs": bs, "bs_bytes": bs_bytes(bs),
        **fio,
        "target": tgt.dump(),
        "target_cpu_pct": 100.0 * tgt.busy_s / fio["runtime_s"],
        "target_busy_us_per_io": 1e6 * tgt.busy_s / ios,
        "target_insn_per_io": tgt.insn_net / ios,
        "initiator": ini.dump(),
        "initiator_cpu_pct": ini_mid_cpu_pct,
        "counters": counters,
    }  # fmt: skip


# ---- summary ---------------------------------------------------------------

METRICS = (
    "iops", "mbps", "lat_p50_us", "lat_p99_us", "lat_p99.9_us", "lat_stddev_us",
    "target_cpu_pct", "target_busy_us_per_io", "target_insn_per_io", "initiator_cpu_pct",
    "initiator_insn_per_io",
)  # fmt: skip

# A point whose initiator VM was this busy on either path measured the
# initiator: its throughput ratio says nothing of the target.
INITIATOR_BOUND_PCT = 90.0


def _metric(p: dict[str, Any], m: str) -> float:
    """A point's metric; for runs that predate initiator_cpu_pct, the
    initiator's CPU over the point's whole window; NaN for runs that predate
    initiator_insn_per_io."""
    if m == "initiator_cpu_pct" and m not in p:
        return float(p["initiator"]["cpu_pct"])
    if m == "initiator_insn_per_io" and m not in p:
        return math.nan
    return float(p[m])


@dataclass(frozen=True)
class Stat:
    mean: float
    stdev: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, xs: Sequence[float]) -> Stat:
        if not xs:
            raise ValueError("no samples")
        return cls(statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0, min(xs), max(xs), len(xs))

    @classmethod
    def present(cls, xs: Sequence[float]) -> Stat:
        """Of the samples that are not NaN (a metric an older run lacks); all NaN if none is."""
        have = [x for x in xs if not math.isnan(x)]
        return cls.of(have) if have else cls(math.nan, math.nan, math.nan, math.nan, 0)


@dataclass(frozen=True)
class Ratio:
    """offload ÷ stock of the means, with the widest ratio the samples allow
    (lo = min offload / max stock, hi = max offload / min stock)."""

    value: float
    lo: float
    hi: float

    @property
    def crosses_one(self) -> bool:
        return self.lo <= 1.0 <= self.hi

    @classmethod
    def of(cls, off: Stat, stock: Stat) -> Ratio:
        if stock.mean <= 0 or stock.lo <= 0:
            return cls(math.nan, math.nan, math.nan)
        return cls(off.mean / stock.mean, off.lo / stock.hi, off.hi / stock.lo)


Key = tuple[str, str, str, str]  # transport, digest, rw, bs


def summarize(points: Sequence[dict[str, Any]]) -> dict[Key, dict[str, Stat]]:
    groups: dict[Key, list[dict[str, Any]]] = {}
    for p in points:
        groups.setdefault((p["transport"], p["digest"], p["rw"], p["bs"]), []).append(p)
    return {k: {m: Stat.present([_metric(p, m) for p in ps]) for m in METRICS} for k, ps in groups.items()}


RATIO_METRICS = {
    "mbps": "throughput",
    "lat_p99_us": "p99 latency",
    "target_insn_per_io": "insn/IO",
    "target_busy_us_per_io": "busy/IO",
    "initiator_insn_per_io": "initiator insn/IO",
}


def ratios(summary: dict[Key, dict[str, Stat]]) -> dict[tuple[str, str, str], dict[str, Ratio]]:
    """Per (digest, rw, bs): offload ÷ stock for throughput, p99 latency
    and CPU per I/O."""
    out: dict[tuple[str, str, str], dict[str, Ratio]] = {}
    for (t, d, rw, bs), stats in summary.items():
        if t != "offload" or ("stock", d, rw, bs) not in summary:
            continue
        stock = summary[("stock", d, rw, bs)]
        out[(d, rw, bs)] = {m: Ratio.of(stats[m], stock[m]) for m in RATIO_METRICS}
    return out


def separation_chance(n_a: int, n_b: int) -> float:
    """The chance that each of n_a samples lies below each of n_b (or, the
    same, above) when all come from one distribution: one ordering of the
    ranks among C(n_a + n_b, n_a) equally likely ones."""
    return 1.0 / math.comb(n_a + n_b, n_a) if n_a and n_b else math.nan


def one_sided(summary: dict[Key, dict[str, Stat]], metric: str) -> tuple[int, int, int, float]:
    """Over the points with both paths: how many ratios of metric lie
    wholly above 1, wholly below, or cross it, and how many per side noise
    alone would put there if the two paths were equal everywhere."""
    above = below = crossing = 0
    chance = 0.0
    for (t, d, rw, bs), off in summary.items():
        stock = summary.get(("stock", d, rw, bs))
        if t != "offload" or stock is None or not off[metric].n or not stock[metric].n:
            continue
        r = Ratio.of(off[metric], stock[metric])
        if math.isnan(r.value):
            continue
        if r.crosses_one:
            crossing += 1
        elif r.lo > 1.0:
            above += 1
        else:
            below += 1
        chance += separation_chance(off[metric].n, stock[metric].n)
    return above, below, crossing, chance


def _fmt_ratio(r: Ratio) -> str:
    if math.isnan(r.value):
        return "n/a"
    flag = " ⚠" if r.crosses_one else ""
    return f"{r.value:.2f} ({r.lo:.2f} to {r.hi:.2f}){flag}"


def markdown(result: dict[str, Any]) -> str:
    """The report: link limit, the ratios (headline), then every point's figures."""
    points = result["points"]
    summary = summarize(points)
    rat = ratios(summary)
    bs_order = {b: i for i, b in enumerate(result["plan"]["bs"])}
    lines = [
        f"# cxgbit-ext performance: stock LIO vs offload (soft0), {result['kernel']}",
        "",
        f"Run {result['date']} at commit {result['commit']}; command `{result['command']}`; "
        f"{result['wall_s'] / 60:.1f} min wall. Two qemu TCG VMs (1 vCPU each) joined by virtio-net "
        f"(MTU {result['plan']['mtu']}); target CPU is the target VM's own (see perf/README.md). "
        "TCG is 5-20x slower than hardware: read ratios, not absolute figures.",
        "",
        "## Link limit (iperf3, same path and MTU)",
        "",
        "The emulated TCP ceiling of two TCG VMs on one host, not a NIC's.",
        "",
    ]
    link = result["link"]
    gbps = {key: Stat.of([x["gbps"] for x in link[key]]) for key in ("iperf", "iperf_reverse") if key in link}
    for title, key in (("initiator → target (writes)", "iperf"), ("target → initiator (reads)", "iperf_reverse")):
        if key not in gbps:
            lines.append(f"- {title}: not measured in this run.")
            continue
        g = gbps[key]
        cpu = [
            f"{who} {statistics.fmean(xs):.0f}% CPU"
            for who in ("target", "initiator")
            if (xs := [x[f"{who}_cpu_pct"] for x in link[key] if f"{who}_cpu_pct" in x])
        ]
        lines.append(
            f"- {title}: {g.mean:.3f} Gbit/s (min {g.lo:.3f}, max {g.hi:.3f}, n={g.n})"
            + (f"; {', '.join(cpu)}" if cpu else "")
            + "."
        )
    lines += [
        f"- target idle: {link['idle']['insn_per_s'] / 1e6:.1f} M insn/s, {link['idle']['cpu_pct']:.1f}% CPU.",
        "",
        "## Ratios offload ÷ stock (mean, and the widest range over repeats; ⚠ = range crosses 1)",
        "",
        "Throughput above 1 is better; p99 latency (fio's completion latency) and CPU per I/O below 1 "
        "are better. Initiator CPU is the initiator VM's "
        "over a steady window of half the runtime, from a quarter of the runtime after the disk's first "
        "completed I/O (in earlier runs: the middle half of the run timed from fio's launch, or the point's "
        f"whole window), stock / offload; ⓘ: at least {INITIATOR_BOUND_PCT:.0f}% on a path, so the initiator "
        "bound that point and its throughput ratio measures the initiator, not the target. Initiator "
        "insn/IO: the initiator VM's instructions per I/O completed by its disk over the same window "
        "(n/a for runs before it was recorded); at a point the initiator bound, whether the path changed "
        "the initiator's own work per I/O.",
        "",
        "| digest | rw | bs | throughput | p99 latency | target insn/IO | target busy/IO | initiator %CPU "
        "| initiator insn/IO |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for d, rw, bs in sorted(rat, key=lambda k: (k[0], k[1], bs_order.get(k[2], 0))):
        r = rat[(d, rw, bs)]
        ini = [summary[(t, d, rw, bs)]["initiator_cpu_pct"].mean for t in ("stock", "offload")]
        bound = " ⓘ" if max(ini) >= INITIATOR_BOUND_PCT else ""
        lines.append(
            f"| {d} | {rw} | {bs} | {_fmt_ratio(r['mbps'])}{bound} | {_fmt_ratio(r['lat_p99_us'])} | "
            f"{_fmt_ratio(r['target_insn_per_io'])} | {_fmt_ratio(r['target_busy_us_per_io'])} | "
            f"{ini[0]:.0f} / {ini[1]:.0f} | {_fmt_ratio(r['initiator_insn_per_io'])} |"
        )
    tput, p99 = one_sided(summary, "mbps"), one_sided(summary, "lat_p99_us")
    lines += [
        "",
        f"A range lies wholly on one side of 1 only when every offload repeat beat every stock repeat, or "
        f"lost to each. Where the two paths perform alike that still happens by chance, at a point with n "
        f"repeats of each in 1 of C(2n, n) per side (1 in 20 at n = 3): about {tput[3]:.1f} points per side "
        f"of this table's {sum(tput[:3])}. Throughput: {tput[0]} wholly above 1, {tput[1]} wholly below, "
        f"{tput[2]} crossing. p99 latency: {p99[0]} wholly above 1 (worse), {p99[1]} wholly below "
        f"(better), {p99[2]} crossing.",
    ]
    lines += [
        "",
        "## Every point (mean ± stdev over repeats)",
        "",
        "| transport | digest | rw | bs | IOPS | MB/s | % of link | p50 µs | p99 µs | p99.9 µs | "
        "lat sd µs | target %CPU | target k insn/IO | target µs/IO | initiator %CPU |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    # a read's data flows target -> initiator: its share is of the reverse link when measured
    fwd = gbps["iperf"].mean * 1000 / 8  # MB/s
    rev = gbps["iperf_reverse"].mean * 1000 / 8 if "iperf_reverse" in gbps else fwd
    for k in sorted(summary, key=lambda k: (k[1], k[2], bs_order.get(k[3], 0), k[0])):
        s = summary[k]
        share = 100 * s["mbps"].mean / (rev if "read" in k[2] else fwd)
        lines.append(
            f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {s['iops'].mean:.0f} ± {s['iops'].stdev:.0f} | "
            f"{s['mbps'].mean:.2f} ± {s['mbps'].stdev:.2f} | {share:.0f}% | "
            f"{s['lat_p50_us'].mean:.0f} | {s['lat_p99_us'].mean:.0f} | {s['lat_p99.9_us'].mean:.0f} | "
            f"{s['lat_stddev_us'].mean:.0f} | {s['target_cpu_pct'].mean:.0f} ± {s['target_cpu_pct'].stdev:.0f} | "
            f"{s['target_insn_per_io'].mean / 1e3:.0f} ± {s['target_insn_per_io'].stdev / 1e3:.0f} | "
            f"{s['target_busy_us_per_io'].mean:.0f} | {s['initiator_cpu_pct'].mean:.0f} |"
        )
    micro = result.get("micro")
    if micro:
        lines += [
            "",
            f"## Native micro-benchmark of the pure PDU code (host CPU: {result.get('host_cpu', '?')})",
            "",
            f"{micro['note']}.",
            "",
            "| what | ns per op (min / median) | GB/s (median) |",
            "|---|---|---|",
        ]
        for r in micro["results"]:
            gbs = f"{r['gb_per_s']:.2f}" if r["gb_per_s"] else "-"
            ns = f"{r['ns_min']:.1f} / {r['ns_per_op']:.1f}" if "ns_min" in r else f"{r['ns_per_op']:.1f}"
            lines.append(f"| {r['name']} | {ns} / {r['unit']} | {gbs} |")
    return "\n".join(lines) + "\n"


def run_label(result: dict[str, Any]) -> str:
    """A run as a figure's title names it: kernel, TCG, date and commit."""
    return f"{result['kernel']}, TCG, {result['date'][:10]} {result['commit'][:10]}"


def plot(result: dict[str, Any], outdir: Path) -> list[Path]:
    """PNG figures like the papers': throughput and target %CPU vs I/O size,
    read and write, stock vs offload, digests off and on; and CPU per I/O."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = summarize(result["points"])
    bs_list = list(result["plan"]["bs"])
    x = [bs_bytes(b) // 1024 for b in bs_list]
    made = []
    figs = (
        ("throughput", "mbps", "MB/s"),
        ("cpu", "target_cpu_pct", "target %CPU (1 vCPU)"),
        ("insn_per_io", "target_insn_per_io", "target instructions per I/O"),
    )
    styles = {
        ("stock", "off"): "C0o-",
        ("stock", "on"): "C0s--",
        ("offload", "off"): "C3o-",
        ("offload", "on"): "C3s--",
    }
    for name, metric, label in figs:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
        for ax, rw in zip(axes, result["plan"]["rw"], strict=False):
            for (t, d), style in styles.items():
                pts = [
                    (xx, summary[(t, d, rw, b)][metric])
                    for xx, b in zip(x, bs_list, strict=True)
                    if (t, d, rw, b) in summary
                ]
                if not pts:
                    continue
                ax.errorbar(
                    [p[0] for p in pts], [p[1].mean for p in pts], yerr=[p[1].stdev for p in pts],
                    fmt=style, capsize=3, label=f"{t}, digest {d}",
                )  # fmt: skip
            ax.set_xscale("log", base=2)
            ax.set_xticks(x, [b.upper() for b in bs_list])
            ax.set_xlabel("I/O size")
            ax.set_ylabel(label)
            if metric == "target_insn_per_io":
                ax.set_yscale("log")
            ax.set_title(rw)
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
        fig.suptitle(f"{label} vs I/O size — {run_label(result)}")
        fig.tight_layout()
        path = outdir / f"{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)
    return made
