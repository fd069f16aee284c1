"""Seed 001's support workflows: Slack and JIRA, and login support, with mocked tools."""
