"""Differential running of two back ends: the same program, control-plane commands and
packets through a Python Switch (the reference) and a NativeSwitch (or, with backend="xdp",
an XdpSwitch), compared packet by packet (port, bytes, order), then register cells, counters
and digests."""
from __future__ import annotations

import random

import p4switch
from p4switch import stf
from p4switch.backend.c.binding import NativeSwitch


class Clock:
    """A deterministic clock (microseconds), the same sequence for both switches."""

    def __init__(self):
        self.now = 1000

    def __call__(self):
        self.now += 7
        return self.now


def make_pair(program, cpu_port=None, extra_flags=(), traces=None, backend="c"):
    """A Python and a C (or XDP) switch for `program`; with `traces` ({"python": [], "c": []})
    each writes its packet trace lines there (the XDP back end writes none)."""
    logs = (traces["python"].append, traces["c"].append) if traces is not None else (None, None)
    python = p4switch.Switch(program, clock=Clock(), cpu_port=cpu_port, seed=1,
                             backend="python", log=logs[0])
    if backend == "xdp":
        from p4switch.backend.xdp.binding import XdpSwitch
        native = XdpSwitch(program, clock=Clock(), cpu_port=cpu_port, seed=1)
    else:
        native = NativeSwitch(program, clock=Clock(), cpu_port=cpu_port, seed=1,
                              extra_flags=extra_flags, log=logs[1])
    digests = {"python": [], "c": []}
    python.on_digest = lambda name, values: digests["python"].append((name, list(values)))
    native.on_digest = lambda name, values: digests["c"].append((name, list(values)))
    return python, native, digests


def state_of(switch):
    """Every register cell and counter of a switch, by name."""
    state = {}
    for name, obj in switch.externs.items():
        kind = type(obj).__name__
        if "Register" in kind:
            state[name] = [obj.read(i) for i in range(obj.size)]
        elif kind in ("Counter", "NativeCounter", "XdpCounter"):
            state[name] = [obj.read(i) for i in range(obj.size)]
    for name, table in switch.tables.items():
        if table.spec.direct_counter:
            state[name + "/direct"] = sorted((repr(v.match), v.packets, v.bytes)
                                            for v in table.entries())
    return state


def outcome(switch, port, data):
    """The packets a switch sends for one packet, or the error it raised (type, message)."""
    try:
        return switch.process_packet(port, data)
    except Exception as e:  # noqa: BLE001 - both back ends must fail the same way
        return (type(e).__name__, str(e))


def run_commands(program, commands, filename="<stf>", extra_flags=(), traced=True, backend="c"):
    """Apply the STF commands to both back ends; a list of differences (empty: identical)
    and the number of packets compared. With `traced`, both write packet traces, which must
    be identical line by line too."""
    traced = traced and backend == "c"
    traces = {"python": [], "c": []} if traced else None
    python, native, digests = make_pair(program, extra_flags=extra_flags, traces=traces,
                                        backend=backend)
    runners = [stf.StfRunner(python, program, filename), stf.StfRunner(native, program, filename)]
    problems, packets = [], 0
    for cmd in commands:
        if isinstance(cmd, stf.CONTROL_COMMANDS):
            for runner in runners:
                runner.apply_control(cmd)
        elif isinstance(cmd, stf.PacketCmd):
            packets += 1
            expected = outcome(python, cmd.port, cmd.data)
            got = outcome(native, cmd.port, cmd.data)
            if expected != got:
                problems.append(f"{filename}: packet {packets} on port {cmd.port}: "
                                f"python {expected!r} != {backend} {got!r}")
    if state_of(python) != state_of(native):
        a, b = state_of(python), state_of(native)
        for name in sorted(set(a) | set(b)):
            if a.get(name) != b.get(name):
                problems.append(f"{filename}: {name}: python {a.get(name)} != {backend} "
                                f"{b.get(name)}")
    if traces is not None and traces["python"] != traces["c"]:
        first = next((i for i, (a, b) in enumerate(zip(traces["python"], traces["c"]))
                      if a != b), min(len(traces["python"]), len(traces["c"])))
        problems.append(f"{filename}: traces differ at line {first}: python "
                        f"{traces['python'][first:first + 1]} != c {traces['c'][first:first + 1]}")
    if digests["python"] != digests["c"]:
        problems.append(f"{filename}: digests python {digests['python']} != c {digests['c']}")
    return problems, packets


def fuzz_commands(commands, seed, count, ports=8):
    """The STF's control-plane commands, then `count` packets: the STF's own, mutated
    (`mutate`), most on their own port and one in five on a random port below `ports`;
    the same list for the same seed on every run and machine."""
    import dataclasses
    rng = random.Random(seed)
    controls = [c for c in commands if isinstance(c, stf.CONTROL_COMMANDS)]
    packets = [c for c in commands if isinstance(c, stf.PacketCmd)]
    fuzzed = list(controls)
    for _ in range(count):
        base = rng.choice(packets)
        port = base.port if rng.random() < 0.8 else rng.randrange(ports)
        fuzzed.append(dataclasses.replace(base, port=port, data=mutate(base.data, rng)))
    return fuzzed


def stable_seed(name: str) -> int:
    """A seed from a name, the same in every process (str hashes are salted per process)."""
    import zlib
    return zlib.crc32(name.encode()) & 0xFFFF


def mutate(data: bytes, rng: random.Random) -> bytes:
    """A seeded mutation of a packet: flipped bits, truncation, extension, or random."""
    choice = rng.randrange(5)
    buf = bytearray(data)
    if choice == 0 and buf:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
    elif choice == 1 and buf:
        del buf[rng.randrange(len(buf)):]
    elif choice == 2:
        buf += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif choice == 3:
        buf = bytearray(rng.randrange(256) for _ in range(rng.randint(0, 200)))
    else:
        for _ in range(rng.randint(1, 3)):
            if buf:
                i = rng.randrange(len(buf))
                buf[i] = rng.randrange(256)
    return bytes(buf)
