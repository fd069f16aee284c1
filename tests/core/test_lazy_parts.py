"""``toolproof`` and ``toolproof.testing`` bind their parts on first use: same names, same objects.

Each check runs in a fresh interpreter, where the first use really is the first: threads that
race for the first attribute, a star import, ``dir``, and logging that loads only once a run
logs. The in-process tests of the rest of the suite see the names already bound.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={"PYTHONPATH": str(SRC), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("package", ["toolproof", "toolproof.testing"])
def test_threads_racing_for_the_first_attribute_all_get_the_same_objects(package: str) -> None:
    code = f"""
        import json, random, sys, threading
        import {package} as toolproof

        names = [n for n in toolproof.__all__ if n != "calculator"]
        start = threading.Barrier(16)
        seen, errors = [], []

        def use(seed):
            order = names[:]
            random.Random(seed).shuffle(order)
            start.wait()
            try:
                seen.append({{n: id(getattr(toolproof, n)) for n in order}})
            except BaseException as exc:
                errors.append(repr(exc))

        threads = [threading.Thread(target=use, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        from toolproof._agent import Agent
        from toolproof.models.fake import ScriptedModel
        canonical = {{n: id(getattr(toolproof, n)) for n in names}}
        same = all(s == canonical for s in seen) and len(seen) == 16
        right = getattr(toolproof, "Agent", Agent) is Agent and getattr(
            toolproof, "ScriptedModel", ScriptedModel) is ScriptedModel
        print(json.dumps({{"errors": errors, "same": same, "right": right}}))
    """
    for _ in range(2):  # each in a new interpreter, where the names are not bound yet
        result = json.loads(_run(code))
        assert result == {"errors": [], "same": True, "right": True}


def test_a_star_import_dir_and_a_missing_name_behave_as_before() -> None:
    code = """
        import json, sys
        import toolproof
        listed = sorted(set(toolproof.__all__) - set(dir(toolproof)))
        namespace = {}
        exec("from toolproof import *", namespace)
        missing = sorted(n for n in toolproof.__all__ if n not in namespace)
        try:
            toolproof.Agnet
        except AttributeError as exc:
            message = str(exc)
        print(json.dumps({"not_in_dir": listed, "missing": missing, "message": message}))
    """
    result = json.loads(_run(code))
    assert result == {
        "not_in_dir": [],
        "missing": [],
        "message": "module 'toolproof' has no attribute 'Agnet'",
    }


def test_logging_loads_when_a_run_logs_and_a_run_logs_as_before() -> None:
    code = """
        import json, sys
        from toolproof import Agent
        from toolproof.testing import ScriptedModel

        loaded_at_import = "logging" in sys.modules
        import logging

        logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s %(message)s")
        import toolproof.events

        same_logger = toolproof.events.logger is logging.getLogger("toolproof")

        def broken(event):
            raise RuntimeError("subscriber bug")

        result = Agent(ScriptedModel(["done"]), on_event=broken).run_sync("hi")
        print(json.dumps({"at_import": loaded_at_import, "same": same_logger,
                          "output": result.output}))
    """
    out = _run(code).splitlines()
    result = json.loads(out[-1])
    assert result == {"at_import": False, "same": True, "output": "done"}
    logged = "\n".join(out[:-1])
    assert "toolproof run " in logged and "finished: final" in logged
    assert "toolproof event handler" in logged and "failed; the run continues" in logged


def test_runs_racing_for_the_first_listener_all_get_every_event() -> None:
    # The event classes are created with the first run; threads that start their first
    # runs together each see the whole sequence, built from the same classes.
    code = """
        import json, sys, threading
        from toolproof import Agent, tool
        from toolproof.testing import ScriptedModel, call

        @tool
        def double(x: int) -> int:
            "Twice x."
            return 2 * x

        loaded_at_import = "toolproof.events" in sys.modules
        start = threading.Barrier(8)
        seen, errors = {}, []

        def use(n):
            names = []
            agent = Agent(ScriptedModel([call("double", x=n), "done"]), [double],
                          on_event=lambda event: names.append(type(event).__name__))
            start.wait()
            try:
                result = agent.run_sync("go")
                seen[n] = (names, result.output)
            except BaseException as exc:
                errors.append(repr(exc))

        threads = [threading.Thread(target=use, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        import toolproof._run as run_module
        import toolproof.events as events
        same = run_module.RunStarted is events.RunStarted
        print(json.dumps({"at_import": loaded_at_import, "errors": errors, "same": same,
                          "seen": sorted(map(json.dumps, seen.values()))}))
    """
    expected = [
        "RunStarted",
        "ModelResponded",
        "ToolStarted",
        "ToolFinished",
        "ModelResponded",
        "RunFinished",
    ]
    for _ in range(2):
        result = json.loads(_run(code))
        assert result == {
            "at_import": False,
            "errors": [],
            "same": True,
            "seen": [json.dumps([expected, "done"])] * 8,
        }


def test_the_parts_bound_on_first_use_are_exactly_the_lazy_names() -> None:
    import toolproof
    import toolproof.testing

    assert set(toolproof._parts()) == set(toolproof.__all__) - toolproof._NOT_PARTS
    assert set(toolproof.__all__) >= toolproof._NOT_PARTS
    assert set(toolproof.testing._parts()) == set(toolproof.testing.__all__)


def test_binding_the_event_names_never_iterates_a_module_dict_another_thread_changes() -> None:
    # A run binds the event classes into toolproof._run on first use; another thread may
    # add names to that module at the same moment (its own first run, a lazy import). The
    # binding must not iterate the module's dict: a churning thread and a tiny switch
    # interval made the old binding raise "dictionary changed size during iteration".
    code = """
        import sys, threading
        sys.setswitchinterval(1e-6)
        import toolproof._run as run

        stop = threading.Event()

        def churn():
            n = 0
            names = vars(run)
            while not stop.is_set():
                names[f"_churn_{n % 50}"] = n
                if n % 50 == 49:
                    for key in [key for key in list(names) if key.startswith("_churn_")]:
                        del names[key]
                n += 1

        thread = threading.Thread(target=churn)
        thread.start()
        errors = 0
        try:
            for _ in range(3000):
                vars(run).pop("_events_bound", None)
                try:
                    run._bind_events()
                except RuntimeError:
                    errors += 1
        finally:
            stop.set()
            thread.join()
        import toolproof.events as events
        print(errors, run.RunStarted is events.RunStarted)
    """
    assert _run(code).split() == ["0", "True"]
