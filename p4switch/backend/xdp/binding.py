"""XdpSwitch: the Switch API over a pipeline compiled to eBPF (emit.py) and loaded into the
kernel (loader.py).

As with the C back end (backend/c/binding.py), the reference Switch's Python objects stay the
control plane's view: tables validate and order entries; after every change the kernel gets
the table whole, in lookup order, written into the half of its map that packets are not
reading, and then one 8-byte write (entry count and half) switches them over, so a packet sees
the table before or after a write, never between.  Counters live in per-CPU maps and are
summed when read.

`process_packet` runs the XDP program on one frame with BPF_PROG_TEST_RUN (the STF runner and
the parity tests use it), and each multicast replica with p4x_replica_test in the group's
order; `p4switch run --backend xdp` attaches the same program to the ports' devices instead
(attach(): the ports map, the transmit devmap, a devmap per multicast group whose entries run
p4x_replica). What the program cannot handle it counts and drops (p4x_status); under test it
also says which (p4x_result), and that raises here.
"""
from __future__ import annotations

import os
import socket
import struct

from ...runtime.errors import InvalidArgument
from ...runtime.pre import PacketReplicationEngine
from ...runtime.externs import Counter, Register
from ...runtime.switch import Switch
from ...runtime.tables import Table
from ..errors import BackendError
from ..native_tables import DeferredLoads, ordered_entries, value_words
from . import loader
from .emit import (XDP_NOT_SUPPORTED, XdpUnsupported, cell_layout, emit_xdp, max_args,
                   table_capacity)

RUNTIME_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime")
C_RUNTIME_DIR = os.path.join(os.path.dirname(RUNTIME_DIR), "..", "c", "runtime")   # p4n_values.h
NO_PORT = 0xFFFFFFFF
HEAD = 2048                    # runtime/p4x.h's P4X_HEAD: the frame head the parser sees
TEST_SKIP = 14                 # BPF_PROG_TEST_RUN takes no frame shorter than Ethernet's header
XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX = 0, 1, 2, 3
GROUP_MAPS = 16                # p4x_main.inc's P4X_GROUP_MAPS: multicast groups at once
PARSER_STEPS = 64              # runtime/p4x.h's P4X_PARSER_STEPS
# What a test's packet met instead of being sent, by p4x_state.inc's P4X_ST_* (p4x_result's
# port when its outcome is NOTED); the others happen only on the devices.
REFUSALS = {0: f"a frame head longer than {HEAD} bytes (parsed or deparsed)",
            2: "growing a frame's head past the XDP headroom",
            4: f"a parse passing more than {PARSER_STEPS} states"}
LOCK_NOT_TAKEN = 3             # P4X_ST_LOCK
DROPPED, SENT, MULTICAST, NOTED = 0, 1, 2, 3      # p4x_result's outcome
_WORD = (1 << 64) - 1


def xdp_source(program) -> str:
    """The generated eBPF C of a program (made once per Program)."""
    source = getattr(program, "_xdp_source", None)
    if source is None:
        source = program._xdp_source = emit_xdp(program.ast, program.compiled)
    return source


def object_path(program) -> str:
    """The built eBPF object of `program` (clang, cached by loader.build_object)."""
    path = getattr(program, "_xdp_object", None)
    if path is None:
        path = program._xdp_object = loader.build_object(
            "pipeline", xdp_source(program), include_dirs=[RUNTIME_DIR, C_RUNTIME_DIR])
    return path


def _cell_key(place: tuple[int, int], index: int) -> bytes:
    """The map key of cell `index` of an extern at `place` (emit.cell_layout)."""
    base, stride = place
    return struct.pack("<I", base + index * stride)


class XdpCounter(Counter):
    """A counter whose cells are per-CPU map values, summed when read."""

    def __init__(self, bpf_map, place: tuple[int, int], spec):
        super().__init__(spec.name, spec.size or 0, spec.unit)
        self.packets = self.bytes = None
        self._map, self._place = bpf_map, place

    def read(self, index: int) -> tuple[int, int]:
        self._check(index)
        packets = bytes_ = 0
        for value in self._map.lookup_percpu(_cell_key(self._place, index)) or ():
            p, b = struct.unpack_from("<QQ", value)
            packets, bytes_ = packets + p, bytes_ + b
        return packets, bytes_

    def write(self, index: int, packets: int, bytes_: int) -> None:
        self._check(index)
        key = _cell_key(self._place, index)
        cpus = len(self._map.lookup_percpu(key))
        self._map.update_percpu(key, [struct.pack("<QQ", packets, bytes_)] +
                                [bytes(16)] * (cpus - 1))

    def count(self, index: int, nbytes: int) -> None:
        packets, bytes_ = self.read(index)
        self.write(index, packets + 1, bytes_ + nbytes)

    def reset(self) -> None:
        for index in range(self.size):
            self.write(index, 0, 0)


class XdpRegister(Register):
    """A register whose cells are a map's values (one word each: the emitter refuses wider)."""

    def __init__(self, bpf_map, place: tuple[int, int], spec):
        super().__init__(spec.name, spec.size or 0, spec.width, spec.signed)
        self.cells = None
        self._map, self._place = bpf_map, place

    def read(self, index: int) -> int:
        self._check(index)
        word = struct.unpack("<Q", self._map.lookup(_cell_key(self._place, index)))[0]
        return word & ((1 << self.width) - 1)         # an int<W> cell holds it sign-extended

    def write(self, index: int, value: int) -> None:
        word = self.checked(index, value) & _WORD     # stored sign-extended, as in C
        self._map.update(_cell_key(self._place, index), struct.pack("<Q", word))

    def reset(self) -> None:
        for index in range(self.size):
            self.write(index, 0)


class XdpReplication(PacketReplicationEngine):
    """Groups checked here for what a devmap can send (one copy per port, GROUP_MAPS groups)
    and written to the kernel's maps while the program is attached."""

    def __init__(self, switch):
        super().__init__()
        self._switch = switch

    def set_multicast_group(self, group_id, replicas):
        ports = [port for port, _ in replicas]
        twice = sorted({p for p in ports if ports.count(p) > 1})
        if twice:
            raise InvalidArgument(f"multicast group {group_id}: port {twice[0]} more than once "
                                  f"is {XDP_NOT_SUPPORTED} (a devmap sends one copy per port)")
        if group_id not in self.groups and len(self.groups) >= GROUP_MAPS:
            raise InvalidArgument(f"multicast group {group_id}: more than {GROUP_MAPS} groups "
                                  f"are {XDP_NOT_SUPPORTED}")
        super().set_multicast_group(group_id, replicas)
        self._switch.push_groups()

    def delete_multicast_group(self, group_id):
        super().delete_multicast_group(group_id)
        self._switch.push_groups()


_TABLE_MUTATORS = ("insert", "modify", "delete", "clear", "set_default", "reset_default")


class XdpSwitch(DeferredLoads, Switch):
    """`Switch` with the data plane in the kernel (see the module docstring)."""

    backend = "xdp"

    def __init__(self, program, cpu_port=None, log=None, clock=None, seed=None, **_):
        if log is not None:
            raise XdpUnsupported(None, f"packet traces are {XDP_NOT_SUPPORTED}")
        self._deferred: dict | None = None
        super().__init__(program, cpu_port=cpu_port, log=log, clock=clock, seed=seed)
        try:
            self.bpf = loader.BpfObject(object_path(program))
        except loader.BpfError as e:         # the verifier's refusal, as a compile-time one
            raise BackendError(None, f"the xdp back end cannot run {program.name}: {e}") \
                from None
        self.program_fd = self.bpf.program("p4x_pipeline")
        self.replica_test = self.bpf.program("p4x_replica_test")
        self.replica_program = self.bpf.program("p4x_replica")
        self._config = self.bpf.map("p4x_config")
        self._result = self.bpf.map("p4x_result")
        self._status = self.bpf.map("p4x_status")
        self.ports_map = self.bpf.map("p4x_ports")
        self.tx_map = self.bpf.map("p4x_tx")
        self._counts = self.bpf.map("p4x_counts")
        self._max_args = max_args(program.compiled)
        self._attached: list[int] = []             # ifindexes the program runs on
        compiled = program.compiled
        for kind, cls, map_name in (("counter", XdpCounter, "p4x_counters"),
                                    ("register", XdpRegister, "p4x_registers")):
            specs = [s for s in compiled.externs if s.kind == kind]
            for spec, place in zip(specs, cell_layout(specs)[0]):
                self.externs[spec.name] = cls(self.bpf.map(map_name), place, spec)
        self._half = [0] * len(compiled.tables)
        for i, spec in enumerate(compiled.tables):
            table = self.tables[spec.name]
            self._hook_table(table, i)
            self._load_table(table, i)
        self._ifindex: dict[int, int] = {}         # P4 port -> device, while attached
        self._group_keys: dict[int, list[bytes]] = {}   # devmap -> keys written
        self._group_ids: list[bytes] = []                # p4x_group_maps keys written
        self._rid_keys: list[bytes] = []                 # p4x_rids keys written
        self.pre = XdpReplication(self)
        self.set_test_mode(False)

    def close(self) -> None:
        self.detach()
        self.bpf.close()

    # -- on the ports' devices -------------------------------------------------------------------

    def attach(self, ports: dict[int, str]) -> None:
        """Run the program on the devices of `ports` ({P4 port: interface}): each one's
        frames enter the pipeline in the kernel and leave by XDP redirect. A veth delivers
        a redirected frame only when its peer polls with NAPI (GRO on, or an XDP program of
        its own): `INA_VETH_NAPI=gro` gives the topologies' hosts that."""
        self.detach()
        for number, interface in sorted(ports.items()):
            try:
                ifindex = socket.if_nametoindex(interface)
            except OSError:
                raise InvalidArgument(f"no interface {interface} for port {number}") from None
            self.ports_map.update(struct.pack("<I", ifindex), struct.pack("<I", number))
            self.tx_map.update(struct.pack("<I", number), struct.pack("<I", ifindex))
            self.program_fd.attach(ifindex, mode="drv")
            self._attached.append(ifindex)
            self._ifindex[number] = ifindex
        self.push_groups()

    def push_groups(self) -> None:
        """The multicast groups into the kernel: group -> devmap, each devmap's ports with
        the replica program, and each replica's rid (p4x_main.inc). Only while attached: a
        test makes the replicas itself (process_packet)."""
        if not self._ifindex:
            return
        group_maps, rids = self.bpf.map("p4x_group_maps"), self.bpf.map("p4x_rids")
        for which, keys in self._group_keys.items():
            devmap = self.bpf.map(f"p4x_group_{which}")
            for key in keys:
                devmap.delete(key)
        self._group_keys = {}
        for key in self._group_ids:
            group_maps.delete(key)
        for key in self._rid_keys:
            rids.delete(key)
        self._rid_keys, self._group_ids = [], []
        for which, (group, replicas) in enumerate(sorted(self.pre.groups.items())):
            devmap = self.bpf.map(f"p4x_group_{which}")
            keys = []
            for port, rid in replicas:
                ifindex = self._ifindex.get(port)
                if ifindex is None:
                    continue                     # no device on that port: no copy
                key = struct.pack("<I", port)
                devmap.update(key, struct.pack("<Ii", ifindex, self.replica_program.fd))
                keys.append(key)
                rid_key = struct.pack("<I", (group << 16) | port)
                rids.update(rid_key, struct.pack("<I", rid))
                self._rid_keys.append(rid_key)
            self._group_keys[which] = keys
            group_maps.update(struct.pack("<I", group), struct.pack("<I", which))
            self._group_ids.append(struct.pack("<I", group))

    def detach(self) -> None:
        attached, self._attached = self._attached, []
        self._ifindex = {}
        for ifindex in attached:
            try:
                loader.detach_xdp(ifindex)
            except loader.BpfError:
                pass                           # the interface went away first

    # -- tables --------------------------------------------------------------------------------

    def _hook_table(self, table: Table, index: int) -> None:
        for name in _TABLE_MUTATORS:
            original = getattr(table, name)

            def mutate(*args, _original=original, **kwargs):
                try:
                    return _original(*args, **kwargs)
                finally:
                    if self._deferred is not None:
                        self._deferred[index] = table
                    else:
                        self._load_table(table, index)
            setattr(table, name, mutate)

    def _load_deferred(self, table: Table, index: int) -> None:
        self._load_table(table, index)

    def _entry_value(self, table: Table, action_index: int, args: list[int], match) -> bytes:
        keys = table.spec.keys
        nk = max(1, len(keys))
        value, mask, lo, hi = [0] * nk, [0] * nk, [0] * nk, [0] * nk
        ranges = 0
        for w, (key, m) in enumerate(zip(keys, match or ())):
            key_mask, key_value, rng = Table._mask_value(key, m)
            if rng is None:
                value[w], mask[w] = key_value & key_mask, key_mask
            else:
                ranges |= 1 << w
                lo[w], hi[w] = rng
        if len(args) > self._max_args:
            raise InvalidArgument(f"table {table.name}: {len(args)} argument words, more than "
                                  f"the program's {self._max_args}")
        args = args + [0] * (self._max_args - len(args))
        return struct.pack(f"<{4 * nk}QQII{self._max_args}Q", *value, *mask, *lo, *hi, ranges,
                           action_index & 0xFFFFFFFF, len(args), *args)

    def _load_table(self, table: Table, index: int) -> None:
        _, entries = ordered_entries(table)   # the lookup order of both
        cap = table_capacity(table.spec)
        if len(entries) > cap:
            raise InvalidArgument(f"table {table.name}: {len(entries)} entries, more than the "
                                  f"{cap} its map holds on the xdp back end")
        entries_map = self.bpf.map(f"p4x_table_{index}")
        half = 1 - self._half[index]
        base = half * (cap + 1)
        for slot, e, match in [(base + i, e, e.match) for i, e in enumerate(entries)] + \
                [(base + cap, table.default_entry, None)]:
            args = value_words(e.args, [width for _, width in e.action.params])   # one word each
            entries_map.update(struct.pack("<I", slot),
                               self._entry_value(table, e.action_index, args, match))
        self._counts.update(struct.pack("<I", index), struct.pack("<II", len(entries), base))
        self._half[index] = half

    # -- data plane ----------------------------------------------------------------------------

    def set_test_mode(self, on: bool, port: int = 0, rid: int = 0, group: int = 0,
                      now: int = 0) -> None:
        self._config.update(struct.pack("<I", 0), struct.pack(
            "<IIqII", port if on else NO_PORT, TEST_SKIP if on else 0, now, rid, group))

    def _test_run(self, program, data: bytes) -> tuple[int, bytes, int, int]:
        """(verdict, frame without the test's prefix, p4x_result's port and outcome) of one
        BPF_PROG_TEST_RUN of `program`; what the program could not handle raises."""
        verdict, frame = program.test_run(bytes(TEST_SKIP) + bytes(data))
        port, outcome = struct.unpack("<II", self._result.lookup(struct.pack("<I", 0)))
        if verdict == XDP_DROP and outcome == NOTED:
            if port == LOCK_NOT_TAKEN:
                raise RuntimeError("xdp back end: the packet lock was not free under test")
            raise XdpUnsupported(None, f"{REFUSALS[port]} is {XDP_NOT_SUPPORTED}")
        if verdict not in (XDP_DROP, XDP_TX):
            raise RuntimeError(f"xdp back end: the program returned {verdict} under test")
        return verdict, frame[TEST_SKIP:], port, outcome

    def process_packet(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        if not (isinstance(port, int) and 0 <= port <= 511):
            raise InvalidArgument(f"port {port!r} is not a 9-bit v1model port")
        now = self.clock()
        outputs = []
        try:
            self.set_test_mode(True, port, now=now)
            verdict, frame, out_port, outcome = self._test_run(self.program_fd, data)
            if verdict == XDP_TX and outcome == SENT:
                outputs.append((out_port, frame))
            elif verdict == XDP_TX and outcome == MULTICAST:    # each replica, in order
                group = out_port
                for replica_port, rid in self.pre.groups.get(group) or ():
                    self.set_test_mode(True, replica_port, rid, group, now)
                    verdict, frame, _, _ = self._test_run(self.replica_test, data)
                    if verdict == XDP_TX:
                        outputs.append((replica_port, frame))
        finally:
            self.set_test_mode(False)
        return self.delivered(outputs)


def xdp_refusal(program) -> str | None:
    """Why the XDP back end cannot run `program` here, or None when it can."""
    missing = loader.toolchain_missing()
    if missing:
        return missing
    try:
        xdp_source(program)
    except XdpUnsupported as e:
        return str(e)
    return None
