"""Whole programs through the front end: parse, type-check, elaborate, and check the result."""

import os

import pytest

from p4switch.frontend import ast as A
from p4switch.frontend import CompileError, load, load_source
from p4switch.frontend import types as T
from p4switch.frontend.ast import iter_nodes
from p4switch.frontend.ast_expressions import string_argument

HERE = os.path.dirname(os.path.abspath(__file__))
# Holds empty_v1switch.p4: a do-nothing `main` for programs that only declare things.
INCLUDE_DIR = os.path.join(HERE, "include")


def program_path(name):
    return os.path.join(HERE, "programs", name)


def nodes_of(program, cls):
    return [n for d in program.declarations for n in iter_nodes(d) if isinstance(n, cls)]


def find_decl(program, name):
    decl = program.find(name)
    assert decl is not None, name
    return decl


def local(block_decl, name):
    return next(d for d in block_decl.locals if getattr(d, "name", None) == name)


def test_ipv4_forward_pipeline():
    program = load(program_path("ipv4_forward.p4"))
    pipe = program.pipeline
    assert pipe.package == "V1Switch"
    assert [s for s in pipe.slots] == ["p", "vr", "ig", "eg", "ck", "dep"]
    assert pipe.parser.name == "MyParser" and pipe.ingress.name == "MyIngress"
    assert pipe.deparser.decl is find_decl(program, "MyDeparser")
    assert str(pipe.headers_type) == "headers" and str(pipe.metadata_type) == "metadata"
    table = pipe.table("MyIngress.ipv4_lpm")
    assert [(k.name, k.match_kind, k.bitwidth) for k in table.keys] == [("hdr.ipv4.dstAddr", "lpm", 32)]
    assert [a.action.name for a in table.actions] == ["MyIngress.ipv4_forward", "MyIngress.drop", "NoAction"]
    assert table.default_action.name == "MyIngress.drop" and table.default_args == []
    assert table.size == 1024
    forward = pipe.action("MyIngress.ipv4_forward")
    assert [(p.name, p.bitwidth) for p in forward.params] == [("dstAddr", 48), ("port", 9)]
    assert pipe.action("NoAction").block is None


def test_literal_widths_and_resolution():
    program = load(program_path("ipv4_forward.p4"))
    ingress = find_decl(program, "MyIngress")
    forward = local(ingress, "ipv4_forward")
    ttl_assign = forward.body.statements[3]
    minus = ttl_assign.rhs
    assert minus.op == "-" and minus.type == T.bit(8)
    assert minus.right.type == T.bit(8) and minus.right.const_value == 1
    assert isinstance(minus.left.decl, A.StructField) and minus.left.decl.name == "ttl"
    port_ref = forward.body.statements[0].rhs
    assert isinstance(port_ref.decl, A.Parameter) and port_ref.type == T.bit(9)
    # the egress_spec field has the typedef'd type PortId_t = bit<9>
    assert forward.body.statements[0].lhs.type == T.bit(9)

    drop = local(ingress, "drop")
    call = drop.body.statements[0].call
    assert call.call_kind == "extern_function"
    assert call.callee_decl.name == "mark_to_drop" and len(call.callee_decl.params) == 1

    apply_calls = [n for n in iter_nodes(ingress.body) if isinstance(n, A.MethodCallExpression)]
    table_apply = next(c for c in apply_calls if c.call_kind == "table_apply")
    assert table_apply.callee_decl is local(ingress, "ipv4_lpm")
    is_valid = next(c for c in apply_calls if c.builtin == "isValid")
    assert is_valid.type == T.BOOL

    parser = find_decl(program, "MyParser")
    extract = parser.states[1].statements[0].call
    assert extract.call_kind == "builtin" and extract.builtin == "extract"
    assert extract.resolved_type_args == [find_decl(program, "ethernet_t").type]
    sel = parser.states[1].select
    assert sel.cases[0].keyset.const_value == 0x800 and sel.cases[0].keyset.type == T.bit(16)
    assert sel.cases[0].state_decl is parser.states[2]
    assert isinstance(sel.cases[1].keyset, A.DefaultExpression) and sel.cases[1].state_decl is None


def test_calc_lookahead_and_const_entries():
    program = load(program_path("calc.p4"))
    parser = find_decl(program, "CalcParser")
    check = parser.state_named("check_calc")
    look = check.select.exprs[0]
    assert look.type == T.bit(8)
    assert look.expr.builtin == "lookahead" and look.expr.type == find_decl(program, "calc_t").type
    tuple_case = check.select.cases[0].keyset
    assert isinstance(tuple_case, A.ListExpression)
    assert [e.const_value for e in tuple_case.elements] == [0x50, 0x34, 0x01]

    table = program.pipeline.table("CalcIngress.calculate")
    assert table.default_is_const and table.default_action.name == "CalcIngress.operation_drop"
    assert table.entries_const and len(table.const_entries) == 5
    first = table.const_entries[0]
    assert first.keys[0].const_value == 0x2b and first.keys[0].type == T.bit(8)
    assert first.action.decl.name == "operation_add"
    # an action calling another action with an expression argument
    add = local(find_decl(program, "CalcIngress"), "operation_add")
    call = add.body.statements[0].call
    assert call.call_kind == "action" and call.callee_decl.name == "send_back"
    assert call.param_args[0][1].type == T.bit(32)


def test_header_stacks_registers_hash():
    program = load(program_path("stacks.p4"))
    pipe = program.pipeline
    regs = {r.name: r for r in pipe.registers}
    assert set(regs) == {"SRIngress.seen", "SRIngress.last_len"}
    assert regs["SRIngress.seen"].size == 256 and regs["SRIngress.seen"].element_width == 1
    assert regs["SRIngress.last_len"].type_args == [T.bit(32), T.bit(8)]
    counters = pipe.counters
    assert [(c.name, c.size, c.args["type"]) for c in counters] == [
        ("SRIngress.port_counter", 256, "packets_and_bytes")]

    parser = find_decl(program, "SRParser")
    sr = parser.state_named("parse_srcRouting")
    nxt = sr.statements[0].call.args[0].value
    assert nxt.member == "next" and nxt.type == find_decl(program, "srcRoute_t").type
    assert sr.select.exprs[0].type == T.bit(1)

    ipv4_state = parser.state_named("parse_ipv4")
    verify = ipv4_state.statements[1].call
    assert verify.builtin == "verify" and verify.param_args[1][1].const_value == "HeaderTooShort"
    cases = ipv4_state.select.cases
    rng = cases[0].keyset.elements[1]
    assert isinstance(rng, A.RangeExpression) and (rng.lo.const_value, rng.hi.const_value) == (0, 10)
    mask = cases[1].keyset.elements[0]
    assert isinstance(mask, A.MaskExpression) and mask.mask.type == T.bit(8)

    ingress = find_decl(program, "SRIngress")
    calls = [n for n in iter_nodes(ingress.body) if isinstance(n, A.MethodCallExpression)]
    hash_call = next(c for c in calls if c.call_kind == "extern_function" and c.callee_decl.name == "hash")
    assert hash_call.resolved_type_args == [T.bit(16), T.bit(16), T.TupleType([T.bit(32), T.bit(32), T.bit(8)]),
                                            T.bit(32)]
    write = next(c for c in calls if c.call_kind == "extern_method" and c.callee.member == "write"
                 and c.callee.expr.name == "seen")
    assert write.param_args[1][1].type == T.bit(1) and write.param_args[1][1].const_value == 1
    pop = local(ingress, "srcRoute_nhop").body.statements[1].call
    assert pop.builtin == "pop_front" and pop.param_args[0][1].const_value == 1


def test_feature_tour_elaboration():
    program = load(program_path("features.p4"))
    pipe = program.pipeline
    names = [t.name for t in pipe.tables]
    assert names == ["FIngress.acl_a.acl", "global_acl.acl", "FIngress.l2", "FIngress.learn_tbl",
                     "FIngress.profiled"]
    acl = pipe.table("FIngress.acl_a.acl")
    assert [(k.name, k.match_kind, k.bitwidth) for k in acl.keys] == [
        ("src_addr", "ternary", 32), ("hdr.ipv4.dst", "ternary", 32), ("hdr.ipv4.proto", "exact", 8),
        ("meta.ports.first", "range", 16), ("hdr.l4.tcp.$valid$", "exact", 1)]
    assert acl.size == 1024 and pipe.table("global_acl.acl").size == 64
    assert [a.action.name for a in acl.actions] == ["FIngress.acl_a.drop_it", "FIngress.acl_a.permit"]
    assert acl.direct_counter.name == "FIngress.acl_a.acl_hits"
    assert acl.direct_counter.owner_table is acl
    entry = acl.const_entries[0]
    assert entry.priority.const_value == 10
    assert entry.keys[2].const_value == 6 and entry.keys[4].const_value is True
    assert isinstance(entry.keys[1], A.DontCareExpression)

    l2 = pipe.table("FIngress.l2")
    assert [(a.action.name, a.scope) for a in l2.actions] == [
        ("FIngress.forward", "TABLE_AND_DEFAULT"), ("FIngress.to_cpu", "TABLE_AND_DEFAULT"),
        ("NoAction", "DEFAULT_ONLY")]
    assert l2.default_action.name == "NoAction" and l2.size == 1024
    assert l2.direct_meter.name == "FIngress.dmeter"
    learn = pipe.table("FIngress.learn_tbl")
    assert learn.largest_priority_wins is False and learn.priority_delta == 5
    assert learn.default_action.name == "FIngress.learn"
    assert pipe.table("FIngress.profiled").implementation.extern == "action_profile"
    assert [(m.name, m.size, m.args["type"]) for m in pipe.meters] == [("FIngress.pmeter", 64, "packets")]

    assert [(d.name, d.type.field_names()) for d in pipe.digests] == [("learn_t", ["src", "port"])]
    assert [(c.name, [n for n, _ in c.type.fields]) for c in pipe.controller_headers] == [
        ("packet_in", ["ingress_port", "_pad"]), ("packet_out", ["egress_port", "_pad"])]
    assert pipe.ingress.children["acl_a"].ctor_args == {"n": 1024}


def test_feature_tour_types_and_constants():
    program = load(program_path("features.p4"))
    assert find_decl(program, "TABLE_SIZE").value.const_value == 1024
    minus_one = find_decl(program, "MINUS_ONE")
    assert minus_one.type == T.signed(8) and minus_one.value.const_value == -1
    proto = find_decl(program, "Proto").type
    assert proto.underlying == T.bit(8) and proto.values == {"TCP": 6, "UDP": 17, "ICMP": 1}
    assert T.bit_width(find_decl(program, "ipv4_t").type) == 160
    assert find_decl(program, "l4_t").type.field_type("tcp") == find_decl(program, "tcp_t").type
    assert find_decl(program, "metadata").type.field_type("ports").field_type("second") == T.bit(16)

    ingress = find_decl(program, "FIngress")
    body = ingress.body.statements
    decls = {s.name: s for s in body if isinstance(s, A.VariableDecl)}
    assert decls["x"].init.const_value == 0xffff  # 0x00ff |+| 0xff00
    c = decls["c"].init
    assert c.type == T.bit(32) and c.op == "++"
    casts = [s for s in body if isinstance(s, A.AssignmentStatement) and isinstance(s.rhs, A.CastExpression)
             and isinstance(s.rhs.expr, A.CastExpression) and s.rhs.expr.expr.const_value == -1]
    assert casts[0].rhs.const_value == 0xffff and casts[0].rhs.expr.const_value == -1
    ternary = next(s for s in body if isinstance(s, A.AssignmentStatement) and isinstance(s.rhs, A.TernaryExpression))
    assert ternary.rhs.cond.right.const_value == "Red"
    invalid = [n for n in iter_nodes(ingress.body) if isinstance(n, A.InvalidHeaderExpression)]
    assert invalid[0].type == find_decl(program, "udp_t").type
    sw = [s for s in body if isinstance(s, A.SwitchStatement)]
    assert sw[0].is_action_run and sw[0].cases[1].body is None
    assert sw[0].cases[0].label.decl is local(ingress, "forward")
    loops = [s for s in body if isinstance(s, (A.ForStatement, A.ForInStatement))]
    assert [type(s).__name__ for s in loops] == ["ForStatement", "ForInStatement"]
    assert loops[1].var.type == T.bit(8)

    parser = find_decl(program, "FParser")
    vs = local(parser, "special_types")
    case = parser.state_named("parse_ethernet").select.cases[0]
    assert case.keyset.decl is vs
    assert [(v.name, v.size, v.element_type) for v in program.pipeline.value_sets] == [
        ("FParser.special_types", 4, T.bit(16))]
    opt = parser.state_named("parse_opt").statements[0].call
    assert opt.builtin == "extract" and len(opt.param_args) == 2


def test_defines_and_generic_struct_from_source():
    text = """
#include <v1model.p4>
struct pair<T> { T a; T b; }
header h_t { bit<WIDTH> v; }
struct H { h_t h; }
struct M { pair<bit<WIDTH>> p; }
control C(inout H hdr, inout M m) {
    apply {
#ifdef SWAP
        m.p = { m.p.b, m.p.a };
#endif
        hdr.h.v = m.p.a;
    }
}
"""
    def load_with(defines):
        return load_source(text + '#include "empty_v1switch.p4"\n', "gen.p4",
                           include_dirs=[INCLUDE_DIR], defines=defines)
    program = load_with({"WIDTH": "12", "SWAP": None})
    m_type = program.find("M").type
    assert m_type.field_type("p").field_type("a") == T.bit(12)
    control = program.find("C")
    swap = control.body.statements[0]
    assert isinstance(swap.rhs, A.ListExpression) and swap.rhs.type == m_type.field_type("p")
    program = load_with({"WIDTH": "4"})
    assert len(program.find("C").body.statements) == 1
    assert program.pipeline.ingress.name == "EmptyPipe"


def test_thousand_line_program_loads():
    lines = ["#include <v1model.p4>", "header h_t {"]
    lines += [f"  bit<{8 + i % 24}> f{i};" for i in range(40)]
    lines += ["  bit<4> pad;"]  # 716 + 4 bits: a whole number of bytes
    lines += ["}", "struct H { h_t h; }", "struct M { bit<32> m; }",
              "parser P(packet_in p, out H hdr, inout M m, inout standard_metadata_t sm) {",
              "  state start { p.extract(hdr.h); transition accept; } }",
              "control I(inout H hdr, inout M m, inout standard_metadata_t sm) {"]
    for i in range(100):
        lines += [f"  action a{i}(bit<9> port, bit<{8 + (i % 40) % 24}> v) {{",
                  "    sm.egress_spec = port;", f"    hdr.h.f{i % 40} = v + {i};", "  }"]
        lines += [f"  table t{i} {{", f"    key = {{ hdr.h.f{i % 40} : exact; m.m : ternary; }}",
                  f"    actions = {{ a{i}; NoAction; }}", "    default_action = NoAction();", "  }"]
    lines += ["  apply {"] + [f"    if (hdr.h.f{i % 40} == {i}) {{ t{i}.apply(); }}" for i in range(100)]
    lines += ["  }", "}",
              "control N(inout H hdr, inout M m) { apply { } }",
              "control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }",
              "control D(packet_out p, in H hdr) { apply { p.emit(hdr.h); } }",
              "V1Switch(P(), N(), I(), E(), N(), D()) main;"]
    assert len(lines) > 1000
    program = load_source("\n".join(lines), "big.p4")
    assert len(program.pipeline.tables) == 100
    assert program.pipeline.table("I.t99").keys[0].bitwidth == 8 + 99 % 40 % 24


def test_syntax_corner_cases():
    program = load(program_path("syntax.p4"))
    parser = find_decl(program, "P")
    start = parser.state_named("start")
    peek = start.statements[0]
    assert peek.init.builtin == "lookahead" and peek.init.type == T.bit(16)
    cases = start.select.cases
    first = cases[0].keyset.elements[0]
    assert isinstance(first, A.MaskExpression) and first.value.const_value == 0x0800
    assert cases[2].keyset.decl is local(parser, "pvs")
    rng = parser.state_named("next").select.cases[0].keyset
    assert rng.lo.type == T.bit(4) and rng.hi.const_value == 7

    ingress = find_decl(program, "I")
    body = ingress.body.statements
    get8 = body[3].init
    assert get8.call_kind == "extern_method" and get8.resolved_type_args == [T.bit(8)]
    assert get8.type == T.bit(16)  # T of Gen<bit<16>>
    assert body[4].init.resolved_type_args == [T.bit(32)]
    read = body[5].call
    assert [(p.name, a.type) for p, a in read.param_args] == [("result", T.bit(32)), ("index", T.bit(32))]
    write = body[6].statements[0].call
    assert body[6].annotations[0].name == "atomic"
    assert write.param_args[0][1].type == T.bit(32) and write.param_args[1][1].right.type == T.bit(32)
    shifted = body[10].rhs
    assert shifted.op == "|" and shifted.left.op == "<<" and shifted.right.op == ">>"
    mixed = body[12].rhs
    assert mixed.op == "^" and mixed.left.op == "&" and mixed.left.left.op == "~"
    assert mixed.left.right.type == T.bit(8)
    arith = body[15].rhs
    assert arith.op == "-" and arith.right.op == "%" and arith.right.const_value == 6
    assert body[17].rhs.const_value == {"dst": 1, "src": 2, "type": 3}
    assert body[18].rhs.const_value == {"dst": 1, "src": 2, "type": 3}

    table = program.pipeline.table("I.t")
    assert [k.name for k in table.keys] == ["hdr.eth.dst", "etype"]
    assert [(a.action.name, a.scope) for a in table.actions] == [
        ("I.a", "TABLE_AND_DEFAULT"), ("I.b", "TABLE_ONLY"), ("NoAction", "DEFAULT_ONLY")]
    assert table.default_action.name == "NoAction" and table.actions[2].ref is None
    assert not table.entries_const and len(table.const_entries) == 3
    e0, e1, e2 = table.const_entries
    assert e0.keys[0].mask.const_value == 0xff and e0.keys[1].const_value == 0x0800
    assert e0.action.param_args[0][1].const_value == 1 and e0.action.param_args[0][1].type == T.bit(8)
    assert e1.priority.const_value == 5 and e1.keys[1].const_value == 0x0806
    assert all(isinstance(k, A.DefaultExpression) for k in e2.keys)
    assert program.pipeline.action("I.a").params[0].name == "value"

    egress = find_decl(program, "E")
    compound = egress.body.statements
    assert [(s.op, s.rhs.op) for s in compound] == [("+=", "+"), ("|+|=", "|+|"), ("<<=", "<<"), (">>=", ">>")]
    assert compound[0].rhs.right.type == T.bit(8)
    assert find_decl(program, "ok").value.const_value is True
    assert find_decl(program, "eth_bytes").value.const_value == 14


def test_directional_action_arguments_and_sub_controls():
    program = load(program_path("directional_actions.p4"))
    pipe = program.pipeline
    table = pipe.table("ing.t")
    assert [a.action.name for a in table.actions] == ["ing.do_resubmit", "ing.set_out", "my_drop"]
    drop_ref = table.actions[2].ref
    assert drop_ref.param_args[0][1].decl.name == "standard_metadata"
    assert table.default_action.name == "my_drop" and table.default_args == []
    ingress = find_decl(program, "ing")
    fill_call = next(n for n in iter_nodes(ingress.body)
                     if isinstance(n, A.MethodCallExpression) and n.call_kind == "block_apply")
    assert fill_call.callee_decl is local(ingress, "f")
    assert [a.type for _, a in fill_call.param_args] == [T.bit(32)] + [T.bit(8)] * 4
    assert list(pipe.ingress.children) == ["f"] and pipe.ingress.children["f"].name == "ing.f"
    resubmit = next(n for n in iter_nodes(ingress) if isinstance(n, A.MethodCallExpression)
                    and n.call_kind == "extern_function" and n.callee_decl.name == "resubmit")
    assert resubmit.resolved_type_args == [T.TupleType([])]


def test_extern_instances_outside_blocks_and_as_constructor_arguments():
    text = """
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { bit<8> x; }
register<bit<8>>(16) shared_reg;
parser P(packet_in p, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.h); transition accept; }
}
control Counted(inout H hdr)(counter c) {
    apply { c.count(0); }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    counter(8, CounterType.packets) hits;
    Counted(hits) counted;
    apply {
        hits.count(1);
        shared_reg.read(m.x, 2);
        counted.apply(hdr);
    }
}
control N(inout H hdr, inout M m) { apply { } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control D(packet_out p, in H hdr) { apply { p.emit(hdr.h); } }
V1Switch(P(), N(), I(), E(), N(), D()) main;
"""
    program = load_source(text, "ext.p4")
    pipe = program.pipeline
    assert [(e.name, e.extern, e.size) for e in pipe.externs] == [
        ("shared_reg", "register", 16), ("I.hits", "counter", 8)]
    assert pipe.registers[0].block is None and pipe.registers[0].element_width == 8
    counted = pipe.ingress.children["counted"]
    assert counted.name == "I.counted" and counted.ctor_args["c"] is pipe.counters[0]
    count = next(n for n in iter_nodes(program.find("I").body)
                 if isinstance(n, A.MethodCallExpression) and n.call_kind == "extern_method"
                 and n.callee.member == "count")
    # the counter's index type is not given: an int argument makes it bit<32>
    assert count.param_args[0][1].type == T.bit(32) and count.param_args[0][1].const_value == 1
    read = next(n for n in iter_nodes(program.find("I").body)
                if isinstance(n, A.MethodCallExpression) and n.call_kind == "extern_method"
                and n.callee.member == "read")
    assert read.callee.expr.decl is program.find("shared_reg")
    assert read.param_args[1][1].type == T.bit(32)


def test_sub_parser_and_slice_assignment():
    text = """
#include <v1model.p4>
header a_t { bit<8> kind; bit<8> valid_bits; }
header b_t { bit<8> kind; bit<8> next; }
struct H { a_t a; b_t[3] bs; }
struct M { }
error { WrongKind }
parser Sub(packet_in pkt, inout H hdr, out bit<8> next) {
    state start {
        pkt.extract(hdr.bs.next);
        verify(hdr.bs.last.kind == 2, error.WrongKind);
        next = hdr.bs.last.next;
        transition accept;
    }
}
parser Top(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    Sub() sub;
    bit<8> nxt;
    state start {
        pkt.extract(hdr.a);
        sub.apply(pkt, hdr, nxt);
        transition select(nxt) { 2: start; default: accept; }
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        if (hdr.bs[1].isValid()) { hdr.a.valid_bits[1:1] = 1; }
    }
}
control N(inout H hdr, inout M m) { apply { } }
control D(packet_out p, in H hdr) { apply { p.emit(hdr); } }
V1Switch(Top(), N(), I(), I(), N(), D()) main;
"""
    program = load_source(text, "sub.p4")
    top = program.pipeline.parser
    assert top.children["sub"].decl is program.find("Sub") and top.children["sub"].name == "Top.sub"
    apply = program.find("Top").states[0].statements[1].call
    assert apply.call_kind == "block_apply" and apply.callee_decl is local(program.find("Top"), "sub")
    assert [p.direction for p, _ in apply.param_args] == [None, "inout", "out"]
    assign = program.find("I").body.statements[0].then.statements[0]
    assert isinstance(assign.lhs, A.SliceExpression) and assign.lhs.type == T.bit(1)
    assert assign.rhs.type == T.bit(1) and assign.rhs.const_value == 1
    assert program.find("H").type.field_type("bs") == T.StackType(program.find("b_t").type, 3)


def test_loops_lists_and_compound_assignment():
    program = load(program_path("loops.p4"))
    ingress = find_decl(program, "ingressImpl")
    body = ingress.body.statements
    for_in = body[1]
    assert isinstance(for_in, A.ForInStatement)
    assert string_argument(for_in.var.annotation("name")) == "ingressImpl.i"
    assert for_in.collection.type == T.ListType(T.bit(8))
    assert for_in.collection.const_value == (1, 2, 4, 8, 16)
    assert for_in.var.type == T.bit(8)
    loop = body[2]
    assert isinstance(loop.init[0], A.AssignmentStatement) and loop.cond.type == T.BOOL
    assert isinstance(loop.body.statements[1].then.statements[0], A.BreakStatement)
    compound = body[4]
    assert compound.op == "|=" and compound.rhs.left is compound.lhs
    assert compound.lhs.expr.index.left.call_kind == "function"
    assert compound.rhs.right.type == T.bit(32)
    assert str(program.pipeline.headers_type) == "headers_t"
    assert program.find("postincr").params[0].direction == "inout"



def test_preprocessed_text_keeps_original_locations():
    from p4switch.frontend import CompileError, load_preprocessed
    from p4switch.frontend.preprocess import preprocess
    source = "#include <v1model.p4>\n\nconst bit<8> A = 1;\nconst bit<8> B = C;\n"
    text = preprocess(source, "pre.p4")
    assert "#line" in text
    try:
        load_preprocessed(text, "pre.p4")
    except CompileError as e:
        assert str(e) == "pre.p4:4:18: 'C' is not declared"
    else:
        raise AssertionError("no error")


def test_preprocessing_notices_changed_include_files(tmp_path):
    inc = tmp_path / "defs.p4"
    inc.write_text("const bit<8> VALUE = 1;\n")
    source = '#include <core.p4>\n#include "defs.p4"\n#include "empty_v1switch.p4"\n'
    main = tmp_path / "main.p4"
    main.write_text(source)
    assert load(str(main), include_dirs=[INCLUDE_DIR]).find("VALUE").value.const_value == 1
    inc.write_text("const bit<8> VALUE = 2;  \n")
    stat = inc.stat()
    os.utime(inc, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert load(str(main), include_dirs=[INCLUDE_DIR]).find("VALUE").value.const_value == 2


def test_inline_action_selector_and_header_unions():
    program = load(program_path("selector_unions.p4"))
    pipe = program.pipeline
    table = pipe.table("I.t")
    assert [(k.name, k.match_kind) for k in table.keys] == [("hdr.h.a", "exact"), ("hdr.h.b", "selector")]
    selector = table.implementation
    assert (selector.name, selector.extern) == ("I.t", "action_selector")
    assert selector.args == {"algorithm": "crc16", "size": 1024, "outputWidth": 14}
    assert pipe.action_profiles == [selector]
    u_t = program.find("u_t").type
    assert isinstance(u_t, T.HeaderUnionType) and program.find("H").type.field_type("us") == T.StackType(u_t, 2)
    parser = program.find("P")
    assert parser.states[0].select.exprs[0].type == T.bit(32)  # lastIndex
    ingress = program.find("I")
    size = ingress.body.statements[4].rhs
    assert size.const_value == 3 and size.expr.const_value == 3


def test_tutorial_style_firewall_monitor():
    program = load(program_path("monitor_firewall.p4"))
    pipe = program.pipeline
    assert [(r.name, r.size, r.element_width) for r in pipe.registers] == [
        ("MyIngress.bloom_filter_1", 4096, 1), ("MyIngress.bloom_filter_2", 4096, 1),
        ("MyEgress.byte_cnt_reg", 8, 32), ("MyEgress.last_time_reg", 8, 48)]
    assert [(c.name, c.size) for c in pipe.counters] == [("MyIngress.tunnel_counter", 65536)]
    assert [k.name for k in pipe.table("MyIngress.check_ports").keys] == [
        "standard_metadata.ingress_port", "standard_metadata.egress_spec"]
    assert pipe.table("MyEgress.swid").keys == []

    ingress = program.find("MyIngress")
    set_direction = local(ingress, "set_direction")
    assign = set_direction.body.statements[0]
    assert assign.lhs.decl is local(ingress, "direction")
    hashes = [n for n in iter_nodes(local(ingress, "compute_hashes"))
              if isinstance(n, A.MethodCallExpression) and n.call_kind == "extern_function"]
    assert [h.param_args[1][1].const_value for h in hashes] == ["crc16", "crc32"]
    assert hashes[0].param_args[0][1].decl is local(ingress, "reg_pos_one")

    egress = program.find("MyEgress")
    statements = egress.body.statements
    select_zero = statements[6].rhs
    assert isinstance(select_zero, A.TernaryExpression) and select_zero.type == T.bit(32)
    assert select_zero.then.type == T.bit(32) and select_zero.then.const_value == 0
    ecn = next(n for n in iter_nodes(egress.body) if isinstance(n, A.BinaryExpression) and n.op == ">=")
    assert ecn.left.type == T.bit(19) and ecn.right.const_value == 10
    parser = program.find("MyParser")
    remaining = parser.state_named("parse_probe").statements[1].rhs
    assert remaining.type == T.bit(8) and remaining.right.type == T.bit(8)


def test_include_files_define_their_customary_guard_macros():
    # Shared skeleton files test these macros before declaring anything that needs the includes.
    program = load_source("""#include <v1model.p4>
#ifdef _CORE_P4_
const bit<8> CORE_SEEN = 1;
#endif
#ifdef _V1_MODEL_P4_
const bit<8> V1MODEL_SEEN = 2;
#endif
#if V1MODEL_VERSION >= 20180101
const bit<8> VERSION_SEEN = 3;
#endif
#include "empty_v1switch.p4"
""", "guards.p4", include_dirs=[INCLUDE_DIR])
    assert [program.find(n).value.const_value for n in ("CORE_SEEN", "V1MODEL_SEEN", "VERSION_SEEN")] == [1, 2, 3]


CONTROL_ARGUMENT_PROGRAM = """#include <v1model.p4>
header h_t { bit<16> x; }
struct H { h_t h; }
struct M { }
control Step(inout bit<16> x);
control AddOne(inout bit<16> x) { apply { x = x + 1; } }
control Twice(inout bit<16> x)(Step s) { apply { s.apply(x); s.apply(x); } }
control Outer(inout bit<16> x) {
    AddOne() one;
    Twice(one) a;
    Twice(one) b;
    apply { a.apply(x); b.apply(x); }
}
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control C(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    Outer() o;
    apply { o.apply(hdr.h.x); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""


def test_control_instance_passed_as_constructor_argument_is_shared():
    program = load_source(CONTROL_ARGUMENT_PROGRAM, "ctl_arg.p4")
    outer = program.pipeline.ingress.children["o"]
    one = outer.children["one"]
    assert one.decl is find_decl(program, "AddOne") and one.name == "I.o.one"
    a, b = outer.children["a"], outer.children["b"]
    # `s.apply(...)` in each Twice runs the one instance declared in Outer
    assert a.ctor_args["s"] is one and a.children["s"] is one
    assert b.ctor_args["s"] is one and b.children["s"] is one


def test_control_argument_must_be_declared_in_the_same_block():
    source = CONTROL_ARGUMENT_PROGRAM.replace("    AddOne() one;\n", "").replace(
        "control Outer(", "AddOne() one;\ncontrol Outer(")
    with pytest.raises(CompileError) as info:
        load_source(source, "ctl_arg.p4")
    assert str(info.value) == ("ctl_arg.p4:10:11: unsupported: passing instance 'one' as a "
                               "constructor argument here (only an instance declared earlier "
                               "in the same block)")
