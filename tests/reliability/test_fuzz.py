"""10,000 seeded bad packets (fuzz_packets.py) at the in-process p4src switch, interleaved
with two running jobs: no crash, no frame out for any of them, every one counted under its
drop reason, and both jobs' sums exact."""

from controller.entries import DROP_REASONS, EVENTS
from fuzz_packets import run_fuzz
from p4src_harness import DROP_REASON_COUNT, EVENT_COUNT, counts


def named(switch, counter, size, names):
    return {names[i]: n for i, n in counts(switch, counter, size).items()}


def test_ten_thousand_bad_packets_are_dropped_counted_and_change_no_sum():
    jobs, tally, outputs = run_fuzz(count=10_000, seed=1)
    jobs.assert_exact()
    assert outputs == []
    assert sum(tally.values()) == 10_000
    assert len(tally) == 11            # every reason a packet alone can earn (not stale_*)
    assert named(jobs.switch, "drop_reasons", DROP_REASON_COUNT, DROP_REASONS) == tally
    assert named(jobs.switch, "egress_drops", DROP_REASON_COUNT, DROP_REASONS) == {}
    # the switch saw exactly the jobs' own traffic (50 chunks and the closing rounds each),
    # nothing else added
    assert named(jobs.switch, "agg_events", EVENT_COUNT, EVENTS) == jobs.expected_events()
