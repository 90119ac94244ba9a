"""Simulation: a fabric and its jobs on SimGrid instead of Mininet, a sibling of fabric/.

What lives here: one simulated run of one mode at one point (run.py: the Request, the child
process SimGrid needs, each worker's outcome), the C++ actors that run it by default
(simcore.cpp, built and run by cpp_engine.py), the same actors in Python as their reference
(network.py: the platform; ina.py: the in-network protocol's worker and switch;
host_algorithms.py: the host-only algorithms' ranks), and SimGrid's SMPI as an independent
check of the host-only algorithms (smpi.py, smpi_allreduce.c).  The experiments that drive
it stay in experiments/: `experiments simulate`, `calibrate`, `baseline`, `scaling-figure`
and the SMPI cross-check; experiments/simulated.py turns its outcomes into results.json.

What it may import: contracts, nativebuild, hosts (the algorithms' schedules), topologies
(the spec) and controller (the planner's reduction tree); never fabric, jobs, experiments or
lab (tests/layering/layering.py).

What SimGrid models: the network, flow by flow (CM02: a route's latency, then max-min fair
sharing of every link's rate, no TCP correction factors or cross-traffic).  What the actors
add: frames as messages (headers included), a NIC sending one message after another, switches
that store and forward and apply the aggregation program's rules to every packet, the
workers' windows, timers and retransmissions, loss per frame, and processing time when asked.
docs/scaling.md, "Simulation", has the long version and the measurements.
"""
