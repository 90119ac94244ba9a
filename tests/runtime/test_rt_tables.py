"""Unit tests of the match-action table engine and its control-plane errors."""

import pytest

from p4switch.runtime.errors import (AlreadyExists, InvalidArgument, NotFound,
                                     PermissionDenied, ResourceExhausted)
from p4switch.runtime.tables import (ActionSpec, ConstEntrySpec, Exact, KeySpec, LPM, Optional,
                                     Range, Table, TableSpec, Ternary)

FWD = ActionSpec("C.forward", 0, [("port", 9)])
DROP = ActionSpec("C.drop", 1, [])
NOP = ActionSpec("NoAction", 2, [], scope="DEFAULT_ONLY")


def table(keys, **kw):
    spec = TableSpec(name="C.t", keys=[KeySpec(*k) for k in keys],
                     actions=[FWD, DROP, NOP], default_action="NoAction", **kw)
    return Table(spec)


def hit(t, key):
    e = t.lookup(key)
    return (e.action.name, e.args) if e.hit else None


def test_exact_insert_lookup_modify_delete():
    t = table([("k", "exact", 16)])
    t.insert({"k": Exact(5)}, "forward", {"port": 3})
    assert hit(t, 5) == ("C.forward", (3,))
    assert hit(t, 6) is None
    assert t.lookup(6).action.name == "NoAction"
    with pytest.raises(AlreadyExists):
        t.insert({"k": Exact(5)}, "drop")
    t.modify({"k": Exact(5)}, "C.drop")
    assert hit(t, 5) == ("C.drop", ())
    t.delete({"k": Exact(5)})
    assert hit(t, 5) is None
    with pytest.raises(NotFound):
        t.delete({"k": Exact(5)})


def test_multi_field_exact_key_is_a_tuple():
    t = table([("a", "exact", 8), ("b", "exact", 8)])
    t.insert({"a": Exact(1), "b": Exact(2)}, "forward", {"port": 7})
    assert hit(t, (1, 2)) == ("C.forward", (7,))
    assert hit(t, (2, 1)) is None


def test_lpm_longest_prefix_wins_and_zero_prefix_is_default_route():
    t = table([("dst", "lpm", 32)])
    t.insert({"dst": LPM(0x0A000000, 8)}, "forward", {"port": 1})
    t.insert({"dst": LPM(0x0A010000, 16)}, "forward", {"port": 2})
    t.insert({"dst": LPM(0, 0)}, "forward", {"port": 9})
    assert hit(t, 0x0A010203) == ("C.forward", (2,))
    assert hit(t, 0x0A020304) == ("C.forward", (1,))
    assert hit(t, 0x0B000001) == ("C.forward", (9,))
    t.delete({"dst": LPM(0x0A010000, 16)})
    assert hit(t, 0x0A010203) == ("C.forward", (1,))


def test_lpm_value_is_masked_to_its_prefix_and_duplicates_detected():
    t = table([("dst", "lpm", 32)])
    t.insert({"dst": LPM(0x0A0000FF, 24)}, "drop")
    with pytest.raises(AlreadyExists):
        t.insert({"dst": LPM(0x0A000000, 24)}, "drop")
    assert t.entries()[0].match == {"dst": LPM(0x0A000000, 24)}


def test_ternary_priority_higher_number_wins_regardless_of_order():
    t = table([("k", "ternary", 8)])
    t.insert({"k": Ternary(0x10, 0xF0)}, "forward", {"port": 1}, priority=10)
    t.insert({"k": Ternary(0x12, 0xFF)}, "forward", {"port": 2}, priority=20)
    assert hit(t, 0x12) == ("C.forward", (2,))
    assert hit(t, 0x13) == ("C.forward", (1,))
    assert hit(t, 0x23) is None
    # Same match with another priority is another entry.
    t.insert({"k": Ternary(0x10, 0xF0)}, "drop", priority=30)
    assert hit(t, 0x12) == ("C.drop", ())
    t.delete({"k": Ternary(0x10, 0xF0)}, priority=30)
    assert hit(t, 0x12) == ("C.forward", (2,))


def test_range_and_optional_matches():
    t = table([("r", "range", 16), ("o", "optional", 8)])
    t.insert({"r": Range(100, 200), "o": Optional(7)}, "forward", {"port": 1}, priority=1)
    t.insert({"r": Range(150, 160)}, "forward", {"port": 2}, priority=2)
    assert hit(t, (155, 3)) == ("C.forward", (2,))
    assert hit(t, (120, 7)) == ("C.forward", (1,))
    assert hit(t, (120, 8)) is None
    assert hit(t, (201, 7)) is None


def test_invalid_arguments():
    t = table([("k", "exact", 8)])
    with pytest.raises(InvalidArgument):
        t.insert({"k": Exact(256)}, "drop")                  # too wide
    with pytest.raises(InvalidArgument):
        t.insert({}, "drop")                                  # exact field missing
    with pytest.raises(InvalidArgument):
        t.insert({"k": Exact(1)}, "forward", {"port": 512})  # parameter too wide
    with pytest.raises(InvalidArgument):
        t.insert({"k": Exact(1)}, "forward", {})              # parameter missing
    with pytest.raises(InvalidArgument):
        t.insert({"k": Exact(1)}, "nosuch")
    with pytest.raises(InvalidArgument):
        t.insert({"k": Exact(1)}, "NoAction")                 # @defaultonly
    with pytest.raises(InvalidArgument):
        t.insert({"k": LPM(1, 8)}, "drop")                    # wrong match kind
    with pytest.raises(InvalidArgument):
        t.insert({"k": Exact(1)}, "drop", priority=5)         # exact tables have none
    with pytest.raises(InvalidArgument):
        t.insert({"x": Exact(1)}, "drop")                     # unknown field


def test_default_action_set_reset_and_const():
    t = table([("k", "exact", 8)])
    assert t.get_default() == ("NoAction", {})
    t.set_default("forward", {"port": 4})
    assert t.lookup(1).action.name == "C.forward" and t.lookup(1).args == (4,)
    assert t.lookup(1).hit is False
    t.reset_default()
    assert t.get_default() == ("NoAction", {})
    const = table([("k", "exact", 8)], default_is_const=True)
    with pytest.raises(PermissionDenied):
        const.set_default("drop")


def test_size_limit():
    t = table([("k", "exact", 8)], size=2)
    t.insert({"k": Exact(1)}, "drop")
    t.insert({"k": Exact(2)}, "drop")
    with pytest.raises(ResourceExhausted):
        t.insert({"k": Exact(3)}, "drop")


def test_const_entries_first_listed_wins_and_table_is_immutable():
    entries = [ConstEntrySpec([Ternary(0x10, 0xF0)], "C.forward", {"port": 1}),
               ConstEntrySpec([Ternary(0x11, 0xFF)], "C.forward", {"port": 2})]
    t = table([("k", "ternary", 8)], const_entries=entries)
    assert hit(t, 0x11) == ("C.forward", (1,))
    with pytest.raises(PermissionDenied):
        t.insert({"k": Ternary(1, 1)}, "drop", priority=1)
    assert all(v.is_const for v in t.entries())


def test_modify_keeps_direct_counters_and_entries_view():
    t = table([("k", "exact", 8)], direct_counter="C.cnt")
    e = t.insert({"k": Exact(1)}, "drop")
    e.packets, e.bytes = 3, 300
    t.modify({"k": Exact(1)}, "forward", {"port": 5})
    [view] = t.entries()
    assert (view.action, view.params, view.packets, view.bytes) == ("C.forward", {"port": 5},
                                                                    3, 300)


def test_single_range_field():
    t = table([("r", "range", 16)])
    t.insert({"r": Range(10, 20)}, "forward", {"port": 1}, priority=1)
    assert hit(t, 15) == ("C.forward", (1,))
    assert hit(t, 21) is None
