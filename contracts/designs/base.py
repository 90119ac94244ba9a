"""What an in-network aggregation design is: one object naming its parts in every layer.

A design (ours; SwitchML, ATP, ... to come) is a protocol between workers and switches.
Each is one file of this package holding one `Design`; the registry (__init__.py) lists
them, and every layer finds the design's part in a table of its own keyed by the design's
name, never by branching on it:

* p4src: `control`, the P4 file of its ingress control; main.p4 hands it the IPv4/UDP
  packets to `udp_port` (one program holds every design, dispatched by port: the switches
  run every design at once, each job in the one it asked for);
* hosts: `worker_command`, the `python -m hosts` command of one rank (hosts/__main__.py
  COMMANDS);
* controller: its installer (controller/designs.py INSTALLERS): plans a job's switch state
  and writes it (entries, multicast groups), and removes it;
* jobs: its mode (jobs/modes.py DESIGN_MODES): a job's worker commands from its plan;
* simulation: its SimGrid model (simulation/run.py MODELS), or `simulated` False and
  `experiments simulate` refuses it in one line.

tests/contracts/test_designs.py holds every registered design to all five.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Design:
    name: str                   # its mode: --modes, results, tables ("ina")
    summary: str                # one line: what the switches do
    after: str                  # the published designs it follows, for docs and --help
    control: str                # its P4 control, from the repository root
    udp_port: int               # the UDP destination port its packets carry
    worker_command: str         # `python -m hosts COMMAND`: one rank of a job
    collectives: tuple          # the collectives the switches compute for it (names)
    multi_switch: bool          # aggregates over a tree of several switches
    simulated: bool             # has a SimGrid model (experiments simulate)
    survives_restart: bool      # a running job completes exactly across a switch restart
    dtypes: tuple = ("int32", "float32")     # the element types its workers send

    def refusal(self, collective: str, switches: int, restarts: bool = False,
                dtype: str = "int32") -> str | None:
        """Why this design cannot run `collective` of `dtype` on a fabric whose job tree
        may span `switches` switches, with switches restarted mid-job if `restarts` (one
        line), or None."""
        if dtype not in self.dtypes:
            return (f"{self.name} aggregates {', '.join(self.dtypes)} only, not {dtype}")
        if collective not in self.collectives:
            return (f"{self.name} does not compute {collective} in the switches (it runs "
                    f"{', '.join(self.collectives)})")
        if switches > 1 and not self.multi_switch:
            return (f"{self.name} aggregates in one switch (a single rack); this topology "
                    f"has {switches}")
        if restarts and not self.survives_restart:
            return (f"{self.name} has no recovery from a switch restart (its switch state "
                    "is lost with the switch): run it without --kill-switch")
        return None
