"""What the tools share on their command line."""

from __future__ import annotations

import re


def description(doc: str) -> str:
    """A tool's ``--help`` description: the first paragraph of its module docstring ``doc`` (up
    to the first blank line), joined into one line.

    >>> description('''Benchmark: a long title that runs
    ... onto a second line.
    ...
    ... Details.''')
    'Benchmark: a long title that runs onto a second line.'
    """
    return " ".join(re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0].split())
