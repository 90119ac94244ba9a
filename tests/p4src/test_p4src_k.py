"""p4src/main.p4 compiled for every supported AGG_K (contracts.wire.SWITCH_K_VALUES, up to
256): exact per-element sums multicast with per-member addressing, per-add saturation on the
first and last values, retransmission answered from the stored values, length/K checks, the
two-level tree (partials up, stored results down), and a clear compile error for any other K.

Values differ per element (and per contributor) so that a value processor wired to the wrong
field, or a field missing at the end of a large K, changes the output bytes.
"""

import re

import numpy as np
import pytest

from controller.entries import DROP_REASONS, EVENTS
from contracts.wire import SWITCH_K_VALUES
from p4src_harness import (MAIN_P4, contribution, drops, events, fabric, p4switch_api,
                           result_for, result_to_host, with_zero_udp_checksum)

DROP = {name: index for index, name in DROP_REASONS.items()}
EVENT = {name: index for index, name in EVENTS.items()}
INT_MAX, INT_MIN = 2**31 - 1, -2**31
JOB = 2
ALL_K = pytest.mark.parametrize("k", SWITCH_K_VALUES)


def saturating_sum(contributions):
    """What the switch computes: left to right, each add clipped to int32; clipped or not."""
    total, clipped = list(contributions[0]), False
    for values in contributions[1:]:
        for i, v in enumerate(values):
            wide = total[i] + v
            total[i] = min(max(wide, INT_MIN), INT_MAX)
            clipped |= total[i] != wide
    return total, clipped


def distinct_values(k, seed):
    """k int32 values, different per element, large enough to exercise all 32 bits."""
    rng = np.random.default_rng(seed)
    return [int(v) for v in rng.integers(-2**29, 2**29, size=k)]


def star(k, members=("h1", "h2", "h3")):
    spec, switches, manager = fabric("star:4", k=k)
    manager.start_job(JOB, list(members), window=2)
    return switches["s1"], [spec.host(f"h{i}") for i in range(1, 5)]


def complete_round(sw, hosts, k, per_member, **fields):
    """h1, h2, h3 send slot 1 version 0; returns the outputs of the last one."""
    for member in (0, 1):
        assert sw.process_packet(member + 1, contribution(hosts[member], JOB, 1, 0, member,
                                                          per_member[member], **fields)) == []
    return sorted(sw.process_packet(3, contribution(hosts[2], JOB, 1, 0, 2, per_member[2],
                                                    **fields)))


def to_members(hosts, values, **fields):
    return sorted((m + 1, result_to_host(hosts[m], JOB, 1, 0, 2, values, **fields))
                  for m in range(3))


@ALL_K
def test_exact_per_element_sums_reach_every_member_addressed_to_it(k):
    sw, hosts = star(k)
    per_member = [distinct_values(k, seed) for seed in (1, 2, 3)]
    total, clipped = saturating_sum(per_member)
    assert not clipped
    out = complete_round(sw, hosts, k, per_member, offset=5 * k, exponent=9)
    assert out == to_members(hosts, total, offset=5 * k, exponent=9)
    assert len(out[0][1]) == 14 + 20 + 8 + 16 + 4 * k
    assert events(sw) == {EVENT["added"]: 2, EVENT["completed"]: 1}
    assert drops(sw) == {}


@ALL_K
def test_saturation_on_the_first_and_last_value_sets_overflow(k):
    sw, hosts = star(k)
    per_member = [distinct_values(k, seed) for seed in (4, 5, 6)]
    per_member[0][0], per_member[1][0], per_member[2][0] = INT_MAX - 1, 5, -3
    if k > 1:
        per_member[0][-1], per_member[1][-1], per_member[2][-1] = INT_MIN + 1, -5, 2
    total, clipped = saturating_sum(per_member)
    assert clipped and total[0] == INT_MAX - 3 and (k == 1 or total[-1] == INT_MIN + 2)
    assert complete_round(sw, hosts, k, per_member) == to_members(hosts, total, overflow=1)


@ALL_K
def test_a_retransmission_gets_the_stored_values_unicast(k):
    sw, hosts = star(k)
    per_member = [distinct_values(k, seed) for seed in (7, 8, 9)]
    total, _ = saturating_sum(per_member)
    complete_round(sw, hosts, k, per_member, exponent=3)
    # h2 resends its own values: the answer carries the stored sums, not h2's values
    resent = sw.process_packet(2, contribution(hosts[1], JOB, 1, 0, 1, per_member[1],
                                               exponent=3))
    assert resent == [(2, result_to_host(hosts[1], JOB, 1, 0, 1, total, exponent=3))]
    assert events(sw)[EVENT["result_resent"]] == 1


@ALL_K
@pytest.mark.parametrize("case, reason", [
    ("fewer_values", "wrong_k"),
    ("more_values", "wrong_k"),
    ("one_byte_short", "truncated"),
    ("trailing_bytes", "bad_length"),
])
def test_packets_not_carrying_exactly_k_values_are_dropped(k, case, reason):
    sw, hosts = star(k)
    values = distinct_values(k, 10)
    if case == "fewer_values":
        frame = contribution(hosts[0], JOB, 0, 0, 0, values[:k // 2] if k > 1 else [])
    elif case == "more_values":
        frame = contribution(hosts[0], JOB, 0, 0, 0, values + values)
    elif case == "one_byte_short":
        frame = contribution(hosts[0], JOB, 0, 0, 0, values)[:-1]
    else:   # num_elements says k, but the datagram holds one value more
        frame = contribution(hosts[0], JOB, 0, 0, 0, values + [1], num_elements=k)
    assert sw.process_packet(1, frame) == []
    assert drops(sw) == {DROP[reason]: 1}
    assert events(sw) == {}


@pytest.mark.parametrize("k", [v for v in SWITCH_K_VALUES if v >= 64])
def test_two_level_tree_sends_k_value_partials_up_and_stored_results_down(k):
    spec, sw, manager = fabric("tree:2,2", k=k)     # s1 root; s2: h1,h2; s3: h3,h4
    manager.start_job(JOB, ["h1", "h2", "h3", "h4"], window=2)
    h = [spec.host(f"h{i}") for i in range(1, 5)]
    values = [distinct_values(k, seed) for seed in (11, 12, 13, 14)]
    left, _ = saturating_sum(values[:2])
    right, _ = saturating_sum(values[2:])
    total, _ = saturating_sum([left, right])

    assert sw["s2"].process_packet(1, contribution(h[0], JOB, 0, 1, 0, values[0])) == []
    up_s2 = sw["s2"].process_packet(2, contribution(h[1], JOB, 0, 1, 1, values[1]))
    assert up_s2 == [(3, with_zero_udp_checksum(contribution(h[1], JOB, 0, 1, 0, left)))]
    assert sw["s3"].process_packet(1, contribution(h[2], JOB, 0, 1, 0, values[2])) == []
    up_s3 = sw["s3"].process_packet(2, contribution(h[3], JOB, 0, 1, 1, values[3]))
    assert up_s3 == [(3, with_zero_udp_checksum(contribution(h[3], JOB, 0, 1, 1, right)))]

    assert sw["s1"].process_packet(1, up_s2[0][1]) == []
    down = sorted(sw["s1"].process_packet(2, up_s3[0][1]))
    result = result_for("02:00:0a:00:ff:fe", "10.0.255.254", 9100, JOB, 0, 1, 1, total)
    assert down == [(1, result), (2, result)]
    assert sorted(sw["s3"].process_packet(3, result)) == [
        (1, result_to_host(h[2], JOB, 0, 1, 1, total)),
        (2, result_to_host(h[3], JOB, 0, 1, 1, total))]
    # the leaf stored the parent's result: a late retransmission is answered from it
    assert sw["s3"].process_packet(2, contribution(h[3], JOB, 0, 1, 1, values[3])) == \
        [(2, result_to_host(h[3], JOB, 0, 1, 1, total))]


@pytest.mark.parametrize("k", ["0", "3", "48", "100", "192", "512"])
def test_an_unsupported_k_is_a_compile_error_naming_the_supported_values(k):
    compile_file, _, _, _ = p4switch_api()
    from p4switch import CompileError
    with pytest.raises(CompileError) as error:
        compile_file(MAIN_P4, defines={"AGG_K": k})
    supported = ", ".join(map(str, SWITCH_K_VALUES[:-1])) + f" or {SWITCH_K_VALUES[-1]}"
    assert str(error.value).endswith(f'#error "AGG_K must be {supported}"')
    assert re.match(r"(.*/)?p4src/values\.p4:\d+:\d+: #error", str(error.value))
