"""Where a VM's instructions go: the plugin's per-block counts, mapped to
the guest's kernel symbols and summed into buckets.

perf/plugin/insn_count.c (``prof=PREFIX``) dumps, per request, "address
count" lines for every kernel translation block that ran since the previous
dump (address 1 stands for all of user space). The target VM copies its
/proc/kallsyms (module symbols included, KASLR resolved) next to the dumps.
Pure code: tests/host/test_perf_profile.py tests it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

USER = 1  # the plugin's slot for every user-space block
# (bucket, module names, symbol-name pattern); the first that matches wins
# fmt: off
RULES: tuple[tuple[str, frozenset[str], str], ...] = (
    ("cxgbit_ext", frozenset({"cxgbit_ext"}), r"$^"),
    ("iscsi_target_mod", frozenset({"iscsi_target_mod"}), r"$^"),
    ("target_core", frozenset({"target_core_mod", "target_core_iblock", "target_core_file", "target_core_pscsi"}),
     r"$^"),
    ("crc32c", frozenset({"crc32c_intel", "crc32c_generic", "libcrc32c", "crc32_pclmul"}), r"crc32"),
    ("copy", frozenset(), r"^(__)?(memcpy|memmove|memset|copy_user|_copy_to_iter|_copy_from_iter|copy_page"
                          r"|skb_copy|csum_partial_copy|rep_movs|copy_to_user|copy_from_user|clear_page)"),
    ("checksum", frozenset(), r"^(__)?(csum|do_csum|ip_compute_csum)"),
    ("virtio/net device", frozenset({"virtio_net", "virtio_ring", "virtio_pci", "virtio"}),
     r"^(virtnet|virtqueue|vring|vp_|virtio)"),
    ("TCP/IP + skb", frozenset(), r"^(__)?(tcp|ip|ipv4|ipv6|inet|sk_|sock|skb|kfree_skb|consume_skb|alloc_skb"
                                  r"|napi|net_|netif|dev_|release_sock|lock_sock|neigh|dst_|fib|rt_)"),
    ("scheduler", frozenset(), r"^(__)?(schedule|pick_next|enqueue|dequeue|try_to_wake_up|ttwu|finish_task_switch"
                               r"|update_curr|update_load|select_task_rq|switch_to|switch_mm|context_switch)"),
    ("idle", frozenset(), r"(idle|mwait|safe_halt)"),
)
# fmt: on
BUCKETS = ("user space", *(r[0] for r in RULES), "other kernel")


@dataclass(frozen=True)
class Symbols:
    addrs: list[int]
    names: list[str]
    modules: list[str]

    def lookup(self, addr: int) -> tuple[str, str]:
        """(symbol, module) of the text symbol ``addr`` falls in."""
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return "?", ""
        return self.names[i], self.modules[i]


def load_kallsyms(text: str) -> Symbols:
    """Text symbols of a /proc/kallsyms read as root."""
    rows = []
    for line in text.splitlines():
        f = line.split()
        if len(f) < 3 or f[1] not in ("t", "T", "w", "W"):
            continue
        addr = int(f[0], 16)
        if not addr:
            continue
        mod = f[3].strip("[]") if len(f) > 3 else ""
        rows.append((addr, f[2], mod))
    rows.sort()
    return Symbols([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])


_COMPILED = tuple((name, mods, re.compile(pat)) for name, mods, pat in RULES)


def bucket_of(symbol: str, module: str) -> str:
    for name, mods, pat in _COMPILED:
        if module in mods or pat.search(symbol):
            return name
    return "other kernel"


def parse_dump(text: str) -> Iterable[tuple[int, int]]:
    for line in text.splitlines():
        a, _, c = line.partition(" ")
        if c:
            yield int(a, 16), int(c)


def buckets(dump: str, syms: Symbols) -> dict[str, int]:
    """Instructions per bucket in one dump."""
    out = dict.fromkeys(BUCKETS, 0)
    cache: dict[int, str] = {}
    for addr, n in parse_dump(dump):
        if addr == USER:
            out["user space"] += n
            continue
        b = cache.get(addr)
        if b is None:
            b = cache[addr] = bucket_of(*syms.lookup(addr))
        out[b] += n
    return out


# the iSCSI transport layer: stock's iscsi_target_mod; offload's cxgbit_ext and what it calls there
TRANSPORT = frozenset({"cxgbit_ext", "iscsi_target_mod"})
TOP_FUNCTIONS = 8


def by_function(dump: str, syms: Symbols, modules: frozenset[str] | None = TRANSPORT) -> dict[str, int]:
    """Instructions per function of ``modules`` (None: of the whole kernel) in one dump."""
    out: dict[str, int] = {}
    for addr, n in parse_dump(dump):
        if addr == USER:
            continue
        name, mod = syms.lookup(addr)
        if modules is None or mod in modules:
            out[name] = out.get(name, 0) + n
    return out


# Outside the transport layer and the copy routines, the functions whose
# count differs most between the two paths explain a gap in the buckets
# (TCP/IP, scheduler, other kernel) by name. A point keeps every kernel
# function outside the transport layer of at least KERNEL_FUNCTION_FLOOR
# instructions per I/O.
KERNEL_FUNCTION_FLOOR = 10.0
TOP_DIFFERENCES = 6


# A dump must account for its point's window: its total per I/O within this
# share of the counter's figure (which has the idle rate taken out; the idle
# share of a window is about 1 % here). A dump that does not is another
# window's, and its buckets would be reported against the wrong point.
WINDOW_TOLERANCE = 0.10


def per_io(points: list[dict[str, Any]], dumps: Path) -> int:
    """Add ``target_buckets_per_io`` to each point whose window has a dump
    in ``dumps`` (with the target's kallsyms there) that accounts for the
    window; how many got one. A point whose dump does not gets
    ``target_prof_mismatch`` (the dump's total per I/O over the counter's)
    instead of buckets."""
    syms_file = dumps / "kallsyms"
    if not syms_file.exists():
        return 0
    syms = load_kallsyms(syms_file.read_text())
    done = 0
    for rec in points:
        f = dumps / f"insn.prof.{rec.get('target_prof', '')}"
        if rec.get("target_prof") and f.exists() and rec.get("ios"):
            dump = f.read_text()
            b = buckets(dump, syms)
            want = rec.get("target_insn_per_io")
            got = sum(b.values()) / rec["ios"]
            if want and abs(got / want - 1) > WINDOW_TOLERANCE:
                rec["target_prof_mismatch"] = got / want
                continue
            rec["target_buckets_per_io"] = {k: v / rec["ios"] for k, v in b.items()}
            transport = by_function(dump, syms)
            rec["transport_functions_per_io"] = {k: v / rec["ios"] for k, v in transport.items()}
            rec["kernel_functions_per_io"] = {
                k: v / rec["ios"]
                for k, v in by_function(dump, syms, None).items()
                if k not in transport and v / rec["ios"] >= KERNEL_FUNCTION_FLOOR
            }
            done += 1
    return done


def _repeats(
    points: list[dict[str, Any]], field: str = "target_buckets_per_io"
) -> dict[tuple[str, str, int, str], list[dict[str, float]]]:
    """Each point's ``field`` over its repeats, by (digest, rw, bs, transport)."""
    rows: dict[tuple[str, str, int, str], list[dict[str, float]]] = {}
    for p in points:
        if field in p:
            rows.setdefault((p["digest"], p["rw"], p["bs_bytes"], p["transport"]), []).append(p[field])
    return rows


Means = dict[tuple[str, str, int, str], dict[str, float]]


def _mean_buckets(points: list[dict[str, Any]]) -> Means:
    return {k: {b: sum(r[b] for r in rs) / len(rs) for b in BUCKETS} for k, rs in _repeats(points).items()}


def _offload_beside_stock(
    points: list[dict[str, Any]],
) -> Iterator[tuple[tuple[str, str, int], dict[str, float], dict[str, float], Means]]:
    """Each (digest, rw, bs) measured on both paths: its offload and stock
    bucket means, and all the means (for a look at another point)."""
    mean = _mean_buckets(points)
    for (digest, rw, bs, transport), b in mean.items():
        stock = mean.get((digest, rw, bs, "stock"))
        if transport == "offload" and stock:
            yield (digest, rw, bs), b, stock, mean


def _section(title: str, text: str, head: list[str], rows: list[str]) -> list[str]:
    """A profile.md section: its heading, what it shows, and its table."""
    return ["", f"## {title}", "", text, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head), *rows]


def markdown(points: list[dict[str, Any]]) -> str:
    """k instructions per I/O per bucket, stock and offload side by side,
    mean over the repeats (window totals: the idle rate is not taken out)."""
    rows = _repeats(points)
    if not rows:
        return ""
    used = [b for b in BUCKETS if any(r[b] >= 50 for rs in rows.values() for r in rs)]
    table = []
    for (digest, rw, bs, transport), mean in sorted(_mean_buckets(points).items()):
        cells = " | ".join(f"{mean[b] / 1e3:.1f}" for b in used)
        table.append(f"| {digest} | {rw} | {bs // 1024}K | {transport} | {cells} | {sum(mean.values()) / 1e3:.1f} |")
    lines = _section(
        "Where the target's instructions go (k instructions per I/O, by kernel symbol)",
        "The TCG plugin's per-block counts over each point's window, mapped to the target VM's kallsyms "
        "(perf/profile.py); mean over repeats; the idle rate is not taken out here, so totals exceed "
        "the insn/IO figures above by the idle share. Buckets under 50 instructions per I/O everywhere are left out.",
        ["digest", "rw", "bs", "transport", *used, "total"],
        table,
    )[1:]
    odd = [p for p in points if "target_prof_mismatch" in p]
    if odd:
        worst = max(odd, key=lambda p: abs(p["target_prof_mismatch"] - 1))["target_prof_mismatch"]
        lines += [
            "",
            f"{len(odd)} of {len(points)} points are left out: the dump made at the end of their window "
            f"does not account for it (its total per I/O off the counter's by more than "
            f"{WINDOW_TOLERANCE:.0%}; the worst {worst:.2f}x), so it holds another window's instructions.",
        ]
    return (
        "\n".join(lines + _outside_copy(points) + _functions(points) + _differences(points) + _hardware_model(points))
        + "\n"
    )


def outside_copy(points: list[dict[str, Any]]) -> dict[tuple[str, str, int], tuple[float, float]]:
    """Per (digest, rw, bs): offload ÷ stock of all instructions per I/O,
    and of those outside the copy bucket. Both paths move the same bytes
    the same number of times, but TCG counts a rep-string copy once per
    element: a copy's count depends on the routine that does it (see
    perf/README.md), so the second ratio is the one a copy routine cannot
    sway."""
    out = {}
    for point, b, stock, _ in _offload_beside_stock(points):
        total_off, total_st = sum(b.values()), sum(stock.values())
        out[point] = (total_off / total_st, (total_off - b["copy"]) / (total_st - stock["copy"]))
    return out


# The iSCSI transport layer's own cost by bucket: the buckets of the
# TRANSPORT modules (stock runs only iscsi_target_mod's code, offload also
# LIO's command handling there) and the CRC routines both paths call.
TRANSPORT_BUCKETS = (*sorted(TRANSPORT), "crc32c")


def transport_layer(points: list[dict[str, Any]]) -> dict[tuple[str, str, int], tuple[float, float]]:
    """Per (digest, rw, bs): the transport layer's instructions per I/O
    (TRANSPORT_BUCKETS) on the offloaded path and on stock's."""
    return {
        point: (sum(b[k] for k in TRANSPORT_BUCKETS), sum(stock[k] for k in TRANSPORT_BUCKETS))
        for point, b, stock, _ in _offload_beside_stock(points)
    }


def _outside_copy(points: list[dict[str, Any]]) -> list[str]:
    ratios = outside_copy(points)
    if not ratios:
        return []
    layer = transport_layer(points)

    def row(point: tuple[str, str, int], a: float, o: float) -> str:
        (d, rw, bs), (off, st) = point, layer[point]
        return (f"| {d} | {rw} | {bs // 1024}K | {a:.2f} | {o:.2f} | {off / 1e3:.2f} / {st / 1e3:.2f} = "
                f"{off / st if st else float('nan'):.2f} |")  # fmt: skip

    return _section(
        "Offload ÷ stock, all instructions, those outside the copy routines, and the transport layer",
        "Mean over repeats of the window totals above. The copy bucket counts the same bytes differently "
        "by the routine that moves them (perf/README.md), so the second column is the comparison a copy "
        "routine cannot sway. The last is the transport layer's own k instructions per I/O, offload / "
        "stock: the cxgbit_ext, iscsi_target_mod and crc32c buckets (LIO's command handling in "
        "iscsi_target_mod runs on both paths; stock's crypto-API calls around its CRC are in other kernel).",
        ["digest", "rw", "bs", "all", "outside copy", "transport layer"],
        [row(point, a, o) for point, (a, o) in sorted(ratios.items())],
    )


# what a T5/T6 does in silicon that soft0 does on the host's CPU, by bucket
HARDWARE_DOES = ("crc32c", "checksum", "TCP/IP + skb", "virtio/net device")


def hardware_model(points: list[dict[str, Any]]) -> dict[tuple[str, str, int], tuple[float, float]]:
    """A model, not a measurement: per (digest, rw, bs), the instructions
    per I/O a host with a hardware adapter would still execute, and that
    figure over stock's. It is offload's measured total less the buckets
    of HARDWARE_DOES (digests, TCP and its checksums on the card; the NIC
    driver's work taken as nothing, which flatters it) and, for writes, the
    placement copy (the card writes the data into the command's pages),
    estimated as the write's copy bucket less the read's of the same size
    (both move the I/O once through the ramdisk)."""
    out = {}
    for (digest, rw, bs), b, stock, mean in _offload_beside_stock(points):
        left = sum(b.values()) - sum(b[k] for k in HARDWARE_DOES)
        if rw.endswith("write"):
            read = mean.get((digest, rw.replace("write", "read"), bs, "offload"))
            left -= max(0.0, b["copy"] - read["copy"]) if read else 0.0
        out[(digest, rw, bs)] = (left, left / sum(stock.values()))
    return out


def _hardware_model(points: list[dict[str, Any]]) -> list[str]:
    model = hardware_model(points)
    if not model:
        return []
    return _section(
        "A model of a host with a hardware adapter (not a measurement)",
        "Offload's measured instructions per I/O less what a T5/T6 does in silicon: the "
        + ", ".join(HARDWARE_DOES)
        + " buckets, and for writes the placement copy (the write's copy bucket less the read's of the same "
        "size). The adapter driver's own work is not in it, so the figure is a floor; nothing here has "
        "run on Chelsio hardware.",
        ["digest", "rw", "bs", "modelled k insn/IO", "÷ stock (measured)"],
        [
            f"| {d} | {rw} | {bs // 1024}K | {left / 1e3:.1f} | {r:.2f} |"
            for (d, rw, bs), (left, r) in sorted(model.items())
        ],
    )


def _functions(points: list[dict[str, Any]]) -> list[str]:
    """The transport layer's costliest functions per point (mean over repeats)."""
    rows = _repeats(points, "transport_functions_per_io")
    if not rows:
        return []
    table = []
    for (digest, rw, bs, transport), rs in sorted(rows.items()):
        names = {n for r in rs for n in r}
        mean = {n: sum(r.get(n, 0.0) for r in rs) / len(rs) for n in names}
        top = sorted(mean.items(), key=lambda kv: -kv[1])[:TOP_FUNCTIONS]
        cells = ", ".join(f"{n} {v:.0f}" for n, v in top)
        table.append(f"| {digest} | {rw} | {bs // 1024}K | {transport} | {sum(mean.values()):.0f} | {cells} |")
    return _section(
        f"The transport layer by function (instructions per I/O, the {TOP_FUNCTIONS} costliest)",
        "Functions of " + " and ".join(sorted(TRANSPORT)) + " (stock runs only the latter); "
        "a function's own instructions, not those of what it calls outside these modules.",
        ["digest", "rw", "bs", "transport", "total", "functions"],
        table,
    )


def differences(points: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, float]]:
    """Per (digest, rw, bs): offload's mean instructions per I/O less
    stock's, by kernel function outside the transport layer and the copy
    bucket (a function under the floor on one path counts 0 there)."""
    rows = _repeats(points, "kernel_functions_per_io")
    syms_bucket: dict[str, str] = {}
    out = {}
    for (digest, rw, bs, transport), rs in rows.items():
        stock = rows.get((digest, rw, bs, "stock"))
        if transport != "offload" or not stock:
            continue
        diff: dict[str, float] = {}
        for sign, reps in ((1.0, rs), (-1.0, stock)):
            for r in reps:
                for name, v in r.items():
                    diff[name] = diff.get(name, 0.0) + sign * v / len(reps)
        keep = {}
        for name, v in diff.items():
            b = syms_bucket.setdefault(name, bucket_of(name, ""))
            if b != "copy":
                keep[name] = v
        out[(digest, rw, bs)] = keep
    return out


def _differences(points: list[dict[str, Any]]) -> list[str]:
    diffs = differences(points)
    if not diffs:
        return []

    def cells(items: list[tuple[str, float]]) -> str:
        return ", ".join(f"{n} {v:+.0f}" for n, v in items)

    table = []
    for (d, rw, bs), diff in sorted(diffs.items()):
        ranked = sorted(diff.items(), key=lambda kv: -kv[1])
        more = [kv for kv in ranked[:TOP_DIFFERENCES] if kv[1] > 0]
        less = [kv for kv in ranked[::-1][:TOP_DIFFERENCES] if kv[1] < 0]
        table.append(f"| {d} | {rw} | {bs // 1024}K | {sum(diff.values()):+.0f} | {cells(more)} | {cells(less)} |")
    return _section(
        "Offload less stock outside the transport layer and the copy, by function (instructions per I/O)",
        f"Mean over repeats; every kernel function of at least {KERNEL_FUNCTION_FLOOR:.0f} instructions per "
        "I/O on either path, less those of the transport layer (above) and of the copy bucket; the net "
        f"difference of those, and the {TOP_DIFFERENCES} largest each way.",
        ["digest", "rw", "bs", "net", "more in offload", "less in offload"],
        table,
    )


# the two sizes whose buckets the stacked bars show: a small I/O, where the
# per-PDU work decides, and a large one, where the per-byte work does
BAR_SIZES = (4096, 262144)


def plot_buckets(points: list[dict[str, Any]], out: Path, title: str) -> Path | None:
    """buckets.png: k instructions per I/O by bucket, stock and offload
    side by side as stacked bars, for each rw and digest at BAR_SIZES
    (mean over repeats); None when no point of those sizes has buckets."""
    mean = _mean_buckets(points)
    sizes = [s for s in BAR_SIZES if any(k[2] == s for k in mean)]
    if not sizes:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(sizes), figsize=(6.5 * len(sizes), 5.2), squeeze=False)
    colors = plt.get_cmap("tab20").colors
    for ax, size in zip(axes[0], sizes, strict=True):
        groups = sorted({(d, rw) for d, rw, s, _ in mean if s == size})
        labels, x = [], 0.0
        for d, rw in groups:
            for t in ("stock", "offload"):
                b = mean.get((d, rw, size, t))
                if b is None:
                    continue
                bottom = 0.0
                for i, name in enumerate(BUCKETS):
                    v = b[name] / 1e3
                    ax.bar(x, v, bottom=bottom, color=colors[i % len(colors)], width=0.8,
                           label=name if not labels else None)  # fmt: skip
                    bottom += v
                labels.append((x, f"{rw[4:]}, digest {d}: {t}"))
                x += 1.0
            x += 0.5
        ax.set_xticks([p for p, _ in labels], [s for _, s in labels], fontsize=7, rotation=35, ha="right")
        ax.set_ylabel("k instructions per I/O (target VM)")
        ax.set_title(f"{size // 1024}K")
        ax.grid(True, axis="y", alpha=0.3)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="center right", fontsize=8)
    fig.suptitle(f"Where the target's instructions go, by bucket — {title}")
    fig.tight_layout(rect=(0, 0, 0.84, 1))
    path = out / "buckets.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
