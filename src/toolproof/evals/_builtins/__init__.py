from toolproof.evals._builtins import answer, run, state
