"""Test support for the native packet loop: the "wire" pipeline of native_wire.c (port a <->
port b, frames starting with 0xff to the CPU port), built and loaded through ctypes."""
import ctypes
import os

from p4switch.backend.c import build

WIRE_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native_wire.c")


class Wire:
    """One wire pipeline instance: pass (wire.fn, wire.ptr) to NativePorts.set_pipeline."""

    def __init__(self, a: int = 1, b: int = 2, cpu: int = 255, extra_flags=()):
        with open(WIRE_SOURCE) as f:
            path = build.build_shared("native_wire", {"native_wire.c": f.read()},
                                      extra_flags=tuple(extra_flags))
        self._lib = lib = build.load(path)
        lib.wire_new.restype, lib.wire_new.argtypes = ctypes.c_void_p, [ctypes.c_uint32] * 3
        lib.wire_free.restype, lib.wire_free.argtypes = None, [ctypes.c_void_p]
        lib.wire_frames.restype, lib.wire_frames.argtypes = ctypes.c_uint64, [ctypes.c_void_p]
        self.ptr = lib.wire_new(a, b, cpu)
        self.fn = ctypes.cast(lib.wire_process, ctypes.c_void_p).value

    def frames(self) -> int:
        """Frames the pipeline has processed."""
        return self._lib.wire_frames(self.ptr)

    def free(self) -> None:
        """Free the instance; the loop must no longer use it (set_pipeline(None, None))."""
        if self.ptr:
            self._lib.wire_free(self.ptr)
            self.ptr = None
