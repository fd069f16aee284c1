from toolproof.evals._builtins import run, state
