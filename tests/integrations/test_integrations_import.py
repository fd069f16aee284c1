"""The integrations stay optional: importing toolproof never imports a framework."""

from __future__ import annotations

import subprocess
import sys

FRAMEWORKS = ("langchain_core", "langchain", "langgraph", "agents", "openai", "opentelemetry")


def test_toolproof_and_its_integrations_package_import_no_framework() -> None:
    code = (
        "import sys, toolproof, toolproof.integrations, toolproof.testing, toolproof.evals\n"
        f"print(','.join(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_each_integration_imports_its_framework() -> None:
    code = (
        "import sys, toolproof.integrations.langchain, toolproof.integrations.openai_agents\n"
        "print('langchain_core' in sys.modules, 'agents' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True True"


def test_each_integration_exports_exactly_its_public_names() -> None:
    import importlib
    import types

    for name in (
        "toolproof.integrations.langchain",
        "toolproof.integrations.openai_agents",
        "toolproof.integrations.otel",
    ):
        module = importlib.import_module(name)
        public = {
            key
            for key, value in vars(module).items()
            if not key.startswith("_")
            and not isinstance(value, types.ModuleType)
            # defined in the module or, for a package, in one of its private modules
            and (
                getattr(value, "__module__", None) == name
                or str(getattr(value, "__module__", "")).startswith(f"{name}._")
            )
            and (isinstance(value, type) or callable(value))
        }
        assert public <= set(module.__all__), name
        assert all(getattr(module, item) is not None for item in module.__all__)
