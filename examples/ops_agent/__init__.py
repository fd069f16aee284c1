"""Seed 004's ops agent: a query tool that broke after a model upgrade, caught by replay."""
