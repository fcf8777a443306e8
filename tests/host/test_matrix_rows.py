"""The VM settings matrix is dealt to the kernels without losing coverage:
tests/vm/test_matrix.py gives each kernel series only its share of the
pairwise rows, so that adding a kernel does not add a matrix. What it must
keep is checked here, on the rows the VM runs."""

from __future__ import annotations

import itertools

from tests.vm import test_matrix as m


def test_every_pair_of_setting_values_runs_on_some_kernel() -> None:
    names = list(m.FACTORS)
    for a, b in itertools.combinations(names, 2):
        seen = {(r[a], r[b]) for r in m.ALL_ROWS}
        missing = set(itertools.product(m.FACTORS[a], m.FACTORS[b])) - seen
        assert not missing, f"{a} x {b}: never run: {sorted(missing, key=str)}"


def test_every_kernel_sees_every_value_and_both_corners() -> None:
    assert len(m.SERIES) >= 2
    for k in m.SERIES:
        mine = [r for r in m.ALL_ROWS if r["Kernel"] == k]
        for name, values in m.FACTORS.items():
            assert {r[name] for r in mine} == set(values), f"{k}: not every {name}"
        for corner in m.CORNERS:
            assert dict(zip(m.FACTORS, corner, strict=True)) in [m.settings(r) for r in mine], f"{k}: corner missing"
    # fewer rows per kernel than the whole array: the point of dealing them
    assert max(sum(r["Kernel"] == k for r in m.ALL_ROWS) for k in m.SERIES) < len(m.PAIRWISE)
