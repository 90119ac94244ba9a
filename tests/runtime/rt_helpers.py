"""Helpers for the runtime end-to-end tests: build a v1model program from its parts."""

import p4switch

EMPTY_CONTROL = "apply { }"

# The v1model version from which counter, meter and register are generic in their index type.
V1MODEL_20200408 = {"V1MODEL_VERSION": "20200408"}


def build(types: str, parser: str, ingress: str, egress: str = EMPTY_CONTROL,
          deparser: str = "apply { packet.emit(hdr); }", verify: str = EMPTY_CONTROL,
          compute: str = EMPTY_CONTROL, name: str = "test", defines=None):
    """Compile a program whose `types` declare `headers` and `metadata`; the other
    arguments are the bodies of the six v1model blocks. `defines` are preprocessor macros
    (V1MODEL_20200408 for counter<I>, meter<I> and register<T, I>)."""
    text = f"""
#include <core.p4>
#include <v1model.p4>
{types}
parser P(packet_in packet, out headers hdr, inout metadata meta,
         inout standard_metadata_t standard_metadata) {{
{parser}
}}
control VC(inout headers hdr, inout metadata meta) {{
{verify}
}}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {{
{ingress}
}}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {{
{egress}
}}
control CC(inout headers hdr, inout metadata meta) {{
{compute}
}}
control D(packet_out packet, in headers hdr) {{
{deparser}
}}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    return p4switch.compile_source(text, name, defines=defines)


def switch(*args, **kwargs):
    """A Switch for `build(*args)`, with a trace log collected in `sw.trace`."""
    lines = []
    sw = p4switch.Switch(build(*args, **kwargs), log=lines.append)
    sw.trace = lines
    return sw
