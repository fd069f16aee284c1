"""The built-in checks of ``expect:``, one module per subject (see ``toolproof.evals.check``)."""
