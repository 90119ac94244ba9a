"""Jobs: one collective run on a running fabric, from its workers' commands to its record.

What lives here: the modes and what they can run (modes.py: ina, the host algorithms, Gloo;
each turns a JobSetup into worker specs of contracts/jobs.py), launching the workers in
their hosts, the start barrier, waiting and the notes on an outcome (runner.py), the run
records and results.json (results.py), fault injection (faults.py: switch kills), interface
counters (counters.py), CPU accounting (cpu.py) and training jobs (training.py,
train_precision.py).  `python -m experiments compare|sweep|soak|train` and the lab's verbs
run jobs through here.

What it may import: contracts, nativebuild, hosts (its barrier and the host algorithms'
registry), p4switch, topologies, controller and fabric; never experiments or lab
(tests/layering/layering.py)."""
