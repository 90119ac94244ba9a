"""The XDP emitter: the C emitter's pipeline, retargeted at eBPF (clang -target bpf).

The stages (parser ... deparser) are the C emitter's own code (backend/c/emit.py), so the
three in-process back ends share one reading of the IR; what differs is what that code runs
on (runtime/p4x.h: bounded, masked buffer accesses the verifier can prove) and what the
emitter writes around it:
- each stage as a global BPF function, which the verifier checks once on its own (the buffers
  are the per-CPU scratch value's, which a stage finds itself: runtime/p4x_state.inc);
- a BPF map per table: entries in lookup order (value, mask and range per key word, action,
  arguments) and the default entry after them, in two halves, scanned with bpf_loop; a map of
  entry counts and halves;
- one array for every register's cells and one per-CPU array for every counter's, a base per
  extern (a program may use 64 maps);
- the XDP programs (runtime/p4x_main.inc): v1model's traffic manager, unicast and multicast.

A program with registers runs each packet under one lock (p4x_main.inc), as the C back end
does under its mutex. What the XDP back end cannot keep exact is refused with
`FILE:LINE:COL: ... is not supported by the xdp back end`: meters, registers of cells wider
than 64 bits, clones, resubmit, recirculate, digests, random(), assert/assume, log_msg,
truncate, value sets, action profiles, direct counters and meters, idle timeouts, checksums
over the payload, varbit extraction and values wider than 64 bits. Code the verifier rejects
fails to load with the verifier's own line (loader.BpfError); a parse passing more than 64
states is counted and dropped at run time, and binding.py raises for it under test.
"""

from __future__ import annotations

import re

from ...frontend import ast as A
from ...frontend import types as T
from ...frontend.errors import CompileError
from ..c.c_types import NOT_SUPPORTED, Unsupported
from ..c.emit import CEmitter
from ..c.externs import cell_layout
from ..c.wide import nwords
from ..exprs import strip
from ..externs import arg

XDP_NOT_SUPPORTED = "not supported by the xdp back end"
DEFAULT_TABLE_SIZE = 1024       # entries of a table that declares no size


class XdpUnsupported(CompileError):
    """A construct the XDP back end refuses (the C and Python back ends may still run it)."""


def refuse(node, what: str):
    raise XdpUnsupported(getattr(node, "loc", None), f"{what} is {XDP_NOT_SUPPORTED}")


def max_args(compiled) -> int:
    """Argument words of the table action that takes the most (an entry's room for them)."""
    return max([1] + [sum(nwords(w) for _, w in action.params)
                      for spec in compiled.tables for action in spec.actions])


def table_capacity(spec) -> int:
    """Entries a table's map holds (its default entry goes after them)."""
    return max(1, spec.size or DEFAULT_TABLE_SIZE)


class XdpEmitter(CEmitter):
    """Writes the eBPF C of one program (see the module docstring)."""

    aligned_headers = False         # p4x.h's bounded p4n_get_bits/put_bits for every field

    def __init__(self, program, compiled):
        super().__init__(program, compiled)
        for spec in self.registers:
            if spec.width > 64:
                inst = next((e for e in self.pipeline.externs if e.name == spec.name), None)
                refuse(inst.decl if inst is not None else None,
                       f"a register of {spec.width}-bit cells")
        for kinds, what in ((("meter",), "a meter"),
                            (("direct_meter",), "a direct meter"),
                            (("direct_counter",), "a direct counter"),
                            (("action_profile", "action_selector"), "an action profile")):
            spec = next((s for s in compiled.externs if s.kind in kinds), None)
            if spec is not None:
                inst = next((e for e in self.pipeline.externs if e.name == spec.name), None)
                refuse(inst.decl if inst is not None else None, what)
        if compiled.value_sets:
            refuse(None, "a parser value set")
        for spec in compiled.tables:
            if spec.support_timeout:
                refuse(None, f"table {spec.name} with an idle timeout,")
            for key in spec.keys:
                if key.width > 64:
                    refuse(None, f"table {spec.name}'s key {key.name} of {key.width} bits")

    # -- what stays in user space ----------------------------------------------------------------

    def _no(what):                                   # noqa: N805 (a method factory)
        def method(self, e, *_):
            refuse(e, what)
        return method

    _f_clone = _f_clone3 = _f_clone_preserving_field_list = _no("clone")
    _f_resubmit = _f_resubmit_preserving_field_list = _no("resubmit")
    _f_recirculate = _f_recirculate_preserving_field_list = _no("recirculate")
    _f_digest = _no("digest")
    _f_random = _no("random()")
    _f_truncate = _no("truncate")
    _f_assert = _f_assume = _no("assert/assume")
    _f_log_msg = _no("log_msg")
    _f_verify_checksum_with_payload = _f_update_checksum_with_payload = \
        _no("a checksum over the payload")
    del _no

    def hash_of(self, algo, data, node, payload=False) -> str:
        if algo == "random":
            refuse(node, "the random hash algorithm")
        return super().hash_of(algo, data, node, payload)

    def stage(self, name, inst, params) -> str:
        """A stage as a global BPF function: the verifier checks it once, on its own, instead
        of every path through the stages before it (which p4src/main.p4 is too many for). Its
        pointer arguments may be NULL to the verifier; the scratch value it finds itself.
        It returns 1 when one is NULL, so that each argument stays in use: clang 18 and later
        pass an unused argument of a global function as undefined, which the verifier refuses."""
        text = super().stage(name, inst, params)
        first, rest = text.split("\n", 1)
        assert first.startswith(f"static void {name}(") and rest.endswith("}")
        names = [p.rsplit("*", 1)[1] for p in first[first.index("(") + 1:first.rindex(")")]
                 .split(", ")]
        checks = " || ".join(f"!{n}" for n in names)
        return (f"__noinline int {first[len('static void '):]}\n"
                f"struct p4x_scratch *P4X_S = p4x_scratch_get(); if (!P4X_S || {checks}) "
                f"return 1;\n{rest[:-1]}return 0;\n}}")

    # -- parsers: a bound on the states one parse passes, so that the verifier sees each pass
    #    of a parser loop as progress (p4x_main.inc drops and counts a parse that reaches it)

    def parser_body(self, inst) -> list[str]:
        return ["uint64_t p4x_steps = 0;"] + super().parser_body(inst)

    def parser_states(self, inst, accept: str) -> list[str]:
        lines = []
        for line in super().parser_states(inst, accept):
            lines.append(line)
            if re.fullmatch(r"state_\w+: ;", line):
                lines.append(f"if (++p4x_steps > P4X_PARSER_STEPS) {{ c->parser_error = "
                             f"P4X_TOO_MANY_STEPS; goto {self.parser_reject}; }}")
        return lines

    # -- header stacks: every run-time index bounded where it is used (p4x_idx), since a
    #    stage reads nextIndex from memory and the verifier cannot carry its check over

    def stack_element(self, stack, t, index, node, last=False) -> str:
        code = super().stack_element(stack, t, index, node, last)
        return code.replace(f"elems[{index}]", f"elems[p4x_idx({index}, {t.size})]")

    def ex_IndexExpression(self, e, t):
        code = super().ex_IndexExpression(e, t)
        size = getattr(strip(e.expr.type), "size", None)
        return code.replace("elems[_x]", f"elems[p4x_idx(_x, {size})]") if size else code

    def extract_code(self, e, header, vbits):
        code = super().extract_code(e, header, vbits)
        if isinstance(header, A.MemberExpression) and header.member == "next" and \
                isinstance(strip(header.expr.type), T.StackType):
            stack = self.ex(header.expr)
            index = f"({stack}).nextIndex"
            code = code.replace(f"elems[{index}]",
                                f"elems[p4x_idx({index}, {strip(header.expr.type).size})]")
        return code

    def extract_into(self, e, ht, h, vbits: str = "0") -> str:
        if vbits != "0":            # a copy loop of run-time length: past the verifier's budget
            refuse(e, "extracting a varbit field")
        return super().extract_into(e, ht, h, vbits)

    def shift_stack(self, b, target, t, count_expr) -> str:
        """push_front / pop_front with constant indices only (the verifier cannot bound a
        memmove's): one straight-line case per possible count."""
        stack = self.ex(target)
        n = t.size
        count = self.ex(count_expr)
        cases = []
        for k in range(1, n + 1):
            moves = []
            if b == "push_front":
                moves += [f"({stack}).elems[{i}] = ({stack}).elems[{i - k}];"
                          for i in range(n - 1, k - 1, -1)]
                moves += [f"memset(&({stack}).elems[{i}], 0, sizeof(({stack}).elems[0]));"
                          for i in range(min(k, n))]
            else:
                moves += [f"({stack}).elems[{i}] = ({stack}).elems[{i + k}];"
                          for i in range(n - k)]
                moves += [f"memset(&({stack}).elems[{i}], 0, sizeof(({stack}).elems[0]));"
                          for i in range(n - k, n)]
            cases.append(f"case {k}: {' '.join(moves)} break;")
        if b == "push_front":
            index = (f"({stack}).nextIndex = ({stack}).nextIndex + _k > {n} ? {n} : "
                     f"({stack}).nextIndex + (uint32_t)_k;")
        else:
            index = (f"({stack}).nextIndex = ({stack}).nextIndex > _k ? "
                     f"({stack}).nextIndex - (uint32_t)_k : 0;")
        return f"do {{ int64_t _c = (int64_t)({count}); if (_c > 0) {{ uint64_t _k = " \
               f"(uint64_t)_c > {n} ? {n} : (uint64_t)_c; switch (_k) {{ {' '.join(cases)} " \
               f"default: break; }} {index} }} }} while (0)"

    # -- registers and counters: one map each kind, a base per extern ---------------------------
    # (a program may use 64 maps, and p4src/main.p4 at K = 64 has more registers than that)

    def register_cell(self, r: int) -> str:
        base, stride = self.register_places[r]
        return f"(*p4x_cell({base} + (__u32)_i * {stride}))"

    def register_maps(self) -> list[str]:
        if not self.registers:
            return []
        return [f"struct {{ __uint(type, BPF_MAP_TYPE_ARRAY); "
                f"__uint(max_entries, {self.register_cell_words}); __type(key, __u32); "
                f"__type(value, uint64_t); }} p4x_registers SEC(\".maps\");",
                "static uint64_t p4x_sink;",
                "static __always_inline uint64_t *p4x_cell(__u32 k) {",
                "uint64_t *cell = bpf_map_lookup_elem(&p4x_registers, &k);",
                "return cell ? cell : &p4x_sink;",      # out of range: the caller checked
                "}"]

    def _m_counter_count(self, e, inst):
        k = self._counter_index[inst.name]
        spec = self.counters[k]
        index = self.index_of(arg(e, 0))
        base, stride = cell_layout(self.counters)[0][k]
        return f"do {{ uint64_t _i = (uint64_t)({index}); if (_i < {spec.size or 0}) " \
               f"P4X_COUNT(p4x_counters, {base} + _i * {stride}, c->plen); " \
               f"}} while (0)"

    def counter_maps(self) -> list[str]:
        if not self.counters:
            return []
        return [f"struct {{ __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); "
                f"__uint(max_entries, {cell_layout(self.counters)[1]}); __type(key, __u32); "
                f"__type(value, struct p4x_cell); }} p4x_counters SEC(\".maps\");"]

    # -- tables --------------------------------------------------------------------------------------

    def table_apply(self, e):
        info = self.pc.table_of_apply(e, self.block)
        index = self.pc._table_index[id(info)]
        code = super().table_apply(e)
        lookup = f"p4n_table_lookup(&c->sw->tables[{index}], "
        assert lookup in code
        return code.replace(lookup, f"p4x_lookup_{index}(&P4X_S->view, ")

    def table_maps(self) -> list[str]:
        """Per table a map of entries, a scan and a lookup; the map of entry counts.  A
        table's map has two halves of (capacity + 1) entries, the default entry last in each:
        the control plane writes the half packets are not reading, then switches (base)."""
        lines = ["struct p4x_count { __u32 n, base; };",
                 f"struct {{ __uint(type, BPF_MAP_TYPE_ARRAY); "
                 f"__uint(max_entries, {max(1, len(self.compiled.tables))}); "
                 f"__type(key, __u32); __type(value, struct p4x_count); }} "
                 f"p4x_counts SEC(\".maps\");"]
        for i, spec in enumerate(self.compiled.tables):
            nk = max(1, sum(nwords(k.width) for k in spec.keys))
            cap = table_capacity(spec)
            lines += [
                f"struct p4x_entry_{i} {{ uint64_t value[{nk}], mask[{nk}], lo[{nk}], hi[{nk}]; "
                f"uint64_t ranges; uint32_t action, nargs; uint64_t args[P4X_MAX_ARGS]; }};",
                f"struct {{ __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, {2 * (cap + 1)}); "
                f"__type(key, __u32); __type(value, struct p4x_entry_{i}); }} "
                f"p4x_table_{i} SEC(\".maps\");",
                f"struct p4x_scan_{i} {{ uint64_t key[{nk}]; uint32_t found, base; }};",
                f"static long p4x_scan_{i}(__u32 at, void *arg) {{",
                f"struct p4x_scan_{i} *s = arg;",
                "__u32 slot = s->base + at;",
                f"struct p4x_entry_{i} *e = bpf_map_lookup_elem(&p4x_table_{i}, &slot);",
                "if (!e) return 1;",
                f"for (int w = 0; w < {nk}; w++) {{",
                "if ((e->ranges >> w) & 1) { if (s->key[w] < e->lo[w] || s->key[w] > e->hi[w]) "
                "return 0; }",
                "else if ((s->key[w] & e->mask[w]) != e->value[w]) return 0;",
                "}",
                "s->found = at; return 1;",
                "}",
                f"static __always_inline p4n_entry *p4x_lookup_{i}(p4n_entry *view, "
                f"const uint64_t *key) {{",
                f"struct p4x_scan_{i} s; s.found = {cap}; s.base = 0;",
                f"for (int w = 0; w < {nk}; w++) s.key[w] = key[w];",
                f"__u32 t = {i}; struct p4x_count *n = bpf_map_lookup_elem(&p4x_counts, &t);",
                "if (n) s.base = n->base;",
                f"if (n && n->n) bpf_loop(n->n < {cap} ? n->n : {cap}, p4x_scan_{i}, &s, 0);",
                "__u32 at = s.base + s.found;",
                f"struct p4x_entry_{i} *e = bpf_map_lookup_elem(&p4x_table_{i}, &at);",
                f"view->hit = s.found < {cap};",
                "if (!e) { view->hit = 0; view->action = 0xFFFFFFFFu; return view; }",
                "view->action = e->action;",
                "for (int a = 0; a < P4X_MAX_ARGS; a++) view->args[a] = e->args[a];",
                "return view;",
                "}",
            ]
        return lines


    def emit(self) -> str:
        text = super().emit()
        # The C emitter's pipeline: its types and stages, between its headers and tm.inc.
        start = text.index('#include "p4n_big.h"') + len('#include "p4n_big.h"')
        end = text.index("static const char *const p4n_digest_names")
        # The buffers are the scratch value's (p4x_state.inc), found by each stage.
        body = text[start:end].replace("c->sw->tracing", "0").replace("c->sw->", "P4X_S->sw.")
        body = body.replace("c->sw", "(&P4X_S->sw)")
        body = re.sub(r"c->data\b", "P4X_S->in", body)
        body = re.sub(r"c->out\b", "P4X_S->sw.out", body)
        if "p4n_u128" in body or "p4n_big" in body or "P4N_U128" in body:
            refuse(None, "a value wider than 64 bits")
        for leftover in ("c->sw->registers", "c->sw->tables", "c->sw->meters",
                         "c->sw->direct_colors", "c->sw->value_sets", "p4n_queue_msg",
                         "c->sw->assertion", "p4n_random"):
            if leftover in body:         # a construct the overrides above did not catch
                refuse(None, leftover)
        types_end = body.index("#define P4N_HDR_T")
        defines_end = body.index("\n", body.index("#define P4N_SM_T")) + 1
        parts = [f"#define P4X_MAX_ARGS {max_args(self.compiled)}",
                 f"#define P4X_LOCKED {int(bool(self.registers))}", '#include "p4x.h"',
                 body[:types_end], *self.counter_maps(), *self.register_maps(),
                 *self.table_maps(), body[types_end:defines_end], '#include "p4x_state.inc"',
                 body[defines_end:], '#include "p4x_main.inc"']
        return "\n".join(parts) + "\n"


def emit_xdp(program, compiled) -> str:
    """The eBPF C of `program`; XdpUnsupported for what the XDP back end refuses (also each
    refusal of the C emitter, reworded for this back end)."""
    try:
        return XdpEmitter(program, compiled).emit()
    except Unsupported as e:
        raise XdpUnsupported(e.loc, e.message.replace(NOT_SUPPORTED, XDP_NOT_SUPPORTED)) from None
