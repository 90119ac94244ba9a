"""``python -m p4switch compile|stf|bench|run``: see p4switch.cli."""

import sys

from p4switch.cli import main

if __name__ == "__main__":
    sys.exit(main())
