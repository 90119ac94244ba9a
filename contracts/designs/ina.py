"""Ours: SwitchML-like slots with shadow copies, on SHARP-like trees of switches."""

from contracts import collectives
from contracts.designs.base import Design
from contracts.wire import AGG_UDP_PORT

INA = Design(
    name="ina",
    summary="a job's slots on every switch of its reduction tree; two copies per slot "
            "(versions) so a slot is reused without a reset; sums go up the tree, results "
            "multicast down; retransmissions answered from the kept result",
    after="SwitchML (NSDI'21) slots and shadow copies; SHARP (COMHPC'16) trees",
    control="p4src/aggregation.p4",
    udp_port=AGG_UDP_PORT,
    worker_command="worker",
    collectives=collectives.NAMES,
    multi_switch=True,
    simulated=True,
    survives_restart=True)
