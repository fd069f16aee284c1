"""An ops agent: a query tool that broke after a model upgrade, caught by replay."""
