"""Every relative link and #anchor in README.md and docs/ resolves, as GitHub renders them.

A link's file must exist in the repository (a moved module or page fails here), and its
anchor must be the slug of a heading of the target page by GitHub's rules (github-slugger:
lower case, every character that is not a letter, digit, space, '-' or '_' dropped, spaces
to '-', a repeated slug numbered -1, -2, ...). Links inside code are not links.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 250

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
LINK = re.compile(r"!?\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(?P<text>.+?)\s*#*\s*$", re.MULTILINE)
EXTERNAL = ("http://", "https://", "mailto:")


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def without_code(text: str) -> str:
    """The text with fenced blocks and code spans blanked (their length kept)."""
    text = FENCE.sub(lambda m: " " * len(m.group(0)), text)
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's Markdown text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts as its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = "".join(c for c in text.lower() if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a page, numbered as GitHub numbers repeats."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    for match in HEADING.finditer(text):
        base = slug(match.group("text"))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """Each link of the page that does not resolve, with the reason."""
    problems: list[str] = []
    for match in LINK.finditer(without_code(page.read_text(encoding="utf-8"))):
        target = match.group("target")
        if target.startswith(EXTERNAL):
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(root)}: ({target})"
        if not dest.exists():
            problems.append(f"{where}: no such file {path_part}")
        elif anchor and dest.suffix != ".md":
            problems.append(f"{where}: an anchor into a file that is not Markdown")
        elif anchor and anchor not in anchors(dest):
            problems.append(f"{where}: no heading with anchor #{anchor} in {dest.name}")
    return problems


@pytest.mark.parametrize("page", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_readme_stays_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move detail into docs/"
    )


def test_every_docs_page_is_reachable_from_the_index() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    linked = {
        (ROOT / "docs" / m.group("target").partition("#")[0]).resolve()
        for m in LINK.finditer(without_code(index))
    }
    pages = {p.resolve() for p in doc_files()[1:] if p.name != "README.md"}
    missing = sorted(str(p.relative_to(ROOT)) for p in pages - linked)
    assert missing == [], f"docs/README.md does not link {missing}"


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        (
            "SONiC output, validated against SONiC's YANG models",
            "sonic-output-validated-against-sonics-yang-models",
        ),
        ("Logs (`dpctl lab logs`)", "logs-dpctl-lab-logs"),
        (
            "The planned restarts that failed on 6.12 (2026-12-04)",
            "the-planned-restarts-that-failed-on-612-2026-12-04",
        ),
        (
            "2026-12-01: dual-ARP with graceful restart rendered",
            "2026-12-01-dual-arp-with-graceful-restart-rendered",
        ),
        ("A -- B", "a----b"),
        ("`dpctl_gpu_nic.py` and **bold**", "dpctl_gpu_nicpy-and-bold"),
        ("Load 2× line rate", "load-2-line-rate"),
    ],
)
def test_slug_follows_githubs_rules(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_a_broken_file_or_anchor_is_reported(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Page A\n\n## Drain and undrain\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/a.md#drain-and-undrain) [gone](docs/b.md) [bad](docs/a.md#drain)\n"
        "[self](#title) `[code](docs/c.md)` [web](https://example.com/x)\n\n# Title\n"
    )
    assert broken_links(page, tmp_path) == [
        "README.md: (docs/b.md): no such file docs/b.md",
        "README.md: (docs/a.md#drain): no heading with anchor #drain in a.md",
    ]


def test_repeated_headings_are_numbered(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# Notes\n\n## Notes\n\n```\n# not a heading\n```\n\n## Notes\n")
    assert anchors(page) == {"notes", "notes-1", "notes-2"}
