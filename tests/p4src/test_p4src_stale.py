"""p4src/main.p4: late and duplicated packets of rounds a slot has left, length checks and
forged service-address packets (issue #7), exact packets in -> exact packets out.

Star job 3 on h1, h2, h3 (contributors 0-2), window 4, K = 4: chunk c has offset 4c and uses
slot c % 4, version (c // 4) % 2, so chunks 0, 4, 8 share slot 0 (versions 0, 1, 0).
"""

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from controller.entries import DROP_REASONS, EVENTS
from p4src_harness import (contribution, drops, events, fabric, result_for, result_to_host,
                           with_zero_udp_checksum)

DROP = {name: index for index, name in DROP_REASONS.items()}
EVENT = {name: index for index, name in EVENTS.items()}
JOB = 3


@pytest.fixture
def star():
    spec, switches, manager = fabric("star:4")
    manager.start_job(JOB, ["h1", "h2", "h3"], window=4)
    return switches["s1"], [spec.host(f"h{i}") for i in range(1, 5)]


def chunk(sw, hosts, member, c, values):
    """Member `member` (0..2) sends chunk c; the switch's output frames."""
    frame = contribution(hosts[member], JOB, c % 4, (c // 4) % 2, member, values, offset=4 * c)
    return sw.process_packet(member + 1, frame)


def complete(sw, hosts, c, values_per_member):
    """All three members send chunk c; returns the multicast output."""
    for member in (0, 1):
        assert chunk(sw, hosts, member, c, values_per_member[member]) == []
    return sorted(chunk(sw, hosts, 2, c, values_per_member[2]))


def results_to_all(hosts, c, values, contributor=2):
    return sorted((m + 1, result_to_host(hosts[m], JOB, c % 4, (c // 4) % 2, contributor,
                                         values, offset=4 * c)) for m in range(3))


def test_late_duplicate_after_the_slot_moved_to_the_other_version_gets_the_stored_result(star):
    sw, hosts = star
    assert complete(sw, hosts, 0, [[1] * 4, [2] * 4, [3] * 4]) == results_to_all(hosts, 0, [6] * 4)
    assert chunk(sw, hosts, 0, 4, [10] * 4) == []          # h1 moved on to chunk 4
    # a late copy of h1's chunk 0 is answered from the stored result, not counted again
    assert chunk(sw, hosts, 0, 0, [1] * 4) == [
        (1, result_to_host(hosts[0], JOB, 0, 0, 0, [6] * 4, offset=0))]
    assert chunk(sw, hosts, 1, 4, [20] * 4) == []
    assert sorted(chunk(sw, hosts, 2, 4, [30] * 4)) == results_to_all(hosts, 4, [60] * 4)
    assert drops(sw) == {}
    assert events(sw)[EVENT["result_resent"]] == 1


def test_late_duplicate_while_the_version_collects_chunk_c_plus_2w_is_dropped(star):
    sw, hosts = star
    complete(sw, hosts, 0, [[1] * 4, [2] * 4, [3] * 4])
    complete(sw, hosts, 4, [[4] * 4, [5] * 4, [6] * 4])
    assert chunk(sw, hosts, 1, 8, [100] * 4) == []         # version 0 now collects chunk 8
    for member in range(3):                               # every chunk-0 packet comes back
        assert chunk(sw, hosts, member, 0, [1000] * 4) == []
    assert drops(sw) == {DROP["stale_contribution"]: 3}
    assert chunk(sw, hosts, 0, 8, [200] * 4) == []
    assert sorted(chunk(sw, hosts, 2, 8, [300] * 4)) == results_to_all(hosts, 8, [600] * 4)
    # and after chunk 8 completed, chunk 0 (a smaller offset) is still stale
    assert chunk(sw, hosts, 0, 0, [1] * 4) == []
    assert drops(sw) == {DROP["stale_contribution"]: 4}


def test_a_stale_packet_never_starts_a_round_on_a_complete_version(star):
    sw, hosts = star
    complete(sw, hosts, 0, [[1] * 4, [2] * 4, [3] * 4])
    complete(sw, hosts, 4, [[1] * 4, [1] * 4, [1] * 4])
    complete(sw, hosts, 8, [[7] * 4, [8] * 4, [9] * 4])
    # version 0 is complete with chunk 8; a chunk-0 copy must not open a new round there
    assert chunk(sw, hosts, 2, 0, [5] * 4) == []
    assert chunk(sw, hosts, 2, 8, [9] * 4) == [
        (3, result_to_host(hosts[2], JOB, 0, 0, 2, [24] * 4, offset=32))]


def test_two_level_tree_drops_stale_partials_and_stale_results():
    spec, sw, manager = fabric("tree:2,2")      # s1 root; s2: h1,h2; s3: h3,h4; uplinks port 3
    manager.start_job(JOB, ["h1", "h2", "h3", "h4"], window=1)
    h = [spec.host(f"h{i}") for i in range(1, 5)]

    def leaf_round(switch, first, c, values):
        """Both hosts below `switch` send chunk c (window 1: slot 0, version c % 2)."""
        sw[switch].process_packet(1, contribution(h[first], JOB, 0, c % 2, 0, values, offset=4 * c))
        return sw[switch].process_packet(2, contribution(h[first + 1], JOB, 0, c % 2, 1, values,
                                                         offset=4 * c))

    (_, up0_s2), = leaf_round("s2", 0, 0, [1] * 4)
    (_, up0_s3), = leaf_round("s3", 2, 0, [2] * 4)
    assert sw["s1"].process_packet(1, up0_s2) == []
    down0 = sorted(sw["s1"].process_packet(2, up0_s3))
    assert [port for port, _ in down0] == [1, 2]
    for port, switch in ((1, "s2"), (2, "s3")):
        assert len(sw[switch].process_packet(3, dict(down0)[port])) == 2
    (_, up1_s2), = leaf_round("s2", 0, 1, [3] * 4)
    (_, up1_s3), = leaf_round("s3", 2, 1, [4] * 4)
    sw["s1"].process_packet(1, up1_s2)
    sw["s1"].process_packet(2, up1_s3)
    (_, up2_s2), = leaf_round("s2", 0, 2, [5] * 4)
    assert sw["s1"].process_packet(1, up2_s2) == []      # s1's version 0 collects chunk 2
    # s2's chunk-0 partial arrives again at the root: stale, not added to chunk 2
    assert sw["s1"].process_packet(1, up0_s2) == []
    assert drops(sw["s1"]) == {DROP["stale_contribution"]: 1}
    # the root's chunk-0 result arrives again at s2, whose version 0 holds chunk 2 now
    assert sw["s2"].process_packet(3, dict(down0)[1]) == []
    assert drops(sw["s2"]) == {DROP["stale_result"]: 1}
    (_, up2_s3), = leaf_round("s3", 2, 2, [6] * 4)
    down2 = dict(sw["s1"].process_packet(2, up2_s3))
    total = [2 * 5 + 2 * 6] * 4
    assert down2[1] == result_for("02:00:0a:00:ff:fe", "10.0.255.254", 9100, JOB, 0, 0, 1,
                                  total, offset=8)
    assert sorted(sw["s2"].process_packet(3, down2[1])) == [
        (1, result_to_host(h[0], JOB, 0, 0, 1, total, offset=8)),
        (2, result_to_host(h[1], JOB, 0, 0, 1, total, offset=8))]


def _retyped(frame: bytes, **ip_or_udp) -> bytes:
    packet = Ether(frame)
    for name, value in ip_or_udp.items():
        layer, field = name.split("_", 1)
        setattr(packet[IP if layer == "ip" else UDP], field, value)
    packet[IP].chksum = None
    return bytes(packet)


@pytest.mark.parametrize("change", [{"udp_len": 8 + 16 + 4 * 4 - 4}, {"udp_len": 200},
                                    {"ip_len": 20 + 8 + 16 + 16 + 4}])
def test_wrong_udp_or_ipv4_length_is_dropped_as_bad_length(star, change):
    sw, hosts = star
    frame = _retyped(contribution(hosts[0], JOB, 0, 0, 0, [1, 2, 3, 4]), **change)
    assert sw.process_packet(1, frame) == []
    assert drops(sw) == {DROP["bad_length"]: 1} and events(sw) == {}


def test_a_fragment_is_not_taken_for_an_aggregation_packet(star):
    sw, hosts = star
    frame = _retyped(contribution(hosts[0], JOB, 0, 0, 0, [1, 2, 3, 4]), ip_flags=1)
    assert sw.process_packet(1, frame) == []          # plain IPv4 to the service address
    assert drops(sw) == {DROP["no_route"]: 1} and events(sw) == {}


def test_forged_result_to_a_worker_port_is_dropped(star):
    sw, hosts = star
    forged = with_zero_udp_checksum(result_to_host(hosts[0], JOB, 0, 0, 2, [9] * 4))
    assert sw.process_packet(4, forged) == []
    assert drops(sw) == {DROP["spoofed_source"]: 1}
    honest = bytes(Ether(src=hosts[3].mac, dst=hosts[0].mac)
                   / IP(src=hosts[3].ip, dst=hosts[0].ip) / UDP(sport=9100, dport=20000 + JOB)
                   / (b"x" * 20))
    assert sw.process_packet(4, honest) == [(1, honest)]
