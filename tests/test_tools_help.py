"""tools/*.py --help: each tool describes itself by its docstring's whole first paragraph."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"
SCRIPTS = sorted(p for p in TOOLS.glob("*.py") if not p.name.startswith("_"))

pytestmark = pytest.mark.slow  # one python start per tool: about 15 s in all


def first_paragraph(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text()))
    assert doc, f"{path.name} has no module docstring"
    return " ".join(doc.split("\n\n")[0].split())


def test_description_joins_the_first_paragraph():
    sys.path.insert(0, str(TOOLS))
    try:
        from _cli import description
    finally:
        sys.path.remove(str(TOOLS))
    doc = "\nA title that\n  runs on.\n\nDetails.\n"
    assert description(doc) == "A title that runs on."
    assert description("One line.") == "One line."


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_help_shows_the_whole_first_paragraph(path):
    # a wide terminal: argparse wraps the description at COLUMNS
    env = dict(os.environ, COLUMNS="10000")
    r = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    # usage, then the description, each a block of its own
    blocks = r.stdout.split("\n\n")
    assert blocks[0].startswith("usage:")
    shown = " ".join(blocks[1].split())
    assert shown == first_paragraph(path)
    assert shown.endswith((".", ")", "]", "?")), shown
