"""NativeSwitch.deferred_loads (a P4Runtime Write's updates): table and profile changes made
inside reach the C tables once, at the end; until then packets see the tables as they were;
afterwards the C switch forwards exactly as the Python reference does."""
import sys
from pathlib import Path

import p4switch
from p4switch.runtime.tables import Exact

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from rt_helpers import build  # noqa: E402
from parity import make_pair  # noqa: E402

TYPES = """
header h_t { bit<8> op; bit<8> x; }
struct headers { h_t h; }
struct metadata { }
"""
PARSER = "state start { packet.extract(hdr.h); transition accept; }"
INGRESS = """
    action_selector(HashAlgorithm.crc16, 16, 14) sel;
    action set_x(bit<8> v) { hdr.h.x = v; standard_metadata.egress_spec = 2; }
    action plain(bit<8> v) { hdr.h.x = v; standard_metadata.egress_spec = 3; }
    table routes {
        key = { hdr.h.op: exact; hdr.h.x: selector; }
        actions = { set_x; NoAction; }
        implementation = sel;
    }
    table direct { key = { hdr.h.op: exact; } actions = { plain; NoAction; } }
    apply { if (!routes.apply().hit) { direct.apply(); } }"""


def _changes(sw):
    sel = sw.action_profile("sel")
    for member in range(1, 5):
        sel.insert_member(member, "set_x", {"v": 0x40 + member})
    sel.insert_group(1, [1, 2, 3])
    for op in range(0, 60, 2):
        sw.table("routes").insert({"hdr.h.op": Exact(op)}, member=1 + op % 4)
    for op in range(1, 60, 2):
        sw.table("routes").insert({"hdr.h.op": Exact(op)}, group=1)
    for op in range(60, 90):
        sw.table("direct").insert({"hdr.h.op": Exact(op)}, action="plain", params={"v": op})


def test_changes_inside_reach_c_once_at_the_end_and_match_the_reference(monkeypatch):
    python, native, _ = make_pair(build(TYPES, PARSER, INGRESS))
    loads = []
    original = type(native)._load_table
    monkeypatch.setattr(type(native), "_load_table",
                        lambda self, table, index, keep_stats: (
                            loads.append(table.name),
                            original(self, table, index, keep_stats))[1])
    packets = [bytes([op, x]) for op in range(0, 100, 3) for x in (0, 7, 200)]
    before = [native.process_packet(0, p) for p in packets]
    with native.deferred_loads():
        _changes(native)
        assert loads == []
        assert [native.process_packet(0, p) for p in packets] == before   # old tables
    assert sorted(loads) == ["I.direct", "I.routes"]        # each changed table once
    _changes(python)
    for p in packets:
        assert native.process_packet(0, p) == python.process_packet(0, p), p
    assert any(out for p in packets for out in native.process_packet(0, p))


def test_without_deferral_every_change_loads_its_table(monkeypatch):
    native = p4switch.Switch(build(TYPES, PARSER, INGRESS), backend="c")
    loads = []
    original = type(native)._load_table
    monkeypatch.setattr(type(native), "_load_table",
                        lambda self, table, index, keep_stats: (
                            loads.append(table.name),
                            original(self, table, index, keep_stats))[1])
    for op in range(5):
        native.table("direct").insert({"hdr.h.op": Exact(op)}, action="plain", params={"v": 1})
    assert loads == ["I.direct"] * 5
