"""The controller tests that need a switch use the in-process p4src harness (tests/p4src)."""

import os
import sys

P4SRC_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "p4src")
if P4SRC_TESTS not in sys.path:
    sys.path.insert(0, P4SRC_TESTS)
