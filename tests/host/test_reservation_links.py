"""The module's reservations/ links, read and removed by the TPG each
points to (LIO's configfs stood in by a directory tree): what
``linked_targets`` lists is what ``unlink_target`` removes, whatever a
link is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from cxgbit_ext import reservations

A = "iqn.2026-11.org.cxgbit-ext:gw"
# a legal IQN whose links' names begin with one of A's
B = f"{A}:tpgt_1"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    lio, links = tmp_path / "iscsi", tmp_path / "reservations"
    for iqn in (A, B):
        for tpg in ("tpgt_1", "tpgt_2"):
            (lio / iqn / tpg).mkdir(parents=True)
    links.mkdir()
    return lio, links


def test_link_lists_and_unlinks_one_target(tree: tuple[Path, Path]) -> None:
    lio, links = tree
    made = reservations.link_target(A, links, lio)
    assert [p.resolve() for p in made] == [lio / A / "tpgt_1", lio / A / "tpgt_2"]
    assert reservations.linked_targets(links) == [A]
    reservations.unlink_target(A, links)
    assert reservations.linked_targets(links) == []
    assert list(links.iterdir()) == []


def test_unlinking_a_target_leaves_one_whose_name_begins_with_its_own(tree: tuple[Path, Path]) -> None:
    lio, links = tree
    reservations.link_target(A, links, lio)
    reservations.link_target(B, links, lio)
    reservations.unlink_target(A, links)
    assert reservations.linked_targets(links) == [B]
    assert sorted(p.resolve() for p in links.iterdir()) == [lio / B / "tpgt_1", lio / B / "tpgt_2"]


def test_a_link_made_by_hand_is_listed_and_unlinked(tree: tuple[Path, Path]) -> None:
    lio, links = tree
    (links / "by-hand").symlink_to(lio / A / "tpgt_2")
    assert reservations.linked_targets(links) == [A]
    # linking again keeps the TPG linked once, under whatever name it has
    reservations.link_target(A, links, lio)
    assert sorted(p.resolve() for p in links.iterdir()) == [lio / A / "tpgt_1", lio / A / "tpgt_2"]
    reservations.unlink_target(A, links)
    assert reservations.linked_targets(links) == []
    assert list(links.iterdir()) == []


def test_linking_a_target_with_no_tpg_is_refused(tree: tuple[Path, Path]) -> None:
    lio, links = tree
    with pytest.raises(reservations.AgentError, match=r"no target iqn\.2026-11\.org\.none "):
        reservations.link_target("iqn.2026-11.org.none", links, lio)
    assert list(links.iterdir()) == []
