"""Compare two P4Info messages entity by entity (used by `conformance.py --p4info`).

An entity is one table, action, action profile, counter, meter, register, digest, value
set, controller header or extern instance, named by its preamble's full name, or one named
type of `type_info`. Two P4Infos are identical when they hold the same entities and each
pair is equal as a message; the order of entities, and of repeated fields inside one
(action refs, match fields, params, ...), does not matter.

Some of p4c's expected files write a table's initial default action as
`initial_default_action_id: N`, a field the P4Runtime proto installed here (p4runtime 1.4)
does not have; `parse` reads it as `initial_default_action { action_id: N }`, the same fact
in that proto's form.

Older p4c releases wrote no initial default action at all, and no selector size semantics
(`sum_of_weights` / `sum_of_members`) of an action selector. An expected file in which no
table has an initial default action (or no action profile any size semantics) comes from
such a writer: `differences` then leaves that field out of the comparison, for every entity.

Some p4c releases mark the declarations of their own core.p4 (NoAction) `@corelib`; that says
which core library wrote the file, not what the program declares, so `@corelib` is not
compared.
"""

import json
import re

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

ENTITY_LISTS = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
                "direct_meters", "controller_packet_metadata", "value_sets", "registers",
                "digests")
TYPE_MAPS = ("structs", "headers", "header_unions", "serializable_enums", "new_types", "enums")


_INITIAL_DEFAULT_ID = re.compile(r"^(\s*)initial_default_action_id:\s*(\d+)\s*$", re.MULTILINE)


def parse(text: str) -> p4info_pb2.P4Info:
    """A P4Info from its text format (what p4c's *.p4info.txtpb files hold)."""
    text = _INITIAL_DEFAULT_ID.sub(r"\1initial_default_action {\n\1  action_id: \2\n\1}", text)
    return text_format.Parse(text, p4info_pb2.P4Info())


def _canonical(value):
    """`value` (from MessageToDict) with every list in a fixed order."""
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_canonical(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    return value


WRITER_ANNOTATIONS = ("@corelib",)


def _as_dict(message):
    found = json_format.MessageToDict(message, preserving_proto_field_name=True)
    preamble = found.get("preamble", {})
    if "annotations" in preamble:
        preamble["annotations"] = [a for a in preamble["annotations"]
                                   if a not in WRITER_ANNOTATIONS]
        if not preamble["annotations"]:
            del preamble["annotations"]
    return _canonical(found)


def entities(info: p4info_pb2.P4Info) -> dict:
    """(kind, name) -> the entity as a canonical dict."""
    found = {}
    for kind in ENTITY_LISTS:
        for entity in getattr(info, kind):
            found[(kind, entity.preamble.name)] = _as_dict(entity)
    for ext in info.externs:
        for instance in ext.instances:
            found[(f"externs.{ext.extern_type_name}", instance.preamble.name)] = _as_dict(instance)
    for kind in TYPE_MAPS:
        for name, entry in getattr(info.type_info, kind).items():
            found[(f"type_info.{kind}", name)] = _as_dict(entry)
    if info.type_info.HasField("error"):
        found[("type_info.error", "error")] = _as_dict(info.type_info.error)
    return found


def _first_difference(expected, actual, path=""):
    """Where two canonical dicts first differ, as `field.sub: expected X, got Y`."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                return f"{path}{key}: missing (expected {json.dumps(expected[key])[:80]})"
            if key not in expected:
                return f"{path}{key}: not expected (got {json.dumps(actual[key])[:80]})"
            if expected[key] != actual[key]:
                return _first_difference(expected[key], actual[key], f"{path}{key}.")
        return None
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for want, have in zip(expected, actual):
            if want != have:
                return _first_difference(want, have, path)
    return f"{path.rstrip('.')}: expected {json.dumps(expected)[:80]}, got {json.dumps(actual)[:80]}"


def _older_writer_fields(expected: p4info_pb2.P4Info) -> dict:
    """kind -> fields the writer of `expected` did not know yet (see the module docstring)."""
    skip = {}
    if expected.tables and not any(t.HasField("initial_default_action") for t in expected.tables):
        skip["tables"] = ("initial_default_action",)
    if expected.action_profiles and not any(
            p.WhichOneof("selector_size_semantics") for p in expected.action_profiles):
        skip["action_profiles"] = ("sum_of_weights", "sum_of_members")
    return skip


def differences(expected: p4info_pb2.P4Info, actual: p4info_pb2.P4Info) -> list:
    """One line per entity that is missing, extra or different ([] when identical)."""
    want, have = entities(expected), entities(actual)
    for kind, fields in _older_writer_fields(expected).items():
        for key, entity in have.items():
            if key[0] == kind:
                for name in fields:
                    entity.pop(name, None)
    lines = []
    for key in sorted(set(want) | set(have)):
        kind, name = key
        if key not in have:
            lines.append(f"{kind} {name}: missing")
        elif key not in want:
            lines.append(f"{kind} {name}: not in the expected P4Info")
        elif want[key] != have[key]:
            lines.append(f"{kind} {name}: {_first_difference(want[key], have[key])}")
    return lines
