"""The documented entry points run as documented from a plain shell after make deps.

Plain: no venv active, the system's PATH (so ``#!/usr/bin/env python3`` is
/usr/bin/python3, which lacks matplotlib, crc32c and the rest of .venv), the
working directory elsewhere. Each script re-runs itself under .venv's python
(testbed/entry.py); without .venv it says to run make deps. A sitecustomize
on PYTHONPATH logs every interpreter's sys.prefix, so the tests see the
re-exec happen, and happen once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
VENV = TOP / ".venv"
PLAIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# what a user types, by path (README.md, docs/, perf/README.md, tests/README.md, upstream/README.md)
SCRIPTS = (
    "testbed/run",
    "testbed/scaleout",
    "perf/run",
    "perf/scaleout",
    "perf/failover",
    "perf/rbd_backstores",
    "upstream/reproducers/extended_cdb_ahs.py",
    "upstream/reproducers/immediate_data_without_w.py",
    "upstream/reproducers/rejected_task_pdu.py",
    "upstream/reproducers/text_continuation.py",
    "upstream/reproducers/mcs_logout_race.py",
    "upstream/reproducers/erl2_task_reassign.py",
    "upstream/reproducers/tmf_response_codes.py",
    "upstream/reproducers/mcs_mixed_transports.py",
    "upstream/reproducers/erl2_waiting_session.py",
    "upstream/reproducers/erl2_time2retain_expiry.py",
    "upstream/reproducers/refused_text.py",
    "upstream/reproducers/register_and_move_new_registration.py",
    "upstream/reproducers/np_thread_fail.py",
)
# executable, but started in a guest by testbed/run under .venv's python, not typed by a user
GUEST_SCRIPTS = ("perf/target_vm.py", "perf/initiator_vm.py", "perf/scaleout_guest.py", "perf/rbd_backstores_guest.py")
# setup.py's console scripts, in .venv/bin after make deps: the cheapest call that exits 0 and
# what it prints (targetcli-offload's --help is stock targetcli's, which exits 255)
CONSOLE_SCRIPTS = {
    "cxgbit-ext": ("--help", "usage: cxgbit-ext"),
    "targetcli-offload": ("--version", "targetcli version"),
    "cxe-initiator": ("--help", "usage: cxe-initiator"),
}

PROBE = """\
import os
import sys

with open(os.environ["CXE_PREFIX_LOG"], "a") as f:
    f.write(sys.prefix + "\\n")
"""


def plain(args: list[str], cwd: Path, tmp: Path) -> tuple[subprocess.CompletedProcess[str], list[bool]]:
    """Run ``args`` from a plain shell in ``cwd``; also whether each
    interpreter it went through was .venv's, in order."""
    probe = tmp / "probe"
    probe.mkdir(exist_ok=True)
    (probe / "sitecustomize.py").write_text(PROBE)
    log = tmp / "prefixes"
    log.unlink(missing_ok=True)
    env = {"PATH": PLAIN_PATH, "HOME": str(tmp), "PYTHONPATH": str(probe), "CXE_PREFIX_LOG": str(log)}
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    in_venv = [Path(line).resolve() == VENV.resolve() for line in log.read_text().splitlines()] if log.exists() else []
    return p, in_venv


def test_plain_python3_is_not_the_venvs() -> None:
    """The premise: what the shebang finds lacks .venv's packages."""
    p = subprocess.run(
        ["/usr/bin/env", "python3", "-c", "import matplotlib"], env={"PATH": PLAIN_PATH}, capture_output=True
    )
    assert p.returncode != 0


def test_every_executable_python_script_is_listed() -> None:
    """A new entry script gets a row here, so its --help runs below."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(TOP):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("build", "__pycache__")]
        for name in filenames:
            path = Path(dirpath) / name
            if os.access(path, os.X_OK) and path.read_bytes()[:40].startswith(b"#!/usr/bin/env python3"):
                found.add(str(path.relative_to(TOP)))
    assert found == set(SCRIPTS) | set(GUEST_SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_help_from_a_plain_shell(script: str, tmp_path: Path) -> None:
    p, in_venv = plain([str(TOP / script), "--help"], tmp_path, tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: "), p.stdout + p.stderr
    assert in_venv == [False, True], "started by the system's python3, then once under .venv's"


def test_script_by_relative_path_from_another_directory(tmp_path: Path) -> None:
    rel = os.path.relpath(TOP / "perf/run", tmp_path)
    p, in_venv = plain([rel, "--help"], tmp_path, tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("usage: "), p.stdout + p.stderr
    assert in_venv == [False, True]


def test_ceph_module_from_a_plain_shell(tmp_path: Path) -> None:
    """docs/usage.md: ``python3 -m testbed.ceph start`` from the checkout's top."""
    p, in_venv = plain(["python3", "-m", "testbed.ceph", "--help"], TOP, tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: python3 -m testbed.ceph"), p.stdout
    assert in_venv == [False, True]


@pytest.mark.parametrize("name", CONSOLE_SCRIPTS)
def test_console_script_from_a_plain_shell(name: str, tmp_path: Path) -> None:
    arg, says = CONSOLE_SCRIPTS[name]
    p, in_venv = plain([str(VENV / "bin" / name), arg], tmp_path, tmp_path)
    assert p.returncode == 0, p.stderr
    assert says in p.stdout + p.stderr, p.stdout + p.stderr
    assert in_venv == [True]


def test_perf_report_plots_from_a_plain_shell(tmp_path: Path) -> None:
    """The issue's run: perf/run measured, then died importing matplotlib.
    --report re-renders a committed run through the same plotting."""
    results = tmp_path / "results"
    results.mkdir()
    for name in ("perf.json", "points.json.xz"):
        shutil.copy(TOP / "perf/results/profile" / name, results)
    p, in_venv = plain([str(TOP / "perf/run"), "--report", "results/perf.json"], tmp_path, tmp_path)
    assert p.returncode == 0, p.stderr
    assert in_venv == [False, True]
    for name in ("perf.md", "throughput.png", "cpu.png", "insn_per_io.png"):
        assert (results / name).stat().st_size > 0, name
    assert (results / "throughput.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def checkout_without_venv(script: str, tmp: Path) -> Path:
    """A checkout of ``script`` and testbed/entry.py alone (and a
    reproducer's common.py, which switches to .venv for it), without .venv."""
    tree = tmp / "checkout"
    first = ["upstream/reproducers/common.py"] if script.startswith("upstream/reproducers/") else []
    for rel in (script, *first, "testbed/__init__.py", "testbed/entry.py"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(TOP / rel, tree / rel)
    return tree


@pytest.mark.parametrize("script", SCRIPTS)
def test_without_the_venv_the_script_says_make_deps(script: str, tmp_path: Path) -> None:
    """Nothing but the script and testbed/entry.py is there, so the script
    (a reproducer through its common.py) must call it before importing
    anything else."""
    tree = checkout_without_venv(script, tmp_path)
    p, in_venv = plain([str(tree / script), "--help"], tmp_path, tmp_path)
    assert p.returncode != 0
    assert not p.stdout
    assert p.stderr.splitlines()[0].endswith(f"{tree / '.venv'} is missing: run `make deps` in {tree} first"), p.stderr
    assert in_venv == [False]


def test_a_broken_venv_is_named_not_re_executed_forever(tmp_path: Path) -> None:
    """.venv/bin/python there, but no pyvenv.cfg: that python is not in .venv either."""
    tree = checkout_without_venv("perf/run", tmp_path)
    (tree / ".venv/bin").mkdir(parents=True)
    (tree / ".venv/bin/python").symlink_to("/usr/bin/python3")
    p, in_venv = plain([str(tree / "perf/run"), "--help"], tmp_path, tmp_path)
    assert p.returncode != 0
    assert p.stderr.endswith(f"{tree / '.venv'} is not a working venv: remove it and run `make deps`\n"), p.stderr
    assert in_venv == [False, False]


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s.startswith("upstream/reproducers/")])
def test_a_reproducer_refuses_what_is_not_a_portal(script: str, tmp_path: Path) -> None:
    """Its first argument is read as cxgbit-ext reads a portal: a
    malformed one is argparse's error (exit 2), naming it."""
    p, _ = plain([str(TOP / script), "fd00:", "198.18.0.1", "iqn.2026-11.org.cxgbit-ext:x"], tmp_path, tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "'fd00:': a portal like" in p.stderr
