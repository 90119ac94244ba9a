// State and control-plane values over 64 and over 128 bits: registers of bit<256>,
// int<200> and bit<100> cells, a digest with such fields, a value_set<bit<160>>, tables with
// a bit<256> exact key, a bit<100> range key and bit<200> action data, a crc32 over wide
// fields, and lookahead of a bit<160>.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<160> tag;
    bit<256> key;
    bit<100> r;
    int<200> c;
    bit<8>   op;
    bit<200> data;      // written by the tables
    bit<256> prev;      // the register cell before
    bit<32>  crc;
    bit<4>   pad;
}

struct headers_t { h_t h; }
struct meta_t { bit<8> tagged; }
struct learn_t { bit<256> key; bit<100> r; int<200> c; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<160>>(4) known;
    state start {
        transition select(pkt.lookahead<bit<160>>()) {
            known: tagged;
            default: plain;
        }
    }
    state tagged { meta.tagged = 1; transition plain; }
    state plain { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<256>>(4) big;
    register<int<200>>(4) signed_cells;
    register<bit<100>>(4) mid;

    action set_data(bit<200> v) { hdr.h.data = v; }
    action add_data(bit<200> v) { hdr.h.data = hdr.h.data + v; }
    table by_key {
        key = { hdr.h.key: exact; }
        actions = { set_data; NoAction; }
        default_action = NoAction();
    }
    table by_range {
        key = { hdr.h.r: range; }
        actions = { add_data; NoAction; }
        default_action = NoAction();
    }

    apply {
        bit<32> i = (bit<32>)hdr.h.op & 3;
        big.read(hdr.h.prev, i);
        big.write(i, hdr.h.prev + hdr.h.key);
        int<200> s;
        signed_cells.read(s, i);
        signed_cells.write(i, s + hdr.h.c);
        bit<100> m;
        mid.read(m, i);
        mid.write(i, m ^ hdr.h.r);
        by_key.apply();
        by_range.apply();
        hash(hdr.h.crc, HashAlgorithm.crc32, 32w0, { hdr.h.key, hdr.h.c }, 33w0x100000000);
        if (meta.tagged == 1) {
            digest<learn_t>(1, { hdr.h.key, hdr.h.r, hdr.h.c });
        }
        log_msg("key={} r={} c={}", { hdr.h.key, hdr.h.r, hdr.h.c });
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
