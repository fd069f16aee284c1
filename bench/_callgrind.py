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
    return marked_events(script, *args)["Ir"]


def marked_events(script: str, *args: str, cache_sim: bool = False) -> dict[str, int]:
    """Callgrind's counters between the two markers: ``Ir`` (instructions), and with
    ``cache_sim`` the simulated cache misses too (``I1mr``, ``D1mr``, ``D1mw``: first-level
    instruction, data-read and data-write misses; ``DLmr``... for the last level)."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", "--dump-before=getppid"]
        if cache_sim:
            command.append("--cache-sim=yes")
        command += [f"--callgrind-out-file={out}", sys.executable, script, *args]
        subprocess.run(command, capture_output=True, text=True, check=True)
        with open(f"{out}.2") as dump:  # .1: start-up and warm-up; .2: the measured work
            text = dump.read()
        events = re.search(r"^events: (.+)$", text, re.MULTILINE)
        found = re.search(r"^summary: ([\d ]+)$", text, re.MULTILINE)
        assert events, "callgrind wrote no event names"
        assert found, "callgrind wrote no summary"
        names, counts = events.group(1).split(), [int(n) for n in found.group(1).split()]
        counts += [0] * (len(names) - len(counts))  # callgrind leaves trailing zeros out
        return dict(zip(names, counts, strict=True))
