"""The HTML report and `toolproof view` in a real headless Chromium (skipped without one)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_view_server import start_view
from view_helpers import chromium_paths, console_errors, requested_urls, screenshot

from _processes import stop

pytestmark = pytest.mark.skipif(
    chromium_paths() is None,
    reason="chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
)


def open_page(driver: Any, url: str) -> None:
    """Load ``url`` in a clean state; the logs then hold only this page's events."""
    driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    driver.get("about:blank")
    requested_urls(driver)
    console_errors(driver)
    driver.get(url)
    wait_ready(driver)


def wait_ready(driver: Any) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(
        lambda d: d.execute_script("return document.body && document.body.dataset.ready === '1'")
    )


def wait_for(driver: Any, condition: Any) -> Any:
    """Wait until ``condition(driver)`` is truthy (a toggle's content is filled after it)."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, 20).until(condition)


def navigate(driver: Any, element: Any) -> None:
    """Click a link or button that loads another page, and wait for that page."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    old = driver.find_element("tag name", "body")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()

    def gone(_: Any) -> bool:
        try:
            old.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as exc:
            # chromedriver asked about a node while its page is being replaced
            if "does not belong to the document" in str(exc):
                return True
            raise
        return False

    wait_for(driver, gone)
    wait_ready(driver)


def css(driver: Any, selector: str) -> list[Any]:
    return list(driver.find_elements("css selector", selector))


def visible_rows(driver: Any) -> int:
    script = "return [...document.querySelectorAll('.rows > details.case')]"
    return int(driver.execute_script(script + ".filter(r => !r.hidden).length"))


def assert_nothing_ran(driver: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    assert driver.execute_script("return window.__pwned === undefined")
    assert driver.execute_script("return document.querySelectorAll('img').length") == 0
    assert driver.execute_script("return document.scripts.length") == 2
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 - raises when no alert is open


def press(driver: Any, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    for key in keys:
        chain.send_keys(key)
    chain.perform()


def test_eval_report_from_file(browser: Any, eval_reports: dict[str, Any]) -> None:
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    url = eval_reports["html"].as_uri()
    data = eval_reports["data"]
    open_page(browser, url)
    assert requested_urls(browser) == [url]  # nothing but the file itself
    assert console_errors(browser) == []
    summary = data["summary"]
    tiles = {
        t.find_element("css selector", ".label").text.lower(): t.find_element(
            "css selector", ".value"
        ).text
        for t in css(browser, ".tile")
    }
    assert tiles["cases passed"] == f"{summary['passed']} / {summary['cases']}"
    assert tiles["trial pass rate"] == f"{summary['trials_passed'] / summary['trials'] * 100:.1f}%"
    assert tiles["flaky cases"] == "1"
    assert len(css(browser, ".rows > details.case")) == len(data["cases"])
    trials = sum(len(c["trials"]) for c in data["cases"])
    assert len(css(browser, ".rows .cell")) == trials
    assert len(css(browser, "svg.chart title")) >= 4  # every chart is labelled
    screenshot(browser, "summary")

    # filters by clicks
    state = Select(browser.find_element("id", "f-state"))
    state.select_by_value("failing")
    assert visible_rows(browser) == sum(
        1 for c in data["cases"] if c["verdict"] in ("fail", "error")
    )
    state.select_by_value("flaky")
    assert visible_rows(browser) == 1
    assert browser.find_element("id", "f-count").text == f"1 of {len(data['cases'])} shown"
    state.select_by_value("")
    hostile_tag = "<img src=x onerror=window.__pwned=6>"
    Select(browser.find_element("id", "f-tag")).select_by_value(hostile_tag)
    assert visible_rows(browser) == 1
    Select(browser.find_element("id", "f-tag")).select_by_value("")
    # ... and by keyboard: "/" focuses the search
    browser.find_element("css selector", "body").click()
    press(browser, "/", "flip")
    assert browser.switch_to.active_element.get_attribute("id") == "f-text"
    assert visible_rows(browser) == 1
    press(browser, *[Keys.BACKSPACE] * 4)
    assert visible_rows(browser) == len(data["cases"])
    press(browser, Keys.TAB)  # from the search box, Tab reaches the first case row
    assert browser.switch_to.active_element.tag_name == "summary"
    assert browser.execute_script("return document.activeElement.parentElement.id") == "case-0"
    press(browser, "j")
    assert browser.execute_script("return document.activeElement.parentElement.id") == "case-1"

    # open the flaky case with Enter, its first failing trial with Space
    index = next(i for i, c in enumerate(data["cases"]) if c["name"] == "flaky_flip")
    case = browser.find_element("id", f"case-{index}")
    case.find_element("css selector", "summary").send_keys(Keys.ENTER)
    assert case.get_attribute("open") is not None
    failing = next(t for t in data["cases"][index]["trials"] if t["status"] != "pass")
    trial = case.find_element("css selector", f'details.trial[data-t="{failing["index"]}"]')
    trial.find_element("css selector", "summary").send_keys(Keys.SPACE)
    assert trial.get_attribute("open") is not None
    screenshot(browser, "case-open")
    trace = failing["traces"][0]
    calls = [c for s in trace["steps"] for c in s["response"]["tool_calls"]]
    boxes = wait_for(browser, lambda _: trial.find_elements("css selector", ".trace .call"))
    assert len(boxes) == len(calls)
    result = trial.find_element("css selector", ".result.s-bad")
    assert "ValueError" in result.text and "real" in result.text
    assert "</script><script>window.__pwned=3</script>" in result.text  # shown as text
    assert "call_1" in trial.text and "finish: tool_calls" in trial.text
    assert trace["system_prompt"][:20] in trial.get_attribute("textContent")
    assert "tools offered" in trial.text.lower() and "echo, flip" in trial.text  # from tool_sets

    # the hostile case: every trial and its trace opened
    hostile = browser.find_element("id", "case-0")
    hostile.find_element("css selector", "summary").click()
    for summary_el in hostile.find_elements("css selector", "details.trial > summary"):
        summary_el.click()
    wait_for(browser, lambda _: len(hostile.find_elements("css selector", ".trace")) == 4)
    text = hostile.get_attribute("textContent")
    assert "<script>window.__pwned=4</script>echo" in hostile.text
    assert "</script><script>window.__pwned=7</script>" in text  # the argument
    assert "echoed <script>window.__pwned=8</script>" in text  # the answer
    screenshot(browser, "trace-view")
    assert_nothing_ran(browser)
    assert console_errors(browser) == []
    assert requested_urls(browser) == []


def test_the_summary_and_every_case_without_javascript(
    browser: Any, eval_reports: dict[str, Any]
) -> None:
    browser.get("about:blank")
    browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        browser.get(eval_reports["html"].as_uri())
        assert browser.find_element("id", "summary").is_displayed()
        assert len(css(browser, ".tile")) == 9  # with the pass rate and its interval
        rows = css(browser, ".rows > details.case")
        assert len(rows) == len(eval_reports["data"]["cases"])
        assert all(row.is_displayed() for row in rows)
        assert not browser.find_element("id", "filters").is_displayed()
        rows[1].find_element("css selector", "summary").click()
        assert "no_tool_errors" in rows[1].text  # the checks and their reasons are in the page
        trial = rows[1].find_element("css selector", "details.trial > summary")
        trial.click()
        assert "needs JavaScript" in rows[1].text
    finally:
        browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


def test_dark_mode_is_readable(browser: Any, hr_report: dict[str, Any]) -> None:
    open_page(browser, hr_report["html"].as_uri())
    light = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
    )
    dark = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    color = browser.execute_script("return getComputedStyle(document.body).color")
    assert light != dark
    assert dark == "rgb(15, 20, 25)" and color == "rgb(230, 237, 243)"
    screenshot(browser, "summary-dark")
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_replay_report_side_by_side(browser: Any, replay_reports: dict[str, Any]) -> None:
    url = replay_reports["html"].as_uri()
    open_page(browser, url)
    assert requested_urls(browser) == [url]
    counts = replay_reports["data"]["counts"]
    rows = css(browser, ".rows > details.case")
    assert [r.get_attribute("data-verdict") for r in rows] == ["fail", "warn", "pass"]
    assert len(rows) == sum(counts.values())
    fail = rows[0]
    assert fail.get_attribute("open") is not None  # a failure is open from the start
    assert "added" in fail.find_element("css selector", "table.sbs").text
    both = fail.find_element("css selector", "details.rtrace")
    both.find_element("css selector", "summary").click()
    sides = wait_for(browser, lambda _: both.find_elements("css selector", ".trace"))
    assert len(sides) == 2
    called = [
        [c.text for c in side.find_elements("css selector", ".call code.tool")] for side in sides
    ]
    assert called == [["lookup_user"], ["list_invoices", "lookup_user"]]
    rows[1].find_element("css selector", "summary").click()
    assert "options" in rows[1].find_element("css selector", "table.sbs").text
    screenshot(browser, "replay-diff")
    assert_nothing_ran(browser)
    assert console_errors(browser) == []


@pytest.fixture
def view_url(runs_dir: Path, replay_reports: dict[str, Any]) -> Iterator[str]:
    process, url = start_view(str(runs_dir), "--store", str(replay_reports["store"]), "--port", "0")
    try:
        yield url
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
        assert process.returncode == 130
    finally:
        stop(process)


def test_the_viewer_in_the_browser(browser: Any, view_url: str) -> None:
    origin = view_url.rstrip("/")
    open_page(browser, view_url)
    links = css(browser, "table.runs a")
    assert [a.text for a in links] == [
        "20261201T092000Z-replay-cccccc",
        "20261201T091000Z-run-bbbbbb",
        "20261201T090000Z-run-aaaaaa",
    ]
    screenshot(browser, "view-run-list")
    navigate(browser, links[1])
    assert browser.title.startswith("toolproof eval report")
    assert len(css(browser, ".rows > details.case")) == 3
    browser.find_element("css selector", "#case-0 > summary").click()
    browser.find_element("css selector", "#case-0 details.trial > summary").click()
    assert wait_for(browser, lambda d: css(d, "#case-0 .trace .call"))
    assert_nothing_ran(browser)
    navigate(browser, browser.find_element("link text", "traces"))
    assert browser.find_element("id", "trace-count").text == "3 traces"
    browser.find_element("name", "tool").send_keys("list_invoices")
    navigate(browser, browser.find_element("css selector", ".traces-form button"))
    assert browser.find_element("id", "trace-count").text == "0 traces"
    navigate(browser, browser.find_element("link text", "traces"))
    navigate(browser, css(browser, "table.runs a")[0])
    assert css(browser, ".trace .call")  # the step view
    assert "<script>window.__pwned=1" in browser.find_element("css selector", ".trace").text
    screenshot(browser, "view-trace")
    assert_nothing_ran(browser)
    navigate(browser, browser.find_element("link text", "compare"))
    navigate(browser, browser.find_element("css selector", ".traces-form button"))
    assert "gone" in browser.find_element("id", "cmp-summary").text
    screenshot(browser, "view-compare")
    assert console_errors(browser) == []
    urls = requested_urls(browser)
    assert urls and all(u.startswith(origin + "/") for u in urls), urls


@pytest.mark.timeout(300)  # a page that never loads or filters fails here
def test_a_big_report_opens_and_filters_quickly(
    browser: Any, hr_report: dict[str, Any], tmp_path: Path
) -> None:
    import copy
    import json

    from toolproof.view import render_report

    data = copy.deepcopy(hr_report["data"])
    cases = []
    for n in range(1500):  # 4,500 trials, each with its trace
        case = copy.deepcopy(data["cases"][n % len(data["cases"])])
        case["id"] = f"{case['id']}_{n}"
        if n % 10 == 0:
            case["verdict"] = "fail"
        cases.append(case)
    data["cases"] = cases
    path = tmp_path / "big.html"
    path.write_text(render_report(data), encoding="utf-8")
    json_size = len(json.dumps(data, ensure_ascii=False).encode())
    assert path.stat().st_size < 1.5 * json_size
    open_page(browser, path.as_uri())  # ~1 s here (bench/bench_html.py measures the load)
    assert len(css(browser, ".rows > details.case")) == 1500
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "f-state")).select_by_value("failing")
    assert visible_rows(browser) == 150
    browser.find_element("css selector", "#case-10 > summary").click()
    browser.find_element("css selector", "#case-10 details.trial > summary").click()
    assert wait_for(browser, lambda d: css(d, "#case-10 .trace .call"))
    assert console_errors(browser) == []
