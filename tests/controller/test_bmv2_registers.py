"""The controller's register interface on a real bmv2: one simple_switch_grpc, no Mininet.

The switch starts empty (--no-p4) with its P4Runtime server and its Thrift server on
loopback; the controller pushes p4src (compiled by the real p4c-bm2-ss) with
SetForwardingPipelineConfig, then reads, writes and resets registers through the one
SwitchConnection: over Thrift, since bmv2's P4Runtime does not implement registers (which
the last test shows).  Marked bmv2: it runs wherever the p4lang toolchain is (CI included).
"""

import os
import subprocess
import tempfile

import pytest

from listening import free_port, wait_listening

from controller import AggregationManager, Pipeline, SwitchConnection, SwitchError
from topologies.program import compile_program
from topologies.spec import Host, Link, Switch, TopologySpec

pytestmark = pytest.mark.bmv2

SLOTS = 64
OWNER = "slot_state.owner"          # bit<16>
SEEN = "slot_state.seen"            # bit<64>
COUNT = "slot_state.count"          # bit<8>


@pytest.fixture(scope="module")
def bmv2_program(p4lang_toolchain, tmp_path_factory):
    return compile_program("bmv2", str(tmp_path_factory.mktemp("build")), k=4)


@pytest.fixture
def bmv2_switch(p4lang_toolchain, tmp_path):
    """(grpc port, thrift port) of a simple_switch_grpc --no-p4 on loopback."""
    grpc_port, thrift_port = free_port(), free_port()
    ipc = os.path.join(tempfile.gettempdir(), f"ina-test-bmv2-{os.getpid()}-{grpc_port}.ipc")
    output = str(tmp_path / "bmv2.out")
    with open(output, "w") as out:
        process = subprocess.Popen(
            [p4lang_toolchain.path("simple_switch_grpc"), "--no-p4", "--device-id", "0",
             "--thrift-port", str(thrift_port), "--notifications-addr", f"ipc://{ipc}",
             "--", "--grpc-server-addr", f"127.0.0.1:{grpc_port}"],
            stdout=out, stderr=subprocess.STDOUT, env=p4lang_toolchain.environment(),
            start_new_session=True)
    try:
        for port in (grpc_port, thrift_port):
            wait_listening(port, process, "simple_switch_grpc",
                           lambda: open(output).read()[-500:])
        yield grpc_port, thrift_port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if os.path.exists(ipc):
            os.unlink(ipc)


def connect(bmv2_switch, program, thrift=True) -> SwitchConnection:
    grpc_port, thrift_port = bmv2_switch
    conn = SwitchConnection("s1", f"127.0.0.1:{grpc_port}", 0,
                            thrift_port=thrift_port if thrift else None)
    conn.connect(timeout=10)
    conn.set_pipeline(Pipeline.from_files(program.p4info, program.device_config))
    return conn


def test_register_write_read_reset_through_the_client(bmv2_switch, bmv2_program):
    conn = connect(bmv2_switch, bmv2_program)
    try:
        cells = 2 * 1024                      # AGG_CELLS of the default AGG_SLOTS
        assert conn.read_register(OWNER, 5) == 0
        conn.write_register(OWNER, 5, 0xBEEF)
        conn.write_register(COUNT, 5, 255)
        # bit<64>: up to 2**63 - 2 round trip; Thrift's i64 cannot carry more
        conn.write_register(SEEN, 5, (1 << 63) - 2)
        conn.write_register(SEEN, 6, 1 << 40)
        assert conn.read_register(OWNER, 5) == 0xBEEF
        assert conn.read_register(COUNT, 5) == 255
        assert conn.read_register(SEEN, 5) == (1 << 63) - 2
        seen = conn.read_register_cells(SEEN)
        assert len(seen) == cells
        assert {i: v for i, v in seen.items() if v} == {5: (1 << 63) - 2, 6: 1 << 40}
        # the full P4Info name works as well as a unique suffix
        assert conn.read_register("AggIngress.aggregation.slot_state.owner", 5) == 0xBEEF
        conn.write_register(COUNT, None, 7)                  # every cell
        assert set(conn.read_register_cells(COUNT).values()) == {7}
        conn.reset_register(COUNT)
        conn.reset_register(SEEN)
        assert set(conn.read_register_cells(COUNT).values()) == {0}
        assert conn.read_register(SEEN, 5) == 0
        assert conn.read_register(OWNER, 5) == 0xBEEF       # another register, untouched
    finally:
        conn.close()


def test_register_errors_are_one_line(bmv2_switch, bmv2_program):
    conn = connect(bmv2_switch, bmv2_program)
    try:
        with pytest.raises(SwitchError) as info:
            conn.read_register(OWNER, 1 << 20)
        assert str(info.value) == ("switch s1: bm_register_read "
                                   "AggIngress.aggregation.slot_state.owner[1048576]: "
                                   "INVALID_INDEX")
        with pytest.raises(SwitchError, match=r"^switch s1: 65536 does not fit bit<16>$"):
            conn.write_register(OWNER, 0, 1 << 16)
        with pytest.raises(SwitchError, match="which bmv2's Thrift API cannot carry$"):
            conn.write_register(SEEN, 0, 1 << 63)
        # bmv2 reads every bit<64> value from 2**63 up as 2**63 - 1: refused as ambiguous
        conn.write_register(SEEN, 9, (1 << 63) - 1)
        with pytest.raises(SwitchError) as info:
            conn.read_register(SEEN, 9)
        assert str(info.value) == (
            "switch s1: AggIngress.aggregation.slot_state.seen[9] reads 9223372036854775807 "
            "(2**63 - 1), where bmv2's Thrift API saturates bit<64> values: it may hold more")
    finally:
        conn.close()


def test_missing_ranks_reads_slot_bitmaps_over_thrift(bmv2_switch, bmv2_program):
    """controller.diagnosis on bmv2: a stuck slot planted through the client is found."""
    grpc_port, _ = bmv2_switch
    spec = TopologySpec("json", [Host("h1", "10.0.0.1", "02:00:0a:00:00:01"),
                                 Host("h2", "10.0.0.2", "02:00:0a:00:00:02")],
                        [Switch("s1", 0, grpc_port)],
                        [Link("h1", None, "s1", 1), Link("h2", None, "s1", 2)])
    conn = connect(bmv2_switch, bmv2_program)
    try:
        manager = AggregationManager(spec, {"s1": conn}, slots_per_switch=SLOTS)
        plan = manager.start_job(4, ["h1", "h2"], window=16)
        assert manager.missing_ranks(4).to_text() == \
            "job 4: no rank missing (no slot is waiting for a contribution)"
        cell = 2 * (plan.switches["s1"].slot_base + 5) + 1
        for register, value in (("owner", plan.generation), ("round_offset", 40),
                                ("count", 1), ("seen", 0b10)):
            conn.write_register(f"slot_state.{register}", cell, value)
        assert manager.missing_ranks(4).to_text() == "job 4: rank 0 missing (h1)"
        manager.stop_job(4)
    finally:
        conn.close()


def test_bmv2_p4runtime_has_no_registers(bmv2_switch, bmv2_program):
    """Why the Thrift path exists: without a Thrift port the client asks P4Runtime, and
    bmv2's PI server refuses register reads (UNIMPLEMENTED)."""
    conn = connect(bmv2_switch, bmv2_program, thrift=False)
    try:
        with pytest.raises(SwitchError, match="UNIMPLEMENTED"):
            conn.read_register(OWNER, 0)
    finally:
        conn.close()
