"""SwitchML (Sapio et al., "Scaling Distributed Machine Learning with In-Network
Aggregation", NSDI'21): one switch, a pool of slots per job, shadow copies and worker
bitmaps, as the paper's switch algorithm states them (p4src/switchml/switchml.p4).

Its workers run the paper's worker algorithm, which is ours too (hosts/ina/engine.py: a
fixed pool of slots in flight, the next chunk into a slot only when its result arrives,
timeouts resend, floats quantised with a block exponent agreed through the switch's max),
without our re-sends for switch restarts, sending to UDP port 9200; `python -m hosts
switchml` is that worker (hosts/switchml.py).
"""

from contracts.collectives import ALLREDUCE
from contracts.designs.base import Design
from contracts.wire import SWITCHML_UDP_PORT

SWITCHML = Design(
    name="switchml",
    summary="a pool of slots reserved per job on one switch; two copies per slot; a bitmap "
            "of workers per copy (a packet into one copy clears its worker's bit in the "
            "other); the last packet multicasts the sum, a retransmission to a complete "
            "copy gets it back by unicast",
    after="SwitchML (NSDI'21), its switch and worker algorithms",
    control="p4src/switchml/switchml.p4",
    udp_port=SWITCHML_UDP_PORT,
    worker_command="switchml",
    collectives=(ALLREDUCE.name,),
    multi_switch=False,
    simulated=False,
    survives_restart=False)
