"""The retrieval quality section of the HTML report, in a real headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_browser_view import open_page
from view_helpers import chromium_paths, console_errors, requested_urls

pytestmark = pytest.mark.skipif(
    chromium_paths() is None,
    reason="chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
)

ROOT = Path(__file__).resolve().parents[2]
MODELS = "examples.knowledge_assistant.models"


@pytest.fixture(scope="module")
def knowledge_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The knowledge assistant's suite, offline, on the leave questions; a hostile suite name."""
    from toolproof.cli import main

    out = tmp_path_factory.mktemp("kb")
    suite = ROOT / "examples" / "knowledge_assistant" / "knowledge.eval.yaml"
    text = suite.read_text().replace("suite: knowledge-assistant", "suite: kb-<b>x</b>")
    text = text.replace("file: questions.jsonl", f"file: {suite.parent / 'questions.jsonl'}")
    hostile = out / "kb.eval.yaml"
    hostile.write_text(text)
    json_path, html_path = out / "kb.json", out / "kb.html"
    code = main(
        ["run", str(hostile), "--tag", "leave", "--model", f"{MODELS}:offline_model",
         "--judge-model", f"{MODELS}:offline_judge", "--no-cache",
         "--report", f"json:{json_path}", "--report", f"html:{html_path}"]
    )  # fmt: skip
    assert code == 0
    return {"html": html_path, "data": json.loads(json_path.read_text())}


def test_the_quality_section_shows_the_suite_figures(browser: Any, knowledge_report: dict):
    from selenium.webdriver.common.by import By

    open_page(browser, knowledge_report["html"].as_uri())
    section = browser.find_element(By.ID, "quality")
    assert section.find_element(By.TAG_NAME, "h2").text == "Retrieval quality"
    header = [th.text for th in section.find_elements(By.CSS_SELECTOR, "thead th")]
    assert header[:3] == ["SUITE", "TOOL", "K"] or header[:3] == ["suite", "tool", "k"]
    (row,) = section.find_elements(By.CSS_SELECTOR, "tbody tr")
    cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
    (quality,) = knowledge_report["data"]["summary"]["quality"]
    (retrieval,) = quality["retrieval"]
    assert cells[0] == "kb-<b>x</b>"  # shown as text, never markup
    assert cells[1:4] == ["search_knowledge_base", "5", str(retrieval["queries"])]
    bounds = retrieval["intervals"]["recall"]  # the mean over queries with its interval
    assert cells[5] == (
        f"{retrieval['macro']['recall']:.3f} [{bounds['low']:.3f}, {bounds['high']:.3f}]"
    )
    assert not section.find_elements(By.CSS_SELECTOR, "b")
    tiles = section.find_elements(By.CLASS_NAME, "tile")
    labels = [t.find_element(By.CLASS_NAME, "label").text.lower() for t in tiles]
    assert any("hallucination rate" in label for label in labels)
    assert any("grounded in retrieval" in label for label in labels)
    assert console_errors(browser) == []
    assert all(url.startswith(("file:", "data:", "about:")) for url in requested_urls(browser))
