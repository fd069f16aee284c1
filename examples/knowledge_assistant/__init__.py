"""A knowledge assistant over a company handbook: retrieval, citations and quality evals."""
