"""The built-in checks of ``expect:``, one module per subject (see ``toolproof.evals.check``).

Importing the package registers them; the order of the imports is the documented order.
"""

from toolproof.evals._builtins import calls

# isort: split
from toolproof.evals._builtins import answer

# isort: split
from toolproof.evals._builtins import run

# isort: split
from toolproof.evals._builtins import state

__all__ = ["answer", "calls", "run", "state"]
