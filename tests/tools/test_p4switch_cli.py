"""`python -m p4switch compile` and `bench`, and command-line error handling."""

import re

import pytest

from p4.config.v1 import p4info_pb2

from p4switch import p4info
from p4switch_cli_helpers import CORPUS, run_p4switch

IPV4 = CORPUS / "ipv4_lpm.p4"


def _expected_id(prefix, name):
    return (prefix << 24) | (p4info.jenkins_one_at_a_time(name) & 0xFFFFFF)


def test_compile_writes_config_and_p4info(tmp_path):
    out, info_file = tmp_path / "out.json", tmp_path / "out.p4info.txtpb"
    result = run_p4switch("compile", IPV4, "-o", out, "--p4runtime-files", info_file)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert out.stat().st_size > 0
    info = p4info.from_text(info_file.read_text())
    assert info.pkg_info.arch == "v1model"
    tables = {t.preamble.name: t for t in info.tables}
    actions = {a.preamble.name: a for a in info.actions}
    assert set(tables) == {"Ing.ipv4_lpm"}
    assert set(actions) == {"Ing.ipv4_forward", "Ing.drop", "NoAction"}
    table = tables["Ing.ipv4_lpm"]
    assert table.preamble.id == _expected_id(p4info_pb2.P4Ids.TABLE, "Ing.ipv4_lpm")
    assert table.preamble.alias == "ipv4_lpm"
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in table.match_fields] == [
        (1, "hdr.ipv4.dstAddr", 32, p4info_pb2.MatchField.LPM)]
    assert table.size == 1024
    assert actions["NoAction"].preamble.id == 21257015
    forward = actions["Ing.ipv4_forward"]
    assert forward.preamble.id == _expected_id(p4info_pb2.P4Ids.ACTION, "Ing.ipv4_forward")
    assert [(p.id, p.name, p.bitwidth) for p in forward.params] == [(1, "dstAddr", 48), (2, "port", 9)]
    assert sorted(r.id for r in table.action_refs) == sorted(a.preamble.id for a in actions.values())


def test_compile_is_stable(tmp_path):
    texts = []
    for run in range(2):
        info_file = tmp_path / f"p4info{run}.txtpb"
        result = run_p4switch("compile", CORPUS / "match_kinds.p4", "--p4runtime-files", info_file)
        assert result.returncode == 0, result.stderr
        texts.append(info_file.read_text())
    assert texts[0] == texts[1]
    info = p4info.from_text(texts[0])
    assert len(info.tables) == 6
    for table in info.tables:
        assert table.preamble.id == _expected_id(p4info_pb2.P4Ids.TABLE, table.preamble.name)


def test_compile_p4info_of_externs(tmp_path):
    info_file = tmp_path / "counters.txtpb"
    assert run_p4switch("compile", CORPUS / "counters.p4", "--p4runtime-files", info_file).returncode == 0
    info = p4info.from_text(info_file.read_text())
    counters = {c.preamble.name: c for c in info.counters}
    assert counters["Ing.hits"].spec.unit == p4info_pb2.CounterSpec.BOTH
    assert counters["Ing.hits"].size == 4
    assert counters["Ing.seen"].spec.unit == p4info_pb2.CounterSpec.PACKETS
    digest_file = tmp_path / "digest.txtpb"
    assert run_p4switch("compile", CORPUS / "digest.p4", "--p4runtime-files", digest_file).returncode == 0
    info = p4info.from_text(digest_file.read_text())
    (digest,) = info.digests
    assert digest.preamble.name == "learn_t"
    members = info.type_info.structs["learn_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [("src", 48), ("port", 9)]


def _compiled_p4info(tmp_path, name):
    info_file = tmp_path / f"{name}.txtpb"
    result = run_p4switch("compile", CORPUS / f"{name}.p4", "--p4runtime-files", info_file)
    assert result.returncode == 0, result.stderr
    return p4info.from_text(info_file.read_text())


def test_compile_p4info_direct_counter_and_const_tables(tmp_path):
    info = _compiled_p4info(tmp_path, "direct_counters")
    (table,) = info.tables
    (counter,) = info.direct_counters
    assert counter.preamble.name == "Ing.t_hits"
    assert counter.spec.unit == p4info_pb2.CounterSpec.BOTH
    assert counter.direct_table_id == table.preamble.id
    assert list(table.direct_resource_ids) == [counter.preamble.id]
    info = _compiled_p4info(tmp_path, "const_entries")
    tables = {t.preamble.name: t for t in info.tables}
    actions = {a.preamble.name: a.preamble.id for a in info.actions}
    assert tables["Ing.classify"].is_const_table
    assert tables["Ing.fixed_default"].const_default_action_id == actions["Ing.set2"]
    scopes = {r.id: r.scope for r in tables["Ing.classify"].action_refs}
    assert scopes == {actions["Ing.set1"]: p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
                      actions["NoAction"]: p4info_pb2.ActionRef.DEFAULT_ONLY}


def test_compile_p4info_meter_register_and_controller_headers(tmp_path):
    info = _compiled_p4info(tmp_path, "meters")
    (meter,) = info.meters
    assert (meter.preamble.name, meter.spec.unit, meter.size) == ("Ing.m", p4info_pb2.MeterSpec.PACKETS, 2)
    assert meter.preamble.id >> 24 == p4info_pb2.P4Ids.METER
    info = _compiled_p4info(tmp_path, "registers")
    (register,) = info.registers
    assert (register.preamble.name, register.size) == ("Ing.acc", 8)
    assert register.type_spec.bitstring.bit.bitwidth == 32
    program = tmp_path / "cpu.p4"
    program.write_text((CORPUS / "functions.p4").read_text().replace("header h_t {", """
@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    @id(5) bit<7> reason;
    bit<16> extra;
}

header h_t {""").replace("struct headers_t { h_t h; }", "struct headers_t { packet_in_t pin; h_t h; }"))
    info_file = tmp_path / "cpu.txtpb"
    result = run_p4switch("compile", program, "--p4runtime-files", info_file)
    assert result.returncode == 0, result.stderr
    (header,) = p4info.from_text(info_file.read_text()).controller_packet_metadata
    assert header.preamble.name == "packet_in"
    assert header.preamble.id == _expected_id(p4info_pb2.P4Ids.CONTROLLER_HEADER, "packet_in")
    assert [(m.id, m.name, m.bitwidth) for m in header.metadata] == [
        (1, "ingress_port", 9), (5, "reason", 7), (2, "extra", 16)]


VALUE_SET_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<16> t; bit<8> r; }
struct pair_t { bit<8> a; @match(ternary) bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) types;
    value_set<pair_t>(8) pairs;
    state start { pkt.extract(hdr.h); transition select(hdr.h.t) { types: a; default: accept; } }
    state a { transition select(hdr.h.r, hdr.h.r) { pairs: accept; default: accept; } }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
"""


def test_compile_p4info_value_sets(tmp_path):
    program = tmp_path / "value_sets.p4"
    program.write_text(VALUE_SET_PROGRAM)
    info_file = tmp_path / "value_sets.txtpb"
    result = run_p4switch("compile", program, "--p4runtime-files", info_file)
    assert result.returncode == 0, result.stderr
    sets = {v.preamble.name: v for v in p4info.from_text(info_file.read_text()).value_sets}
    assert set(sets) == {"P.types", "P.pairs"}
    assert sets["P.types"].preamble.id == _expected_id(p4info_pb2.P4Ids.VALUE_SET, "P.types")
    assert sets["P.types"].size == 4
    assert [(m.id, m.bitwidth, m.match_type) for m in sets["P.types"].match] == [
        (1, 16, p4info_pb2.MatchField.EXACT)]
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in sets["P.pairs"].match] == [
        (1, "a", 8, p4info_pb2.MatchField.EXACT), (2, "b", 8, p4info_pb2.MatchField.TERNARY)]


def test_compile_defines_reach_the_program(tmp_path):
    program = tmp_path / "defined.p4"
    program.write_text((CORPUS / "functions.p4").read_text().replace(
        "sm.egress_spec = 1;", "sm.egress_spec = OUT_PORT;"))
    stf_file = tmp_path / "defined.stf"
    stf_file.write_text("packet 0 03 09 00\nexpect 6 09 03 09$\n")
    result = run_p4switch("stf", program, stf_file, "-D", "OUT_PORT=6")
    assert result.returncode == 0, result.stderr
    missing = run_p4switch("compile", program)
    assert missing.returncode == 1


def test_compile_error_is_file_line_col(tmp_path):
    program = tmp_path / "broken.p4"
    program.write_text("#include <core.p4>\n#include <v1model.p4>\n\nheader h_t { bit<8> a }\n")
    result = run_p4switch("compile", program, "-o", tmp_path / "x.json")
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert re.match(rf"^{re.escape(str(program))}:4:\d+: \S", line), line
    assert not (tmp_path / "x.json").exists()


def test_compile_p4src_main_with_the_v1model_version_it_defines(tmp_path):
    """p4src/main.p4 uses register<T, I> and counter<I>: it chooses V1MODEL_VERSION 20200408
    itself, as p4c's v1model.p4 needs, and compiles with no -D."""
    main_p4 = CORPUS.parent.parent / "p4src" / "main.p4"
    result = run_p4switch("compile", main_p4, "-o", tmp_path / "main.json")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "main.json").stat().st_size > 0


def test_compile_refuses_register_with_an_index_type_at_the_default_v1model_version(tmp_path):
    program = tmp_path / "reg.p4"
    program.write_text((CORPUS / "registers.p4").read_text().replace(
        "#define V1MODEL_VERSION 20200408\n", ""))
    result = run_p4switch("compile", program, "-o", tmp_path / "reg.json")
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"{program}:21:5: register expects 1 type arguments, got 2; "), line
    assert "V1MODEL_VERSION 20200408" in line and "(this program has 20180101)" in line
    assert not (tmp_path / "reg.json").exists()
    result = run_p4switch("compile", program, "-D", "V1MODEL_VERSION=20200408",
                          "-o", tmp_path / "reg.json")
    assert result.returncode == 0, result.stderr


def test_conflicting_ids_are_a_compile_error(tmp_path):
    program = tmp_path / "ids.p4"
    program.write_text((CORPUS / "action_run.p4").read_text().replace(
        "    action a1() { }\n    action a2() { }",
        "    @id(7) action a1() { }\n    @id(7) action a2() { }"))
    result = run_p4switch("compile", program, "--p4runtime-files", tmp_path / "ids.txtpb")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"{program}:22:5: @id(0x7) of Ing.a2 is used twice"]


def test_usage_errors_exit_2_with_one_line():
    for args in ([], ["compile"], ["frobnicate"], ["bench", "a.p4"]):
        result = run_p4switch(*args)
        assert result.returncode == 2, args
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr


def test_missing_program_exits_2(tmp_path):
    result = run_p4switch("compile", tmp_path / "none.p4")
    assert result.returncode == 2
    assert result.stderr.strip() == f"p4switch: error: no such file: {tmp_path / 'none.p4'}"


def test_bench_output_format():
    result = run_p4switch("bench", IPV4, CORPUS / "ipv4_lpm.stf", "--count", "60")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[1] == "packets: 60"
    # 6 packets replayed 10 times, 2 of them forwarded each round
    assert lines[2] == "packets out: 20"
    assert re.match(r"^pps: \d+$", lines[-2])
    assert re.match(r"^backend: (c|python)$", lines[-1])


@pytest.mark.parametrize("backend", ["c", "python"])
def test_bench_backends_give_the_same_packets_out(backend):
    result = run_p4switch("bench", IPV4, CORPUS / "ipv4_lpm.stf", "--count", "60",
                          "--backend", backend)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[2] == "packets out: 20"
    assert lines[-1] == f"backend: {backend}"


def test_bench_applies_multicast_commands():
    result = run_p4switch("bench", CORPUS / "multicast.p4", CORPUS / "multicast.stf", "--count", "30")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    # per round of 3 packets: group 1 makes 4 copies, group 2 one, unicast one
    assert lines[1:3] == ["packets: 30", "packets out: 60"]
    assert re.match(r"^pps: \d+$", lines[-2])


def test_bench_rejects_a_zero_count():
    result = run_p4switch("bench", IPV4, CORPUS / "ipv4_lpm.stf", "--count", "0")
    assert result.returncode == 2
    assert result.stderr.strip() == "p4switch: error: --count must be at least 1"
