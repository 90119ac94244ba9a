"""STF (simple test framework) files: parse them and run them against a Switch.

The dialect is p4c's STF for bmv2, one command a line, ``#`` starts a comment:

``packet PORT HEX``
    send a packet (hex digits, spaces allowed) into ``PORT``.
``expect PORT [HEX][$]``
    the next packet out of ``PORT`` must match: ``*`` matches any nibble; the
    packet may be longer than the pattern (prefix match) unless the pattern
    ends with ``$``.  Per port the sequence of packets out is compared with
    the sequence of expects, so an expect may stand before or after the
    ``packet`` that causes it.  ``expect PORT`` without data accepts any
    packets on that port.
``no_packet``
    the most recent ``packet`` produced no output at all.
``add TABLE [PRIORITY] KEY:VALUE... ACTION(PARAM:VALUE, ...)``
    insert an entry.  Key values: ``V`` (exact), ``V/LEN`` (lpm),
    ``V&&&MASK`` or hex with ``*`` nibbles (ternary; for lpm trailing ``*``
    nibbles shorten the prefix), ``LO..HI`` (range).  Numbers are decimal,
    ``0x`` hex or ``0b`` binary.  Priorities follow P4Runtime: a higher
    number wins.  A trailing ``= NAME`` handle is accepted and ignored.
``setdefault TABLE ACTION(PARAM:VALUE, ...)``
``remove all`` | ``remove TABLE [PRIORITY] KEY:VALUE...``
``wait``
    no-op: the switch processes each packet to completion synchronously.
``mc_mgrp_create GROUP`` / ``mc_node_create RID PORT...`` (handles count
    from 0) / ``mc_node_associate GROUP HANDLE``
``mirroring_add SESSION PORT``
``register_write REGISTER INDEX VALUE`` / ``register_read REGISTER INDEX VALUE``
    (the latter checks the value)
``check_counter COUNTER(INDEX) packets|bytes OP NUMBER`` with OP one of
    ``== != < <= > >=``; ``counter_read`` is accepted as the same command.
``expect_digest NAME VALUE...``
    (our extension) the digests sent so far, in order, include one from
    ``NAME`` with exactly these field values.

Table, action and key names are resolved against the program's P4Info:
the full name or a unique suffix.  Key names may be written as in P4Info
(``hdr.ipv4.dstAddr``, ``hdr.ipv4.isValid()``), with p4c's ``$valid$`` or
``.valid`` forms for validity keys, and with ``$N`` for stack indices.
"""

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple


class StfError(Exception):
    """A malformed STF file or a name that does not resolve: ``FILE:LINE: message``."""


# ---------------------------------------------------------------------------
# Commands

@dataclass
class Command:
    line: int


@dataclass
class PacketCmd(Command):
    port: int
    data: bytes


@dataclass
class ExpectCmd(Command):
    port: int
    pattern: Optional[str]      # upper-case hex nibbles and '*', None = any packets
    exact_length: bool = False


@dataclass
class NoPacketCmd(Command):
    pass


@dataclass
class AddCmd(Command):
    table: str
    priority: Optional[int]
    keys: List[Tuple[str, str]]
    action: str
    args: List[Tuple[str, str]]


@dataclass
class SetDefaultCmd(Command):
    table: str
    action: str
    args: List[Tuple[str, str]]


@dataclass
class RemoveCmd(Command):
    table: Optional[str]        # None = every entry of every table
    priority: Optional[int] = None
    keys: List[Tuple[str, str]] = field(default_factory=list)


@dataclass
class WaitCmd(Command):
    pass


@dataclass
class McGroupCreateCmd(Command):
    group: int


@dataclass
class McNodeCreateCmd(Command):
    rid: int
    ports: List[int]


@dataclass
class McNodeAssociateCmd(Command):
    group: int
    handle: int


@dataclass
class MirroringAddCmd(Command):
    session: int
    port: int


@dataclass
class RegisterWriteCmd(Command):
    register: str
    index: int
    value: int


@dataclass
class RegisterReadCmd(Command):
    register: str
    index: int
    value: int


@dataclass
class CheckCounterCmd(Command):
    counter: str
    index: int
    kind: str                   # "packets" | "bytes"
    op: str
    value: int


@dataclass
class ExpectDigestCmd(Command):
    digest: str
    values: List[int]


CONTROL_COMMANDS = (AddCmd, SetDefaultCmd, RemoveCmd, McGroupCreateCmd, McNodeCreateCmd,
                    McNodeAssociateCmd, MirroringAddCmd, RegisterWriteCmd)

# ---------------------------------------------------------------------------
# Parsing

_HEX_DATA = re.compile(r"^[0-9a-fA-F]*$")
_EXPECT_DATA = re.compile(r"^[0-9a-fA-F*]*\$?$")
_COMPARISONS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b,
                "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
                ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def parse_number(text):
    """An STF integer: decimal, 0x hex, 0b binary, 0o octal or dotted IPv4; ValueError otherwise."""
    text = text.strip()
    if not text:
        raise ValueError("missing number")
    if text.count(".") == 3:
        octets = [int(part, 10) for part in text.split(".")]
        if any(o > 255 for o in octets):
            raise ValueError(f"bad IPv4 address {text!r}")
        return int.from_bytes(bytes(octets), "big")
    return int(text, 0) if text[:2].lower() in ("0x", "0b", "0o") else int(text, 10)


class _LineParser:
    """Parses one STF line into a Command; raises StfError on malformed input."""

    def __init__(self, filename, lineno):
        self.where = f"{filename}:{lineno}"
        self.lineno = lineno

    def fail(self, message):
        raise StfError(f"{self.where}: {message}")

    def number(self, text, what):
        try:
            return parse_number(text)
        except ValueError:
            self.fail(f"bad {what} {text!r}")

    def parse(self, line):
        word, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        handler = getattr(self, "cmd_" + word.lower(), None)
        if handler is None:
            self.fail(f"unknown STF command {word!r}")
        return handler(rest)

    # packets -------------------------------------------------------------
    def cmd_packet(self, rest):
        port, _, data = rest.partition(" ")
        data = "".join(data.split())
        if not data or not _HEX_DATA.match(data) or len(data) % 2:
            self.fail("packet needs a port and an even number of hex digits")
        return PacketCmd(self.lineno, self.number(port, "port"), bytes.fromhex(data))

    def cmd_expect(self, rest):
        port, _, data = rest.partition(" ")
        data = "".join(data.split())
        port = self.number(port, "port")
        if not data:
            return ExpectCmd(self.lineno, port, None)
        if not _EXPECT_DATA.match(data):
            self.fail(f"bad expected packet data {data!r}")
        exact = data.endswith("$")
        return ExpectCmd(self.lineno, port, data.rstrip("$").upper(), exact)

    def cmd_no_packet(self, rest):
        return NoPacketCmd(self.lineno)

    def cmd_wait(self, rest):
        return WaitCmd(self.lineno)

    # tables --------------------------------------------------------------
    def split_action(self, text):
        """``KEYS... ACTION(ARGS) [= HANDLE]`` -> (keys text, action, [(param, value)])."""
        open_paren = text.find("(")
        close_paren = text.rfind(")")
        if open_paren < 0 or close_paren < open_paren:
            self.fail("expected ACTION(PARAM:VALUE, ...)")
        trailer = text[close_paren + 1:].strip()
        if trailer and not re.match(r"^=\s*\w+$", trailer):
            self.fail(f"unexpected text after the action: {trailer!r}")
        head = text[:open_paren]
        split_at = max(head.rfind(" "), head.rfind("\t"))
        keys_text, action = head[:split_at + 1], head[split_at + 1:]
        if not action:
            self.fail("missing action name")
        args = []
        for item in text[open_paren + 1:close_paren].split(","):
            if not item.strip():
                continue
            name, colon, value = item.partition(":")
            if not colon or not name.strip() or not value.strip():
                self.fail(f"bad action argument {item.strip()!r}, expected PARAM:VALUE")
            args.append((name.strip(), value.strip()))
        return keys_text, action, args

    def split_keys(self, words):
        """[priority] KEY:VALUE... -> (priority, [(key, value)])."""
        priority = None
        if words and re.match(r"^\d+$", words[0]):
            priority = int(words.pop(0))
        keys = []
        for word in words:
            name, colon, value = word.partition(":")
            if not colon or not name or not value:
                self.fail(f"bad key {word!r}, expected KEY:VALUE")
            keys.append((name, value))
        return priority, keys

    def cmd_add(self, rest):
        table, _, rest = rest.partition(" ")
        if not table:
            self.fail("add needs a table name")
        keys_text, action, args = self.split_action(rest)
        priority, keys = self.split_keys(keys_text.split())
        return AddCmd(self.lineno, table, priority, keys, action, args)

    def cmd_setdefault(self, rest):
        table, _, rest = rest.partition(" ")
        keys_text, action, args = self.split_action(rest)
        if not table or keys_text.strip():
            self.fail("expected setdefault TABLE ACTION(PARAM:VALUE, ...)")
        return SetDefaultCmd(self.lineno, table, action, args)

    def cmd_remove(self, rest):
        words = rest.split()
        if not words:
            self.fail("expected remove all | remove TABLE KEY:VALUE...")
        if words == ["all"]:
            return RemoveCmd(self.lineno, None)
        priority, keys = self.split_keys(words[1:])
        return RemoveCmd(self.lineno, words[0], priority, keys)

    # packet replication ----------------------------------------------------
    def ints(self, rest, count, usage):
        words = rest.split()
        if len(words) != count:
            self.fail(f"expected {usage}")
        return [self.number(w, "number") for w in words]

    def cmd_mc_mgrp_create(self, rest):
        (group,) = self.ints(rest, 1, "mc_mgrp_create GROUP")
        return McGroupCreateCmd(self.lineno, group)

    def cmd_mc_node_create(self, rest):
        words = rest.split()
        if len(words) < 2:
            self.fail("expected mc_node_create RID PORT...")
        values = [self.number(w, "number") for w in words]
        return McNodeCreateCmd(self.lineno, values[0], values[1:])

    def cmd_mc_node_associate(self, rest):
        group, handle = self.ints(rest, 2, "mc_node_associate GROUP HANDLE")
        return McNodeAssociateCmd(self.lineno, group, handle)

    def cmd_mirroring_add(self, rest):
        session, port = self.ints(rest, 2, "mirroring_add SESSION PORT")
        return MirroringAddCmd(self.lineno, session, port)

    # state checks ------------------------------------------------------------
    def name_index_value(self, rest, usage):
        words = rest.split()
        if len(words) != 3:
            self.fail(f"expected {usage}")
        return words[0], self.number(words[1], "index"), self.number(words[2], "value")

    def cmd_register_write(self, rest):
        return RegisterWriteCmd(self.lineno, *self.name_index_value(
            rest, "register_write REGISTER INDEX VALUE"))

    def cmd_register_read(self, rest):
        return RegisterReadCmd(self.lineno, *self.name_index_value(
            rest, "register_read REGISTER INDEX VALUE"))

    def cmd_check_counter(self, rest):
        m = re.match(r"^([\w.$\[\]]+)\s*\(\s*(\w+)\s*\)\s+(packets|bytes)\s*(==|!=|<=|>=|<|>)\s*(\S+)$", rest)
        if not m:
            self.fail("expected check_counter COUNTER(INDEX) packets|bytes OP NUMBER")
        name, index, kind, op, value = m.groups()
        return CheckCounterCmd(self.lineno, name, self.number(index, "index"), kind, op,
                               self.number(value, "value"))

    cmd_counter_read = cmd_check_counter

    def cmd_expect_digest(self, rest):
        words = rest.split()
        if not words:
            self.fail("expected expect_digest NAME VALUE...")
        return ExpectDigestCmd(self.lineno, words[0], [self.number(w, "value") for w in words[1:]])


def parse_stf(text, filename="<stf>"):
    """Parse STF text into a list of Commands; raises StfError with FILE:LINE."""
    commands = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            commands.append(_LineParser(filename, lineno).parse(line))
    return commands
