"""Text from traces made inert in Markdown: what the Markdown templates' environment applies to
every value it writes (kernel and range names, file names, notes, error messages, answers).

Markdown viewers render raw HTML and start a heading or a list at a line's first character, so
a kernel named ``<img src=x onerror=...>`` or a range name holding ``\\n# Title`` would become
live markup. :func:`escape_markdown` keeps such text on one line, writes HTML characters as
entities and escapes Markdown punctuation; :func:`markdown_value` does so outside the
```code``` spans an answer writes, and fences each span so that nothing inside can close it.
"""
from __future__ import annotations

import re

from markupsafe import Markup

from analysis.core.text import printable

# Characters with a meaning inside a Markdown line: emphasis, code, links, tables, escapes.
INLINE_SPECIAL = re.compile(r"([\\`*_\[\]|])")
# What a value may start with to become a heading, quote or list item. (A run of dashes, a table's
# delimiter cell, is left alone: a value cannot make a line of its own, so it never underlines one.)
BLOCK_START = re.compile(r"^(\s*)(#|>|[-+*](?=\s)|\d+[.)](?=\s|$))")
HTML_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c]+")
CODE_SPAN = re.compile(r"`([^`]+)`")


def _one_line(text) -> str:
    """``text`` on one line, every character that would act rather than show escaped."""
    return LINE_BREAKS.sub(" ", printable(text, one_line=False))


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


def markdown_value(value) -> str:
    """What a Markdown template writes for ``value`` (its ``finalize``): a :class:`Markup` value
    (already Markdown, from a filter) as is; anything else escaped, its ```code``` spans kept."""
    if isinstance(value, Markup):
        return str(value)
    text, parts, last = _one_line(value), [], 0
    for span in CODE_SPAN.finditer(text):
        parts += [escape_markdown(text[last:span.start()]) if last < span.start() else "", markdown_code(span.group(1))]
        last = span.end()
    parts.append(escape_markdown(text[last:]) if last < len(text) or not parts else "")
    return "".join(parts)


def markdown_cell(value) -> Markup:
    """A table cell: the value escaped (``|`` included), marked as already Markdown."""
    return Markup(escape_markdown(value))
