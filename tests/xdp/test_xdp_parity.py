"""Three targets, one truth, for the XDP back end: every STF program of the repository through
the Python back end (the reference) and the pipeline compiled to eBPF and run in the kernel
(BPF_PROG_TEST_RUN), packet by packet (port, bytes, order), then counters; plus seeded
differential fuzzing. (tests/bmv2 holds the reference to real bmv2 on the same corpus, and
tests/native/test_parity_stf.py the C back end to it.)

Programs the XDP back end refuses are listed in REFUSED with the one-line error it gives,
checked exactly, so the list cannot silently grow."""
import pathlib
import sys

import pytest

import p4switch
from p4switch import stf
from p4switch.backend.xdp import loader
from p4switch.backend.xdp.emit import XdpUnsupported
from p4switch.targets import BackendError

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "native")]
from parity import fuzz_commands, run_commands, stable_seed  # noqa: E402
from skip_or_fail import skip_or_fail  # noqa: E402

CORPUS = REPO / "tests" / "p4"
STF_FILES = sorted(CORPUS.glob("*.stf"))

# What the XDP back end refuses, and why (emit.py's docstring): what one XDP program cannot
# send, what stays in user space, and what the verifier cannot bound.
REFUSED = {
    "action_selector": "an action profile",
    "checksum_payload": "a checksum over the payload",
    "clone": "clone",
    "clone_field_list": "clone",
    "digest": "digest",
    "direct_counters": "a direct counter",
    "direct_meter": "a direct meter",
    "field_list_named_constants": "clone",
    "ipv6_lpm": "table Ing.ipv6_lpm's key hdr.ipv6.dstAddr of 128 bits",
    "log_composite": "extracting a varbit field",
    "meters": "a meter",
    "recirculate": "recirculate",
    "resubmit": "resubmit",
    "truncate": "truncate",
    "tuples": "log_msg",
    "value_set": "a parser value set",
    "varbit": "extracting a varbit field",
    "varbit_extract_size": "extracting a varbit field",
    "wide_arith": "a value wider than 64 bits",
    "wide_misc": "extracting a varbit field",
    "wide_select": "a value wider than 64 bits",
    "wide_state": "a register of 256-bit cells",
}
# Refused per packet: the program counts the packet instead of sending it (p4x_status).
REFUSED_AT_RUN = {}
# Refused by the control plane: what a devmap cannot send (XdpReplication).
REFUSED_WRITE = {"multicast": "multicast group 1: port 3 more than once is not supported by the "
                              "xdp back end (a devmap sends one copy per port)"}


@pytest.fixture(scope="module", autouse=True)
def toolchain():
    skip_or_fail(loader.toolchain_missing())


def _compile(stf_path):
    return p4switch.compile_file(stf_path.with_suffix(".p4"), include_dirs=[str(CORPUS)])


@pytest.mark.parametrize("stf_path", STF_FILES, ids=lambda p: p.stem)
def test_stf_program_identical_on_python_and_xdp(stf_path):
    program = _compile(stf_path)
    commands = stf.parse_stf(stf_path.read_text(), str(stf_path))
    if stf_path.stem in REFUSED:
        with pytest.raises(XdpUnsupported) as refusal:
            run_commands(program, commands, stf_path.name, backend="xdp")
        assert str(refusal.value).endswith(
            f"{REFUSED[stf_path.stem]} is not supported by the xdp back end")
        return
    if stf_path.stem in REFUSED_WRITE:
        with pytest.raises(stf.StfError) as refusal:
            run_commands(program, commands, stf_path.name, backend="xdp")
        assert str(refusal.value).endswith(REFUSED_WRITE[stf_path.stem])
        return
    if stf_path.stem in REFUSED_AT_RUN:      # the packet's outcome is the error, not frames
        problems, _ = run_commands(program, commands, stf_path.name, backend="xdp")
        error = f"('XdpUnsupported', '{REFUSED_AT_RUN[stf_path.stem]} is not supported by " \
                "the xdp back end')"
        assert problems and all(p.endswith(error) for p in problems), problems
        return
    problems, packets = run_commands(program, commands, stf_path.name, backend="xdp")
    assert packets > 0
    assert problems == []


@pytest.mark.parametrize("stf_path", [p for p in STF_FILES if p.stem not in REFUSED
                                      and p.stem not in REFUSED_AT_RUN
                                      and p.stem not in REFUSED_WRITE], ids=lambda p: p.stem)
def test_fuzzed_packets_identical_on_python_and_xdp(stf_path):
    """The STF's tables, then 60 mutated packets (truncated, extended, flipped, random)."""
    program = _compile(stf_path)
    commands = stf.parse_stf(stf_path.read_text(), str(stf_path))
    fuzzed = fuzz_commands(commands, stable_seed("xdp/" + stf_path.stem), 60)
    problems, packets = run_commands(program, fuzzed, stf_path.name, backend="xdp")
    assert packets == 60
    assert problems == []


def test_every_refusal_is_one_named_line():
    """What the XDP back end cannot run, it says, with the construct and no traceback."""
    for stem, what in REFUSED.items():
        with pytest.raises(BackendError) as refusal:
            p4switch.Switch(_compile(CORPUS / f"{stem}.stf"), backend="xdp")
        text = str(refusal.value)
        assert "\n" not in text and text.endswith(f"{what} is not supported by the xdp back end")


@pytest.mark.parametrize("name", ["star_k1", "ecmp"])
def test_p4src_main_identical_on_python_and_xdp(name):
    """p4src/main.p4 itself (registers under the packet lock, multicast of results by devmap
    replicas, flowlet hashes) on the STFs of tests/p4src, then fuzzed."""
    program = p4switch.compile_file(REPO / "p4src" / "main.p4", defines={"AGG_K": "1"})
    path = REPO / "tests" / "p4src" / f"{name}.stf"
    commands = stf.parse_stf(path.read_text(), str(path))
    problems, packets = run_commands(program, commands, path.name, backend="xdp")
    assert packets > 0 and problems == []
    fuzzed = fuzz_commands(commands, stable_seed("xdp/p4src/" + name), 60)
    problems, packets = run_commands(program, fuzzed, path.name, backend="xdp")
    assert packets == 60 and problems == []


LONG_PARSE = """
#include <core.p4>
#include <v1model.p4>
header byte_t { bit<8> v; }
struct headers_t { byte_t[100] bytes; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.bytes.next); transition select(hdr.bytes.last.v) {
        0: accept; default: start; } }
}
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.bytes); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_what_the_program_cannot_parse_is_refused_per_packet(tmp_path):
    """A parse within the bound is sent as the reference sends it; one past 64 states is
    counted by the program and raised, with its reason, for that packet only."""
    source = tmp_path / "long_parse.p4"
    source.write_text(LONG_PARSE)
    program = p4switch.compile_file(source)
    xdp = p4switch.Switch(program, backend="xdp")
    python = p4switch.Switch(program, backend="python")
    short = bytes([1] * 10 + [0]) + b"payload"
    assert xdp.process_packet(0, short) == python.process_packet(0, short) == [(1, short)]
    with pytest.raises(XdpUnsupported) as refusal:
        xdp.process_packet(0, bytes([1] * 80 + [0]))
    assert str(refusal.value) == "a parse passing more than 64 states is not supported by " \
                                 "the xdp back end"
    assert xdp.process_packet(0, short) == [(1, short)]


def _agg_stf_k256(tmp_path) -> pathlib.Path:
    sys.path.insert(0, str(REPO / "tests" / "tools" / "bench"))
    import agg_stf
    path = tmp_path / "agg_k256.stf"
    with open(path, "w") as out:
        agg_stf.write_stf(out, k=256, workers=4, window=8, chunks=32)
    return path


def test_p4src_main_at_k256_identical_on_python_and_xdp(tmp_path):
    """p4src/main.p4 at the built-in switch's default K = 256 (two jobs' 32 chunks from four
    workers, 256 values each, every result multicast to the four) sends what the reference
    sends."""
    skip_or_fail(loader.toolchain_missing())
    program = p4switch.compile_file(REPO / "p4src" / "main.p4", defines={"AGG_K": "256"})
    path = _agg_stf_k256(tmp_path)
    problems, packets = run_commands(program, stf.parse_stf(path.read_text(), str(path)),
                                     path.name, backend="xdp")
    assert packets == 2 * 32 * 4 and problems == []
