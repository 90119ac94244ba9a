"""p4switch as a network device: raw-socket ports, pcaps, logs and a P4Runtime gRPC server.

`python -m p4switch run ...` ends up in `run.main` (see its docstring for the flags, which
follow simple_switch_grpc's spellings). The pieces:

    run.py               command line, the Device (ports, pcaps, trace log), the receive loop
    ports.py             switch ports as AF_PACKET sockets (own transmissions ignored)
    pcap.py              pcap writer/reader (<iface>_in.pcap, <iface>_out.pcap)
    trace.py             bmv2-like per-packet trace lines
    impair.py            --impair: netem-like loss, duplication, reordering, delay per port
                         direction, on a timer heap the receive loop services; --impair-stats
    datapath.py          the Switch behind one lock, shared by the packet loop and gRPC threads
    p4runtime_server.py  the P4Runtime service: arbitration, pipeline config, Read/Write,
                         StreamChannel (PacketOut/PacketIn, digests), Capabilities
    arbitration.py       primary election per (device, role)
    pipeline_config.py   VERIFY / VERIFY_AND_SAVE / VERIFY_AND_COMMIT / COMMIT /
                         RECONCILE_AND_COMMIT, and GetForwardingPipelineConfig
    entities.py          Write/Read of counters, meters, registers, PRE, value sets, digests
    digests.py           DigestLists with duplicate suppression until acked
    table_entries.py     Write/Read of table entries, default entries, direct counters/meters
    packet_io.py         controller packet headers <-> PacketOut/PacketIn metadata
    bytestrings.py       P4Runtime binary strings (canonical and padded forms)
    errors.py            P4RuntimeError and the per-update Write error report
    p4info_index.py      P4Info look-ups by id

Not supported (refused with UNIMPLEMENTED or INVALID_ARGUMENT, never ignored): action
profiles/selectors, idle timeouts, role configs, write atomicity other than
CONTINUE_ON_ERROR, RECONCILE_AND_COMMIT with a different program.
"""
