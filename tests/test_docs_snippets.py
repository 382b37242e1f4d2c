"""Every Python snippet of the README, the model card and docs/ runs as written, and every link
between those pages leads to a file and a heading that exist.

The snippets of one page run in order in one namespace (a page is read top to bottom, so a later
snippet may use what an earlier one defined), from an empty folder. Signature listings are
fenced ``text``, not ``python``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", REPO / "vjboost" / "models" / "README.md",
         *sorted((REPO / "docs").glob("*.md"))]

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

# pages whose snippets train or run long examples (several seconds each)
_SLOW = {"docs/reservoir.md", "docs/sampling.md", "docs/boosting.md", "docs/online.md"}


def snippets(page: Path) -> list[tuple[int, str]]:
    """``(line, code)`` of every fenced ``python`` block of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def _params():
    out = []
    for page in PAGES:
        name = str(page.relative_to(REPO))
        if snippets(page):
            marks = [pytest.mark.slow] if name in _SLOW else []
            out.append(pytest.param(page, id=name, marks=marks))
    return out


def test_pages_have_snippets():
    names = [p.id for p in _params()]
    assert "README.md" in names and "vjboost/models/README.md" in names
    assert sum(len(snippets(p)) for p in PAGES) >= 20


@pytest.mark.parametrize("page", _params())
def test_page_snippets_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    import matplotlib

    matplotlib.use("Agg")
    namespace = {"__name__": "__snippet__"}
    for line, code in snippets(page):
        where = f"{page.relative_to(REPO)}:{line}"
        exec(compile(code, where, "exec"), namespace)


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them (lower case, punctuation but
    hyphens dropped, spaces to hyphens)."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        m = re.match(r"#+\s+(.*)", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


def test_anchors_follow_githubs_rule(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n## A detection verifier (`--verifier`)\n"
                    "### Late stages: why the windows double, and what a window costs\n"
                    "text # not a heading\n", encoding="utf-8")
    assert _anchors(page) == {"title", "a-detection-verifier---verifier",
                              "late-stages-why-the-windows-double-and-what-a-window-costs"}


def test_links_between_pages_lead_somewhere():
    broken, n = [], 0
    for page in PAGES:
        for m in _LINK.finditer(page.read_text(encoding="utf-8")):
            link = m.group(1)
            if link.startswith(("http://", "https://", "mailto:")):
                continue
            n += 1
            target, _, anchor = link.partition("#")
            path = (page.parent / target).resolve() if target else page
            where = f"{page.relative_to(REPO)}: {link}"
            if not path.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{where} (no such heading)")
    assert n > 100
    assert not broken, "\n".join(broken)
