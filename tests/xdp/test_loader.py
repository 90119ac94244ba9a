"""p4switch/backend/xdp/loader.py on real programs: clang builds them, the kernel verifies
and runs them (BPF_PROG_TEST_RUN), and an emulation test forwards frames between veths with
an attached XDP program and a devmap."""

import os
import socket
import struct
import subprocess
import sys

import pytest

from p4switch.backend.xdp import loader
from p4switch.backend.xdp.loader import BpfError, BpfObject, build_object
from skip_or_fail import skip_or_fail

MIN_FRAME = 20
XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT = range(5)

PROGRAM = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4);
         __type(key, __u32); __type(value, __u32); } addend SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, 1);
         __type(key, __u32); __type(value, __u64); } seen SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16);
         __type(key, __u32); __type(value, __u64); } scratch SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_DEVMAP); __uint(max_entries, 1);
         __type(key, __u32); __type(value, __u32); } ports SEC(".maps");

static void count(void)
{
    __u32 zero = 0;
    __u64 *c = bpf_map_lookup_elem(&seen, &zero);
    if (c)
        *c += 1;
}

SEC("xdp") int count_and_add(struct xdp_md *ctx)
{
    count();
    __u8 *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    if (data + MIN_FRAME > end)
        return XDP_DROP;
    __u32 zero = 0;
    __u32 *add = bpf_map_lookup_elem(&addend, &zero);
    if (!add)
        return XDP_ABORTED;
    data[0] += *add;
    return XDP_TX;
}

SEC("xdp") int grow_head(struct xdp_md *ctx)
{
    if (bpf_xdp_adjust_head(ctx, -4))
        return XDP_ABORTED;
    __u8 *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
    if (data + 4 > end)
        return XDP_ABORTED;
    data[0] = 0xde; data[1] = 0xad; data[2] = 0xbe; data[3] = 0xef;
    return XDP_TX;
}

SEC("xdp") int forward(struct xdp_md *ctx)
{
    count();
    return bpf_redirect_map(&ports, 0, XDP_DROP);
}

SEC("xdp") int pass(struct xdp_md *ctx) { return XDP_PASS; }

char _license[] SEC("license") = "GPL";
"""

UNCHECKED = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("xdp") int reads_unchecked(struct xdp_md *ctx)
{
    __u8 *data = (void *)(long)ctx->data;
    return data[0] ? XDP_PASS : XDP_DROP;     /* no bounds check: the verifier says no */
}
char _license[] SEC("license") = "GPL";
"""


@pytest.fixture(scope="module")
def obj():
    skip_or_fail(loader.toolchain_missing())
    with BpfObject(build_object("test_loader", PROGRAM,
                                defines=(f"MIN_FRAME={MIN_FRAME}",))) as loaded:
        yield loaded


def u32(n):
    return struct.pack("<I", n)


def seen_total(obj):
    return sum(struct.unpack("<Q", v)[0] for v in obj.map("seen").lookup_percpu(u32(0)))


def test_test_run_returns_exact_bytes_and_counts_per_cpu(obj):
    obj.map("addend").update(u32(0), u32(7))
    obj.map("seen").update_percpu(u32(0), [bytes(8)] * len(obj.map("seen")
                                                          .lookup_percpu(u32(0))))
    prog = obj.program("count_and_add")
    frame = bytes(range(60))
    assert prog.test_run(frame) == (XDP_TX, bytes([7]) + frame[1:])
    assert prog.test_run(bytes([250]) + frame[1:]) == (XDP_TX, bytes([1]) + frame[1:])
    short = bytes(range(MIN_FRAME - 1))
    assert prog.test_run(short) == (XDP_DROP, short)
    assert prog.test_run(frame, repeat=5)[0] == XDP_TX
    assert seen_total(obj) == 3 + 5


def test_percpu_map_shape(obj):
    seen = obj.map("seen")
    assert seen.percpu and (seen.key_size, seen.value_size, seen.max_entries) == (4, 8, 1)
    values = [struct.pack("<Q", 100 + n) for n in range(len(seen.lookup_percpu(u32(0))))]
    seen.update_percpu(u32(0), values)
    assert seen.lookup_percpu(u32(0)) == values
    assert len(values) == loader._num_cpus()


def test_update_lookup_delete_round_trip(obj):
    scratch = obj.map("scratch")
    assert not scratch.percpu and scratch.max_entries == 16
    assert scratch.lookup(u32(5)) is None
    scratch.update(u32(5), struct.pack("<Q", 0x1122334455667788))
    assert scratch.lookup(u32(5)) == struct.pack("<Q", 0x1122334455667788)
    assert scratch.delete(u32(5)) is True
    assert scratch.delete(u32(5)) is False
    assert scratch.lookup(u32(5)) is None
    with pytest.raises(BpfError, match="index|exists|out of range|Argument list|too big"):
        obj.map("addend").update(u32(9), u32(1))   # an array of 4 has no key 9
    with pytest.raises(BpfError, match="key of 2 bytes"):
        scratch.lookup(b"ab")


def test_adjust_head_grows_the_frame(obj):
    frame = bytes(range(40))
    assert obj.program("grow_head").test_run(frame) == (XDP_TX, b"\xde\xad\xbe\xef" + frame)


def test_repeated_runs_share_one_buffer(obj):
    obj.map("addend").update(u32(0), u32(7))
    frame = bytes(range(40))
    assert obj.program("count_and_add").test_run(frame, repeat=3) == \
        (XDP_TX, bytes([21]) + frame[1:])
    assert obj.program("grow_head").test_run(frame, repeat=2) == \
        (XDP_TX, b"\xde\xad\xbe\xef" * 2 + frame)


def test_unknown_names_are_one_line_errors(obj):
    with pytest.raises(BpfError, match="no map nothing"):
        obj.map("nothing")
    with pytest.raises(BpfError, match="no program nothing"):
        obj.program("nothing")
    with pytest.raises(BpfError, match="on 10 bytes failed: .*needs 14 bytes at least"):
        obj.program("pass").test_run(bytes(10))


def test_verifier_refusal_names_the_program():
    skip_or_fail(loader.toolchain_missing())
    with pytest.raises(BpfError) as refused:
        BpfObject(build_object("test_unchecked", UNCHECKED))
    message = str(refused.value)
    assert "\n" not in message
    assert "verifier refused program reads_unchecked" in message
    assert "invalid access to packet" in refused.value.log
    assert 0 < len(refused.value.log.splitlines()) <= loader.LOG_LINES


def test_compiler_error_gives_the_first_error_line():
    skip_or_fail(loader.toolchain_missing())
    broken = PROGRAM.replace("count();\n    __u8", "count()\n    __u8", 1)
    with pytest.raises(BpfError) as failed:
        build_object("test_broken", broken)
    message = str(failed.value)
    assert "\n" not in message and "error:" in message and "test_broken.c" in message
    assert "expected ';'" in message


def test_build_object_is_cached():
    skip_or_fail(loader.toolchain_missing())
    first = build_object("test_loader", PROGRAM, defines=(f"MIN_FRAME={MIN_FRAME}",))
    again = build_object("test_loader", PROGRAM, defines=(f"MIN_FRAME={MIN_FRAME}",))
    other = build_object("test_loader", PROGRAM, defines=(f"MIN_FRAME={MIN_FRAME + 1}",))
    assert first == again != other and os.path.exists(other)


def stats_sysctl():
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        return f.read().strip()


def test_stats_count_test_runs_while_enabled(obj):
    prog = obj.program("pass")
    before = prog.stats()
    prog.test_run(bytes(64))
    if stats_sysctl() == "0":              # statistics off (the sysctl may keep them on)
        assert prog.stats() == before
    before = prog.stats()
    with loader.run_time_stats():
        prog.test_run(bytes(64))
        prog.test_run(bytes(64), repeat=4)
        runs, run_time = prog.stats()
    assert runs == before[0] + 5
    assert run_time > before[1]


def test_attach_rejects_unknown_mode(obj):
    with pytest.raises(BpfError, match="XDP mode 'hw' not supported"):
        obj.program("pass").attach(1, mode="hw")


# The emulation test: ns A's frames reach the root-namespace end of A's veth, where the
# `forward` program redirects them through the devmap to B's veth, whose far end (in ns B,
# GRO on so veth accepts redirected frames) delivers them to a UDP socket. Replies would need
# the way back, which nothing forwards: the test counts one direction.

RECEIVER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.213.0.2", 9000)); s.settimeout(3)
print("ready", flush=True)
got = 0
try:
    while got < int(sys.argv[1]):
        s.recv(2048); got += 1
except socket.timeout:
    pass
print(got, flush=True)
"""


def sh(*args):
    subprocess.run(args, check=True, capture_output=True, text=True)


@pytest.fixture
def two_hosts():
    tag = f"{os.getpid() % 100000}"
    ns_a, ns_b, end_a, end_b = f"p4xa{tag}", f"p4xb{tag}", f"p4xa{tag}", f"p4xb{tag}"
    try:
        for ns, end, address in ((ns_a, end_a, "10.213.0.1"), (ns_b, end_b, "10.213.0.2")):
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", end, "type", "veth", "peer", "name", "h0", "netns", ns)
            sh("ip", "link", "set", end, "up")
            sh("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "h0")
            sh("ip", "-n", ns, "link", "set", "h0", "up")
        mac_b = subprocess.run(["ip", "-n", ns_b, "-br", "link", "show", "h0"], check=True,
                               capture_output=True, text=True).stdout.split()[2]
        sh("ip", "-n", ns_a, "neigh", "add", "10.213.0.2", "lladdr", mac_b, "dev", "h0")
        sh("ip", "netns", "exec", ns_b, "ethtool", "-K", "h0", "gro", "on")
        # A redirected frame loses the skb's "checksum left to the NIC" mark: A fills it in.
        sh("ip", "netns", "exec", ns_a, "ethtool", "-K", "h0", "tx", "off")
        yield ns_a, ns_b, socket.if_nametoindex(end_a), socket.if_nametoindex(end_b)
    finally:
        for ns, end in ((ns_a, end_a), (ns_b, end_b)):
            subprocess.run(["ip", "link", "del", end], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.mark.emulation
def test_attached_program_forwards_frames_between_veths(obj, two_hosts):
    ns_a, ns_b, port_a, port_b = two_hosts
    frames = 50
    obj.map("ports").update(u32(0), u32(port_b))
    obj.map("seen").update_percpu(u32(0), [bytes(8)] * loader._num_cpus())
    prog = obj.program("forward")
    receiver = subprocess.Popen(["ip", "netns", "exec", ns_b, sys.executable, "-c", RECEIVER,
                                 str(frames)], stdout=subprocess.PIPE, text=True)
    try:
        assert receiver.stdout.readline().strip() == "ready"
        prog.attach(port_a, mode="drv")
        sender = ("import socket, time\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                  f"for n in range({frames}):\n"
                  "    s.sendto(b'frame %d' % n, ('10.213.0.2', 9000)); time.sleep(0.001)\n")
        sh("ip", "netns", "exec", ns_a, sys.executable, "-c", sender)
        received = int(receiver.communicate(timeout=10)[0].strip())
    finally:
        loader.detach_xdp(port_a)
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
    assert received == frames
    assert seen_total(obj) >= frames      # plus whatever else ns A sent (IPv6 chatter)


# How libbpf reports the verifier's refusal of a program whose jumps, once the kernel patched
# it, are past v3's 16-bit range (the words of Linux 6.18 on p4src/main.p4 at K = 256 built
# by clang 14, before the stages got shorter).
JUMP_RANGE_LOG = """libbpf: prog 'p4x_pipeline': BPF program load failed: -EINVAL
libbpf: prog 'p4x_pipeline': -- BEGIN PROG LOAD LOG --
Func#16 ('p4n_stage_deparser') is safe for any args that match its prototype
insn 19834 cannot be patched due to 16-bit range
processed 337077 insns (limit 1000000) max_states_per_insn 5 total_states 13648
-- END PROG LOAD LOG --
libbpf: prog 'p4x_pipeline': failed to load: -EINVAL
"""


@pytest.mark.parametrize("cpu", ["v3", "v4"])
def test_a_jump_past_16_bits_says_what_would_build_it(monkeypatch, cpu):
    monkeypatch.setattr(loader, "bpf_cpu", lambda: cpu)
    error = BpfObject._load_error("/cache/pipeline-0123.bpf.o", -22, JUMP_RANGE_LOG)
    message = str(error)
    assert "\n" not in message
    assert message.startswith("verifier refused program p4x_pipeline (pipeline-0123.bpf.o): "
                              "a jump past BPF's 16-bit range: ")
    if cpu == "v3":
        assert "clang 18 or later on Linux 6.6 or later builds longer jumps (-mcpu=v4; here: " \
               in message and message.endswith("(p4src: a smaller AGG_K)")
    else:
        assert message.endswith("the program is too large for the xdp back end")
    assert "cannot be patched due to 16-bit range" in error.log


SIGNED_DIVISION = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("xdp") int signed_div(struct xdp_md *ctx)
{
    __s8 *data = (void *)(long)ctx->data;
    if ((void *)(data + 2) > (void *)(long)ctx->data_end || data[1] == 0)
        return XDP_ABORTED;
    __s64 a = data[0], b = data[1];
    return a / b == -3 ? XDP_PASS : XDP_DROP;          /* v4's sdiv; v3 has none */
}
char _license[] SEC("license") = "GPL";
"""


def test_programs_are_built_for_bpf_v4_where_clang_and_the_kernel_have_it():
    """setup.sh installs a clang of 18 or later where apt has one, as on CI's machine: a
    signed division (an instruction v4 added) builds, loads and divides as C does."""
    skip_or_fail(loader.toolchain_missing())
    clang = loader._clang_id(loader._clang())
    skip_or_fail(None if loader.bpf_cpu() == "v4" else
                 f"BPF v4 needs clang 18+ and Linux 6.6+ (here: {clang}, {os.uname().release})")
    with BpfObject(build_object("test_signed_div", SIGNED_DIVISION)) as obj:
        program = obj.program("signed_div")
        assert program.test_run(bytes([0xF9, 2]) + bytes(12))[0] == XDP_PASS     # -7 / 2
        assert program.test_run(bytes([7, 2]) + bytes(12))[0] == XDP_DROP        # 7 / 2
        assert program.test_run(bytes([0xF9, 0xFE]) + bytes(12))[0] == XDP_DROP  # -7 / -2
