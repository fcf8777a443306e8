"""testbed/follow.py: a build's log copied, line by line with its time,
while the build writes it."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

from testbed.follow import Follow

STAMPED = re.compile(r"^ +\d+\.\d (.*)$")


def lines_of(log: io.StringIO) -> list[str]:
    return log.getvalue().splitlines()


def test_lines_are_copied_while_the_file_grows(tmp_path: Path) -> None:
    make_log = tmp_path / "a/build/make.log"
    make_log.parent.mkdir(parents=True)
    log = io.StringIO()
    with Follow(str(tmp_path / "*/build/make.log"), log, time.monotonic(), interval=0.05), make_log.open("a") as f:
        f.write("  CC [M]  cxe_bhs.o\n  CC [M]  cxe_")
        f.flush()
        deadline = time.monotonic() + 5
        while "cxe_bhs.o" not in log.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        # seen before the block ends, and a half-written line is held back
        assert "cxe_bhs.o" in log.getvalue()
        assert "cxe_rx.o" not in log.getvalue()
        f.write("rx.o\n  LD [M]  cxgbit_ext.o")
    got = lines_of(log)
    assert got[0] == f"# {make_log}"
    assert [STAMPED.match(ln).group(1) for ln in got[1:]] == [  # type: ignore[union-attr]
        "  CC [M]  cxe_bhs.o",
        "  CC [M]  cxe_rx.o",
        "  LD [M]  cxgbit_ext.o",  # the last line, without its newline, at the end
    ]


def test_a_file_written_anew_is_read_from_its_start(tmp_path: Path) -> None:
    first, second = tmp_path / "0.3.0.log", tmp_path / "0.2.0.log"
    first.write_text("first build, line 1\nfirst build, line 2\n")
    log = io.StringIO()
    follow = Follow(str(tmp_path / "*.log"), log, time.monotonic(), interval=60)
    follow.read()
    first.write_text("next\n")  # shorter: dkms's next build of that version
    second.write_text("another version\n")
    follow.read()
    got = [ln if ln.startswith("#") else STAMPED.match(ln).group(1) for ln in lines_of(log)]  # type: ignore[union-attr]
    assert got == [
        f"# {first}",
        "first build, line 1",
        "first build, line 2",
        f"# {second}",
        "another version",
        f"# {first}",
        "next",
    ]


def test_no_matching_file_writes_nothing(tmp_path: Path) -> None:
    log = io.StringIO()
    with Follow(str(tmp_path / "none/*.log"), log, time.monotonic(), interval=0.01):
        time.sleep(0.05)
    assert log.getvalue() == ""


def test_only_what_is_written_during_the_block_is_copied(tmp_path: Path) -> None:
    """A build's make.log left from an earlier command (the install's, when
    the remove runs) is not copied again with the new command's times; a
    build that replaces it (dkms removes its build directory first) is
    read from its start, even once longer than the old one."""
    make_log = tmp_path / "make.log"
    make_log.write_text("the install's build\n")
    log = io.StringIO()
    with Follow(str(make_log), log, time.monotonic(), interval=60) as follow:
        with make_log.open("a") as f:
            f.write("appended while following\n")
        follow.read()
        make_log.unlink()
        make_log.write_text("a new build, line 1, longer than all before it together\n")
    got = [ln if ln.startswith("#") else STAMPED.match(ln).group(1) for ln in lines_of(log)]  # type: ignore[union-attr]
    assert got == [
        f"# {make_log}",
        "appended while following",
        f"# {make_log}",
        "a new build, line 1, longer than all before it together",
    ]
