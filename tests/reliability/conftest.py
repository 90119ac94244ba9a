"""tests/reliability reuses the p4src harness (tests/p4src) and the fault-injecting network
(tests/hosts/agg_network.py); both directories go on sys.path for these tests."""

import os
import sys

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for directory in ("p4src", "hosts"):
    path = os.path.join(TESTS, directory)
    if path not in sys.path:
        sys.path.insert(0, path)
