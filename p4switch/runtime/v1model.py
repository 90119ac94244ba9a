"""The v1model traffic manager: how a packet moves through the compiled pipeline.

As bmv2's simple_switch does it, for one packet at a time:

ingress: parser (a parser error is recorded in standard_metadata.parser_error and the packet
still goes on) -> verifyChecksum -> ingress control; then, in this order: ingress-to-egress
clones (the original packet parsed again, per replica of the clone session), digests,
resubmit (the original packet back to ingress; the current one is dropped), multicast
(one copy per replica of the group), drop (egress_spec == 511), or unicast to egress_spec.

egress (per copy): egress control; egress-to-egress clones (copies of the headers as they are
now, back to the egress queue); drop if egress_spec == 511 (mark_to_drop in egress);
computeChecksum -> deparser (valid headers, then the unparsed payload); truncation;
recirculate (the deparsed packet back to ingress) or transmit.

instance_type values are bmv2's: 0 normal, 1 ingress clone, 2 egress clone, 4 recirculated,
5 replicated (multicast), 6 resubmitted. Outputs come in the order copies finish egress;
copies are processed first-in first-out, so multicast copies leave in replica order and an
ingress clone leaves before the original.
"""

from __future__ import annotations

import random
from collections import deque

from .packet import PacketReader, PacketWriter, ParserException

DROP_PORT = 511
MAX_PASSES = 64                 # resubmit/recirculate passes allowed per received packet

NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = range(7)


class PacketState:
    """Per-packet intrinsic state the compiled code reads and writes (module global `P`)."""

    __slots__ = ("sm", "plen", "payload", "now_us", "clone_session", "clone_fields",
                 "resubmit", "recirculate", "truncate", "digests", "rng")

    def __init__(self, seed=None):
        self.rng = random.Random(seed)
        self.begin(None, 0, 0)

    def begin(self, sm, plen: int, now_us: int) -> None:
        self.sm = sm
        self.plen = plen
        self.payload = b""
        self.now_us = now_us
        self.clone_session = None
        self.clone_fields = None
        self.resubmit = None          # None: not requested; -1: no field list; else index
        self.recirculate = None
        self.truncate = 0
        self.digests = []

    def payload_field(self) -> tuple[int, int]:
        """The payload as one (value, width) field (for *_checksum_with_payload)."""
        return int.from_bytes(self.payload, "big"), len(self.payload) * 8

    def random(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi) if hi >= lo else lo


def table_message(table, entry) -> str:
    """Trace line for a table lookup."""
    if entry.hit:
        if entry.ref is not None:
            return f"Table '{table.name}': hit with {entry.ref[0]} {entry.ref[1]}"
        return f"Table '{table.name}': hit with action {entry.action.name}"
    if table.profile is not None:        # no default entry, as on bmv2
        return f"Table '{table.name}': miss, no action"
    return f"Table '{table.name}': miss, default action {entry.action.name}"


class TrafficManager:
    """Runs packets through one switch's compiled pipeline (see the module docstring)."""

    def __init__(self, switch, namespace: dict, state: PacketState, field_lists: dict):
        self.switch = switch
        self.state = state
        self.field_lists = field_lists
        ns = namespace
        self.run_parser, self.run_verify = ns["run_parser"], ns["run_verify"]
        self.run_ingress, self.run_egress = ns["run_ingress"], ns["run_egress"]
        self.run_compute, self.run_deparser = ns["run_compute"], ns["run_deparser"]
        self.new_headers, self.new_metadata = ns["new_headers"], ns["new_metadata"]
        self.new_sm = ns["new_standard_metadata"]
        self.now = 0

    # -- helpers -------------------------------------------------------------------------------

    def _log(self, message: str) -> None:
        if self.switch.log:
            self.switch.log(message)

    def _preserved(self, meta, index):
        """The (attribute, value) pairs of field list `index` (None/-1: nothing)."""
        if index is None or index < 0:
            return ()
        return [(attr, getattr(meta, attr)) for attr in self.field_lists.get(index, ())]

    def _fresh(self, itype, port, plen, preserved):
        hdr, meta, sm = self.new_headers(), self.new_metadata(), self.new_sm()
        sm.f_instance_type = itype
        sm.f_ingress_port = port
        sm.f_packet_length = plen
        for attr, value in preserved:
            setattr(meta, attr, value.copy() if hasattr(value, "copy") else value)
        return hdr, meta, sm

    # -- one received packet ------------------------------------------------------------------

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        outputs: list[tuple[int, bytes]] = []
        ingress = deque([(bytes(data), port, NORMAL, ())])
        passes = 0
        while ingress:
            passes += 1
            if passes > MAX_PASSES:
                self._log(f"Dropping packet after {MAX_PASSES} resubmit/recirculate passes")
                break
            egress = deque()
            self._ingress(*ingress.popleft(), ingress, egress)
            if egress:
                egress_one = self._egress
                while egress:
                    egress_one(egress.popleft(), egress, ingress, outputs)
        return outputs

    def _ingress(self, data, port, itype, preserved, ingress, egress) -> None:
        P = self.state
        now = self.now = self.switch.clock()
        hdr, meta, sm = self._fresh(itype, port, len(data), preserved)
        sm.f_ingress_global_timestamp = now & 0xFFFFFFFFFFFF
        if self.switch.log:
            self._log(f"Processing packet received on port {port} ({len(data)} bytes, "
                      f"instance type {itype})")
        P.begin(sm, len(data), now)
        pkt = PacketReader(data)
        self.run_parser(pkt, hdr, meta, sm)
        P.payload = payload = data[pkt.pos >> 3:]        # what the parser did not consume
        try:
            self.run_verify(hdr, meta)
            self.run_ingress(hdr, meta, sm)
        except ParserException as error:
            # A header stack index out of range in a control: the packet cannot go on.
            self._log(f"Dropping packet: {error.error_name} in ingress")
            return
        clone_session, clone_fields = P.clone_session, P.clone_fields
        resubmit, truncate, digests = P.resubmit, P.truncate, P.digests
        if clone_session is not None:
            self._ingress_clones(data, port, meta, clone_session, clone_fields, egress, now)
        if digests:
            self._send_digests(digests)
        log = self.switch.log
        if resubmit is not None:
            self._log("Resubmitting packet")
            ingress.append((data, port, RESUBMIT, self._preserved(meta, resubmit)))
            return
        group = sm.f_mcast_grp
        if group:
            replicas = self.switch.pre.multicast_replicas(group)
            if log:
                log(f"Multicast group {group}: {len(replicas)} replica(s)")
            last = len(replicas) - 1
            for i, (eport, rid) in enumerate(replicas):
                # Each replica gets its own headers and metadata; the last one can have
                # the originals, which nothing uses any more.
                if i < last:
                    c_hdr, c_meta, c_sm = hdr.copy(), meta.copy(), sm.copy()
                else:
                    c_hdr, c_meta, c_sm = hdr, meta, sm
                c_sm.f_egress_port = eport
                c_sm.f_egress_rid = rid
                c_sm.f_instance_type = REPLICATION
                egress.append((c_hdr, c_meta, c_sm, payload, truncate))
            return
        if sm.f_egress_spec == DROP_PORT:
            if log:
                log("Dropping packet at the end of ingress")
            return
        sm.f_egress_port = sm.f_egress_spec
        egress.append((hdr, meta, sm, payload, truncate))

    def _send_digests(self, digests) -> None:
        for name, values in digests:
            self._log(f"Digest {name}: {values}")
            if self.switch.on_digest:
                self.switch.on_digest(name, values)

    def _ingress_clones(self, data, port, meta, session_id, fields, egress, now) -> None:
        session = self.switch.pre.clone_session(session_id)
        if session is None:
            self._log(f"Clone session {session_id} is not configured: no clone")
            return
        P = self.state
        preserved = self._preserved(meta, fields)
        for eport, rid in session.replicas:
            self._log(f"Cloning packet to port {eport} (session {session_id}, ingress)")
            c_hdr, c_meta, c_sm = self._fresh(INGRESS_CLONE, port, len(data), preserved)
            c_sm.f_ingress_global_timestamp = now & 0xFFFFFFFFFFFF
            P.begin(c_sm, len(data), now)
            pkt = PacketReader(data)
            self.run_parser(pkt, c_hdr, c_meta, c_sm)
            c_sm.f_egress_port = eport
            c_sm.f_egress_rid = rid
            egress.append((c_hdr, c_meta, c_sm, pkt.payload(), session.truncate))

    # -- one copy in egress ---------------------------------------------------------------------

    def _egress(self, copy, egress, ingress, outputs) -> None:
        """One copy `(hdr, meta, sm, payload, truncate)` through egress and the deparser."""
        hdr, meta, sm, payload, copy_truncate = copy
        P = self.state
        log = self.switch.log
        now = self.now       # one clock reading per received packet is precise enough
        sm.f_egress_global_timestamp = now & 0xFFFFFFFFFFFF
        sm.f_enq_timestamp = now & 0xFFFFFFFF
        if log:
            log(f"Egress port is {sm.f_egress_port}")
        P.begin(sm, sm.f_packet_length, now)
        try:
            self.run_egress(hdr, meta, sm)
        except ParserException as error:
            self._log(f"Dropping packet: {error.error_name} in egress")
            return
        if P.clone_session is not None:
            self._egress_clones(copy, P.clone_session, P.clone_fields, egress)
        if P.digests:
            self._send_digests(P.digests)
        recirculate, truncate = P.recirculate, P.truncate
        if sm.f_egress_spec == DROP_PORT:
            if log:
                log("Dropping packet at the end of egress")
            return
        P.payload = payload
        writer = PacketWriter()
        try:
            self.run_compute(hdr, meta)
            self.run_deparser(writer, hdr)
        except ParserException as error:
            self._log(f"Dropping packet: {error.error_name} in the deparser")
            return
        out = writer.finish(payload)
        if copy_truncate:
            out = out[:copy_truncate]
        if truncate:
            out = out[:truncate]
        if recirculate is not None:
            self._log("Recirculating packet")
            ingress.append((out, sm.f_ingress_port, RECIRC,
                            self._preserved(meta, recirculate)))
            return
        port = sm.f_egress_port
        if log:
            log(f"Transmitting packet of size {len(out)} out of port {port}")
        if port == self.switch.cpu_port and self.switch.packet_in is not None:
            self.switch.packet_in(port, out)
        else:
            outputs.append((port, out))

    def _egress_clones(self, copy, session_id, fields, egress) -> None:
        session = self.switch.pre.clone_session(session_id)
        if session is None:
            self._log(f"Clone session {session_id} is not configured: no clone")
            return
        hdr, meta, sm, payload, _ = copy
        preserved = self._preserved(meta, fields)
        for eport, rid in session.replicas:
            self._log(f"Cloning packet to port {eport} (session {session_id}, egress)")
            _, c_meta, c_sm = self._fresh(EGRESS_CLONE, sm.f_ingress_port,
                                          sm.f_packet_length, preserved)
            c_sm.f_egress_port = eport
            c_sm.f_egress_rid = rid
            egress.append((hdr.copy(), c_meta, c_sm, payload, session.truncate))
