"""Learning notifications (digests) from simple_switch, decoded into (name, [values]) as our
back ends report them.

simple_switch publishes each learn buffer on its notifications socket: a 32-byte header
(``LEA|``, switch id, context id, list id, buffer id, sample count) then the samples, each
the concatenation of its fields, every field in whole bytes, big-endian.  The field widths
come from the bmv2 JSON (``learn_lists`` -> header fields).  Each buffer is acknowledged
(``bm_learning_ack_buffer``): until then bmv2 drops a sample equal to one in flight.

Names: a digest of a struct type is its learn list's name, the struct's, as in P4Info.  A
digest of a list (``digest(r, {a, b})``) is a learn list named after the tuple type p4c makes
(``tuple_0``, shared by calls of the same types), while p4c's P4Info names each call
``digest_0``, ``digest_1``, ... in call order, as the learn list ids go; those learn lists
take the P4Info names no learn list has, in that order.
"""

import re

import struct

# bmv2 >= 1.15 (s_device_id_t is 64 bits): topic, switch_id, cxt_id, list_id, buffer_id, count
_HEADER = struct.Struct("<4sQIiQI")
HEADER_SIZE = 32


class LearnDecoder:
    """Decodes the learn messages of one program (its bmv2 JSON)."""

    def __init__(self, program_json, p4info=None):
        types = {t["name"]: {f[0]: f[1] for f in t["fields"]}
                 for t in program_json.get("header_types", [])}
        headers = {h["name"]: types.get(h["header_type"], {})
                   for h in program_json.get("headers", [])}
        self.lists = {}
        for learn in program_json.get("learn_lists", []):
            widths = []
            for element in learn.get("elements", []):
                if element.get("type") != "field":
                    raise ValueError(f"learn list {learn['name']}: element type "
                                     f"{element.get('type')!r} is not supported")
                header, field = element["value"]
                widths.append(headers[header][field])
            self.lists[learn["id"]] = (learn["name"], widths)
        if p4info is not None:
            self._name_from_p4info(p4info)

    def _name_from_p4info(self, p4info):
        names = {d.preamble.name for d in p4info.digests}
        taken = {name for name, _ in self.lists.values()}
        spare = sorted(names - taken, key=lambda n: [int(t) if t.isdigit() else t
                                                     for t in re.split(r"(\d+)", n)])
        for list_id in sorted(self.lists):
            name, widths = self.lists[list_id]
            if name not in names and spare:
                self.lists[list_id] = (spare.pop(0), widths)

    @property
    def list_ids(self):
        return sorted(self.lists)

    def decode(self, message):
        """(list id, buffer id, [(name, [values])]) of one LEA message."""
        topic, _, _, list_id, buffer_id, count = _HEADER.unpack_from(message)
        if topic != b"LEA|" or list_id not in self.lists:
            raise ValueError(f"not a learn message of this program: {message[:HEADER_SIZE]!r}")
        name, widths = self.lists[list_id]
        sizes = [(w + 7) // 8 for w in widths]
        data = message[HEADER_SIZE:]
        if len(data) != count * sum(sizes):
            raise ValueError(f"learn message for {name}: {len(data)} bytes for {count} "
                             f"sample(s) of {sum(sizes)}")
        samples, at = [], 0
        for _ in range(count):
            values = []
            for size, width in zip(sizes, widths):
                values.append(int.from_bytes(data[at:at + size], "big") & ((1 << width) - 1))
                at += size
            samples.append((name, values))
        return list_id, buffer_id, samples
