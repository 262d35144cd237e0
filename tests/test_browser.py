"""The HTML report in a real headless Chromium: loads clean, plots drawn, filter works, no XSS."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import sessions as S
from tfretrace.render import HtmlRenderer

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# Where the screenshot for the closing note goes (overridable for CI artefacts).
SCREENSHOT = Path(os.environ.get("TFRETRACE_SCREENSHOT", "/tmp/report-test.png"))


@contextmanager
def chromium(width: int = 1200, height: int = 1600) -> Iterator[Any]:
    """A headless Chromium driven by selenium, with its own throw-away profile."""
    # CI installs Chromium (`make chromium`): a missing browser is a failure, never a skip.
    from selenium import webdriver  # an ImportError fails the test too (dev extras)
    from selenium.webdriver.chrome.service import Service

    assert os.path.exists(CHROMIUM), f"Chromium not found at {CHROMIUM}: run `make chromium`"
    assert os.path.exists(CHROMEDRIVER), f"chromedriver not found at {CHROMEDRIVER}"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", f"--window-size={width},{height}"):
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="tfretrace-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def page(driver: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(HtmlRenderer().render(S.mixed_session()), encoding="utf-8")
    driver.get(path.as_uri())
    return driver


def test_loads_without_console_errors(page: Any) -> None:
    severe = [e for e in page.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []
    assert page.title == "tfretrace report – test"


def test_table_and_plots_are_present(page: Any) -> None:
    from selenium.webdriver.common.by import By

    rows = page.find_elements(By.CSS_SELECTOR, "#ranking tbody tr")
    assert len(rows) == 6
    svgs = page.find_elements(By.CSS_SELECTOR, "svg.timeline")
    assert len(svgs) == 6 and all(svg.size["width"] > 300 for svg in svgs)
    assert page.find_elements(By.CSS_SELECTOR, "svg.timeline polyline.traces")
    assert page.find_elements(By.CSS_SELECTOR, "svg.timeline circle.retrace")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.save_screenshot(str(SCREENSHOT))


def test_hostile_strings_do_not_execute(page: Any) -> None:
    from selenium.webdriver.common.by import By

    assert page.execute_script("return window.__pwned === undefined")
    assert page.title != "pwned"
    assert page.find_elements(By.TAG_NAME, "img") == []
    names = [a.text for a in page.find_elements(By.CSS_SELECTOR, "#ranking tbody a")]
    assert S.HOSTILE_JS_NAME in names  # shown as text, verbatim


def test_filter_hides_other_functions(page: Any) -> None:
    from selenium.webdriver.common.by import By

    box = page.find_element(By.ID, "filter")
    box.send_keys("trainer.st")
    visible = [r for r in page.find_elements(By.CSS_SELECTOR, "#ranking tbody tr")
               if r.is_displayed()]
    assert [r.find_element(By.TAG_NAME, "a").text for r in visible] == ["Trainer.step"]
    sections = [s for s in page.find_elements(By.CSS_SELECTOR, "section.function")
                if s.is_displayed()]
    assert len(sections) == 1
    assert "1 of 6" in page.find_element(By.ID, "shown-count").text
    box.clear()
    box.send_keys(" ")  # clear() sends no input event; a blank query shows all again
    page.find_element(By.ID, "only-retracing").click()
    shown = [r for r in page.find_elements(By.CSS_SELECTOR, "#ranking tbody tr")
             if r.is_displayed()]
    assert len(shown) == 5


def test_sorting_by_column(page: Any) -> None:
    from selenium.webdriver.common.by import By

    page.find_elements(By.CSS_SELECTOR, "#ranking th")[2].click()  # calls, descending
    first = page.find_element(By.CSS_SELECTOR, "#ranking tbody tr a")
    assert first.get_attribute("textContent") == "eval_step"  # 400 calls, however filtered
    severe = [e for e in page.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []


def test_headers_sort_by_keyboard_text_first_a_to_z(page: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    page.refresh()
    box = page.find_element(By.ID, "filter")
    box.click()
    labels = []
    for _ in range(12):  # Tab from the filter box reaches the header buttons
        page.switch_to.active_element.send_keys(Keys.TAB)
        active = page.switch_to.active_element
        labels.append(active.text)
        if active.tag_name == "button" and active.text == "function":
            break
    assert page.switch_to.active_element.text == "function", labels
    page.switch_to.active_element.send_keys(Keys.ENTER)
    header = page.find_elements(By.CSS_SELECTOR, "#ranking th")[0]
    assert header.get_attribute("aria-sort") == "ascending"
    names = [a.get_attribute("textContent") for a in page.find_elements(By.CSS_SELECTOR, "#ranking tbody a")]
    assert names == sorted(names, key=lambda n: n.lower()) or names[0].startswith("<")  # A to Z first
    page.switch_to.active_element.send_keys(" ")
    assert header.get_attribute("aria-sort") == "descending"
    others = page.find_elements(By.CSS_SELECTOR, "#ranking th")[1:]
    assert all(th.get_attribute("aria-sort") == "none" for th in others)


# Characters after which the browser wrapped each location: only a "/" (or a space in the name).
_WRAPS = """
return Array.from(document.querySelectorAll('td.loc, p.where code')).map(function (el) {
  var text = el.textContent, node = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), wraps = [];
  var tops = [], chars = [];
  while (node.nextNode()) {
    var t = node.currentNode;
    for (var i = 0; i < t.length; i++) {
      var r = document.createRange(); r.setStart(t, i); r.setEnd(t, i + 1);
      var rect = r.getBoundingClientRect(); tops.push(rect.top); chars.push(t.data[i]);
    }
  }
  for (var j = 1; j < tops.length; j++) { if (tops[j] > tops[j - 1] + 2) { wraps.push(chars[j - 1]); } }
  return [text, wraps];
});
"""


def test_at_700_px_locations_wrap_only_after_a_slash(driver: Any, tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text(HtmlRenderer().render(S.mixed_session()), encoding="utf-8")
    driver.set_window_size(700, 1400)
    try:
        driver.get(path.as_uri())
        found = driver.execute_script(_WRAPS)
        assert found and any(wraps for _, wraps in found)  # 700 px does wrap some location
        for text, wraps in found:
            assert set(wraps) <= {"/", " "}, (text, wraps)  # never inside a name or file:line
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 700
        shot = Path(os.environ.get("TFRETRACE_SCREENSHOT_700", "/tmp/report-700.png"))
        shot.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(shot))
    finally:
        driver.set_window_size(1200, 1600)
