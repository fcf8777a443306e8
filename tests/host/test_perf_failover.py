"""perf/failoverlib.py: the trials' order, nearest-rank percentiles, the table."""

from __future__ import annotations

import pytest

from perf import failoverlib

# two entries as testbed/scaleout's initiator recorded them (user:rbd, 6.1 and 6.12)
DISABLE = {"failure": "TPG disabled", "gateway": 1, "io_moved_after_s": 8.5, "failed_back_after_s": 25.9}
CUT = {"failure": "cluster link cut", "gateway": 1, "io_moved_after_s": 28.4, "fenced_after_s": 29.2,
       "newer_data_written_after_s": 29.3, "failed_back_after_s": 60.0, "stale_write_fenced": True}  # fmt: skip


def test_trials_interleave_the_kinds() -> None:
    assert failoverlib.order(["disable", "cut"], 3) == ["disable", "cut"] * 3


@pytest.mark.parametrize(("kinds", "trials"), [(["disable", "bogus"], 1), (["cut", "cut"], 2), ([], 1), (["kill"], 0)])
def test_bad_kinds_or_trials_are_refused(kinds: list[str], trials: int) -> None:
    with pytest.raises(ValueError):
        failoverlib.order(kinds, trials)


def test_percentiles_are_nearest_rank_values_a_trial_measured() -> None:
    values = [float(v) for v in range(1, 21)]  # 20 trials: 1..20 s
    assert failoverlib.percentile(values, 50) == 10.0
    assert failoverlib.percentile(values, 95) == 19.0
    assert failoverlib.percentile(values[::-1], 95) == 19.0
    assert failoverlib.percentile([7.5], 95) == 7.5
    with pytest.raises(ValueError):
        failoverlib.percentile([], 50)


def test_rows_per_kind_and_the_bound() -> None:
    failovers = [DISABLE, CUT, {**DISABLE, "io_moved_after_s": 9.5}, {**CUT, "io_moved_after_s": 12.0}]
    disable, cut = failoverlib.summarize(failovers, ["disable", "cut"])
    assert (disable.trials, disable.p50, disable.p95, disable.max) == (2, 8.5, 9.5, 9.5)
    assert disable.within and disable.fenced_p50 is None and disable.failback_p50 == 25.9
    assert (cut.p50, cut.p95, cut.max, cut.fenced_p50) == (12.0, 28.4, 28.4, 29.2)
    assert not cut.within
    md = failoverlib.render([disable, cut], {"command": "perf/failover --trials 2", "kernel": "6.12",
                                             "backstore": "user:rbd", "gateways": 2, "commit": "abc1234",
                                             "date": "2026-12-01", "wall_s": 600})  # fmt: skip
    assert "| TPG disabled | 2 | 8.5 s | 9.5 s | 9.5 s | yes | 25.9 s | - | 0 |" in md
    assert "| cluster link cut | 2 | 12.0 s | 28.4 s | 28.4 s | **no** | 60.0 s | 29.2 s | 0 |" in md
    assert "started again" not in md


def test_tcmu_runner_deaths_are_counted_per_kind_and_explained() -> None:
    # an entry recorded before the gateways kept tcmu-runner has no list
    crash = {"gateway": 1, "how": "signal 11 (SIGSEGV)"}
    failovers = [DISABLE, {**CUT, "tcmu_runner_died": [crash]}, {**CUT, "tcmu_runner_died": [crash, crash]}]
    disable, cut = failoverlib.summarize(failovers, ["disable", "cut"])
    assert (disable.tcmu_deaths, cut.tcmu_deaths) == (0, 3)
    md = failoverlib.render([disable, cut], {"command": "perf/failover", "kernel": "6.12", "backstore": "user:rbd",
                                             "gateways": 2, "commit": "abc1234", "date": "2026-12-02",
                                             "wall_s": 600})  # fmt: skip
    assert "| cluster link cut | 2 | 28.4 s | 28.4 s | 28.4 s | **no** | 60.0 s | 29.2 s | 3 |" in md
    assert "started again a second later" in md


def test_a_kind_without_a_trial_is_an_error() -> None:
    with pytest.raises(ValueError, match="no trial of kill"):
        failoverlib.summarize([DISABLE], ["disable", "kill"])
