"""A controller written against p4c's P4Info works unchanged: p4runtime-shell loads the P4Info
p4c writes for tests/frontend/programs/ipv4_forward.p4 (written by hand, p4c-style, beside the
program) together with our device config, programs the route through the names and ids that
P4Info gives, and the switch forwards a packet by it."""

import os

import pytest

from device_env import free_tcp_port
from p4switch import compile_file
from p4switch.device.datapath import Datapath
from p4switch.device.p4runtime_server import P4RuntimeService, serve

PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "frontend", "programs")
PROGRAM = os.path.join(PROGRAMS, "ipv4_forward.p4")
P4C_P4INFO = PROGRAM + ".p4info.txtpb"


@pytest.fixture
def device(tmp_path):
    sent = []
    datapath = Datapath(transmit=lambda port, frame: sent.append((port, frame)), backend="python")
    service = P4RuntimeService(device_id=3, datapath=datapath)
    address = f"127.0.0.1:{free_tcp_port()}"
    server = serve(service, address, workers=4)
    config = tmp_path / "ipv4_forward.json"
    config.write_bytes(compile_file(PROGRAM).device_config)
    yield address, datapath, sent, str(config)
    server.stop(None)


def frame(dst_ip: bytes, ttl: int) -> bytes:
    eth = bytes.fromhex("000000000001" "000000000002" "0800")
    ipv4 = bytes([0x45, 0, 0, 20, 0, 0, 0, 0, ttl, 17, 0, 0]) + bytes([10, 0, 0, 1]) + dst_ip
    return eth + ipv4


def test_p4runtime_shell_with_p4cs_p4info_programs_and_forwards(device):
    import p4runtime_sh.shell as sh
    address, datapath, sent, config = device
    sh.setup(device_id=3, grpc_addr=address, election_id=(0, 1),
             config=sh.FwdPipeConfig(P4C_P4INFO, config))
    try:
        entry = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.ipv4_forward")
        entry.match["hdr.ipv4.dstAddr"] = "10.0.2.0/24"
        entry.action["dstAddr"] = "00:00:00:00:02:02"
        entry.action["port"] = "2"
        entry.insert()
        (read,) = [e.msg() for e in sh.TableEntry("MyIngress.ipv4_lpm").read()]
        assert read.table_id == 37375156 and read.action.action.action_id == 28792405
    finally:
        sh.teardown()

    datapath.inject(1, frame(bytes([10, 0, 2, 7]), ttl=64), "test")
    datapath.inject(1, frame(bytes([10, 0, 3, 7]), ttl=64), "test")   # no route: dropped
    assert len(sent) == 1
    port, out = sent[0]
    assert port == 2
    assert out[:6] == bytes.fromhex("000000000202")           # the new destination MAC
    assert out[6:12] == bytes.fromhex("000000000001")         # the old destination, as source
    assert out[14 + 8] == 63                                  # ttl - 1
    assert out[14 + 16:14 + 20] == bytes([10, 0, 2, 7])
