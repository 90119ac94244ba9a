"""p4switch as a network device: raw-socket ports, pcaps, logs and a P4Runtime gRPC server.

`python -m p4switch run ...` ends up in `p4switch.device.run.main`.
"""
