"""Compiling, loading and running eBPF/XDP programs for p4switch's xdp back end.

`build_object` compiles BPF C with clang (-O2 -g -target bpf), cached like nativebuild's
objects; `BpfObject` opens and loads one with libbpf (through the small C shim in
runtime/xdp_loader.c, which also captures the kernel verifier's log); its maps and programs
are `BpfMap` (update, lookup, delete, per-CPU values) and `BpfProgram` (BPF_PROG_TEST_RUN,
run statistics, XDP attach). Every failure is a `BpfError` whose text is one line; the
verifier's or compiler's words are in its `log`.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading

import nativebuild

RUNTIME_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime")
# -mcpu (bpf_cpu()) is added to these; -Wno-pass-failed: a loop clang could not unroll is
# still a bounded loop the verifier takes; -fno-jump-tables: clang 22 turns a switch into a
# lookup table in read-only data that libbpf cannot relocate ("Undefined temporary symbol").
BPF_FLAGS = ("-O2", "-g", "-target", "bpf", "-fno-builtin", "-fno-jump-tables", "-Wall",
             "-Wno-unused-function", "-Wno-unused-variable", "-Wno-unused-label",
             "-Wno-unused-value", "-Wno-pass-failed")
# BPF's instruction sets: v3 has compare-and-swap (the XDP back end's packet lock); v4
# (clang 18, Linux 6.6) adds jumps of 32-bit range, for the larger programs.
CPU_V4_CLANG = 18
CPU_V4_KERNEL = (6, 6)
# Searched in this order when $BPF_CLANG is unset: the newest first, for -mcpu=v4.
CLANG_NAMES = ("clang-22", "clang-21", "clang-20", "clang-19", "clang-18", "clang", "clang-14")
JUMP_RANGE = "cannot be patched due to 16-bit range"
TEST_RUN_SLACK = 512          # room in test_run's output for a head the program grew
LOG_LINES = 40                # how much of the verifier's log a BpfError keeps
PERCPU_MAP_TYPES = {5, 6, 10, 21}   # BPF_MAP_TYPE_{PERCPU_HASH,PERCPU_ARRAY,LRU_PERCPU_HASH,
                                    # PERCPU_CGROUP_STORAGE}
XDP_MODES = {"drv": 0, "skb": 1}
ETH_HLEN = 14                 # the kernel's test run refuses shorter data


class BpfError(Exception):
    """A BPF program failed to build, load or run. str() is one line; `log` holds the
    compiler's or the kernel verifier's words (the last lines), possibly empty."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(" ".join(message.split()))
        self.log = log


def _clang() -> str | None:
    return nativebuild.find_program("BPF_CLANG", *CLANG_NAMES)


_clang_ids: dict[str, str] = {}


def _clang_id(clang: str) -> str:
    if clang not in _clang_ids:
        out = subprocess.run([clang, "--version"], capture_output=True, text=True).stdout
        _clang_ids[clang] = out.splitlines()[0] if out else clang
    return _clang_ids[clang]


def _major(text: str) -> tuple[int, ...]:
    match = re.search(r"(\d+)\.(\d+)", text)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def bpf_cpu() -> str:
    """The -mcpu the programs are built for: "v4" when clang and the running kernel both have
    it, else "v3"."""
    clang = _clang()
    new_clang = clang is not None and _major(_clang_id(clang).split("version", 1)[-1])[0] \
        >= CPU_V4_CLANG
    return "v4" if new_clang and _major(os.uname().release) >= CPU_V4_KERNEL else "v3"


def jump_range_hint() -> str:
    """What to do when the verifier finds a jump past BPF's 16-bit range (v3 has no other)."""
    if bpf_cpu() == "v4":
        return "the program is too large for the xdp back end"
    return (f"clang {CPU_V4_CLANG} or later on Linux {'.'.join(map(str, CPU_V4_KERNEL))} or "
            f"later builds longer jumps (-mcpu=v4; here: {_clang_id(_clang() or 'clang')}, "
            f"Linux {os.uname().release}); set BPF_CLANG to one, or make the program smaller "
            f"(p4src: a smaller AGG_K)")


def _system_includes() -> list[str]:
    """<asm/types.h> lives under the host's multiarch include directory, which clang's bpf
    target does not search by itself."""
    try:
        arch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        arch = ""
    path = os.path.join("/usr/include", arch) if arch else ""
    return [path] if path and os.path.isdir(path) else []


def build_object(name: str, source: str, include_dirs=(), defines=()) -> str:
    """Compile the BPF C `source` into an object file and return its path, cached under a
    hash of the source, the headers (.h, .inc) in `include_dirs`, clang's identity and the flags.
    `defines` are "NAME" or "NAME=VALUE"."""
    clang = _clang()
    if clang is None:
        raise BpfError("clang not found (install clang, or set BPF_CLANG)")
    includes = [*include_dirs, *_system_includes()]
    flags = [*BPF_FLAGS, f"-mcpu={bpf_cpu()}", *(f"-D{d}" for d in defines),
             *(f"-I{d}" for d in includes)]
    digest = hashlib.sha256()
    digest.update(_clang_id(clang).encode() + b"\0" + "\0".join(flags).encode() + b"\0")
    digest.update(source.encode() + b"\0")
    for directory in include_dirs:
        for header in sorted(os.listdir(directory)):
            if header.endswith((".h", ".inc")):
                with open(os.path.join(directory, header), "rb") as f:
                    digest.update(header.encode() + b"\0" + f.read() + b"\0")
    target = os.path.join(nativebuild.cache_dir(), f"{name}-{digest.hexdigest()[:24]}.bpf.o")
    if os.path.exists(target):
        return target
    with tempfile.TemporaryDirectory(prefix="bpfbuild-") as work:
        src = os.path.join(work, f"{name}.c")
        with open(src, "w") as f:
            f.write(source)
        out = os.path.join(work, "out.o")
        result = subprocess.run([clang, *flags, "-c", src, "-o", out],
                                capture_output=True, text=True)
        if result.returncode != 0:
            text = result.stderr.strip() or result.stdout.strip()
            first = next((line for line in text.splitlines() if "error:" in line),
                         text.splitlines()[0] if text else "no output")
            raise BpfError(f"clang failed on {name}: {first.replace(src, name + '.c')}",
                           log=text)
        partial = f"{target}.{os.getpid()}.tmp"
        shutil.copyfile(out, partial)
        os.replace(partial, target)
    return target


_shim: ctypes.CDLL | None = None
_shim_lock = threading.Lock()    # the shim's captured log is one per process


def _lib() -> ctypes.CDLL:
    global _shim
    if _shim is None:
        with open(os.path.join(RUNTIME_DIR, "xdp_loader.c")) as f:
            text = f.read()
        try:
            path = nativebuild.build_shared("xdp_loader", {"xdp_loader.c": text},
                                            extra_flags=("-Wl,--no-as-needed", "-lbpf"))
        except nativebuild.BuildError as e:
            raise BpfError(f"cannot build the libbpf shim (is libbpf-dev installed?): "
                           f"{str(e).splitlines()[-1]}", log=str(e)) from None
        lib = nativebuild.load(path)
        vp, i, u, cp = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_char_p
        pu = ctypes.POINTER(u)
        signatures = {
            "p4x_log_reset": (None, []), "p4x_log_text": (cp, []),
            "p4x_open_load": (vp, [cp, ctypes.POINTER(i)]), "p4x_close": (None, [vp]),
            "p4x_map": (i, [vp, cp, pu]), "p4x_program": (i, [vp, cp]),
            "p4x_program_names": (i, [vp, cp, ctypes.c_size_t]),
            "p4x_num_possible_cpus": (i, []),
            "p4x_map_update": (i, [i, cp, cp, ctypes.c_ulonglong]),
            "p4x_map_lookup": (i, [i, cp, cp]), "p4x_map_delete": (i, [i, cp]),
            "p4x_test_run": (i, [i, cp, u, cp, pu, pu, i]),
            "p4x_xdp_attach": (i, [i, i, i]), "p4x_xdp_detach": (i, [i]),
            "p4x_enable_run_time_stats": (i, []),
        }
        for fn, (restype, argtypes) in signatures.items():
            getattr(lib, fn).restype = restype
            getattr(lib, fn).argtypes = argtypes
        _shim = lib
    return _shim


def _errno_text(rc: int) -> str:
    return os.strerror(-rc) if rc < 0 else f"error {rc}"


_missing: list = []


def toolchain_missing() -> str | None:
    """None when clang with the bpf target, libbpf and a working bpf() syscall are all here
    (a trivial XDP program is built and loaded); else one line saying what is missing."""
    if not _missing:
        _missing.append(_probe())
    return _missing[0]


_TRIVIAL = """#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("xdp") int pass(struct xdp_md *ctx) { return XDP_PASS; }
char _license[] SEC("license") = "GPL";
"""


def _probe() -> str | None:
    if _clang() is None:
        return "clang not found (install clang, or set BPF_CLANG): the xdp back end needs it"
    targets = subprocess.run([_clang(), "-print-targets"], capture_output=True, text=True).stdout
    if not re.search(r"^\s*bpf\b", targets, re.M):
        return f"{_clang()} has no bpf target: the xdp back end needs one"
    if not os.path.exists("/usr/include/bpf/bpf_helpers.h"):
        return "libbpf headers missing (install libbpf-dev): the xdp back end needs them"
    try:
        with BpfObject(build_object("p4x_probe", _TRIVIAL)) as obj:
            ret, _ = obj.program("pass").test_run(bytes(64))
            if ret != 2:
                return f"a trivial XDP program returned {ret}, not XDP_PASS, in a test run"
    except BpfError as e:
        return f"cannot load a BPF program here ({e}): the xdp back end needs the bpf() syscall"
    return None


def _verifier_lines(log: str) -> list[str]:
    """The lines of the kernel's verifier log inside libbpf's message, else all of it."""
    lines = log.splitlines()
    begin = next((n for n, line in enumerate(lines) if "-- BEGIN PROG LOAD LOG --" in line), None)
    if begin is None:
        return [line for line in lines if line.strip()]
    end = next((n for n in range(begin, len(lines)) if "-- END PROG LOAD LOG --" in lines[n]),
               len(lines))
    return [line for line in lines[begin + 1:end] if line.strip()]


_SUMMARY = re.compile(r"^(processed \d+ insns|verification time|stack depth|"
                      r"max_states_per_insn|peak_states|mark_read)")


class BpfObject:
    """An object file opened and loaded into the kernel by libbpf."""

    def __init__(self, path: str):
        self._obj = None
        lib = _lib()
        err = ctypes.c_int(0)
        with _shim_lock:
            lib.p4x_log_reset()
            obj = lib.p4x_open_load(path.encode(), ctypes.byref(err))
            log = lib.p4x_log_text().decode(errors="replace")
        if not obj:
            raise self._load_error(path, err.value, log)
        self._obj = obj
        self._maps: dict[str, BpfMap] = {}

    @staticmethod
    def _load_error(path: str, rc: int, log: str) -> BpfError:
        failed = re.search(r"prog '([^']+)': (?:BPF program load failed|failed to load)", log)
        lines = _verifier_lines(log)
        tail = "\n".join(lines[-LOG_LINES:])
        if failed:
            meaningful = [line for line in lines if not _SUMMARY.match(line.strip())
                          and not line.startswith("libbpf:")]
            last = meaningful[-1].strip() if meaningful else _errno_text(rc)
            if any(JUMP_RANGE in line for line in meaningful):
                last = f"a jump past BPF's 16-bit range: {jump_range_hint()}"
            return BpfError(f"verifier refused program {failed.group(1)} "
                            f"({os.path.basename(path)}): {last}", log=tail)
        last = lines[-1].removeprefix("libbpf: ").strip() if lines else _errno_text(rc)
        return BpfError(f"libbpf cannot load {os.path.basename(path)}: {last}", log=tail)

    def _handle(self):
        if not self._obj:
            raise BpfError("the BPF object is closed")
        return self._obj

    def map(self, name: str) -> BpfMap:
        if name not in self._maps:
            shape = (ctypes.c_uint * 4)()
            fd = _lib().p4x_map(self._handle(), name.encode(), shape)
            if fd < 0:
                raise BpfError(f"no map {name} in the BPF object")
            self._maps[name] = BpfMap(fd, name, *shape[:3], percpu=shape[3] in PERCPU_MAP_TYPES)
        return self._maps[name]

    def program(self, name: str) -> BpfProgram:
        fd = _lib().p4x_program(self._handle(), name.encode())
        if fd < 0:
            raise BpfError(f"no program {name} in the BPF object")
        return BpfProgram(fd, name)

    def close(self):
        """Unload: the kernel frees maps and programs once nothing else (an attached
        interface, say) holds them."""
        if self._obj:
            _lib().p4x_close(self._obj)
            self._obj = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        with contextlib.suppress(Exception):
            self.close()


def _num_cpus() -> int:
    n = _lib().p4x_num_possible_cpus()
    if n <= 0:
        raise BpfError(f"cannot count the possible CPUs: {_errno_text(n)}")
    return n


class BpfMap:
    """One map of a loaded object: keys and values are raw bytes of the map's sizes."""

    def __init__(self, fd: int, name: str, key_size: int, value_size: int, max_entries: int,
                 percpu: bool):
        self.fd, self.name = fd, name
        self.key_size, self.value_size, self.max_entries = key_size, value_size, max_entries
        self.percpu = percpu

    def _key(self, key: bytes) -> bytes:
        if len(key) != self.key_size:
            raise BpfError(f"map {self.name}: key of {len(key)} bytes, "
                           f"it takes {self.key_size}")
        return bytes(key)

    def _slot(self) -> int:
        """Bytes of one CPU's value in a per-CPU map: the value rounded up to 8."""
        return (self.value_size + 7) // 8 * 8

    def update(self, key: bytes, value: bytes, flags: int = 0):
        if self.percpu:
            return self.update_percpu(key, [value] * _num_cpus())
        if len(value) != self.value_size:
            raise BpfError(f"map {self.name}: value of {len(value)} bytes, "
                           f"it takes {self.value_size}")
        self._update(key, bytes(value), flags)

    def _update(self, key: bytes, raw: bytes, flags: int):
        rc = _lib().p4x_map_update(self.fd, self._key(key), raw, flags)
        if rc < 0:
            raise BpfError(f"map {self.name}: update failed: {_errno_text(rc)}")

    def _lookup(self, key: bytes, size: int) -> bytes | None:
        out = ctypes.create_string_buffer(size)
        rc = _lib().p4x_map_lookup(self.fd, self._key(key), out)
        if rc == -2:    # ENOENT: no such key
            return None
        if rc < 0:
            raise BpfError(f"map {self.name}: lookup failed: {_errno_text(rc)}")
        return out.raw

    def lookup(self, key: bytes) -> bytes | None:
        if self.percpu:
            raise BpfError(f"map {self.name} is per-CPU: use lookup_percpu")
        return self._lookup(key, self.value_size)

    def lookup_percpu(self, key: bytes) -> list[bytes] | None:
        """One value per possible CPU (None when the key is absent)."""
        if not self.percpu:
            raise BpfError(f"map {self.name} is not per-CPU: use lookup")
        slot, cpus = self._slot(), _num_cpus()
        raw = self._lookup(key, slot * cpus)
        if raw is None:
            return None
        return [raw[n * slot:n * slot + self.value_size] for n in range(cpus)]

    def update_percpu(self, key: bytes, values: list[bytes], flags: int = 0):
        cpus, slot = _num_cpus(), self._slot()
        if not self.percpu or len(values) != cpus or any(len(v) != self.value_size
                                                         for v in values):
            raise BpfError(f"map {self.name}: update_percpu takes {cpus} values of "
                           f"{self.value_size} bytes on a per-CPU map")
        self._update(key, b"".join(bytes(v).ljust(slot, b"\0") for v in values), flags)

    def delete(self, key: bytes) -> bool:
        """True when the key was there."""
        rc = _lib().p4x_map_delete(self.fd, self._key(key))
        if rc == -2:
            return False
        if rc < 0:
            raise BpfError(f"map {self.name}: delete failed: {_errno_text(rc)}")
        return True


class BpfProgram:
    """One program of a loaded object (valid while the object is open)."""

    def __init__(self, fd: int, name: str):
        self.fd, self.name = fd, name

    def test_run(self, data: bytes, repeat: int = 1) -> tuple[int, bytes]:
        """Run the program on `data` with BPF_PROG_TEST_RUN: (its XDP return code, the
        packet after it, with any head grown or shrunk by bpf_xdp_adjust_head; the kernel
        leaves about 216 bytes of headroom). With `repeat` the runs share one buffer, so
        the packet returned is the last run's, after every earlier run's changes."""
        out = ctypes.create_string_buffer(len(data) + TEST_RUN_SLACK)
        out_size = ctypes.c_uint(len(out))
        retval = ctypes.c_uint(0)
        rc = _lib().p4x_test_run(self.fd, bytes(data), len(data), out, ctypes.byref(out_size),
                                 ctypes.byref(retval), repeat)
        if rc < 0:
            hint = f" (a frame needs {ETH_HLEN} bytes at least)" if len(data) < ETH_HLEN else ""
            raise BpfError(f"test run of {self.name} on {len(data)} bytes failed: "
                           f"{_errno_text(rc)}{hint}")
        return retval.value, out.raw[:out_size.value]

    def stats(self) -> tuple[int, int]:
        """(run_cnt, run_time_ns) the kernel keeps for the program; they grow only while
        statistics are on (run_time_stats)."""
        counts = {}
        with open(f"/proc/self/fdinfo/{self.fd}") as f:
            for line in f:
                field, _, value = line.partition(":")
                counts[field.strip()] = value.strip()
        return int(counts.get("run_cnt", 0)), int(counts.get("run_time_ns", 0))

    def attach(self, ifindex: int, mode: str = "drv"):
        """Attach to the interface's XDP hook in driver ("drv") or generic ("skb") mode,
        replacing whatever program is there."""
        if mode not in XDP_MODES:
            raise BpfError(f"XDP mode {mode!r} not supported (drv or skb)")
        rc = _lib().p4x_xdp_attach(ifindex, self.fd, XDP_MODES[mode])
        if rc < 0:
            raise BpfError(f"cannot attach {self.name} to ifindex {ifindex} in {mode} mode: "
                           f"{_errno_text(rc)}")


def detach_xdp(ifindex: int):
    """Remove any XDP program (driver or generic mode) from the interface."""
    rc = _lib().p4x_xdp_detach(ifindex)
    if rc < 0:
        raise BpfError(f"cannot detach XDP from ifindex {ifindex}: {_errno_text(rc)}")


@contextlib.contextmanager
def run_time_stats():
    """Keep the kernel's per-program run statistics (run_cnt, run_time_ns) on inside."""
    fd = _lib().p4x_enable_run_time_stats()
    if fd < 0:
        raise BpfError(f"cannot enable BPF run-time statistics: {_errno_text(fd)}")
    try:
        yield
    finally:
        os.close(fd)
