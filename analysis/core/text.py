"""Numbers and kernel names as the answer sentences write them (the JSON keeps exact values), and
the one sanitiser of text from traces and file names on its way to a terminal or a page."""
from __future__ import annotations

import re

from analysis.core import kernel_names

# Characters that act instead of showing: C0/C1 controls (ESC starts terminal sequences, BEL
# rings), DEL, and the bidirectional marks, embeddings, overrides and isolates that reorder text.
ACTING = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
UNSAFE_ON_A_PAGE = re.compile(f"[{ACTING}]")
UNSAFE_ON_A_LINE = re.compile(f"[{ACTING}\n\u2028\u2029]")


def printable(text, one_line: bool = True) -> str:
    """``text`` with every character that would act rather than show written as its escape
    (``\\x1b``, ``\\u202e``): trace content or a file name can then neither move a terminal's
    cursor, set its title or reorder what follows; with ``one_line`` (terminal lines) line breaks
    are escaped too, so it cannot start a line of its own. Tabs stay."""
    pattern = UNSAFE_ON_A_LINE if one_line else UNSAFE_ON_A_PAGE
    return pattern.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), str(text))


# The answer first: a page's lead is at most this many words in at most this many sentences.
LEAD_WORDS = 100
LEAD_SENTENCES = 3
# A sentence ends at a full stop, question or exclamation mark followed by a space and a capital,
# a digit, a backtick or an opening bracket (not inside ``1.5×`` or a kernel name).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`(])")


def ms(value_ms: float) -> str:
    """``38.26 ms``, ``412 µs``: about three significant figures."""
    if abs(value_ms) < 1:
        return f"{value_ms * 1000:.3g} µs"
    return f"{value_ms:.2f} ms" if abs(value_ms) < 100 else f"{value_ms:,.0f} ms"


def ms_span(values) -> str:
    """``8.83 ms–67.38 ms`` from the lowest to the highest of ``values`` (ms), one value when they
    print alike."""
    low, high = ms(min(values)), ms(max(values))
    return low if low == high else f"{low}–{high}"


def signed_ms(delta_ms: float) -> str:
    """``+1.20 ms``, ``−412 µs``: a change in ms with its sign."""
    return ("+" if delta_ms >= 0 else "−") + ms(abs(delta_ms))


def pct(fraction: float) -> str:
    """``45.7%`` from 0.457."""
    return f"{fraction * 100:.1f}%"


def count(value: float) -> str:
    """Whole counts without decimals, fractional counts with one."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def with_article(noun: str) -> str:
    """``a gemm kernel``, ``an elementwise kernel``: the indefinite article by the first letter."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def plural(value: float, noun: str) -> str:
    """``1 call``, ``73 calls``, ``1.5 calls``."""
    return f"{count(value)} {noun}" if value == 1 else f"{count(value)} {noun}s"


def kernel_label(demangled: str) -> str:
    """A kernel's label (:func:`analysis.core.kernel_names.kernel_label`) in backticks, for a sentence."""
    return f"`{kernel_names.kernel_label(demangled)}`"


def kernel_cell(demangled: str) -> str:
    """A kernel's label for a table cell (:func:`analysis.core.kernel_names.kernel_label`)."""
    return kernel_names.kernel_label(demangled)


def lead_and_details(answer: str) -> tuple[str, str]:
    """An answer split into its lead and the rest. A writer marks its lead as the first paragraph
    (a blank line after it); without one, the lead is the longest run of leading sentences within
    :data:`LEAD_WORDS` words and :data:`LEAD_SENTENCES` sentences (at least the first sentence)."""
    first, _, rest = answer.strip().partition("\n\n")
    if rest:
        return first.strip(), rest.strip()
    sentences = SENTENCE_END.split(first)
    taken, words = 1, len(sentences[0].split())
    while taken < min(len(sentences), LEAD_SENTENCES) and words + len(sentences[taken].split()) <= LEAD_WORDS:
        words += len(sentences[taken].split())
        taken += 1
    return " ".join(sentences[:taken]), " ".join(sentences[taken:])


def answer_text(lead: list[str], details: list[str]) -> str:
    """An answer with its lead marked: the ``lead`` sentences (conclusions first) that fit in
    :data:`LEAD_WORDS` words and :data:`LEAD_SENTENCES` sentences, the first always; those that
    do not fit open the details, each of which is a paragraph of its own. Empty parts are left out."""
    lead, details = [s for s in lead if s], [s for s in details if s]
    kept, words = lead[:1], len(lead[0].split()) if lead else 0
    for index, sentence in enumerate(lead[1:], start=1):
        if len(kept) == LEAD_SENTENCES or words + len(sentence.split()) > LEAD_WORDS:
            details = lead[index:] + details
            break
        kept.append(sentence)
        words += len(sentence.split())
    return "\n\n".join([" ".join(kept), *details])
