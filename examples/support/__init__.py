"""A support agent's workflows: Slack and JIRA, and login support, with mocked tools."""
