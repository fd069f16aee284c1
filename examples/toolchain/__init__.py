"""A lightweight toolchain agent (weather and calculator) and its five-case eval set."""
