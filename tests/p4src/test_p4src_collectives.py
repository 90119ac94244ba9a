"""p4src/main.p4's collectives support (docs/protocol.md, "Collectives"): header-only
contributions (FLAG_NO_VALUES) count as K zeros, and results with FLAG_TO_OWNER keep their
values only on the port towards the owner rank; exact frames in, exact frames out, on the
in-process p4switch with the controller's own entries."""

import struct

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from contracts.wire import FLAG_NO_VALUES, FLAG_TO_OWNER, NO_OWNER
from controller.entries import DROP_REASONS, EVENTS
from p4src_harness import drops, events, fabric

DROP = {name: index for index, name in DROP_REASONS.items()}
EVENT = {name: index for index, name in EVENTS.items()}
JOB = 3
K = 4
SERVICE = ("02:00:0a:00:ff:fe", "10.0.255.254")


def payload(msg_type, version, slot, contributor, values, offset=0, flags=0, owner=0,
            exponent=0, overflow=0):
    """Header (+ values unless `values` is None: header only, num_elements still K)."""
    first = (msg_type << 4) | (version << 3) | (overflow << 2) | flags
    header = struct.pack("!BBHHHIHH", first, exponent, JOB, slot, contributor, offset, K,
                         owner)
    return header if values is None else header + struct.pack(f"!{K}i", *values)


def contribution(host, slot, version, contributor, values, **fields) -> bytes:
    return bytes(Ether(src=host.mac, dst=SERVICE[0]) / IP(src=host.ip, dst=SERVICE[1], id=7)
                 / UDP(sport=20000 + JOB, dport=9100)
                 / payload(1, version, slot, contributor, values, **fields))


def result(mac, ip, port, slot, version, contributor, values, **fields) -> bytes:
    """A result as the switch addresses it (UDP checksum 0, IPv4 checksum recomputed)."""
    return bytes(Ether(src=SERVICE[0], dst=mac) / IP(src=SERVICE[1], dst=ip, id=7)
                 / UDP(sport=9100, dport=port, chksum=0)
                 / payload(2, version, slot, contributor, values, **fields))


def to_host(host, *args, **fields) -> bytes:
    return result(host.mac, host.ip, 20000 + JOB, *args, **fields)


def to_switch(*args, **fields) -> bytes:
    return result(SERVICE[0], SERVICE[1], 9100, *args, **fields)


@pytest.fixture
def star():
    spec, switches, manager = fabric("star:4")
    manager.start_job(JOB, ["h1", "h2", "h3"], window=4)     # ranks 0, 1, 2 on ports 1-3
    return switches["s1"], [spec.host(f"h{i}") for i in range(1, 5)]


def test_header_only_contributions_count_as_zeros_also_when_first_or_last(star):
    sw, h = star
    # first: a header-only packet opens the round with zeros
    assert sw.process_packet(1, contribution(h[0], 0, 0, 0, None, flags=FLAG_NO_VALUES)) == []
    assert sw.process_packet(2, contribution(h[1], 0, 0, 1, [1, -2, 3, 2**31 - 1])) == []
    # last: it completes the slot and every member gets the full result
    out = sw.process_packet(3, contribution(h[2], 0, 0, 2, None, flags=FLAG_NO_VALUES))
    assert sorted(out) == [(p, to_host(h[p - 1], 0, 0, 2, [1, -2, 3, 2**31 - 1]))
                           for p in (1, 2, 3)]
    # allgather's shape: one owner's values, the others header only, on slot 1
    assert sw.process_packet(1, contribution(h[0], 1, 0, 0, None, flags=FLAG_NO_VALUES)) == []
    assert sw.process_packet(2, contribution(h[1], 1, 0, 1, None, flags=FLAG_NO_VALUES)) == []
    out = sw.process_packet(3, contribution(h[2], 1, 0, 2, [-7, 0, 7, -2**31]))
    assert sorted(out) == [(p, to_host(h[p - 1], 1, 0, 2, [-7, 0, 7, -2**31]))
                           for p in (1, 2, 3)]
    assert events(sw) == {EVENT["added"]: 4, EVENT["completed"]: 2}
    assert drops(sw) == {}


def test_a_header_only_packet_keeps_its_exponent_for_the_max_and_clears_overflow(star):
    sw, h = star
    sw.process_packet(1, contribution(h[0], 2, 1, 0, [5, 5, 5, 5], exponent=130))
    sw.process_packet(2, contribution(h[1], 2, 1, 1, None, flags=FLAG_NO_VALUES, exponent=140,
                                      overflow=1))
    out = sw.process_packet(3, contribution(h[2], 2, 1, 2, [1, 1, 1, 1], exponent=120))
    assert sorted(out) == [(p, to_host(h[p - 1], 2, 1, 2, [6, 6, 6, 6], exponent=140))
                           for p in (1, 2, 3)]


def test_to_owner_result_keeps_values_on_the_owner_port_only(star):
    sw, h = star
    flags = FLAG_TO_OWNER
    sw.process_packet(1, contribution(h[0], 1, 0, 0, [1, 2, 3, 4], flags=flags, owner=1))
    sw.process_packet(2, contribution(h[1], 1, 0, 1, [10, 20, 30, 40], flags=flags, owner=1))
    out = sw.process_packet(3, contribution(h[2], 1, 0, 2, None, owner=1,
                                            flags=flags | FLAG_NO_VALUES))
    stripped = FLAG_TO_OWNER | FLAG_NO_VALUES
    assert sorted(out) == [
        (1, to_host(h[0], 1, 0, 2, None, flags=stripped, owner=1)),
        (2, to_host(h[1], 1, 0, 2, [11, 22, 33, 44], flags=flags, owner=1)),
        (3, to_host(h[2], 1, 0, 2, None, flags=stripped, owner=1))]
    # retransmissions are answered the same way: values only for the owner
    again = sw.process_packet(1, contribution(h[0], 1, 0, 0, [1, 2, 3, 4], flags=flags, owner=1))
    assert again == [(1, to_host(h[0], 1, 0, 0, None, flags=stripped, owner=1))]
    again = sw.process_packet(2, contribution(h[1], 1, 0, 1, [10, 20, 30, 40], flags=flags,
                                              owner=1))
    assert again == [(2, to_host(h[1], 1, 0, 1, [11, 22, 33, 44], flags=flags, owner=1))]
    # the owner no port leads to (closing rounds): values to nobody
    for port in (1, 2):
        sw.process_packet(port, contribution(h[port - 1], 3, 0, port - 1, None,
                                             flags=stripped, owner=NO_OWNER))
    out = sw.process_packet(3, contribution(h[2], 3, 0, 2, None, flags=stripped,
                                            owner=NO_OWNER))
    assert sorted(out) == [(p, to_host(h[p - 1], 3, 0, 2, None, flags=stripped,
                                       owner=NO_OWNER)) for p in (1, 2, 3)]
    assert drops(sw) == {}


@pytest.mark.parametrize("case, reason", [
    ("flag on a full packet", "bad_length"),
    ("header only without the flag", "truncated"),
    ("flag, lengths of a full packet", "bad_length"),
])
def test_header_only_packets_must_say_so_and_have_header_only_lengths(star, case, reason):
    sw, h = star
    if case == "flag on a full packet":
        frame = contribution(h[0], 0, 0, 0, [1, 2, 3, 4], flags=FLAG_NO_VALUES)
    elif case == "header only without the flag":
        frame = contribution(h[0], 0, 0, 0, None)
    else:
        packet = Ether(contribution(h[0], 0, 0, 0, None, flags=FLAG_NO_VALUES))
        packet[IP].len, packet[UDP].len = 20 + 8 + 16 + 4 * K, 8 + 16 + 4 * K
        del packet[IP].chksum
        frame = bytes(packet)
    assert sw.process_packet(1, frame) == []
    assert drops(sw) == {DROP[reason]: 1}


def test_leaf_spine_tree_sends_values_down_only_towards_the_owner():
    spec, sw, manager = fabric("leafspine:2,1,2")   # s1: h1 h2, s2: h3 h4, spine s3
    manager.start_job(JOB, ["h1", "h2", "h3", "h4"], window=2)   # ranks 0-3
    h = [spec.host(f"h{i}") for i in range(1, 5)]
    owner, flags, stripped = 2, FLAG_TO_OWNER, FLAG_TO_OWNER | FLAG_NO_VALUES
    values = [[1, 2, 3, 4], None, [100, 200, 300, 400], [-1, -2, -3, -4]]

    def send(leaf, port, rank):
        extra = FLAG_NO_VALUES if values[rank] is None else 0
        return sw[leaf].process_packet(port, contribution(h[rank], 1, 0, port - 1, values[rank],
                                                          flags=flags | extra, owner=owner))

    assert send("s1", 1, 0) == []
    up_s1 = send("s1", 2, 1)                         # header-only last: a full partial goes up
    assert [port for port, _ in up_s1] == [3]
    partial = Ether(up_s1[0][1])
    assert bytes(partial[UDP].payload) == payload(1, 0, 1, 0, [1, 2, 3, 4], flags=flags,
                                                  owner=owner)
    assert partial[IP].len == 20 + 8 + 16 + 4 * K
    reparsed = Ether(up_s1[0][1])
    del reparsed[IP].chksum
    assert bytes(Ether(bytes(reparsed))) == up_s1[0][1]         # its IPv4 checksum is right
    assert sw["s3"].process_packet(1, up_s1[0][1]) == []
    assert send("s2", 1, 2) == []
    up_s2 = send("s2", 2, 3)
    down = sw["s3"].process_packet(2, up_s2[0][1])
    total = [100, 200, 300, 400]
    assert sorted(down) == [(1, to_switch(1, 0, 1, None, flags=stripped, owner=owner)),
                            (2, to_switch(1, 0, 1, total, flags=flags, owner=owner))]
    # the leaf without the owner gets the header only and passes it on as such
    assert sorted(sw["s1"].process_packet(3, down[0][1])) == [
        (p, to_host(h[p - 1], 1, 0, 1, None, flags=stripped, owner=owner)) for p in (1, 2)]
    assert sorted(sw["s2"].process_packet(3, down[1][1])) == [
        (1, to_host(h[2], 1, 0, 1, total, flags=flags, owner=owner)),
        (2, to_host(h[3], 1, 0, 1, None, flags=stripped, owner=owner))]
    assert events(sw["s1"]) == {EVENT["added"]: 1, EVENT["sent_up"]: 1,
                                EVENT["parent_result"]: 1}
    assert all(drops(s) == {} for s in sw.values())


@pytest.mark.parametrize("backend", ["python", "c", "xdp"])
def test_collectives_stf_passes_on_each_back_end(backend, tmp_path):
    """tests/p4src/collectives_stf.py's frames (built by scapy) through `p4switch stf` (the
    XDP back end: the aggregation in the kernel, BPF_PROG_TEST_RUN)."""
    if backend == "xdp":
        from p4switch.backend.xdp import loader
        from skip_or_fail import skip_or_fail
        skip_or_fail(loader.toolchain_missing())
    import io
    import os
    import subprocess
    import sys
    import collectives_stf
    text = io.StringIO()
    sent = collectives_stf.write_stf(text)
    path = tmp_path / "collectives_k4.stf"
    path.write_text(text.getvalue())
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = subprocess.run([sys.executable, "-m", "p4switch", "stf",
                          os.path.join(repo, "p4src", "main.p4"), str(path), "-D", "AGG_K=4",
                          "--backend", backend], capture_output=True, text=True, cwd=repo,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"PASS {path}: {sent} packet(s) in, 15 out" in run.stdout
