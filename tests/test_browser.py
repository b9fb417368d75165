"""A real browser opens the report: headless Chromium loads every kind of page (the index, question
pages of both handouts, one-GPU, 2026 and multi-GPU trace pages, one-GPU and multi-GPU diff pages)
at laptop (1280 px) and phone (390 px) widths, takes a screenshot, and the test fails on console
errors, failed requests, images that did not load, a page wider than the window, an image reaching
past the window's edge, or (at laptop width) a table wider than its box, whose columns would hide
behind a sideways scroll.

Needs Debian's ``chromium`` and the ``playwright`` package (its own browser download is not
used); skips with the reason when either is absent.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WIDTHS = {"desktop": 1280, "phone": 390}
# One page of each kind, and the widest of a kind: question pages of both handouts (nsys-c's long
# kernel table, compile-b's and mp-c's many columns, mem-f's memory timeline, ddp-b's ranks), a
# one-GPU trace with the most figures and phases, a 2026 trace, a multi-GPU trace with its rank
# timeline, a one-GPU diff and the DDP diff with its rank table.
PAGES = ("index.html", "question-nsys-b.html", "question-nsys-c.html", "question-compile-b.html", "question-mp-c.html",
         "question-mem-f.html", "question-ddp-b.html", "question-fsdp-b.html", "question-nsys-a-2026.html",
         "question-mem-b-2026.html", "trace-2.7B_ctx128_train_fp32.html", "trace-small_ctx4096_train_fp32_2026.html",
         "trace-medium_ctx256_train_fp32_ddp-naive_2gpu.html", "trace-2.7B_ctx512_train_fp32_fsdp_2gpu.html",
         "diff-small_ctx128_train_fp32--small_ctx128_train_bf16.html",
         "diff-medium_ctx256_train_fp32_ddp-naive_2gpu--medium_ctx256_train_fp32_ddp-overlap_2gpu.html")
# Tables whose box is narrower than the table (they scroll sideways), and images past the window.
OVERFLOWS = """() => ({
  tables: Array.from(document.querySelectorAll('.table-wrap'))
    .filter(box => box.querySelector('table').scrollWidth > box.clientWidth + 1)
    .map(box => `${box.closest('section').querySelector('h3').textContent}: ${box.querySelector('table').scrollWidth} px`),
  images: Array.from(document.images)
    .filter(img => img.getBoundingClientRect().right > window.innerWidth + 1 || img.getBoundingClientRect().left < 0)
    .map(img => `${img.src.split('/').pop()}: ${Math.round(img.getBoundingClientRect().width)} px`),
})"""

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
if not Path(CHROMIUM).exists():
    pytest.skip("chromium is not installed (apt-get install -y chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def site(example_site) -> Path:
    return example_site("examples")


@pytest.fixture(scope="module")
def playwright():
    with sync_api.sync_playwright() as driver:
        yield driver


@pytest.mark.parametrize("width_name", WIDTHS)
@pytest.mark.parametrize("page_name", PAGES)
def test_page_renders_cleanly_in_chromium(site, playwright, tmp_path, page_name, width_name):
    width = WIDTHS[width_name]
    context = playwright.chromium.launch_persistent_context(
        user_data_dir=tmp_path / "profile", executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS,
        viewport={"width": width, "height": 900})
    problems = []
    try:
        page = context.new_page()
        page.on("console", lambda message: problems.append(f"console {message.type}: {message.text}")
                if message.type in ("error", "warning") else None)
        page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
        page.on("requestfailed", lambda request: problems.append(f"request failed: {request.url}"))
        page.goto((site / page_name).as_uri(), wait_until="load")
        broken = page.evaluate("Array.from(document.images)"
                               ".filter(img => !img.complete || img.naturalWidth === 0).map(img => img.src)")
        page_width = page.evaluate("document.documentElement.scrollWidth")
        overflows = page.evaluate(OVERFLOWS)
        screenshot = tmp_path / f"{Path(page_name).stem}-{width}.png"
        page.screenshot(path=str(screenshot), full_page=True)
    finally:
        context.close()
    assert not problems, problems
    assert not broken, f"images that did not load: {broken}"
    assert page_width <= width, f"the page is {page_width} px wide in a {width} px window"
    assert not overflows["images"], f"images past the window's edge: {overflows['images']}"
    if width_name == "desktop":  # on a phone a wide table scrolls inside its box
        assert not overflows["tables"], f"tables wider than their box: {overflows['tables']}"
    assert screenshot.stat().st_size > 10_000
