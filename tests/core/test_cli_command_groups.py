"""Every command group, called without a subcommand, prints its own help and exits 2."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from tests._cli import run_cli

from toolproof.cli import build_parser

#: The command groups and the title their subcommands are listed under.
GROUPS = {
    "mcp": "subcommands",
    "mocks": "subcommands",
    "runs": "commands",
    "schema": "subcommands",
    "traces": "subcommands",
}


def test_the_groups_are_every_command_with_subcommands() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    with_subcommands = {
        name
        for name, sub in commands.choices.items()
        if any(a.__class__.__name__ == "_SubParsersAction" for a in sub._actions)
    }
    assert with_subcommands == set(GROUPS)


@pytest.mark.parametrize(("group", "title"), sorted(GROUPS.items()))
def test_a_group_without_a_subcommand_prints_its_help_and_exits_2(
    tmp_path: Path, group: str, title: str
) -> None:
    result = run_cli(group, cwd=tmp_path, env=dict(os.environ))
    assert result.returncode == 2
    assert result.stdout.startswith(f"usage: toolproof {group} ")
    assert f"\n{title}:\n" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_a_group_run_as_a_program_prints_its_help_and_exits_2(tmp_path: Path, group: str) -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "toolproof", group],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout.startswith(f"usage: toolproof {group} ")
    assert "Traceback" not in done.stderr
