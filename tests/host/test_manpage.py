"""docs/cxgbit-ext.1 documents every command and option of the CLI's parser.

The parser (cxgbit_ext.cli.parser) is walked: each subcommand, and each
value of a positional with choices (``topology create``), needs an entry in
COMMANDS (a ``.TP`` whose tag starts with it); each option of a command,
and each value of an option with choices, must appear in that command's
entries; the top-level options in OPTIONS. Options the parser hides
(argparse.SUPPRESS) and each command's -h/--help are left out. The other
way, an option the page names in COMMANDS or OPTIONS must be one the parser
has. The last tests take pieces out of the page and check that the checks
notice.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cxgbit_ext import cli

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cxgbit-ext.1"
# macros whose arguments alternate fonts and are printed without spaces between them
ALTERNATING = {"BI", "BR", "IB", "IR", "RB", "RI"}
ESCAPES = {r"\-": "-", r"\(aq": "'", r"\(dq": '"', r"\e": "\\", r"\%": "", r"\&": ""}


def plain(line: str) -> str:
    """The text a roff line prints, near enough: fonts and escapes dropped."""
    line = re.sub(r"\\f[BIRP]", "", line)
    if line.startswith("."):
        name, _, rest = line[1:].partition(" ")
        args = [word or quoted for quoted, word in re.findall(r'"((?:[^"]|"")*)"|(\S+)', rest)]
        line = ("" if name in ALTERNATING else " ").join(args)
    for esc, text in ESCAPES.items():
        line = line.replace(esc, text)
    return line


def sections(page: str) -> dict[str, list[str]]:
    """The page's raw lines by .SH heading."""
    out: dict[str, list[str]] = {}
    cur: list[str] = []
    for line in page.splitlines():
        if line.startswith(".SH "):
            cur = out.setdefault(plain(line), [])
        else:
            cur.append(line)
    return out


def entries(lines: list[str]) -> list[tuple[str, str]]:
    """(tag, text) of each outermost .TP entry; nested ones (.RS) are text."""
    out: list[tuple[str, list[str]]] = []
    depth, tag_next = 0, False
    for line in lines:
        if line.startswith(".RS"):
            depth += 1
        elif line.startswith(".RE"):
            depth -= 1
        if tag_next:
            out.append((plain(line), [plain(line)]))
            tag_next = False
        elif line.startswith(".TP") and depth == 0:
            tag_next = True
        elif out and not line.startswith('.\\"'):
            out[-1][1].append(plain(line))
    return [(tag, "\n".join(text)) for tag, text in out]


def has(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def shown(action: argparse.Action) -> bool:
    return action.help != argparse.SUPPRESS and not isinstance(action, argparse._HelpAction)


def commands(p: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """("adapters create", its parser), ... for every subcommand, depth first."""
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield " ".join((*path, name)), sub
                yield from commands(sub, (*path, name))


def missing(page: str) -> list[str]:
    """What the parser has that the page does not document where it should."""
    secs = sections(page)
    ents = entries(secs.get("COMMANDS", []))
    gone: list[str] = []

    def under(cmd: str) -> list[str]:
        return [text for tag, text in ents if tag == cmd or tag.startswith(cmd + " ")]

    for cmd, p in commands(cli.parser()):
        texts = under(cmd)
        if not texts:
            gone.append(cmd)
            continue
        text = "\n".join(texts)
        for a in filter(shown, p._actions):
            if isinstance(a, argparse._SubParsersAction):
                continue
            if not a.option_strings:
                gone += [f"{cmd} {c}" for c in a.choices or () if not under(f"{cmd} {c}")]
                continue
            gone += [f"{cmd} {o}" for o in a.option_strings if not has(text, o)]
            gone += [f"{cmd} {a.option_strings[0]} {c}" for c in a.choices or () if not has(text, str(c))]
    options = "\n".join(plain(ln) for ln in secs.get("OPTIONS", []))
    top = [o for a in cli.parser()._actions if a.help != argparse.SUPPRESS for o in a.option_strings]
    gone += [o for o in top if not has(options, o)]
    return gone


def unknown(page: str) -> list[str]:
    """Options the page names in COMMANDS or OPTIONS that no parser has."""
    ap = cli.parser()
    known = {o for p in (ap, *(sub for _, sub in commands(ap))) for a in p._actions for o in a.option_strings}
    secs = sections(page)
    text = "\n".join(plain(ln) for ln in secs.get("COMMANDS", []) + secs.get("OPTIONS", []))
    return sorted(set(re.findall(r"(?<![\w-])--?[a-z][\w-]*", text)) - known)


@pytest.fixture(scope="module")
def page() -> str:
    return PAGE.read_text()


def test_every_command_and_option_is_in_the_man_page(page: str) -> None:
    assert missing(page) == []


def test_the_man_page_names_no_option_the_cli_lacks(page: str) -> None:
    assert unknown(page) == []


def test_the_walk_sees_the_commands_and_options_there_are() -> None:
    """Guards the walk itself: were it to find nothing, the tests above would pass on any page."""
    cmds = dict(commands(cli.parser()))
    assert {"status", "adapters create", "counters", "topology", "gateway"} <= set(cmds)
    assert "--watch" in {o for a in cmds["counters"]._actions for o in a.option_strings}


def _without_entry(page: str, cmd: str) -> str:
    """The page with the .TP and the tag line of each entry of ``cmd`` taken out."""
    lines, out = page.splitlines(), []
    skip = 0
    for i, line in enumerate(lines):
        if skip:
            skip -= 1
            continue
        nxt = plain(lines[i + 1]) if i + 1 < len(lines) else ""
        if line.startswith(".TP") and (nxt == cmd or nxt.startswith(cmd + " ")):
            skip = 1
            continue
        out.append(line)
    return "\n".join(out)


def test_a_page_missing_any_option_fails(page: str) -> None:
    ap = cli.parser()
    for cmd, p in commands(ap):
        for a in filter(shown, p._actions):
            for o in a.option_strings:
                # as the page writes it: \-\-watch, maybe right after a font change
                roff = re.escape(o.replace("-", "\\-"))
                cut = re.sub(rf"(?:(?<=\\f[BIRP])|(?<![\w-])){roff}(?![\w-])", "", page)
                assert f"{cmd} {o}" in missing(cut), (cmd, o)
    assert "--json" in missing(page.replace(r"\-\-json", ""))


def test_a_page_missing_any_command_fails(page: str) -> None:
    for cmd, _ in commands(cli.parser()):
        assert cmd in missing(_without_entry(page, cmd)), cmd
    assert "topology delete" in missing(_without_entry(page, "topology delete"))
    assert "gateway --backstore user:rbd" in missing(page.replace("user:rbd", "rbd"))


def test_a_page_naming_an_option_the_cli_lacks_fails(page: str) -> None:
    assert unknown(page.replace(r".BI \-\-count", r".BI \-\-count\-to")) == ["--count-to"]
