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


# The archive as apt saw it on 2026-11-28 (apt-cache madison of the kernel
# packages): linux-headers-6.1.0-57-amd64 and its -unsigned image were out,
# the signed image was not yet.
RECORDED = (TOP / "tests/host/data/bookworm-2026-11-28.madison").read_text().splitlines()
SEC = "http://deb.debian.org/debian-security bookworm-security/main amd64 Packages"


def plan(lines: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    listing = tmp_path / "madison"
    listing.write_text("\n".join(lines) + "\n")
    return run("plan", "--listing", str(listing))


def drop(*names: str) -> list[str]:
    """The recorded listing without the lines of these packages (at the versions given as pkg=ver)."""

    def hit(line: str) -> bool:
        pkg, ver = (p.strip() for p in line.split("|")[:2])
        return any(n in (pkg, f"{pkg}={ver}") for n in names)

    return [ln for ln in RECORDED if not hit(ln)]


def line(pkg: str, ver: str) -> str:
    return f"{pkg} | {ver} | {SEC}"


def chosen(p: subprocess.CompletedProcess[str]) -> dict[str, list[str]]:
    assert p.returncode == 0, p.stderr
    return {ln.split()[0]: ln.split()[1:] for ln in p.stdout.splitlines()}


def test_headers_ahead_of_the_signed_image_take_the_unsigned_image(tmp_path: Path) -> None:
    p = plan(RECORDED, tmp_path)
    got = chosen(p)
    assert got["6.1.0-57-amd64"] == [
        "linux-image-6.1.0-57-amd64-unsigned=6.1.192-3",
        "linux-headers-6.1.0-57-amd64=6.1.192-3",
        "linux-source-6.1=6.1.192-3",
    ]
    assert got["6.12.117+deb12-amd64"][0] == "linux-image-6.12.117+deb12-amd64=6.12.117-1~deb12u1"
    assert "signed linux-image-6.1.0-57-amd64 6.1.192-3 is not in the archive yet" in p.stderr


def test_the_signed_image_is_taken_once_published(tmp_path: Path) -> None:
    got = chosen(plan([*RECORDED, line("linux-image-6.1.0-57-amd64", "6.1.192-3")], tmp_path))
    assert got["6.1.0-57-amd64"][0] == "linux-image-6.1.0-57-amd64=6.1.192-3"


def test_headers_without_any_image_fall_back_to_the_release_before(tmp_path: Path) -> None:
    p = plan(drop("linux-image-6.1.0-57-amd64-unsigned"), tmp_path)
    assert chosen(p)["6.1.0-56-amd64"][0] == "linux-image-6.1.0-56-amd64=6.1.192-2"
    assert "passed over 6.1.0-57-amd64 6.1.192-3: headers without an image" in p.stderr


def test_source_ahead_of_the_image_installs_the_kernels_version(tmp_path: Path) -> None:
    p = plan([line("linux-source-6.12", "6.12.119-1~deb12u1"), *RECORDED], tmp_path)
    assert chosen(p)["6.12.117+deb12-amd64"][2] == "linux-source-6.12=6.12.117-1~deb12u1"


def test_source_of_the_kernels_version_gone_picks_the_newest_release_that_matches(tmp_path: Path) -> None:
    lines = [line("linux-source-6.12", "6.12.119-1~deb12u1"), *drop("linux-source-6.12=6.12.117-1~deb12u1")]
    p = plan(lines, tmp_path)
    assert chosen(p)["6.12.115+deb12-amd64"] == [
        "linux-image-6.12.115+deb12-amd64=6.12.115-2~deb12u1",
        "linux-headers-6.12.115+deb12-amd64=6.12.115-2~deb12u1",
        "linux-source-6.12=6.12.115-2~deb12u1",
    ]
    assert "passed over 6.12.117+deb12-amd64 6.12.117-1~deb12u1: linux-source-6.12 has" in p.stderr


def test_source_of_the_same_upstream_version_is_used_and_said(tmp_path: Path) -> None:
    lines = [line("linux-source-6.1", "6.1.192-4"), *drop("linux-source-6.1=6.1.192-3")]
    p = plan(lines, tmp_path)
    assert chosen(p)["6.1.0-57-amd64"][2] == "linux-source-6.1=6.1.192-4"
    assert "linux-source-6.1 6.1.192-3 is not in the archive: 6.1.192-4 is the same upstream version" in p.stderr


def test_old_abis_dropped_from_the_archive(tmp_path: Path) -> None:
    old = [
        f"linux-{k}-6.1.0-{n}-amd64{u}" for k in ("image", "headers") for n in (54, 55, 56) for u in ("", "-unsigned")
    ]
    assert set(chosen(plan(drop(*old), tmp_path))) == {"6.1.0-57-amd64", "6.12.117+deb12-amd64"}


def test_a_series_missing_from_the_archive_names_the_package(tmp_path: Path) -> None:
    p = plan([ln for ln in RECORDED if "6.12" not in ln], tmp_path)
    assert p.returncode == 1
    assert "no 6.12 kernel in the apt archive: no package matches linux-headers-6.12.N+deb12-amd64" in p.stderr


def test_linux_source_missing_is_named(tmp_path: Path) -> None:
    p = plan(drop("linux-source-6.1"), tmp_path)
    assert p.returncode == 1 and "linux-source-6.1 is not in the apt archive" in p.stderr


def test_no_release_of_one_version_says_what_each_lacked(tmp_path: Path) -> None:
    p = plan(
        [ln for ln in RECORDED if not ln.startswith("linux-source-6.1 ")] + [line("linux-source-6.1", "6.1.200-1")],
        tmp_path,
    )
    assert p.returncode == 1
    assert "no 6.1 release has an image, its headers and linux-source-6.1 of one version" in p.stderr
    assert "6.1.0-57-amd64 6.1.192-3: linux-source-6.1 has 6.1.200-1, none of upstream 6.1.192" in p.stderr


def test_available_lists_the_plans_releases(tmp_path: Path) -> None:
    listing = tmp_path / "madison"
    listing.write_text("\n".join(RECORDED) + "\n")
    p = run("available", "--listing", str(listing))
    assert p.returncode == 0 and p.stdout.split() == ["6.1.0-57-amd64", "6.12.117+deb12-amd64"]
