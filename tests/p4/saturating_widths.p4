// Saturating |+| and |-| at the widths around 64 bits (32, 62, 63, 64), unsigned and signed:
// each pair (a, b) becomes (a |+| b, a |-| b).  The back ends compute widths up to 62 in 64
// bits and wider ones in 128 (p4n_values.h), so both sides of that line are here.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<32> u32a; bit<32> u32b; int<32> s32a; int<32> s32b;
    bit<2> p0; bit<62> u62a; bit<2> p1; bit<62> u62b;
    bit<2> p2; int<62> s62a; bit<2> p3; int<62> s62b;
    bit<1> p4; bit<63> u63a; bit<1> p5; bit<63> u63b;
    bit<1> p6; int<63> s63a; bit<1> p7; int<63> s63b;
    bit<64> u64a; bit<64> u64b; int<64> s64a; int<64> s64b;
}

struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<32> u32 = hdr.h.u32a |-| hdr.h.u32b; hdr.h.u32a = hdr.h.u32a |+| hdr.h.u32b; hdr.h.u32b = u32;
        int<32> s32 = hdr.h.s32a |-| hdr.h.s32b; hdr.h.s32a = hdr.h.s32a |+| hdr.h.s32b; hdr.h.s32b = s32;
        bit<62> u62 = hdr.h.u62a |-| hdr.h.u62b; hdr.h.u62a = hdr.h.u62a |+| hdr.h.u62b; hdr.h.u62b = u62;
        int<62> s62 = hdr.h.s62a |-| hdr.h.s62b; hdr.h.s62a = hdr.h.s62a |+| hdr.h.s62b; hdr.h.s62b = s62;
        bit<63> u63 = hdr.h.u63a |-| hdr.h.u63b; hdr.h.u63a = hdr.h.u63a |+| hdr.h.u63b; hdr.h.u63b = u63;
        int<63> s63 = hdr.h.s63a |-| hdr.h.s63b; hdr.h.s63a = hdr.h.s63a |+| hdr.h.s63b; hdr.h.s63b = s63;
        bit<64> u64 = hdr.h.u64a |-| hdr.h.u64b; hdr.h.u64a = hdr.h.u64a |+| hdr.h.u64b; hdr.h.u64b = u64;
        int<64> s64 = hdr.h.s64a |-| hdr.h.s64b; hdr.h.s64a = hdr.h.s64a |+| hdr.h.s64b; hdr.h.s64b = s64;
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
