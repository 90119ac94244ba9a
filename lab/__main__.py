"""`python -m lab --topo T [--cli [--script FILE]] ...`: lab/command.py."""

import sys

from lab.command import main

sys.exit(main(sys.argv[1:]))
