"""``python -m toolproof``: the command line."""

import sys

from toolproof.cli import main

sys.exit(main())
