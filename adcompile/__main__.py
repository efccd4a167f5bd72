"""`python -m adcompile ...`: the command line (adcompile/cli.py)."""

import sys

from adcompile.cli import main

sys.exit(main())
