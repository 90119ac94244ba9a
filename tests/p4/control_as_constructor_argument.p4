// A control instance handed to another control as a constructor argument and applied by
// it: the callee runs the instance's own body with the instance's own parameter names.
#include <core.p4>
#include <v1model.p4>

header word_t { bit<16> value; bit<8> steps; }
struct headers_t { word_t w; }
struct meta_t { }

control Stage(inout bit<16> acc, inout bit<8> count);

control Double(inout bit<16> v, inout bit<8> n) { apply { v = v + v; n = n + 1; } }
control AddTen(inout bit<16> total, inout bit<8> k) { apply { total = total + 10; k = k + 1; } }

control RunTwice(inout bit<16> acc, inout bit<8> count)(Stage stage) {
    apply { stage.apply(acc, count); stage.apply(acc, count); }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.w); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Double() dbl;
    AddTen() ten;
    RunTwice(dbl) doubleTwice;
    RunTwice(ten) tenTwice;
    apply {
        sm.egress_spec = 1;
        doubleTwice.apply(hdr.w.value, hdr.w.steps);   // x4
        tenTwice.apply(hdr.w.value, hdr.w.steps);      // +20
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.w); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
