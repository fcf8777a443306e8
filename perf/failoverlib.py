"""perf/failover's arithmetic: the trials' order, their percentiles, the table.

Pure functions over the scale-out initiator's ``result.json`` (its
``failovers`` list, one entry per failure injected), so that a host test
checks them on recorded results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from testbed.gateways import FAILURE_NAMES, FAILURES

# the bound: I/O on the surviving path within this many seconds of
# the owner's failure, at the 95th percentile of each kind
BOUND_S = 15.0
# what ceph-iscsi-style gateways took before (docs/status.md, "Scale-out")
BEFORE = "24-40 s"


def order(kinds: list[str], trials: int) -> list[str]:
    """The failures of a run: each kind ``trials`` times, interleaved
    (a, b, c, a, b, c, ...), so that the host's speed drifting over a long
    run reaches every kind alike."""
    unknown = [k for k in kinds if k not in FAILURES]
    if unknown or not kinds or len(set(kinds)) != len(kinds):
        raise ValueError(f"kinds {','.join(kinds)}: each once, of {', '.join(FAILURES)}")
    if trials < 1:
        raise ValueError(f"trials {trials}: at least 1")
    return [k for _ in range(trials) for k in kinds]


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank percentile: the smallest value with at least p %
    of the values at or below it (no interpolation: every figure given is
    one a trial measured)."""
    if not values:
        raise ValueError("no values")
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


@dataclass(frozen=True)
class Row:
    kind: str
    trials: int
    p50: float
    p95: float
    max: float
    failback_p50: float | None
    fenced_p50: float | None
    # unasked tcmu-runner deaths during its trials (the daemon was started
    # again, as docs/usage.md's drop-in does): the trials still count
    tcmu_deaths: int = 0

    @property
    def within(self) -> bool:
        return self.p95 <= BOUND_S


def summarize(failovers: list[dict[str, Any]], kinds: list[str]) -> list[Row]:
    """One row per kind, in ``kinds``' order, from the initiator's
    failover entries (``failure`` is the kind's name, FAILURE_NAMES)."""
    rows = []
    for kind in kinds:
        evs = [ev for ev in failovers if ev.get("failure") == FAILURE_NAMES[kind]]
        if not evs:
            raise ValueError(f"no trial of {kind} ({FAILURE_NAMES[kind]}) in the result")
        moved = [float(ev["io_moved_after_s"]) for ev in evs]
        back = [float(ev["failed_back_after_s"]) for ev in evs if "failed_back_after_s" in ev]
        fenced = [float(ev["fenced_after_s"]) for ev in evs if "fenced_after_s" in ev]
        deaths = sum(len(ev.get("tcmu_runner_died", ())) for ev in evs)
        rows.append(
            Row(kind, len(evs), percentile(moved, 50), percentile(moved, 95), max(moved),
                percentile(back, 50) if back else None, percentile(fenced, 50) if fenced else None, deaths)
        )  # fmt: skip
    return rows


def render(rows: list[Row], meta: dict[str, Any]) -> str:
    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f} s"

    lines = [
        "# Failover: I/O on the surviving path after the owner fails",
        "",
        f"`{meta['command']}` — kernels {meta['kernel']}, backstore {meta['backstore']}, "
        f"{meta['gateways']} gateways, commit {meta['commit']}, {meta['date']}, {meta['wall_s']} s wall.",
        "",
        "Each trial fails gateway 1 (the owner of image 0) under fio write+verify from a dm-multipath "
        "initiator, then brings it back (failback) before the next; kinds interleaved. *Moved* is the time "
        "from the failure to the first writes the initiator's path counters show on the survivor. "
        f"The bound is {BOUND_S:.0f} s at the 95th percentile; before this work I/O moved in {BEFORE}. "
        "Every trial's blocks verified (the run fails otherwise). Nearest-rank percentiles.",
        "",
        "| failure | trials | moved p50 | moved p95 | moved max | within 15 s (p95) | failback p50 | fenced p50 "
        "| tcmu-runner crashed |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {FAILURE_NAMES[r.kind]} | {r.trials} | {s(r.p50)} | {s(r.p95)} | {s(r.max)} | "
            f"{'yes' if r.within else '**no**'} | {s(r.failback_p50)} | {s(r.fenced_p50)} | {r.tcmu_deaths} |"
        )
    if any(r.tcmu_deaths for r in rows):
        lines += [
            "",
            "*tcmu-runner crashed*: a gateway's tcmu-runner died during the kind's trials without being "
            "killed by the run, and was started again a second later, as docs/usage.md's systemd drop-in "
            "does on a gateway host; those trials' figures include it (failovers.json: `tcmu_runner_died`).",
        ]
    if meta.get("settings"):
        lines += ["", "What decides these figures, as the run had them:", ""]
        lines += [f"- {k}: {v}" for k, v in meta["settings"].items()]
    return "\n".join(lines) + "\n"
