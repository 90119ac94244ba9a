// Test program for several datapath threads: every frame adds `add` to register cell `idx`
// (a read-modify-write) and goes back out of the port it came in on carrying the cell's old
// value; a counter counts frames per ingress port. With the updates atomic, the old values
// seen for a cell are exactly 0, add, 2*add, ... whatever the interleaving.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

header sum_t {
    bit<8>  idx;
    bit<32> add;
    bit<32> old;
}

struct headers_t { ethernet_t eth; sum_t sum; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x88b5: sum; default: accept; }
    }
    state sum { pkt.extract(hdr.sum); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>, bit<32>>(16) sums;
    counter<bit<32>>(16, CounterType.packets) frames_in;

    apply {
        if (!hdr.sum.isValid()) { mark_to_drop(sm); return; }
        frames_in.count((bit<32>)sm.ingress_port);
        bit<32> value;
        sums.read(value, (bit<32>)hdr.sum.idx);
        hdr.sum.old = value;
        sums.write((bit<32>)hdr.sum.idx, value + hdr.sum.add);
        bit<48> to = hdr.eth.src;
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = to;
        sm.egress_spec = sm.ingress_port;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.sum); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
