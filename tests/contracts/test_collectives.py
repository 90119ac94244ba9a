"""contracts/collectives/: every file is one registered collective, and what each says a rank
contributes and holds gives the in-network rules the protocol documents (docs/protocol.md,
"Collectives"): which are laid out in shards, which send results to owners only, which let
the switch fill a header-only contribution with values, and which carry no flags."""

import os

import numpy as np
import pytest

from contracts import collectives
from contracts.collectives.base import WHOLE
from contracts.jobs import HOST_ALGORITHMS, SUPPORTED

HERE = os.path.dirname(collectives.__file__)

# name: (sums, sharded, to_owner, fills_header_only, plain), as docs/protocol.md states them
RULES = {"allreduce": (True, False, False, False, True),
         "reduce-scatter": (True, True, True, False, False),
         "allgather": (False, True, False, True, False),
         "broadcast": (False, False, False, True, False),
         "reduce": (True, False, True, False, False)}


def test_every_file_is_one_registered_collective():
    files = sorted(f[:-3] for f in os.listdir(HERE)
                   if f.endswith(".py") and f not in ("__init__.py", "base.py"))
    assert sorted(name.replace("-", "_") for name in collectives.NAMES) == files
    assert collectives.NAMES == tuple(RULES)
    for name in collectives.NAMES:
        assert collectives.get(name).name == name
        assert collectives.get(collectives.get(name)) is collectives.get(name)


def test_unknown_names_are_one_line_errors():
    with pytest.raises(ValueError) as error:
        collectives.get("gather")
    assert str(error.value) == ("unknown collective 'gather' (choose from allreduce, "
                                "reduce-scatter, allgather, broadcast, reduce)")


@pytest.mark.parametrize("name", list(RULES))
def test_the_in_network_rules_follow_from_the_parts(name):
    c = collectives.get(name)
    assert (c.sums, c.sharded, c.to_owner, c.fills_header_only, c.plain) == RULES[name]


def test_host_phases_name_real_algorithms():
    for c in collectives.REGISTRY.values():
        if c.host_phases is WHOLE:
            assert SUPPORTED[c.name] == HOST_ALGORITHMS
            assert c.phases("ring") is WHOLE
            continue
        assert set(c.host_phases) <= set(HOST_ALGORITHMS)
        assert SUPPORTED[c.name] == tuple(c.host_phases)
        with pytest.raises(ValueError, match=f"ps is not supported for the collective {c.name}"):
            c.phases("ps")


def test_parts_and_expected_copies():
    world, elements = 3, 10             # shards 0..3, 3..6, 6..10
    inputs = {r: np.arange(elements, dtype=np.int32) + 100 * r for r in range(world)}
    gather, bcast, reduce = (collectives.get(n) for n in ("allgather", "broadcast", "reduce"))
    assert [gather.contributes(r, world, elements) for r in range(world)] == \
        [(0, 3), (3, 6), (6, 10)]
    assert gather.expected_copy(inputs.get, world, elements).tolist() == \
        [0, 1, 2, 103, 104, 105, 206, 207, 208, 209]
    assert bcast.expected_copy(inputs.get, world, elements, root=2).tolist() == \
        inputs[2].tolist()
    assert [reduce.holds(r, world, elements) for r in range(world)] == [(0, 10), (0, 0), (0, 0)]
    assert collectives.get("reduce-scatter").holds(1, world, elements) == (3, 6)
    with pytest.raises(ValueError, match="allreduce sums"):
        collectives.get("allreduce").expected_copy(inputs.get, world, elements)
