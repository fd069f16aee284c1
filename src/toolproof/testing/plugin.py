"""The toolproof pytest plugin (entry point ``pytest11``).

It only registers fixtures, markers and ``--toolproof-*`` options.
"""
