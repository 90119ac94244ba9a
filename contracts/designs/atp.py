"""ATP (Lao et al., "ATP: In-network Aggregation for Multi-tenant Learning", NSDI'21):
best-effort aggregation in a pool of aggregators every job shares, at the workers' rack
switches and the level above them, with each job's parameter server completing what the
switches could not (p4src/atp/atp.p4).

Its workers (hosts/atp/engine.py) pick each fragment's aggregator by hashing (job,
sequence), keep a window of fragments in flight that halves on an ECN-marked
acknowledgement and grows otherwise, and resend on a timeout with the resend flag; the
parameter server (hosts/atp/server.py) runs in rank 0's process, on its host, as BytePS
servers share a worker's machine.  `python -m hosts atp` is one rank (hosts/atp/worker.py).
Integers only: ATP's float32 conversion is not built here, and `--dtype float32` is refused.
"""

from contracts.collectives import ALLREDUCE
from contracts.designs.base import Design
from contracts.wire import ATP_UDP_PORT

ATP = Design(
    name="atp",
    summary="a pool of aggregators shared by every job, picked by hashing (job, fragment); "
            "rack switches and the level above sum what they can, a collision or overflow "
            "goes on to the job's parameter server, whose acknowledgement frees the "
            "aggregator and is multicast back; ECN-driven windows",
    after="ATP (NSDI'21): its switch, workers and parameter server",
    control="p4src/atp/atp.p4",
    udp_port=ATP_UDP_PORT,
    worker_command="atp",
    collectives=(ALLREDUCE.name,),
    multi_switch=True,
    simulated=False,
    survives_restart=False,
    dtypes=("int32",))
