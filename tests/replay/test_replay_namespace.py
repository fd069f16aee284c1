"""The public namespace of toolproof.replay: small, explicit, importable."""

from __future__ import annotations

import toolproof.replay as replay_package


def test_all_names_exist_and_nothing_else_is_public() -> None:
    names = replay_package.__all__
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(replay_package, name) is not None
    # (names starting with "@" are pytest's assertion rewriting helpers)
    public = {n for n in vars(replay_package) if not n.startswith(("_", "@"))}
    assert public - set(names) <= {"annotations"}
    assert "count_schema_rejections" in names and "SchemaRejections" in names


def test_import_toolproof_does_not_import_replay() -> None:
    import subprocess
    import sys

    code = "import sys, toolproof; print('toolproof.replay' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
