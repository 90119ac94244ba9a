"""In-network aggregation on the hosts' side: what a worker needs to take part in a collective
that the switches compute.

    engine.py / engine_native.py (+ engine_native.c)   the protocol engine, reference and C twin
    protocol_rules.h                                   its rules in C, shared with the simulator
    protocol.py                                        the codec of contracts/wire.py's header
    quantize.py                                        block floating point for float32 vectors
    ina_collectives.py                                 the collectives beyond allreduce over ina
    fastio.py (+ fastio.c)                             batched UDP I/O (recvmmsg/sendmmsg)
    worker.py                                          `python -m hosts worker`
    scapy_layer.py                                     the header as a scapy layer, for reading pcaps

It may import contracts, nativebuild and the hosts modules beside it that every host mode
shares (cli, vectors, barrier); the host-only algorithms (hosts/algorithms/) and the
transport they use (hosts/transport.py) stand apart from it.
"""
