"""What a design cannot do is refused in one line, before any network starts (no root
needed): SwitchML on a fabric of several switches, with switch restarts, or for a
collective other than allreduce; ATP over more than two levels of switches, or for
float32."""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("args, error", [
    (["--topo", "leafspine:2,1,2"],
     "switchml aggregates in one switch (a single rack); this topology has 3"),
    (["--topo", "star:4", "--kill-switch", "s1@1"],
     "switchml has no recovery from a switch restart (its switch state is lost with the "
     "switch): run it without --kill-switch"),
    (["--topo", "star:4", "--collective", "broadcast"],
     "switchml is not supported for the collective broadcast (modes that run it: ina, "
     "binomial-tree)"),
])
def test_compare_refuses_what_switchml_cannot_do(tmp_path, args, error):
    assert refusal(tmp_path, "ina,switchml", *args) == [f"error: {error}"]


@pytest.mark.parametrize("args, error", [
    (["--topo", "fattree:4"],
     "atp aggregates at two levels (racks, and the switch above them); a job's tree has "
     "more"),
    (["--topo", "star:4", "--dtype", "float32"], "atp aggregates int32 only, not float32"),
    (["--topo", "star:4", "--kill-switch", "s1@1"],
     "atp has no recovery from a switch restart (its switch state is lost with the switch): "
     "run it without --kill-switch"),
])
def test_compare_refuses_what_atp_cannot_do(tmp_path, args, error):
    assert refusal(tmp_path, "atp,ina", *args) == [f"error: {error}"]


def refusal(tmp_path, modes, *args) -> list:
    """The stderr lines of a compare that exits 2 having made nothing."""
    result = subprocess.run([sys.executable, "-m", "experiments", "compare", "--modes", modes,
                             "--elements", "1000", "--out", str(tmp_path), *args], cwd=REPO,
                            capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert not os.listdir(tmp_path)
    return result.stderr.splitlines()
