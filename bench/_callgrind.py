"""Instruction counts under valgrind's callgrind, shared by the bench scripts.

A measured child process calls ``os.getppid()`` once before and once after the work to
count; ``--dump-before=getppid`` makes callgrind write its counters at each call, so the
second dump holds exactly the instructions of that work (start-up and warm-up are in the
first). Instruction counts do not depend on what else the machine is doing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile


def marked_instructions(script: str, *args: str) -> int:
    """Instructions of ``python SCRIPT ARGS`` between its two ``os.getppid()`` markers."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", "--dump-before=getppid"]
        command += [f"--callgrind-out-file={out}", sys.executable, script, *args]
        subprocess.run(command, capture_output=True, text=True, check=True)
        with open(f"{out}.2") as dump:  # .1: start-up and warm-up; .2: the measured work
            found = re.search(r"^summary: (\d+)", dump.read(), re.MULTILINE)
        assert found, "callgrind wrote no summary"
        return int(found.group(1))
