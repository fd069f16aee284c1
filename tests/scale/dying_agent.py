"""An agent factory that kills its process on a Ray worker (for the lost-worker tests).

It dies only when ``driver.pid`` sits next to this file and names another process: the
test writes its own pid there, so the factory runs normally in the test process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from toolproof import Agent

MARK = Path(__file__).with_name("driver.pid")


def build_agent(model: Any, tools: Any = None) -> Agent:
    if MARK.exists() and MARK.read_text() != str(os.getpid()):
        os._exit(1)
    return Agent(model, [] if tools is None else tools)
