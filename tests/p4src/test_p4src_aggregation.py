"""p4src/main.p4 on the in-process p4switch: exact packets in -> exact packets out.

Star jobs are installed by the controller's AggregationManager; each test checks the frames
the switch emits (ports and bytes), the sums, and the drop/event counters.
"""

import pytest

from controller.entries import DROP_REASONS, EVENTS
from p4src_harness import (contribution, drops, events, fabric, result_for, result_to_host,
                           with_zero_udp_checksum)
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether

DROP = {name: index for index, name in DROP_REASONS.items()}
EVENT = {name: index for index, name in EVENTS.items()}
JOB = 3
INT_MAX, INT_MIN = 2**31 - 1, -2**31


@pytest.fixture
def star():
    """star:4 with job 3 on h1, h2, h3 (ports 1-3, contributors 0-2), window 4, K = 4."""
    spec, switches, manager = fabric("star:4")
    manager.start_job(JOB, ["h1", "h2", "h3"], window=4)
    hosts = [spec.host(f"h{i}") for i in range(1, 5)]
    return switches["s1"], hosts


def send(sw, hosts, index, slot, version, values, contributor=None, job=JOB, port=None, **kw):
    """Host h<index+1> sends a contribution; returns the switch's output frames."""
    frame = contribution(hosts[index], job, slot, version,
                         index if contributor is None else contributor, values, **kw)
    return sw.process_packet(index + 1 if port is None else port, frame)


def results_to_all(hosts, slot, version, contributor, values, members=(0, 1, 2), **kw):
    return sorted((m + 1, result_to_host(hosts[m], JOB, slot, version, contributor, values,
                                         **kw)) for m in members)


def test_contributions_give_the_exact_sum_on_every_member_port(star):
    sw, hosts = star
    assert send(sw, hosts, 0, 1, 0, [1, -2, 3, 100], offset=12) == []
    assert send(sw, hosts, 1, 1, 0, [10, -20, 30, 200], offset=12) == []
    out = send(sw, hosts, 2, 1, 0, [100, -200, 300, -1000], offset=12)
    assert sorted(out) == results_to_all(hosts, 1, 0, 2, [111, -222, 333, -700], offset=12)
    assert events(sw) == {EVENT["added"]: 2, EVENT["completed"]: 1}
    assert drops(sw) == {}


def test_a_duplicate_contribution_is_not_added_twice(star):
    sw, hosts = star
    assert send(sw, hosts, 0, 0, 0, [5, 5, 5, 5]) == []
    assert send(sw, hosts, 0, 0, 0, [5, 5, 5, 5]) == []
    assert send(sw, hosts, 1, 0, 0, [1, 2, 3, 4]) == []
    out = send(sw, hosts, 2, 0, 0, [0, 0, 0, 1])
    assert sorted(out) == results_to_all(hosts, 0, 0, 2, [6, 7, 8, 10])
    assert events(sw)[EVENT["duplicate"]] == 1


def test_retransmission_of_a_completed_slot_gets_the_stored_result_unicast(star):
    sw, hosts = star
    send(sw, hosts, 0, 2, 1, [1, 1, 1, 1])
    send(sw, hosts, 1, 2, 1, [2, 2, 2, 2])
    send(sw, hosts, 2, 2, 1, [3, 3, 3, 3], exponent=0)
    # h2 lost its result and sends the same contribution again
    out = send(sw, hosts, 1, 2, 1, [2, 2, 2, 2])
    assert out == [(2, result_to_host(hosts[1], JOB, 2, 1, 1, [6, 6, 6, 6]))]
    assert events(sw)[EVENT["result_resent"]] == 1


def test_slot_versions_alternate_and_each_round_starts_from_its_first_contribution(star):
    sw, hosts = star
    # window 4, K = 4: chunk c has offset 4c and uses slot c % 4, version (c // 4) % 2
    for i in range(3):
        send(sw, hosts, i, 0, 0, [i + 1] * 4)                       # chunk 0: slot 0 v0
    for i in range(2):
        assert send(sw, hosts, i, 0, 1, [10 * (i + 1)] * 4, offset=16) == []  # chunk 4: v1
    # the straggler h3 retransmits chunk 0 and still gets version 0's result
    assert send(sw, hosts, 2, 0, 0, [3] * 4) == \
        [(3, result_to_host(hosts[2], JOB, 0, 0, 2, [6] * 4))]
    out = send(sw, hosts, 2, 0, 1, [30] * 4, offset=16)
    assert sorted(out) == results_to_all(hosts, 0, 1, 2, [60] * 4, offset=16)
    # chunk 8 reuses version 0: the old sum 6 is overwritten, not added to
    for i in range(2):
        assert send(sw, hosts, i, 0, 0, [100] * 4, offset=32) == []
    out = send(sw, hosts, 2, 0, 0, [-1] * 4, offset=32)
    assert sorted(out) == results_to_all(hosts, 0, 0, 2, [199] * 4, offset=32)


def test_saturating_add_clips_and_sets_the_overflow_flag(star):
    sw, hosts = star
    send(sw, hosts, 0, 3, 0, [INT_MAX - 1, INT_MIN + 1, 7, 0])
    send(sw, hosts, 1, 3, 0, [5, -5, 1, 0])
    out = send(sw, hosts, 2, 3, 0, [-3, 2, 1, 0])
    # clipping is per add: (MAX-1)+5 clips to MAX, then MAX-3; (MIN+1)-5 -> MIN, then MIN+2
    assert sorted(out) == results_to_all(hosts, 3, 0, 2, [INT_MAX - 3, INT_MIN + 2, 9, 0],
                                         overflow=1)


def test_no_overflow_flag_without_clipping_even_at_the_limits(star):
    sw, hosts = star
    send(sw, hosts, 0, 3, 0, [INT_MAX, INT_MIN, 0, 0])
    send(sw, hosts, 1, 3, 0, [0, 0, 0, 0])
    out = send(sw, hosts, 2, 3, 0, [-1, 1, 0, 0])
    assert sorted(out) == results_to_all(hosts, 3, 0, 2, [INT_MAX - 1, INT_MIN + 1, 0, 0])


def test_the_result_carries_the_largest_exponent(star):
    sw, hosts = star
    send(sw, hosts, 0, 1, 0, [1] * 4, exponent=130)
    send(sw, hosts, 1, 1, 0, [1] * 4, exponent=140)
    out = send(sw, hosts, 2, 1, 0, [1] * 4, exponent=127)
    assert sorted(out) == results_to_all(hosts, 1, 0, 2, [3] * 4, exponent=140)


@pytest.mark.parametrize("case, reason", [
    ("foreign_port", "not_member"),
    ("unknown_job", "unknown_job"),
    ("slot_out_of_range", "slot_range"),
    ("wrong_contributor", "wrong_contributor"),
    ("truncated_values", "truncated"),
    ("truncated_header", "truncated"),
    ("wrong_k", "wrong_k"),
    ("result_from_member", "bad_msg_type"),
])
def test_bad_aggregation_packets_are_dropped_and_counted(star, case, reason):
    sw, hosts = star
    good = contribution(hosts[0], JOB, 0, 0, 0, [1, 2, 3, 4])
    port, frame = 1, good
    if case == "foreign_port":          # h4 is on the switch but not in the job
        port, frame = 4, contribution(hosts[3], JOB, 0, 0, 3, [1, 2, 3, 4])
    elif case == "unknown_job":
        frame = contribution(hosts[0], JOB + 1, 0, 0, 0, [1, 2, 3, 4])
    elif case == "slot_out_of_range":   # window 4: slots 0..3
        frame = contribution(hosts[0], JOB, 4, 0, 0, [1, 2, 3, 4])
    elif case == "wrong_contributor":
        frame = contribution(hosts[0], JOB, 0, 0, 1, [1, 2, 3, 4])
    elif case == "truncated_values":
        frame = good[:-1]
    elif case == "truncated_header":
        frame = good[:14 + 20 + 8 + 10]
    elif case == "wrong_k":
        frame = contribution(hosts[0], JOB, 0, 0, 0, [1, 2, 3, 4, 5, 6, 7, 8])
    elif case == "result_from_member":
        frame = bytearray(good)
        frame[42] = (2 << 4)
        frame = bytes(frame)
    assert sw.process_packet(port, frame) == []
    assert drops(sw) == {DROP[reason]: 1}
    assert events(sw) == {}
    # the slot is untouched: the three members still complete it with exactly their values
    send(sw, hosts, 0, 0, 0, [1, 1, 1, 1])
    send(sw, hosts, 1, 0, 0, [1, 1, 1, 1])
    assert sorted(send(sw, hosts, 2, 0, 0, [1, 1, 1, 1])) == \
        results_to_all(hosts, 0, 0, 2, [3, 3, 3, 3])


def test_a_new_job_on_the_slots_of_a_finished_one_starts_from_clean_state():
    spec, switches, manager = fabric("star:2")
    sw = switches["s1"]
    h1, h2 = spec.host("h1"), spec.host("h2")
    manager.start_job(1, ["h1", "h2"], window=1)
    sw.process_packet(1, contribution(h1, 1, 0, 0, 0, [1] * 4))
    sw.process_packet(2, contribution(h2, 1, 0, 0, 1, [2] * 4))    # slot 0 v0 completed
    sw.process_packet(1, contribution(h1, 1, 0, 1, 0, [5] * 4))    # v1 left half-done
    manager.stop_job(1)
    plan = manager.start_job(2, ["h1", "h2"], window=1)
    assert plan.switches["s1"].slot_base == 0 and plan.generation == 2
    # version 0: h1's bit is still set from job 1, yet this is a new contribution, not a
    # retransmission to answer with job 1's result
    assert sw.process_packet(1, contribution(h1, 2, 0, 0, 0, [10] * 4)) == []
    assert sorted(sw.process_packet(2, contribution(h2, 2, 0, 0, 1, [20] * 4))) == [
        (1, result_to_host(h1, 2, 0, 0, 1, [30] * 4)),
        (2, result_to_host(h2, 2, 0, 0, 1, [30] * 4))]
    # version 1: job 1's half-done round (h1's 5) is not part of job 2's sum
    assert sw.process_packet(2, contribution(h2, 2, 0, 1, 1, [7] * 4)) == []
    assert sorted(sw.process_packet(1, contribution(h1, 2, 0, 1, 0, [8] * 4))) == [
        (1, result_to_host(h1, 2, 0, 1, 0, [15] * 4)),
        (2, result_to_host(h2, 2, 0, 1, 0, [15] * 4))]


def test_stopped_job_is_unknown_again():
    spec, switches, manager = fabric("star:2")
    manager.start_job(1, ["h1", "h2"], window=2)
    manager.stop_job(1)
    sw = switches["s1"]
    assert sw.process_packet(1, contribution(spec.host("h1"), 1, 0, 0, 0, [1] * 4)) == []
    assert drops(sw) == {DROP["unknown_job"]: 1}


def test_other_ipv4_is_forwarded_unchanged_by_its_route_and_the_rest_is_dropped():
    spec, switches, _ = fabric("star:3")
    sw = switches["s1"]
    h1, h3 = spec.host("h1"), spec.host("h3")
    frame = bytes(Ether(src=h1.mac, dst=h3.mac) / IP(src=h1.ip, dst=h3.ip, ttl=9)
                  / UDP(sport=5000, dport=6000) / b"payload")
    assert sw.process_packet(1, frame) == [(3, frame)]
    no_route = bytes(Ether(src=h1.mac, dst=h3.mac) / IP(src=h1.ip, dst="10.0.9.9")
                     / UDP(sport=5000, dport=6000))
    arp = bytes(Ether(src=h1.mac, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=h1.ip, pdst=h3.ip))
    assert sw.process_packet(1, no_route) == []
    assert sw.process_packet(1, arp) == []
    assert drops(sw) == {DROP["no_route"]: 1, DROP["not_ipv4"]: 1}


def test_two_level_tree_aggregates_partials_and_sends_results_down():
    spec, sw, manager = fabric("tree:2,2")      # s1 root; s2: h1,h2; s3: h3,h4; uplinks port 3
    plan = manager.start_job(JOB, ["h1", "h2", "h3", "h4"], window=2)
    assert plan.root == "s1"
    h = [spec.host(f"h{i}") for i in range(1, 5)]
    values = [[1, 2, 3, 4], [10, 20, 30, 40], [100, 200, 300, 400], [-1, -2, -3, -4]]

    assert sw["s2"].process_packet(1, contribution(h[0], JOB, 1, 0, 0, values[0])) == []
    up_s2 = sw["s2"].process_packet(2, contribution(h[1], JOB, 1, 0, 1, values[1]))
    # the partial goes up as s2's contribution (index 0 at s1), in h2's frame
    assert up_s2 == [(3, with_zero_udp_checksum(
        contribution(h[1], JOB, 1, 0, 0, [11, 22, 33, 44])))]
    # h1 retransmits before the root answered: s2 re-sends its partial up, in h1's frame
    resent = sw["s2"].process_packet(1, contribution(h[0], JOB, 1, 0, 0, values[0]))
    assert resent == [(3, with_zero_udp_checksum(
        contribution(h[0], JOB, 1, 0, 0, [11, 22, 33, 44])))]

    assert sw["s1"].process_packet(1, up_s2[0][1]) == []
    assert sw["s1"].process_packet(1, resent[0][1]) == []         # the re-sent copy: duplicate
    assert sw["s3"].process_packet(1, contribution(h[2], JOB, 1, 0, 0, values[2])) == []
    up_s3 = sw["s3"].process_packet(2, contribution(h[3], JOB, 1, 0, 1, values[3]))
    assert up_s3 == [(3, with_zero_udp_checksum(
        contribution(h[3], JOB, 1, 0, 1, [99, 198, 297, 396])))]
    down = sw["s1"].process_packet(2, up_s3[0][1])
    total = [110, 220, 330, 440]
    to_children = [(port, result_for("02:00:0a:00:ff:fe", "10.0.255.254", 9100,
                                     JOB, 1, 0, 1, total)) for port in (1, 2)]
    assert sorted(down) == to_children

    from_s2 = sw["s2"].process_packet(3, to_children[0][1])
    from_s3 = sw["s3"].process_packet(3, to_children[1][1])
    assert sorted(from_s2) == [(1, result_to_host(h[0], JOB, 1, 0, 1, total)),
                               (2, result_to_host(h[1], JOB, 1, 0, 1, total))]
    assert sorted(from_s3) == [(1, result_to_host(h[2], JOB, 1, 0, 1, total)),
                               (2, result_to_host(h[3], JOB, 1, 0, 1, total))]
    # a late retransmission at a leaf is now answered there, from the stored result
    assert sw["s3"].process_packet(1, contribution(h[2], JOB, 1, 0, 0, values[2])) == \
        [(1, result_to_host(h[2], JOB, 1, 0, 0, total))]
    assert events(sw["s2"]) == {EVENT["added"]: 1, EVENT["sent_up"]: 1,
                                EVENT["partial_resent"]: 1, EVENT["parent_result"]: 1}
    assert events(sw["s1"]) == {EVENT["added"]: 1, EVENT["duplicate"]: 1,
                                EVENT["completed"]: 1}
    assert all(drops(s) == {} for s in sw.values())
