"""ATP's hosts (contracts/designs/atp.py): the packet layout (protocol.py), the worker's
engine (engine.py), the job's parameter server (server.py) and `python -m hosts atp`
(worker.py), which runs a rank and, on rank 0's host, the server."""
