"""tests/lab runs its networks in private namespaces through tests/topologies/private_netns.py;
that directory goes on sys.path for these tests."""

import os
import sys

TOPOLOGY_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "topologies")
if TOPOLOGY_TESTS not in sys.path:
    sys.path.insert(0, TOPOLOGY_TESTS)
