"""Host agents: the in-network allreduce worker (UDP) and the host-only baselines (TCP).

    python -m hosts worker ...      (hosts/ina/worker.py, protocol engine in hosts/ina/engine.py)
    python -m hosts allreduce --algorithm ps|binomial-tree|butterfly|ring|rabenseifner|
                              double-binary-tree ...
                                    (hosts/allreduce.py, algorithms/, schedules.py,
                                     transport.py, bounds.py)
    python -m hosts ring ...        (hosts/ring.py: allreduce --algorithm ring)
    python -m hosts gloo ...        (hosts/gloo.py: torch.distributed with Gloo)
    python -m hosts train ...       (hosts/train.py: one rank of PyTorch DDP training, its
                                     gradients through hosts/torch_hook.py's comm hooks)

Wire format: contracts/wire.py (codec: hosts/ina/protocol.py); block floating point: hosts/ina/quantize.py.
"""
