"""hosts/ina/protocol_rules.h, the protocol's rules that the C worker engine
(hosts/ina/engine_native.c) and the simulator's C++ actors (simulation/simcore.cpp) share,
held to the Python references: its constants against contracts/wire.py and engine.py, and
each function against hosts/ina/engine.py (RoundPlan, RetransmissionTimer, the engine's
timers), protocol.py (the header's first byte), simulation/cpp_engine.py's Shape and
simulation/ina.py (SimWorker's timers, SwitchCells) on tables of inputs.  The header is
compiled as C (through a small shim loaded with ctypes) and checked as C++; both builds that
include it key their caches by it.
"""

import ctypes
import itertools
import math
import os
import random
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

import nativebuild
from contracts import wire
from hosts.ina import engine, engine_native
from hosts.ina.engine import (BlockFloatSchedule, EngineConfig, Int32Schedule,
                              RetransmissionTimer, RoundPlan)
from hosts.ina.protocol import AggHeader
from simulation import cpp_engine, ina

HEADER = engine_native.RULES_PATH
CONSTANTS = {       # the header's name: the reference's value
    "INA_HEADER_LEN": wire.HEADER_LEN, "INA_VALUE_BYTES": wire.VALUE_BYTES,
    "INA_FRAME_OVERHEAD": wire.INA_FRAME_OVERHEAD, "INA_MSG_CONTRIBUTION": wire.MSG_CONTRIBUTION,
    "INA_MSG_RESULT": wire.MSG_RESULT, "INA_FLAG_NO_VALUES": wire.FLAG_NO_VALUES,
    "INA_FLAG_TO_OWNER": wire.FLAG_TO_OWNER, "INA_NO_OWNER": wire.NO_OWNER,
    "INA_MAX_CONTRIBUTORS": wire.MAX_CONTRIBUTORS, "INA_REDO_AFTER": engine.REDO_AFTER,
}
RETRANSMIT, GIVE_UP, STALL = 0, 1, 2
NEW, STALE, RETRANSMISSION, DUPLICATE, ADD = range(5)

# The shim: every function of the header behind a plain C signature ctypes can call.
SHIM = """
#include "protocol_rules.h"

const long long rules_constants[] = {%(constants)s};
const int rules_enums[] = {INA_RETRANSMIT, INA_GIVE_UP, INA_STALL, INA_CELL_NEW, INA_CELL_STALE,
                           INA_CELL_RETRANSMISSION, INA_CELL_DUPLICATE, INA_CELL_ADD};

unsigned rules_first_byte(unsigned m, unsigned v, unsigned o, unsigned f)
{ return ina_first_byte(m, v, o, f); }
void rules_unpack_first(unsigned first, unsigned *out)
{
    out[0] = ina_msg_type(first); out[1] = ina_version_bit(first);
    out[2] = ina_overflow_bit(first); out[3] = ina_flag_bits(first);
}
long long rules_payload_bytes(long long k) { return ina_payload_bytes(k); }
long long rules_frame_bytes(long long k) { return ina_frame_bytes(k); }

/* Per round q in [first, first + n): real, closing, has, slot, version, chunk offset. */
void rules_rounds(long long window, long long count, int block_float, int closing,
                  const unsigned char *bases, unsigned k, long long first, long long n,
                  long long *out)
{
    ina_rounds r = {window, count, block_float, closing};
    for (long long i = 0; i < n; i++) {
        long long q = first + i, *o = out + 6 * i;
        o[0] = ina_real_round(&r, q);
        o[1] = ina_closing_round(&r, q);
        o[2] = ina_has_round(&r, q);
        o[3] = q >= 0 ? ina_slot(&r, q) : -1;
        o[4] = q >= 0 ? ina_version(&r, q, bases[q %% window]) : -1;
        o[5] = o[2] ? (long long)ina_chunk_offset(&r, q, k) : -1;
    }
}

/* The timer after each of n samples: have_srtt, srtt, rttvar, timeout. */
void rules_timer(double minimum, double maximum, const double *rtts, int n, double *out)
{
    ina_timer t = ina_timer_new(minimum, maximum);
    out[0] = t.have_srtt; out[1] = t.srtt; out[2] = t.rttvar; out[3] = t.timeout;
    for (int i = 0; i < n; i++) {
        ina_timer_sample(&t, rtts[i]);
        double *o = out + 4 * (i + 1);
        o[0] = t.have_srtt; o[1] = t.srtt; o[2] = t.rttvar; o[3] = t.timeout;
    }
}

double rules_backoff(double timeout, double maximum) { return ina_backoff(timeout, maximum); }
int rules_on_expiry(long long retries, long long max_retries, int closing)
{ return ina_on_expiry(retries, max_retries, closing); }
int rules_redo_previous(int has_previous, long long retries)
{ return ina_redo_previous(has_previous, retries); }
int rules_cell_contribution(int has_cell, long long cell_round, long long count,
                            unsigned long long seen, long long round, int contributor)
{ return ina_cell_contribution(has_cell, cell_round, count, seen, round, contributor); }
int rules_cell_takes_result(int has_cell, long long cell_round, long long count, long long round)
{ return ina_cell_takes_result(has_cell, cell_round, count, round); }
"""


def _shim_library():
    try:
        with open(HEADER) as f:
            header = f.read()
        source = SHIM % {"constants": ", ".join(CONSTANTS)}
        path = nativebuild.build_shared("protocol-rules-test", {
            "rules_shim.c": source, "protocol_rules.h": header},
            extra_flags=engine_native.FLAGS + ("-Werror",))
    except nativebuild.BuildError as error:
        if nativebuild.compiler() is None:
            return None, str(error)
        raise
    lib = ctypes.CDLL(path)
    ll, d, i, u = ctypes.c_longlong, ctypes.c_double, ctypes.c_int, ctypes.c_uint
    p = ctypes.c_void_p
    for name, restype, argtypes in (
            ("rules_first_byte", u, [u, u, u, u]), ("rules_unpack_first", None, [u, p]),
            ("rules_payload_bytes", ll, [ll]), ("rules_frame_bytes", ll, [ll]),
            ("rules_rounds", None, [ll, ll, i, i, p, u, ll, ll, p]),
            ("rules_timer", None, [d, d, p, i, p]), ("rules_backoff", d, [d, d]),
            ("rules_on_expiry", i, [ll, ll, i]), ("rules_redo_previous", i, [i, ll]),
            ("rules_cell_contribution", i, [i, ll, ll, ctypes.c_ulonglong, ll, i]),
            ("rules_cell_takes_result", i, [i, ll, ll, ll])):
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib, None


LIB, WHY = _shim_library()
pytestmark = pytest.mark.requires(missing=WHY and f"no C compiler: {WHY}")


def same_float(a: float, b: float) -> bool:
    """Bit for bit (NaN equal to NaN)."""
    return np.float64(a).tobytes() == np.float64(b).tobytes() or (math.isnan(a) and math.isnan(b))


# ---- the header itself ---------------------------------------------------------------------
@pytest.mark.parametrize("language", [("gcc", "c", "-std=c11"), ("g++", "c++", "-std=c++17")],
                         ids=["c11", "c++17"])
def test_the_header_compiles_alone_as_c_and_as_cpp(language):
    program, kind, standard = language
    compiler = nativebuild.find_program("CC" if kind == "c" else "CXX", program)
    if compiler is None:
        pytest.skip(f"no {program}")
    done = subprocess.run([compiler, standard, "-Wall", "-Wextra", "-pedantic", "-Werror",
                           "-fsyntax-only", "-x", kind, HEADER], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_constants_are_the_wire_contracts():
    values = (ctypes.c_longlong * len(CONSTANTS)).in_dll(LIB, "rules_constants")
    assert dict(zip(CONSTANTS, values)) == CONSTANTS
    assert list((ctypes.c_int * 8).in_dll(LIB, "rules_enums")) == [RETRANSMIT, GIVE_UP, STALL,
                                                                    NEW, STALE, RETRANSMISSION,
                                                                    DUPLICATE, ADD]


def test_the_first_byte_is_the_codecs():
    out = (ctypes.c_uint * 4)()
    for msg_type, version, overflow, flags in itertools.product((1, 2, 15), (0, 1), (0, 1),
                                                                range(4)):
        header = AggHeader(msg_type, version, 1, 2, 3, 4, 5, overflow=overflow, flags=flags)
        first = header.pack()[0]
        assert LIB.rules_first_byte(msg_type, version, overflow, flags) == first
        LIB.rules_unpack_first(first, out)
        unpacked = AggHeader.unpack(header.pack())
        assert list(out) == [unpacked.msg_type, unpacked.version, unpacked.overflow,
                             unpacked.flags]


@pytest.mark.parametrize("k", [0, 1, 16, 64, 256, 65535])
def test_packet_sizes_are_the_wire_and_the_simulators(k):
    assert LIB.rules_payload_bytes(k) == (wire.packet_size(k) if k else wire.header_only_size())
    assert LIB.rules_frame_bytes(k) == wire.INA_FRAME_OVERHEAD + wire.VALUE_BYTES * k
    if k:
        shape = cpp_engine.Shape(elements=3 * k, k=k, window=4)
        assert LIB.rules_payload_bytes(k) == shape.payload_bytes(0)
        assert LIB.rules_frame_bytes(k) == shape.frame_bytes(0)


# ---- rounds: which exist, slot, version, chunk offset ------------------------------------------
def header_rounds(window, count, block_float, closing, bases, k, first, n):
    out = (ctypes.c_longlong * (6 * n))()
    base_bytes = bytes(bases) + bytes(window - len(bases))
    LIB.rules_rounds(window, count, int(block_float), int(closing), base_bytes, k, first, n, out)
    return [tuple(out[6 * i:6 * i + 6]) for i in range(n)]


ROUND_CASES = [   # (elements, k, window, first_versions)
    (1, 4, 1, ()), (16, 4, 4, ()), (17, 4, 4, (1, 0, 1)), (5, 1, 8, (1,) * 8), (40, 8, 3, (0, 1)),
    (3, 4, 8, ()), (100, 16, 5, (1, 1)), (64, 64, 2, ()), (1000, 7, 16, (1,) * 5),
]


@pytest.mark.parametrize("elements, k, window, bases", ROUND_CASES)
@pytest.mark.parametrize("kind", ["int32", "float32"])
@pytest.mark.parametrize("closing", [True, False])
def test_rounds_are_the_round_plans(elements, k, window, bases, kind, closing):
    if kind == "int32":
        schedule = Int32Schedule(np.arange(elements, dtype=np.int32), k)
        count = schedule.round_count
    else:
        schedule = BlockFloatSchedule(np.linspace(-1, 1, elements, dtype=np.float32), k, 3,
                                      window)
        count = schedule.block_count
    plan = RoundPlan(schedule, EngineConfig(job_id=1, contributor=0, window=window,
                                            first_versions=bases, closing_rounds=closing))
    first, n = -2, plan.round_count + 2 * window + 3
    rows = header_rounds(window, count, kind == "float32", closing, bases, k, first, n)
    for q, (real, closes, has, slot, version, offset) in zip(range(first, first + n), rows):
        assert real == schedule.has_round(q), q
        assert closes == (q >= 0 and plan.closing(q)), q
        assert has == (q >= 0 and plan.has_round(q)), q
        if q >= 0:
            assert (slot, version) == (q % window, plan.version(q)), q
        if has:
            assert offset == plan.chunk_offset(q), q
    assert sum(row[2] for row in rows) == plan.rounds_total


@pytest.mark.parametrize("elements, k, window, train", [
    (1, 4, 1, 1), (64 * 20, 64, 1, 1), (25600, 256, 32, 1), (1000, 16, 5, 1), (64 * 64, 64, 32, 8),
    (7, 1, 3, 2), (100, 10, 4, 4), (10000, 256, 32, 1),
])
@pytest.mark.parametrize("closing", [True, False])
def test_rounds_are_the_simulators_shape(elements, k, window, train, closing):
    shape = cpp_engine.Shape(elements, k, window, train, closing)
    first, n = -1, shape.span + 2 * shape.slots + 2
    rows = header_rounds(shape.slots, shape.real_rounds, False, closing, (), k, first, n)
    for q, (_real, closes, has, slot, version, _offset) in zip(range(first, first + n), rows):
        assert closes == shape.is_closing(q), q
        assert has == shape.has_round(q), q
        if q >= 0:
            assert (slot, version) == shape.slot_of(q), q
    assert sum(row[2] for row in rows) == shape.rounds


# ---- the retransmission timer, backoff, retry limit ---------------------------------------------
def timer_rows(minimum, maximum, rtts):
    out = (ctypes.c_double * (4 * (len(rtts) + 1)))()
    LIB.rules_timer(minimum, maximum, (ctypes.c_double * len(rtts))(*rtts), len(rtts), out)
    return [tuple(out[4 * i:4 * i + 4]) for i in range(len(rtts) + 1)]


def python_timer_rows(minimum, maximum, rtts):
    timer = RetransmissionTimer(minimum, maximum)
    rows = []
    for rtt in [None, *rtts]:
        if rtt is not None:
            timer.sample(rtt)
        rows.append((float(timer.srtt is not None), timer.srtt or 0.0, timer.rttvar,
                     timer.timeout))
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_the_timer_is_retransmission_timers_bit_for_bit(seed):
    rng = random.Random(seed)
    minimum = rng.choice([1e-6, 0.001, 0.0137, 0.1])
    maximum = rng.choice([minimum, 0.5, 3.2, 1e3])
    rtts = [rng.choice([0.0, minimum, maximum, rng.uniform(0, 2 * maximum),
                        rng.lognormvariate(-7, 2), 1e-12, 1 / 3]) for _ in range(200)]
    for mine, theirs in zip(timer_rows(minimum, maximum, rtts),
                            python_timer_rows(minimum, maximum, rtts)):
        assert all(map(same_float, mine, theirs)), (mine, theirs)


def test_the_timer_keeps_pythons_min_and_max_with_infinities_and_nan():
    rtts = [math.inf, 0.001, math.inf, math.nan, 0.002]
    for mine, theirs in zip(timer_rows(0.01, 3.2, rtts), python_timer_rows(0.01, 3.2, rtts)):
        assert all(map(same_float, mine, theirs)), (mine, theirs)


def sim_worker(max_retries, timeout_s=0.01, window=2, elements=8):
    shape = cpp_engine.Shape(elements, 1, window)         # rounds 0..7 real, 8..9 closing
    return ina.SimWorker(0, 1, shape, timeout_s, max_retries), shape


@pytest.mark.parametrize("max_retries", [0, 1, 3, 12])
@pytest.mark.parametrize("closing", [False, True])
def test_expiry_backoff_and_give_up_are_the_sim_workers(max_retries, closing):
    """SimWorker.on_timer (simulation/ina.py) on one overdue round per retry count."""
    for retries in range(max_retries + 2):
        for timeout in (0.01, 0.4, 1.7, 3.2, 5.0):
            worker, shape = sim_worker(max_retries)
            q = 9 if closing else 5
            assert shape.is_closing(q) == closing
            worker.outstanding[shape.slot_of(q)[0]] = ina.Outstanding(q, 0.0, timeout, 0.0,
                                                                      retries)
            try:
                resent = worker.on_timer(1.0)
            except ina.SimulationStall:
                outcome = STALL
            else:
                outcome = GIVE_UP if worker.stats.closings_unanswered else RETRANSMIT
                assert resent == ([q] if outcome == RETRANSMIT else [])
            assert LIB.rules_on_expiry(retries, max_retries, int(closing)) == outcome
            if outcome == RETRANSMIT:
                state = worker.outstanding[shape.slot_of(q)[0]]
                assert same_float(LIB.rules_backoff(timeout, worker.timer.maximum),
                                  state.timeout)


@pytest.mark.parametrize("max_retries", [0, 2, 5])
def test_expiry_backoff_and_give_up_are_the_engines(max_retries):
    """An AggregationEngine whose rounds are never answered: each retransmission's timeout
    and REDO, then the stall of a real round or the closing round given up, follow the
    header."""
    data = np.arange(4, dtype=np.int32)
    for answered in (False, True):      # True: the real round answered, its closing round not
        config = EngineConfig(job_id=1, contributor=0, window=1, timeout_s=0.3,
                              max_timeout_s=3.2, max_retries=max_retries)
        worker = engine.AggregationEngine(Int32Schedule(data, 4), config)
        (packet,) = worker.start(0.0)
        previous = packet
        if answered:
            result = AggHeader.unpack(packet)
            reply = AggHeader(wire.MSG_RESULT, result.version, 1, 0, 0, result.chunk_offset,
                              4).pack() + packet[16:]
            (packet,) = worker.on_packet(reply, 0.0)
        timeout, retries = worker.timer.timeout, 0
        while True:
            action = LIB.rules_on_expiry(retries, max_retries, int(answered))
            now = worker.next_deadline()
            try:
                sent = worker.on_timer(now)
            except engine.AggregationStalled:
                assert action == STALL
                break
            if action == GIVE_UP:
                assert sent == [] and worker.stats.closings_unanswered == 1 and worker.done
                break
            retries += 1
            redo = LIB.rules_redo_previous(int(answered), retries)
            assert action == RETRANSMIT and sent == [packet] + [previous] * redo
            assert worker.stats.redone_rounds == (redo and retries - engine.REDO_AFTER + 1)
            timeout = LIB.rules_backoff(timeout, config.max_timeout_s)
            assert same_float(worker.next_deadline(), now + timeout)
        assert retries == max_retries


def test_redo_follows_redo_after():
    for has_previous, retries in itertools.product((0, 1), range(6)):
        assert LIB.rules_redo_previous(has_previous, retries) == \
            (has_previous and retries >= engine.REDO_AFTER)


# ---- the switch cell, as the simulator models it -------------------------------------------------
def switch_cells(fan_in=64, parent="up"):
    children = [SimpleNamespace(contributor=c, node=f"child{c}") for c in range(64)]
    plan = SimpleNamespace(children=children, fan_in=fan_in, parent=parent,
                           contributor_at_parent=0)
    return ina.SwitchCells("sw", plan)


CELLS = [None] + [(round_, count, seen, ready) for round_ in (3,)
                  for count, seen in ((0, 0b1011), (1, 0b0010), (2, 0b0110), (5, 0b11111 << 59))
                  for ready in (False, True)]


@pytest.mark.parametrize("cell", CELLS)
def test_a_contribution_meets_the_cell_as_switch_cells_decide(cell):
    for round_, contributor in itertools.product((2, 3, 4), (0, 1, 2, 63)):
        cells = switch_cells()
        if cell is not None:
            held = ina.Cell(cell[0], 0, 0)
            held.count, held.seen, held.result_ready = cell[1], cell[2], cell[3]
            cells.cells[(0, 0)] = held
        before = dict(cells.events)
        cells.receive(ina.Packet("contribution", 0, 0, round_, 7, contributor))
        (event,) = [name for name in cells.events if cells.events[name] != before[name]]
        if event == "added":
            outcome = ADD if cell is not None and cells.cells[(0, 0)] is held else NEW
        else:
            outcome = {"stale_contribution": STALE, "result_resent": RETRANSMISSION,
                       "partial_resent": RETRANSMISSION, "duplicate": DUPLICATE}[event]
        has_cell, (held_round, count, seen, _) = cell is not None, cell or (0, 0, 0, False)
        assert LIB.rules_cell_contribution(has_cell, held_round, count, seen, round_,
                                           contributor) == outcome, (cell, round_, contributor)


@pytest.mark.parametrize("cell", CELLS)
def test_a_parents_result_meets_the_cell_as_switch_cells_decide(cell):
    for round_ in (2, 3, 4):
        cells = switch_cells()
        if cell is not None:
            held = ina.Cell(cell[0], 0, 0)
            held.count, held.seen = cell[1], cell[2]
            cells.cells[(0, 0)] = held
        cells.receive(ina.Packet("result", 0, 0, round_, 7))
        takes = cells.events["parent_result"] == 1
        assert takes != (cells.events["stale_result"] == 1)
        has_cell, (held_round, count) = cell is not None, (cell or (0, 0))[:2]
        assert LIB.rules_cell_takes_result(has_cell, held_round, count, round_) == takes


# ---- both builds include the header and key their caches by it ----------------------------------
def test_the_c_engines_build_takes_the_header(monkeypatch):
    seen = {}

    def build_shared(name, sources, **kwargs):
        seen.update(sources)
        raise nativebuild.BuildError("recorded")
    monkeypatch.setattr(engine_native, "_loaded", {})
    monkeypatch.setattr(nativebuild, "build_shared", build_shared)
    assert engine_native.load() is None
    with open(HEADER) as f:
        assert seen["protocol_rules.h"] == f.read()
    assert '#include "protocol_rules.h"' in seen["engine_native.c"]


def test_simcores_cache_key_covers_the_header(monkeypatch, tmp_path):
    cxx = cpp_engine.compiler()
    if cxx is None or not os.path.exists(cpp_engine.SIMGRID_VERSION_HEADER):
        pytest.skip("no C++ compiler or SimGrid headers")
    with open(cpp_engine.SOURCE) as f:
        assert '#include "protocol_rules.h"' in f.read()
    assert os.path.samefile(cpp_engine.RULES_HEADER, HEADER)
    before = cpp_engine.executable_path(cxx)
    changed = tmp_path / "protocol_rules.h"
    with open(HEADER) as f:
        changed.write_text(f.read() + "/* changed */\n")
    monkeypatch.setattr(cpp_engine, "RULES_HEADER", str(changed))
    assert cpp_engine.executable_path(cxx) != before
