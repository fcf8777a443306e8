"""scripts/kernels maps the series in kernels.conf to Debian releases."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
SCRIPT = TOP / "scripts/kernels"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True)


@pytest.mark.parametrize(
    ("release", "series"),
    [("6.1.0-56-amd64", "6.1"), ("6.1.0-9-amd64", "6.1"), ("6.12.117+deb12-amd64", "6.12")],
)
def test_series_of_release(release: str, series: str) -> None:
    p = run("series", release)
    assert p.returncode == 0 and p.stdout.strip() == series


@pytest.mark.parametrize("release", ["6.1.0-56-cloud-amd64", "6.12.117+deb12-rt-amd64", "6.10.1-amd64", "6.1"])
def test_other_flavours_and_series_are_refused(release: str) -> None:
    p = run("series", release)
    assert p.returncode == 1 and "not a release of a series" in p.stderr


def test_installed_gives_one_release_per_series() -> None:
    series = [ln for ln in (TOP / "kernels.conf").read_text().splitlines() if ln and not ln.startswith("#")]
    p = run("installed")
    if p.returncode != 0:
        pytest.skip(f"no kernels installed on this machine (make deps): {p.stderr.strip()}")
    releases = p.stdout.split()
    assert [run("series", r).stdout.strip() for r in releases] == series
    for r in releases:
        assert Path(f"/boot/vmlinuz-{r}").exists()
