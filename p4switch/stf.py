"""STF (simple test framework) files: parse them and run them against a Switch.

``StfDriver`` is the run and the comparison every back end shares (expects per port, in
order; ``no_packet``; register, counter and digest checks); ``StfRunner`` drives our own
``Switch`` (Python or C back end) with it, ``p4switch.bmv2.runner`` real bmv2.

The dialect is p4c's STF for bmv2, one command a line, ``#`` starts a comment:

``packet PORT [HEX]``
    send a packet (hex digits, spaces allowed; none for an empty packet) into ``PORT``.  An
    odd last digit is a byte of its own (``A`` is ``0A``), as in p4c's runner.
``expect PORT [HEX][$]``
    the next packet out of ``PORT`` must match: ``*`` matches any nibble; the
    packet may be longer than the pattern (prefix match) unless the pattern
    ends with ``$``.  Per port the sequence of packets out is compared with
    the sequence of expects, so an expect may stand before or after the
    ``packet`` that causes it.  ``expect PORT`` without data accepts any
    packets on that port.  As with simple_switch under p4c's runner, which
    has an interface only for each port some ``packet`` or ``expect`` line
    names, packets out of a port no such line names are lost: counted, not
    compared.
``no_packet``
    the most recent ``packet`` produced no output at all.
``add TABLE [PRIORITY] KEY:VALUE... ACTION(PARAM:VALUE, ...)``
    insert an entry.  Key values: ``V`` (exact), ``V/LEN`` (lpm),
    ``V&&&MASK`` or hex with ``*`` nibbles (ternary; for lpm trailing ``*``
    nibbles shorten the prefix), ``LO..HI`` (range).  Numbers are decimal,
    ``0x`` hex, ``0b`` binary or dotted IPv4.  Priorities (0 and up) follow
    P4Runtime: a higher number wins.  A trailing ``= NAME`` names the entry for
    ``check_counter``.
``member PROFILE MEMBER_ID ACTION(PARAM:VALUE, ...)`` / ``group PROFILE GROUP_ID MEMBER_ID...``
    (our extension, as simple_switch_CLI's act_prof_create_member / act_prof_create_group
    with the ids given) add a member to an action profile or selector, or a group of members
    to a selector.  ``add TABLE KEY... member(ID)`` or ``group(ID)`` adds an entry of a table
    with that profile: it runs the member's action, or the member of the group that the hash
    of the table's ``selector`` fields picks (modulo the group's size).
``setdefault TABLE ACTION(PARAM:VALUE, ...)``
``remove all`` | ``remove TABLE [PRIORITY] KEY:VALUE...``
``wait``
    no-op: the switch processes each packet to completion synchronously.
``mc_mgrp_create GROUP`` / ``mc_node_create RID PORT...`` (handles count
    from 0) / ``mc_node_associate GROUP HANDLE``
``mirroring_add SESSION PORT``
``meter_config METER INDEX CIR CBURST PIR PBURST``
    (our extension) configure one meter cell; rates in units per second.  For a
    direct meter INDEX is ``$NAME``, the entry added with ``= NAME``.
``value_set_add VALUE_SET VALUE[&&&MASK]``
    (our extension) add a member to a parser value set of a single field.
``register_write REGISTER INDEX VALUE`` / ``register_read REGISTER INDEX VALUE``
    (the latter checks the value)
``check_counter COUNTER(INDEX) packets|bytes OP NUMBER`` with OP one of
    ``== != < <= > >=``; ``counter_read`` is accepted as the same command.
    For a direct counter INDEX is ``$NAME``, the entry added with ``= NAME``.
``expect_digest NAME VALUE...``
    (our extension) the digests sent so far, in order, include one from
    ``NAME`` with exactly these field values.

Table, action and key names are resolved against the program's P4Info:
the full name or a unique suffix.  Key names may be written as in P4Info
(``hdr.ipv4.dstAddr``, ``hdr.ipv4.$valid$``), with ``.valid`` or ``.isValid()`` for
validity keys, and with ``$N`` for stack indices.
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
    handle: Optional[str] = None
    member: Optional[int] = None          # an entry of an action profile's table
    group: Optional[int] = None


@dataclass
class MemberCmd(Command):
    profile: str
    member: int
    action: str
    args: List[Tuple[str, str]]


@dataclass
class GroupCmd(Command):
    profile: str
    group: int
    members: List[int]


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
class MeterConfigCmd(Command):
    meter: str
    index: object               # int, or "$NAME" for the entry of a direct meter
    cir: int
    cburst: int
    pir: int
    pburst: int


@dataclass
class ValueSetAddCmd(Command):
    value_set: str
    value: int
    mask: Optional[int] = None


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
    index: object               # int, or "$NAME" for the entry of a direct counter
    kind: str                   # "packets" | "bytes"
    op: str
    value: int


@dataclass
class ExpectDigestCmd(Command):
    digest: str
    values: List[int]


CONTROL_COMMANDS = (AddCmd, MemberCmd, GroupCmd, SetDefaultCmd, RemoveCmd, McGroupCreateCmd,
                    McNodeCreateCmd, McNodeAssociateCmd, MirroringAddCmd, MeterConfigCmd,
                    ValueSetAddCmd, RegisterWriteCmd)

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
        if not port or not _HEX_DATA.match(data):
            self.fail("packet needs a port and hex digits")
        return PacketCmd(self.lineno, self.number(port, "port"), packet_bytes(data))

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
        """``KEYS... ACTION(ARGS) [= HANDLE]`` -> (keys text, action, [(param, value)], handle)."""
        open_paren = text.find("(")
        close_paren = text.rfind(")")
        if open_paren < 0 or close_paren < open_paren:
            self.fail("expected ACTION(PARAM:VALUE, ...)")
        trailer = text[close_paren + 1:].strip()
        handle = re.match(r"^=\s*(\w+)$", trailer)
        if trailer and not handle:
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
        return keys_text, action, args, handle.group(1) if handle else None

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
        ref = re.match(r"^(.*?)\b(member|group)\(\s*(\w+)\s*\)\s*(?:=\s*(\w+))?$", rest)
        if ref is not None:        # an entry of a table with an action profile
            priority, keys = self.split_keys(ref.group(1).split())
            number = self.number(ref.group(3), ref.group(2))
            return AddCmd(self.lineno, table, priority, keys, "", [], ref.group(4),
                          member=number if ref.group(2) == "member" else None,
                          group=number if ref.group(2) == "group" else None)
        keys_text, action, args, handle = self.split_action(rest)
        priority, keys = self.split_keys(keys_text.split())
        return AddCmd(self.lineno, table, priority, keys, action, args, handle)

    def cmd_member(self, rest):
        profile, _, rest = rest.partition(" ")
        member, _, rest = rest.strip().partition(" ")
        if not profile or not member:
            self.fail("expected member PROFILE MEMBER_ID ACTION(PARAM:VALUE, ...)")
        keys_text, action, args, handle = self.split_action(" " + rest.strip())
        if keys_text.strip() or handle:
            self.fail("expected member PROFILE MEMBER_ID ACTION(PARAM:VALUE, ...)")
        return MemberCmd(self.lineno, profile, self.number(member, "member id"), action, args)

    def cmd_group(self, rest):
        words = rest.split()
        if len(words) < 2:
            self.fail("expected group PROFILE GROUP_ID MEMBER_ID...")
        return GroupCmd(self.lineno, words[0], self.number(words[1], "group id"),
                        [self.number(w, "member id") for w in words[2:]])

    def cmd_setdefault(self, rest):
        table, _, rest = rest.partition(" ")
        keys_text, action, args, handle = self.split_action(rest)
        if not table or keys_text.strip() or handle:
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

    def cmd_meter_config(self, rest):
        words = rest.split()
        if len(words) != 6:
            self.fail("expected meter_config METER INDEX CIR CBURST PIR PBURST")
        index = words[1] if words[1].startswith("$") else self.number(words[1], "index")
        return MeterConfigCmd(self.lineno, words[0], index,
                              *[self.number(w, "number") for w in words[2:]])

    def cmd_value_set_add(self, rest):
        words = rest.split()
        if len(words) != 2:
            self.fail("expected value_set_add VALUE_SET VALUE[&&&MASK]")
        value, _, mask = words[1].partition("&&&")
        return ValueSetAddCmd(self.lineno, words[0], self.number(value, "value"),
                              self.number(mask, "mask") if mask else None)

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
        m = re.match(r"^([\w.$\[\]]+)\s*\(\s*(\$?\w+)\s*\)\s+(packets|bytes)\s*(==|!=|<=|>=|<|>)\s*(\S+)$", rest)
        if not m:
            self.fail("expected check_counter COUNTER(INDEX) packets|bytes OP NUMBER")
        name, index, kind, op, value = m.groups()
        if not index.startswith("$"):
            index = self.number(index, "index")
        return CheckCounterCmd(self.lineno, name, index, kind, op, self.number(value, "value"))

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


# ---------------------------------------------------------------------------
# Match values

def _key_name_candidates(name):
    """Spellings of an STF key name in P4Info form, most literal first.

    A validity key is named ``hdr.x.$valid$`` in P4Info (as p4c names it); STF files
    may also write ``hdr.x.valid``, ``hdr.x$valid$`` or ``hdr.x.isValid()``.
    """
    for suffix in (".$valid$", "$valid$", ".valid", ".isValid()"):
        if name.endswith(suffix):
            base = re.sub(r"\$(\d+)", r"[\1]", name[:-len(suffix)])
            return [base + ".$valid$", base + ".isValid()"] if base else ["$valid$"]
    return [re.sub(r"\$(\d+)", r"[\1]", name)]


def resolve_key_name(name, key_names):
    """The P4Info key name an STF key name designates; ValueError if none or ambiguous."""
    for candidate in _key_name_candidates(name):
        if candidate in key_names:
            return candidate
        matches = [k for k in key_names if k.endswith("." + candidate)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ValueError(f"key {name!r} is ambiguous: {', '.join(matches)}")
    raise ValueError(f"no key {name!r} (keys: {', '.join(key_names) or 'none'})")


def _starred_hex(text, width):
    """``0x12**`` -> (value, mask, trailing-star nibbles); None if not starred hex."""
    if not text.lower().startswith("0x") or "*" not in text:
        return None
    digits = text[2:]
    value = int(digits.replace("*", "0"), 16)
    mask = int("".join("0" if d == "*" else "F" for d in digits), 16)
    mask |= ((1 << width) - 1) & ~((1 << (4 * len(digits))) - 1)   # digits not written: exact
    trailing = len(digits) - len(digits.rstrip("*"))
    return value, mask & ((1 << width) - 1), trailing


def parse_match_value(text, match_kind, width):
    """One STF key value as a runtime match object (None = wildcard)."""
    from p4switch.runtime.tables import LPM, Exact, Optional, Range, Ternary

    full = (1 << width) - 1
    if text == "*":
        if match_kind == "exact":
            raise ValueError("an exact key cannot be a wildcard")
        return None
    if ".." in text:
        lo, hi = text.split("..")
        if match_kind != "range":
            raise ValueError(f"a range value needs a range key, this one is {match_kind}")
        return Range(parse_number(lo), parse_number(hi))
    if "&&&" in text:
        value, mask = text.split("&&&")
        if match_kind != "ternary":
            raise ValueError(f"a masked value needs a ternary key, this one is {match_kind}")
        return Ternary(parse_number(value), parse_number(mask))
    if "/" in text:
        value, plen = text.split("/")
        value, plen = parse_number(value), parse_number(plen)
        if not 0 <= plen <= width:
            raise ValueError(f"prefix length {plen} is not in 0..{width}")
        if match_kind == "ternary":
            return Ternary(value, full ^ ((1 << (width - plen)) - 1))
        if match_kind != "lpm":
            raise ValueError(f"a prefix value needs an lpm or ternary key, this one is {match_kind}")
        return LPM(value, plen)
    starred = _starred_hex(text, width)
    if starred is not None:
        value, mask, trailing = starred
        if match_kind == "ternary":
            return Ternary(value, mask)
        if match_kind == "lpm":
            if mask != full ^ ((1 << (4 * trailing)) - 1):
                raise ValueError("an lpm value may only have '*' in its trailing digits")
            return LPM(value, width - 4 * trailing)
        raise ValueError(f"'*' digits need a ternary or lpm key, this one is {match_kind}")
    value = parse_number(text)
    return {"exact": lambda: Exact(value), "lpm": lambda: LPM(value, width),
            "ternary": lambda: Ternary(value, full), "range": lambda: Range(value, value),
            "optional": lambda: Optional(value)}[match_kind]()


# ---------------------------------------------------------------------------
# Running

def table_priority(stf_priority):
    """The table priority of an STF priority.  STF priorities start at 0 (p4c's runner accepts
    0); tables, like P4Runtime, start at 1.  Both let the higher number win, so shift by one."""
    return None if stf_priority is None else stf_priority + 1


def packet_bytes(hex_digits):
    """Packet data from STF hex digits, as p4c's runner reads them: pairs of digits are bytes,
    and a lone last digit is a byte of its own (``"0a1"`` -> ``0a 01``).  No digits: empty."""
    data = bytes.fromhex(hex_digits[:len(hex_digits) & ~1])
    if len(hex_digits) % 2:
        data += bytes([int(hex_digits[-1], 16)])
    return data


def pattern_matches(pattern, exact_length, data):
    """Index of the first mismatching nibble of ``data`` against ``pattern``, or None."""
    actual = data.hex().upper()
    for i, nibble in enumerate(pattern):
        if i >= len(actual):
            return i
        if nibble != "*" and nibble != actual[i]:
            return i
    if exact_length and len(actual) != len(pattern):
        return len(pattern)
    return None


@dataclass
class StfResult:
    failures: List[str]
    packets_in: int = 0
    packets_out: int = 0
    packets_lost: int = 0           # out of ports no packet/expect line names: not compared

    @property
    def passed(self):
        return not self.failures


class StfDriver:
    """The STF run shared by every back end: commands in file order, each port's packets
    collected and compared with its expects (``port_diff``), ``no_packet``, register and
    counter checks, digests.  A back end supplies the hooks: ``apply_control(cmd)`` for the
    CONTROL_COMMANDS, ``send_packet(port, data)`` -> the packets out ``[(port, bytes)]``,
    ``register_value(cmd)``, ``counter_value(cmd)`` -> (packets, bytes), and appends the
    digests it sees to ``self.digests`` as (name, [values])."""

    filename = "<stf>"

    def where(self, cmd):
        return f"{self.filename}:{cmd.line}"

    def apply_control(self, cmd):
        raise NotImplementedError

    def send_packet(self, port, data):
        raise NotImplementedError

    def register_value(self, cmd):
        raise NotImplementedError

    def counter_value(self, cmd):
        raise NotImplementedError

    # -- a whole file -----------------------------------------------------------
    def run(self, commands):
        from p4switch.runtime.errors import SwitchError

        result = StfResult([])
        actual, expected, any_ports = {}, {}, set()
        expected_digests = []
        last_output = None
        for cmd in commands:
            try:
                if isinstance(cmd, PacketCmd):
                    last_output = self.send_packet(cmd.port, cmd.data)
                    result.packets_in += 1
                    for port, data in last_output:
                        actual.setdefault(port, []).append(data)
                        result.packets_out += 1
                elif isinstance(cmd, ExpectCmd):
                    if cmd.pattern is None:
                        any_ports.add(cmd.port)
                    else:
                        expected.setdefault(cmd.port, []).append(cmd)
                elif isinstance(cmd, NoPacketCmd):
                    if last_output is None:
                        raise StfError(f"{self.where(cmd)}: no_packet before any packet")
                    if last_output:
                        ports = ", ".join(str(p) for p, _ in last_output)
                        result.failures.append(f"{self.where(cmd)}: no_packet, but the last "
                                               f"packet produced output on port(s) {ports}")
                elif isinstance(cmd, RegisterReadCmd):
                    value = self.register_value(cmd)
                    if value != cmd.value:
                        result.failures.append(f"{self.where(cmd)}: register {cmd.register}"
                                               f"[{cmd.index}] is {value:#x}, expected {cmd.value:#x}")
                elif isinstance(cmd, CheckCounterCmd):
                    self.check_counter(cmd, result)
                elif isinstance(cmd, ExpectDigestCmd):
                    expected_digests.append(cmd)
                elif isinstance(cmd, WaitCmd):
                    pass
                else:
                    self.apply_control(cmd)
            except SwitchError as exc:
                raise StfError(f"{self.where(cmd)}: {exc}") from None
        named = {cmd.port for cmd in commands if isinstance(cmd, (PacketCmd, ExpectCmd))}
        for port in sorted(set(actual) - named):
            result.packets_lost += len(actual.pop(port))
        for port in sorted(set(actual) | set(expected)):
            if port not in any_ports:
                result.failures.extend(port_diff(port, expected.get(port, []), actual.get(port, [])))
        if expected_digests:
            result.failures.extend(self.digest_diff(expected_digests))
        return result

    def check_counter(self, cmd, result):
        packets, nbytes = self.counter_value(cmd)
        value = packets if cmd.kind == "packets" else nbytes
        if not _COMPARISONS[cmd.op](value, cmd.value):
            result.failures.append(f"{self.where(cmd)}: counter {cmd.counter}[{cmd.index}] "
                                   f"{cmd.kind} is {value}, expected {cmd.op} {cmd.value}")

    def digest_diff(self, expected):
        failures = []
        for i in range(max(len(expected), len(self.digests))):
            want = expected[i] if i < len(expected) else None
            got = self.digests[i] if i < len(self.digests) else None
            if want is not None and got is not None:
                name, values = got
                if (name == want.digest or name.endswith("." + want.digest)) and values == want.values:
                    continue
            want_text = f"{want.digest} {want.values}" if want else "(none)"
            got_text = f"{got[0]} {got[1]}" if got else "(none)"
            where = f"{self.where(want)}: " if want else ""
            failures.append(f"{where}digest #{i}: expected {want_text}, got {got_text}")
        return failures


class StfRunner(StfDriver):
    """Runs parsed STF commands against a ``p4switch.Switch``."""

    def __init__(self, switch, program, filename="<stf>"):
        self.switch = switch
        self.program = program
        self.filename = filename
        self.mc_nodes = []              # handle -> (rid, [ports])
        self.mc_groups = {}             # group -> [handles]
        self.entries = {}               # "= NAME" of an add -> (entry, match, priority)
        self.digests = []
        switch.on_digest = lambda name, values: self.digests.append((name, list(values)))

    def send_packet(self, port, data):
        return self.switch.process_packet(port, data)

    def register_value(self, cmd):
        return self.switch.register(cmd.register).read(cmd.index)

    def counter_value(self, cmd):
        if isinstance(cmd.index, str):
            self.switch.direct_counter(cmd.counter)      # the name must exist
            entry, _, _ = self.entry(cmd, cmd.index)
            return entry.packets, entry.bytes
        return self.switch.counter(cmd.counter).read(cmd.index)

    # -- control plane ----------------------------------------------------------
    def apply_control(self, cmd):
        """Apply one table/PRE/register command; raises StfError on failure."""
        from p4switch.runtime.errors import SwitchError

        handler = getattr(self, "do_" + type(cmd).__name__)
        try:
            handler(cmd)
        except (SwitchError, ValueError) as exc:
            raise StfError(f"{self.where(cmd)}: {exc}") from None

    def build_match(self, table, keys):
        key_specs = {k.name: k for k in table.spec.keys}
        match = {}
        for name, text in keys:
            full = resolve_key_name(name, list(key_specs))
            spec = key_specs[full]
            value = parse_match_value(text, spec.match_kind, spec.width)
            if value is not None:
                match[full] = value
        return match

    @staticmethod
    def build_params(args):
        return {name: parse_number(value) for name, value in args}

    def do_AddCmd(self, cmd):
        table = self.switch.table(cmd.table)
        match = self.build_match(table, cmd.keys)
        priority = table_priority(cmd.priority)
        if cmd.member is not None or cmd.group is not None:
            entry = table.insert(match, priority=priority, member=cmd.member, group=cmd.group)
        else:
            entry = table.insert(match, cmd.action, self.build_params(cmd.args), priority=priority)
        if cmd.handle is not None:
            self.entries[cmd.handle] = (entry, match, priority)

    def entry(self, cmd, handle):
        """(entry, match, priority) of the entry added with ``= NAME``, given "$NAME"."""
        try:
            return self.entries[handle[1:]]
        except KeyError:
            raise StfError(f"{self.where(cmd)}: no entry was added as '= {handle[1:]}'") from None

    def do_MemberCmd(self, cmd):
        self.switch.action_profile(cmd.profile).insert_member(
            cmd.member, cmd.action, self.build_params(cmd.args))

    def do_GroupCmd(self, cmd):
        self.switch.action_profile(cmd.profile).insert_group(cmd.group, cmd.members)

    def do_SetDefaultCmd(self, cmd):
        self.switch.table(cmd.table).set_default(cmd.action, self.build_params(cmd.args))

    def do_RemoveCmd(self, cmd):
        if cmd.table is None:
            for table_info in self.program.p4info.tables:
                if not table_info.is_const_table:
                    self.switch.table(table_info.preamble.name).clear()
            return
        table = self.switch.table(cmd.table)
        table.delete(self.build_match(table, cmd.keys), priority=table_priority(cmd.priority))

    def do_McGroupCreateCmd(self, cmd):
        self.mc_groups[cmd.group] = []
        self.switch.pre.set_multicast_group(cmd.group, [])

    def do_McNodeCreateCmd(self, cmd):
        self.mc_nodes.append((cmd.rid, list(cmd.ports)))

    def do_McNodeAssociateCmd(self, cmd):
        if cmd.group not in self.mc_groups:
            raise ValueError(f"multicast group {cmd.group} was not created")
        if not 0 <= cmd.handle < len(self.mc_nodes):
            raise ValueError(f"no multicast node with handle {cmd.handle}")
        self.mc_groups[cmd.group].append(cmd.handle)
        replicas = [(port, rid) for handle in self.mc_groups[cmd.group]
                    for rid, ports in [self.mc_nodes[handle]] for port in ports]
        self.switch.pre.set_multicast_group(cmd.group, replicas)

    def do_MirroringAddCmd(self, cmd):
        self.switch.pre.set_clone_session(cmd.session, [(cmd.port, 0)])

    def do_MeterConfigCmd(self, cmd):
        rates = (cmd.cir, cmd.cburst, cmd.pir, cmd.pburst)
        if isinstance(cmd.index, str):
            _, match, priority = self.entry(cmd, cmd.index)
            self.switch.direct_meter(cmd.meter).set_config(match, *rates, priority=priority)
        else:
            self.switch.meter(cmd.meter).set_config(cmd.index, *rates)

    def do_ValueSetAddCmd(self, cmd):
        self.switch.value_set(cmd.value_set).add(cmd.value, cmd.mask)

    def do_RegisterWriteCmd(self, cmd):
        self.switch.register(cmd.register).write(cmd.index, cmd.value)

def _hex_groups(text):
    """Hex nibbles in groups of 8 bytes for reading."""
    return " ".join(text[i:i + 16] for i in range(0, len(text), 16))


def _caret_under(nibble_index):
    """Spaces up to the nibble at ``nibble_index`` in ``_hex_groups`` output, then '^'."""
    return " " * (nibble_index + nibble_index // 16) + "^"


def port_diff(port, expects, packets):
    """Readable failures for one port: expected vs actual, first difference marked."""
    lines = []
    for i in range(max(len(expects), len(packets))):
        exp = expects[i] if i < len(expects) else None
        got = packets[i] if i < len(packets) else None
        if exp is not None and got is not None:
            bad = pattern_matches(exp.pattern, exp.exact_length, got)
            if bad is None:
                continue
            actual_hex = got.hex().upper()
            reason = ("packet longer than expected" if bad >= len(exp.pattern)
                      else "packet too short" if bad >= len(actual_hex)
                      else f"first difference at byte {bad // 2}")
            lines.append(f"  #{i} (expect at line {exp.line}): {reason}\n"
                         f"    expected: {_hex_groups(exp.pattern)}{'$' if exp.exact_length else ''}\n"
                         f"    actual:   {_hex_groups(actual_hex)}\n"
                         f"              {_caret_under(bad)}")
        elif exp is not None:
            lines.append(f"  #{i} (expect at line {exp.line}): no packet came out\n"
                         f"    expected: {_hex_groups(exp.pattern)}")
        else:
            lines.append(f"  #{i}: unexpected packet\n"
                         f"    actual:   {_hex_groups(got.hex().upper())}")
    if not lines:
        return []
    header = f"port {port}: expected {len(expects)} packet(s), got {len(packets)}"
    return [header + "\n" + "\n".join(lines)]


def run_stf(program, text, filename="<stf>"):
    """Parse STF text and run it against a fresh Switch for ``program``; an StfResult."""
    from p4switch import Switch

    commands = parse_stf(text, filename)
    return StfRunner(Switch(program), program, filename).run(commands)
