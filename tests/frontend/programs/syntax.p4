/* Syntax corner cases: generic extern methods, named arguments, keysets, compound assignment. */
#define V1MODEL_VERSION 20200408
#include <v1model.p4>
typedef bit<8> byte_t;
header eth_h { bit<48> dst; bit<48> src; bit<16> type; }
typedef eth_h eth_t;
enum bit<16> EthType { IPV4 = 0x0800, ARP = 0x0806 }
struct vs_t { bit<16> t; bit<8> p; }
struct H { eth_t eth; eth_h eth2; }
struct M { byte_t b; tuple<bit<8>, bool> tp; bit<32> big; }
extern Gen<T> {
    Gen(bit<32> size);
    T get<I>(in I index);
    R cast_to<R>();
}
bit<8> add(in bit<4> a, in bit<8> b) { return (bit<8>)a + b; }
parser P(packet_in p, out H hdr, inout M m, inout standard_metadata_t sm) {
    value_set<vs_t>(4) pvs;
    state start {
        bit<16> peek = p.lookahead<bit<16>>();
        p.extract(hdr.eth);
        transition select(hdr.eth.type, (bit<8>)hdr.eth.dst[7:0]) {
            (EthType.IPV4 &&& 0xffff, 8w0 &&& 8w0xf0): next;
            (0x0806, _): accept;
            pvs: accept;
            default: reject;
        }
    }
    state next {
        transition select(hdr.eth.src[3:0]) { 4w1 .. 4w7: accept; 0xF: reject; }
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    Gen<bit<16>>(32w1024) g;
    register<bit<32>, bit<32>>(32w16) r;
    action a(@name("value") byte_t v) { m.b = v; exit; }
    action b() { m.big = 0xFFFF_FFFF; m.big[7:0] = 8w3; }
    table t {
        key = { hdr.eth.dst: ternary; hdr.eth.type: exact @name("etype"); }
        actions = { a; @tableonly b; }
        entries = {
            (48w1 &&& 48w0xff, 0x0800) : a(1);
            priority = 5 : (_, EthType.ARP) : b();
            (default, default) : b();
        }
    }
    apply {
        m.tp = { 1, true };
        m.b = add(4w3, 2);
        m.b = add(hdr.eth.type[3:0], 8w2);
        bit<16> v = g.get<bit<8>>(m.b);
        bit<16> w = g.get(32w0);
        r.read(index = 32w1, result = m.big);
        @atomic {
            r.write(1, m.big + 1);
        }
        if (t.apply().miss) { return; }
        switch (t.apply().action_run) {
            a: { }
            default: { log_msg("hi \"there\" {}", { m.b }); }
        }
        m.b = (byte_t)(m.big >> 24);
        m.b = m.b << 1 | m.b >> 7;
        m.b = -m.b;
        m.b = ~m.b & 0x0f ^ 8w0x3;
        m.b = (m.big > 5 && !(m.big < 3)) ? 8w1 : 8w2;
        m.big = (bit<32>)(hdr.eth.type ++ hdr.eth.type);
        m.b = m.b + 8w1 - (bit<8>)2 * 3 / 1 % 7;
        hdr.eth2 = hdr.eth;
        hdr.eth2 = { 1, 2, 3 };
        hdr.eth2 = { dst = 1, src = 2, type = 3 };
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { m.b += 1; m.b |+|= 1; m.big <<= 2; m.big >>= 2; } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out p, in H hdr) { apply { p.emit(hdr); } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
const bool ok = static_assert(H.minSizeInBits() == 224, "size");
const int eth_bytes = eth_h.maxSizeInBytes();
