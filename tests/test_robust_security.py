"""Robustness, group 9: Markdown injection, symlinks in --out, runner names leaving --results-dir."""
from __future__ import annotations

import pytest

from tests.robust_cases import assert_clean, params
from tests.robust_cases_traces import GROUP_9

NOT_FIXED = ()


@pytest.mark.parametrize("case", params(GROUP_9, NOT_FIXED))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)


def test_escaped_markdown_holds_no_live_markup():
    from analysis.report.markdown_text import escape_markdown, markdown_code

    hostile = "<script>alert(1)</script> <img src=x onerror=alert(1)>\n# Injected *heading* | [x](y)"
    text = escape_markdown(hostile)
    assert "\n" not in text and "<" not in text and ">" not in text
    assert "\\*heading\\*" in text and "\\|" in text and "\\[x\\]" in text
    assert escape_markdown("# title") == "\\# title" and escape_markdown("1. item") == "\\1. item"
    assert escape_markdown("ampere_sgemm_128x64_nn") == "ampere\\_sgemm\\_128x64\\_nn"
    assert markdown_code("a`b``c") == "```a`b``c```" and markdown_code("x\ny") == "`x y`"


def test_safe_write_replaces_files_and_refuses_links(tmp_path):
    from analysis.core.safe_write import UnsafeOutput, atomic_file, write_file

    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir(), outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("precious\n")
    (out / "index.md").symlink_to(victim)
    with pytest.raises(UnsafeOutput, match="symbolic link"):
        write_file(out / "index.md", "overwritten")
    (out / "figures").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafeOutput, match="leads outside"):
        write_file(out / "figures" / "a.svg", b"<svg/>", root=out)
    assert victim.read_text() == "precious\n" and sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    write_file(out / "run.json", "{}")
    with pytest.raises(RuntimeError), atomic_file(out / "run.json") as handle:
        handle.write('{"half": ')
        raise RuntimeError("disk full")
    assert (out / "run.json").read_text() == "{}" and not list(out.glob(".*.tmp"))
