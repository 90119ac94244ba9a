"""contracts.cli.comma_list: the one parser of comma-list options (items, order, errors)."""

import argparse

import pytest

from contracts.cli import UsageError, comma_list


def test_items_are_stripped_converted_and_deduplicated_in_order():
    assert comma_list(int)(" 3, 1,,3 ,2") == [3, 1, 2]
    assert comma_list(int, sort=True)("3,1,3,2") == [1, 2, 3]
    assert comma_list(float)("0,2.5") == [0.0, 2.5]


def test_expand_replaces_a_name_by_its_members():
    parse = comma_list(choices=("a", "b", "c"), expand={"all": ("a", "b")})
    assert parse("c,all,a") == ["c", "a", "b"]


@pytest.mark.parametrize("text, message", [
    ("1,x", "bad '1,x'"), ("1,-2", "unknown -2 in '1,-2'"), (" , ", "empty ' , '")])
def test_each_error_has_its_one_line_text(text, message):
    parse = comma_list(int, minimum=0, bad="bad {text!r}", unknown="unknown {first} in {text!r}",
                       empty="empty {text!r}")
    with pytest.raises(argparse.ArgumentTypeError, match=f"^{message}$"):
        parse(text)


def test_choices_refuse_the_first_unknown_name_with_the_error_class_given():
    parse = comma_list(choices=("ina", "ring"), error=UsageError, bad="unknown {first!r}")
    with pytest.raises(UsageError, match="^unknown 'tree'$"):
        parse("ring,tree,x")
    with pytest.raises(UsageError, match="^unknown ''$"):
        parse("")


def test_interrupts_wait_for_a_teardown_to_finish():
    """A second Ctrl-C during a network's teardown left its veths behind; now Ctrl-C and
    SIGTERM inside interrupts_deferred() interrupt only once the block is done."""
    import os
    import signal
    import time

    from contracts.cli import interrupt_on_sigterm, interrupts_deferred
    interrupt_on_sigterm()
    for number in (signal.SIGINT, signal.SIGTERM):
        steps = []
        with pytest.raises(KeyboardInterrupt):
            with interrupts_deferred():
                os.kill(os.getpid(), number)
                time.sleep(0.05)
                steps.append("torn down")
        assert steps == ["torn down"]
    # the block's own error is what propagates, not a second interrupt on top of it
    with pytest.raises(ValueError):
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            raise ValueError("teardown failed")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_a_nested_deferring_block_leaves_the_interrupt_to_the_outer_one():
    """Network.stop runs inside Fabric.stop: an interrupt during the inner teardown must not
    cut the rest of the outer one short."""
    import os
    import signal
    import time

    from contracts.cli import interrupts_deferred
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            with interrupts_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
                steps.append("network down")
            steps.append("the rest of the fabric down")
    assert steps == ["network down", "the rest of the fabric down"]
