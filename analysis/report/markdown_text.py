"""Text from traces made inert in Markdown: the filters the Markdown templates apply to every
string that comes from a trace or a results file (kernel and range names, file names, notes,
error messages).

Markdown viewers render raw HTML and start a heading or a list at a line's first character, so
a kernel named ``<img src=x onerror=...>`` or a range name holding ``\\n# Title`` would become
live markup. :func:`escape_markdown` keeps such text on one line and escapes what a viewer
would interpret; :func:`markdown_code` wraps text in a code span that nothing inside can close.
"""
from __future__ import annotations

import re

# Characters with a meaning inside a Markdown line: emphasis, code, links, tables, escapes.
INLINE_SPECIAL = re.compile(r"([\\`*_\[\]|])")
# What a line may start with to become a heading, quote, list item or rule.
BLOCK_START = re.compile(r"^(\s*)([#>+\-=~]|\d+[.)])")
HTML_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c]+")


def _one_line(text) -> str:
    return LINE_BREAKS.sub(" ", "" if text is None else str(text))


def escape_markdown(text) -> str:
    """``text`` as literal Markdown: one line, HTML characters as entities, Markdown punctuation
    backslash-escaped, and no heading, list or quote marker at its start."""
    line = INLINE_SPECIAL.sub(r"\\\1", _one_line(text))
    line = "".join(HTML_ENTITIES.get(char, char) for char in line)
    return BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2), line)


def markdown_code(text) -> str:
    """``text`` as an inline code span (shown verbatim, never interpreted), on one line."""
    line = _one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") or not line.strip() else ""
    return f"{fence}{pad}{line}{pad}{fence}"
