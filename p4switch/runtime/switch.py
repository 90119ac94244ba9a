"""The Switch API: one v1model switch running a compiled program (see docs/design.md).

This is the Python back end; p4switch/targets.py's `Switch()` chooses it or the C one.
`Switch(program)` executes the program's compiled code object in a fresh namespace holding
this switch's tables, extern objects, hash objects and per-packet state, so every Switch has
its own state while the compilation is done once per Program.
"""

from __future__ import annotations

import time

from . import algorithms
from .errors import InvalidArgument
from .externs import Counter, DirectCounter, DirectMeter, Meter, Register, ValueSet
from .names import resolve
from .packet import ParserException
from .pre import PacketReplicationEngine
from .profiles import ActionProfile
from .tables import Table
from .v1model import PacketState, TrafficManager, table_message
from .values import ExitPipeline, HeaderStack, P4AssertionError


class Switch:
    """A v1model switch: `process_packet(port, data) -> [(egress_port, bytes), ...]`.

    This class is the Python back end, the reference; `p4switch.Switch` (p4switch/targets.py)
    picks between it and the C back end, which subclasses it."""

    backend = "python"

    def __init__(self, program, cpu_port: int | None = None, log=None, clock=None,
                 seed: int | None = None):
        compiled = program.compiled
        self.program = program
        self.cpu_port = cpu_port
        self.log = log
        self.on_digest = None
        self.packet_in = None
        self.pre = PacketReplicationEngine()
        start = time.monotonic()
        self.clock = clock or (lambda: int((time.monotonic() - start) * 1_000_000))
        self.state = PacketState(seed)
        ns = {"__name__": "p4switch_program", "P": self.state, "_trace": log,
              "_table_message": table_message, "HeaderStack": HeaderStack,
              "ParserException": ParserException, "ExitPipeline": ExitPipeline,
              "P4AssertionError": P4AssertionError}
        self.profiles: dict[str, ActionProfile] = {}
        for spec in compiled.externs:
            if spec.kind in ("action_profile", "action_selector"):
                self.profiles[spec.name] = self._make_profile(spec, compiled.tables, seed)
        self.tables: dict[str, Table] = {}
        for i, spec in enumerate(compiled.tables):
            table = Table(spec, profile=self.profiles.get(spec.profile),
                          clock_ns=lambda: self.clock() * 1000,
                          hit_clock_ns=lambda: self.state.now_us * 1000)
            self.tables[spec.name] = table
            ns[f"T{i}"] = table
            ns[f"T{i}_lookup"] = table.lookup
            ns[f"T{i}_get"] = table.exact_get          # used for all-exact tables only
            ns[f"T{i}_default"] = table.default_entry
        self.externs: dict[str, object] = {}
        for spec in compiled.externs:
            obj = self.profiles.get(spec.name) or self._make_extern(spec)
            self.externs[spec.name] = obj
            ns[spec.global_name] = obj
            if isinstance(obj, Register):
                ns[spec.global_name + "_cells"] = obj.cells
        for gname, algo in compiled.hashes:
            ns[gname] = algorithms.make_hash(algo, seed)
        self.value_sets: dict[str, ValueSet] = {}
        for gname, name, size in compiled.value_sets:
            ns[gname] = self.value_sets[name] = ValueSet(name, size)
        exec(compiled.code, ns)
        self._namespace = ns
        self._tm = TrafficManager(self, ns, self.state, compiled.field_lists)

    @staticmethod
    def _make_profile(spec, table_specs, seed) -> ActionProfile:
        selector = algorithms.make_hash(spec.algorithm, seed) if spec.algorithm else None
        profile = ActionProfile(spec.name, spec.size, selector, spec.width)
        for table in table_specs:
            if table.profile == spec.name:
                for action in table.actions:
                    if action.scope != "DEFAULT_ONLY":
                        profile.actions[action.name] = action.params
        return profile

    def _make_extern(self, spec):
        if spec.kind == "register":
            return Register(spec.name, spec.size or 0, spec.width, spec.signed)
        if spec.kind == "counter":
            return Counter(spec.name, spec.size or 0, spec.unit)
        if spec.kind == "meter":
            return Meter(spec.name, spec.size or 0, spec.unit, self.clock)
        if spec.kind == "direct_counter":
            return DirectCounter(spec.name, self.tables[spec.table], spec.unit)
        if spec.kind == "direct_meter":
            return DirectMeter(spec.name, self.tables[spec.table], spec.unit)
        raise ValueError(f"extern {spec.kind} is not supported")

    # -- data plane ------------------------------------------------------------------------

    def process_packet(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet received on `port`; the packets sent, in emission order
        (those sent to the CPU port go to `packet_in` instead, when it is set)."""
        if not (isinstance(port, int) and 0 <= port <= 511):
            raise InvalidArgument(f"port {port!r} is not a 9-bit v1model port")
        return self._tm.process(port, data)

    def delivered(self, outputs: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """A packet's frames as `process_packet` returns them: those for the CPU port go to
        `packet_in` (when it is set), in order (for back ends that emit a packet's frames
        together; the reference's traffic manager does it frame by frame)."""
        if self.cpu_port is None or self.packet_in is None:
            return outputs
        kept = []
        for out_port, frame in outputs:
            if out_port == self.cpu_port:
                self.packet_in(out_port, frame)
            else:
                kept.append((out_port, frame))
        return kept

    # -- control plane -----------------------------------------------------------------------

    def table(self, name: str) -> Table:
        return resolve(name, self.tables, "table")

    def _extern(self, name: str, kinds: tuple, what: str):
        objects = {n: o for n, o in self.externs.items() if isinstance(o, kinds)}
        return resolve(name, objects, what)

    def register(self, name: str) -> Register:
        return self._extern(name, (Register,), "register")

    def counter(self, name: str) -> Counter:
        return self._extern(name, (Counter,), "counter")

    def direct_counter(self, name: str) -> DirectCounter:
        return self._extern(name, (DirectCounter,), "direct counter")

    def meter(self, name: str) -> Meter:
        return self._extern(name, (Meter,), "meter")

    def direct_meter(self, name: str) -> DirectMeter:
        return self._extern(name, (DirectMeter,), "direct meter")

    def action_profile(self, name: str) -> ActionProfile:
        """An action profile or selector: members and groups for its tables' entries."""
        return resolve(name, self.profiles, "action profile")

    def value_set(self, name: str) -> ValueSet:
        return resolve(name, self.value_sets, "value set")
