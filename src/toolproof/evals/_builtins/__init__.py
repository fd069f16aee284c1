"""The built-in checks of ``expect:``, one module per subject (see ``toolproof.evals.check``).

Importing the package registers them; the order of the imports is the documented order.
A new built-in check is one decorated function (``@check(name, spec=...)``, like a user's
check) in the module of its subject, or in a new module imported here; the published JSON
Schema picks it up (regenerate ``toolproof/schemas/suite.schema.json``).
"""

from toolproof.evals._builtins import calls

# isort: split
from toolproof.evals._builtins import answer

# isort: split
from toolproof.evals._builtins import claims

# isort: split
from toolproof.evals._builtins import run

# isort: split
from toolproof.evals._builtins import state

# isort: split
# Retrieval quality (retrieval, retrieval_grounded, faithfulness): with their id and
# aggregate helpers in one module.
import toolproof.evals._retrieval as retrieval

__all__ = ["answer", "calls", "claims", "retrieval", "run", "state"]
