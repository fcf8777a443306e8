"""cxe-initiator on the host: errors a person can act on, multipath config."""

from __future__ import annotations

from pathlib import Path

import pytest

from iscsi_initiator import cli, iscsiadm


def test_login_without_iscsid_says_how_to_start_it(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(iscsiadm, "iscsid_running", lambda: False)
    assert cli.main(["login", "--portal", "198.18.0.1"]) == 1
    assert "iscsid is not running: start it" in capsys.readouterr().err


def test_netdev_needs_an_iface(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["login", "--portal", "198.18.0.1", "--netdev", "ini0"])
    assert e.value.code == 2 and "--netdev needs --iface" in capsys.readouterr().err


def test_multipath_conf_groups_lio_paths_and_keeps_a_foreign_file(tmp_path: Path, capsys) -> None:
    conf = tmp_path / "multipath.conf"
    conf.write_text("defaults { }\n")
    assert cli.main(["multipath-conf", "--file", str(conf)]) == 0
    text = conf.read_text()
    assert 'vendor "LIO-ORG"' in text and "path_grouping_policy multibus" in text
    assert (tmp_path / "multipath.conf.bak").read_text() == "defaults { }\n"
    # braces balance: multipathd rejects the file otherwise
    assert text.count("{") == text.count("}")
