"""Host agents: the in-network allreduce worker (UDP) and the ring allreduce baseline (TCP).

    python -m hosts worker ...   (hosts/worker.py, protocol engine in hosts/engine.py)
    python -m hosts ring ...     (hosts/ring.py)

Wire format: hosts/protocol.py; block floating point: hosts/quantize.py.
"""
