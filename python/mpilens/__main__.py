"""`python -m mpilens`: the same command line as the `mpilens` script."""

import sys

from .cli import main

sys.exit(main())
