"""pytest hooks that collect eval suite files as test items (one per case).

Registered by ``toolproof.testing.plugin`` at ``pytest_configure``.
"""
