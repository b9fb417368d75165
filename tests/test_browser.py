"""A real browser opens the report: headless Chromium loads one page of each kind (the index, a
question page, a trace page, a diff page) at laptop (1280 px) and phone (390 px) widths, takes a
screenshot, and the test fails on console errors, failed requests, images that did not load, a
page wider than the window, an image reaching past the window's edge, or (at laptop width) a
table wider than its box, whose columns would hide behind a sideways scroll.

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
# One page of each kind; the question page has the widest table, the 2.7B training trace the most
# figures and phases, the diff page the longest title.
PAGES = ("index.html", "question-nsys-b.html", "trace-2.7B_ctx128_train_fp32.html",
         "diff-small_ctx128_train_fp32--small_ctx128_train_bf16.html")
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
