"""hosts/algorithms/: the registry lists every algorithm file in ALGORITHMS' order, each file
has the schedule and cost functions hosts/schedules.py and hosts/bounds.py call, and an
unknown name is a one-line error."""

import pytest

from hosts import algorithms, bounds
from hosts.algorithms.base import Recv, Send


def test_algorithms_keep_their_names_and_order():
    assert algorithms.ALGORITHMS == ("ps", "binomial-tree", "butterfly", "ring", "rabenseifner",
                                     "double-binary-tree", "rabenseifner-nearest")
    assert tuple(algorithms.REGISTRY) == algorithms.ALGORITHMS


@pytest.mark.parametrize("name", algorithms.ALGORITHMS)
def test_every_registered_file_has_a_schedule_and_its_cost(name):
    module = algorithms.module(name)
    assert module.__name__ == algorithms.REGISTRY[name]
    assert module.__doc__.startswith(name)          # the file says which algorithm it is
    ops = module.schedule(0, 4, 8, 2)
    assert ops and all(isinstance(op, (Send, Recv)) for op in ops)
    sent = sum(op.stop - op.start for op in ops if isinstance(op, Send))
    received = sum(op.stop - op.start for op in ops if isinstance(op, Recv))
    assert module.elements_moved(0, 4, 8) == (sent, received)
    assert module.steps(4) >= 1 and module.link_share(4) > 0
    assert bounds.formula(name) == module.FORMULA


def test_an_unknown_name_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"^unknown algorithm 'bogus' \(choose from ps, "):
        algorithms.module("bogus")
