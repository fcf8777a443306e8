"""Host side of the gateway runs (testbed/scaleout, perf/scaleout): the
guests on the Ceph cluster's bridge and how they are started.

Each guest has one NIC, a tap device on the bridge of the cluster's
network namespace (testbed/ceph.py), and runs one role of a guest script
(``gateway N`` or ``initiator``) with the plan in the shared rendezvous
directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed.ceph import BRIDGE, option_problem

TOP = Path(__file__).resolve().parent.parent
GUESTS = {  # name: (tap, mac, address on the cluster's bridge)
    "gw1": ("cxetap1", "52:54:00:cc:20:11", "198.18.20.11"),
    "gw2": ("cxetap2", "52:54:00:cc:20:12", "198.18.20.12"),
    "gw3": ("cxetap3", "52:54:00:cc:20:13", "198.18.20.13"),
    "ini": ("cxetap9", "52:54:00:cc:20:99", "198.18.20.99"),
}


# how a gateway fails and comes back: (request, its answer, seconds to
# wait for it) for the failure, then for the return. The gateway answers
# disable/enable and killtcmu/starttcmu; the host kill (its qemu) and
# restart (a new boot), cut and mend (its packets to and from the cluster)
FAILURES = {
    "disable": (("disable", "disabled", 60), ("enable", "enabled", 60)),
    "tcmu": (("killtcmu", "tcmukilled", 60), ("starttcmu", "tcmustarted", 120)),
    "kill": (("kill", "killed", 60), ("restart", "ready", 600)),
    "cut": (("cut", "isolated", 60), ("mend", "mended", 60)),
}
FAILURE_NAMES = {
    "disable": "TPG disabled",
    "tcmu": "tcmu-runner killed",
    "kill": "VM killed",
    "cut": "cluster link cut",
}
# the most gateways a run can have (one guest each in GUESTS)
MAX_GATEWAYS = 3
# The cluster settings a gateway's failover depends on, as the testbed's
# cluster has them and as docs/usage.md recommends them (NAME, VALUE);
# none: Ceph's defaults.
CEPH_OPTIONS: tuple[tuple[str, str], ...] = ()


def ceph_options(given: list[str] | None) -> tuple[tuple[str, str], ...]:
    """The cluster's options from NAME=VALUE arguments; CEPH_OPTIONS when
    none is given."""
    if not given:
        return CEPH_OPTIONS
    out = []
    for arg in given:
        name, eq, value = (part.strip() for part in arg.partition("="))
        if not eq:
            raise ValueError(f"--ceph-option {arg!r}: NAME=VALUE")
        if problem := option_problem(name, value):
            raise ValueError(f"--ceph-option {arg!r}: {problem}")
        out.append((name, value))
    return tuple(out)


def gateway_names(gateways: int = 2) -> list[str]:
    """The gateways of a run with ``gateways`` of them: gw1..gwN."""
    if not 1 <= gateways <= MAX_GATEWAYS:
        raise ValueError(f"{gateways} gateways: the testbed has guests for 1 to {MAX_GATEWAYS}")
    return [f"gw{n}" for n in range(1, gateways + 1)]


def guest_names(gateways: int = 2) -> list[str]:
    """The guests of a run with ``gateways`` gateways: gw1..gwN, then the initiator."""
    return [*gateway_names(gateways), "ini"]


def add_taps(netns: str, gateways: int = 2) -> None:
    """The tap device of every guest of the run, on the cluster's bridge."""
    for tap, _, _ in (GUESTS[name] for name in guest_names(gateways)):
        ns = ["ip", "-n", netns]
        subprocess.run([*ns, "tuntap", "add", "mode", "tap", "name", tap], check=True)
        subprocess.run([*ns, "link", "set", tap, "master", BRIDGE, "up"], check=True)


class Rendezvous:
    """The run's shared directory, through which the host and the guests
    ask each other to act: a name appears there whole (written aside,
    then renamed) and is looked for by listing the directory."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def put(self, name: str, body: str = "") -> None:
        tmp = self.path / f".{name}.tmp"
        tmp.write_text(body)
        tmp.rename(self.path / name)

    def has(self, name: str) -> bool:
        # a listing, not a lookup: no negative entry can be cached on 9p
        return name in os.listdir(self.path)

    def wait(self, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.has(name):
            if time.monotonic() > deadline:
                raise TimeoutError(f"waiting for {name}: not within {timeout:.0f} s")
            time.sleep(0.2)

    def ask(self, request: str, answer: str, timeout: float) -> None:
        """Ask for ``request`` and wait for its ``answer``. An answerer acts
        on a request that has no answer (answer()), so an earlier ask's
        request and answer go first, in that order: the same request can
        be made again, and is acted on once each time."""
        for name in (request, answer):
            (self.path / name).unlink(missing_ok=True)
        self.put(request)
        self.wait(answer, timeout)

    def answer(self, request: str, answer: str, act: Callable[[], None]) -> bool:
        """Act on ``request`` if it was asked and not answered yet, then
        answer it; whether it acted."""
        if not self.has(request) or self.has(answer):
            return False
        act()
        self.put(answer)
        return True


# a gateway's tcmu-runner that died unasked, one file each in the
# rendezvous (scaleout_guest.TcmuRunner)
TCMU_DIED = "tcmu-died-"


def put_tcmu_death(rdv: Rendezvous, gateway: int, how: str) -> None:
    """Gateway ``gateway``'s tcmu-runner died unasked, ``how``."""
    rdv.put(f"{TCMU_DIED}gw{gateway}-{time.time_ns()}.json", json.dumps({"gateway": gateway, "how": how}))


def tcmu_deaths(rdv: Rendezvous) -> dict[str, dict[str, Any]]:
    """Every unasked tcmu-runner death the gateways have put in the
    rendezvous so far, by file name (``gateway``: its number, ``how``:
    "signal 11 (SIGSEGV)" or "exit N")."""
    return {
        name: json.loads((rdv.path / name).read_text())
        for name in sorted(os.listdir(rdv.path))
        if name.startswith(TCMU_DIED) and name.endswith(".json")
    }


def plan_guests(gateways: int = 2) -> dict[str, object]:
    """The plan's entries for the guests' NICs."""
    return {
        "gateways": [{"mac": GUESTS[g][1], "ip": GUESTS[g][2]} for g in gateway_names(gateways)],
        "initiator": {"mac": GUESTS["ini"][1], "ip": GUESTS["ini"][2]},
    }


def guest_kernels(kernels: list[str], gateways: int = 2) -> dict[str, str]:
    """With two kernels, the initiator and the odd gateways boot the first
    and the even gateways the second (as a rolling upgrade would mix them)."""
    names = guest_names(gateways)
    return {name: kernels[0] if name == "ini" else kernels[i % len(kernels)] for i, name in enumerate(names)}


def kill_guests(netns: str) -> None:
    """The guests' qemu processes left in their network namespace
    (testbed/run's qemu runs in a session of its own), and no one else's."""
    pids = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout.split()
    qemus = []
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/comm").read_text().startswith("qemu"):
                qemus.append(pid)
        except OSError:
            continue  # gone already
    if qemus:
        subprocess.run(["kill", "-KILL", *qemus], check=False)


def boot(
    name: str,
    kernel: str,
    run: str,
    netns: str,
    rdv: Path,
    results: Path,
    timeout: int,
    script: str = "testbed/scaleout_guest.py",
    plugin: Path | None = None,
    cpus: int = 2,
) -> subprocess.Popen[bytes]:
    """Start guest ``name`` running ``script``'s role for it (its run
    ``run``: a restarted guest gets a new one); with ``plugin``, TCG's
    instruction count goes to results/run/insn.count."""
    tap, mac, _ = GUESTS[name]
    plan = rdv / "plan.json"
    role = f"initiator --plan {plan}" if name == "ini" else f"gateway {name[2:]} --plan {plan}"
    cmd = [sys.executable, str(TOP / "testbed/run"), "--kernel", kernel, "--timeout", str(timeout), "--cpus", str(cpus),
           "--results", str(results / run), "--name", name, "--no-veth", "--netns", netns,
           "--tap", f"{tap}:{mac}", "--shared", str(rdv), "--exec", f"{script} {role}"]  # fmt: skip
    if plugin is not None:
        cmd += ["--plugin", str(plugin)]
    print(f"{Path(sys.argv[0]).name}: booting {run} ({kernel})", flush=True)
    with open(results / f"{run}.out", "wb") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
