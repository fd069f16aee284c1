"""The HTML report (``--report html:PATH``) and the local viewer (``toolproof view``).

Everything here renders the versioned JSON reports (``toolproof run`` and
``toolproof replay``) into one self-contained HTML file: the summary and charts are
rendered in Python (they work without JavaScript), the data is embedded once as JSON, and
a small inlined script adds filters and the step-by-step trace view. Every string from a
report is escaped with :func:`html.escape` or set as DOM text by the script.
"""

from __future__ import annotations

from toolproof._html import render_trace_page
from toolproof.evals._report import write_eval_html
from toolproof.replay._report import write_replay_html
from toolproof.view._render import render_report

__all__ = ["render_report", "render_trace_page", "write_eval_html", "write_replay_html"]
