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
