"""The plugin's own tests run pytest in-process with pytester."""

from __future__ import annotations

import hypothesis  # noqa: F401
import pytest

# pytester restores sys.modules after each in-process run, so whatever an inner session
# imports first is imported again by the next one; importing it here keeps it loaded.
import toolproof.models
import toolproof.testing._contracts
import toolproof.testing._suites  # noqa: F401
from toolproof import Agent  # noqa: F401

pytest_plugins = ["pytester"]


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester whose inner sessions are configured like a user project."""
    pytester.makeini(
        "[pytest]\n"
        "asyncio_mode = auto\n"
        "asyncio_default_fixture_loop_scope = function\n"
        # (as the outer session: langsmith's plugin is not loaded, see pyproject.toml)
        "addopts = --strict-markers -p no:langsmith_plugin\n"
    )
    return pytester
