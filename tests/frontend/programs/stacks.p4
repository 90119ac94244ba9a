/* Header stacks: source routing (pop_front) and a hop trace (push_front), with counters,
 * registers and hashing. */
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#define MAX_HOPS 4
#define REG_SIZE 256

typedef bit<9> port_t;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header srcRoute_t {
    bit<1>  bos;
    bit<15> port;
}

header trace_t {
    bit<32> swid;
    bit<32> qdepth;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

struct parser_meta_t {
    bit<8> remaining;
}

struct metadata {
    parser_meta_t parser_metadata;
    bit<16> hash_value;
    bit<1>  seen;
}

struct headers {
    ethernet_t           ethernet;
    srcRoute_t[MAX_HOPS] srcRoutes;
    trace_t[MAX_HOPS]    traces;
    ipv4_t               ipv4;
}

parser SRParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_srcRouting;
            0x800 : parse_ipv4;
            default: accept;
        }
    }
    state parse_srcRouting {
        packet.extract(hdr.srcRoutes.next);
        transition select(hdr.srcRoutes.last.bos) {
            1: parse_ipv4;
            default: parse_srcRouting;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.HeaderTooShort);
        meta.parser_metadata.remaining = 8w2;
        transition select(hdr.ipv4.protocol, hdr.ipv4.ttl) {
            (0x11, 0 .. 10)      : accept;
            (0x06 &&& 0xff, _)   : accept;
            default              : accept;
        }
    }
}

control SRVerify(inout headers hdr, inout metadata meta) { apply { } }

control SRIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    counter(REG_SIZE, CounterType.packets_and_bytes) port_counter;
    register<bit<1>>(REG_SIZE) seen;
    register<bit<32>, bit<8>>(REG_SIZE) last_len;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action srcRoute_nhop() {
        standard_metadata.egress_spec = (port_t)hdr.srcRoutes[0].port;
        hdr.srcRoutes.pop_front(1);
    }
    action srcRoute_finish() {
        hdr.ethernet.etherType = 0x800;
    }
    action update_ttl() {
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    apply {
        if (hdr.srcRoutes[0].isValid()) {
            if (hdr.srcRoutes[0].bos == 1) {
                srcRoute_finish();
            }
            srcRoute_nhop();
            if (hdr.ipv4.isValid()) {
                update_ttl();
            }
        } else {
            drop();
        }
        hash(meta.hash_value, HashAlgorithm.crc16, (bit<16>)0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol }, (bit<32>)REG_SIZE);
        seen.read(meta.seen, (bit<32>)meta.hash_value);
        seen.write((bit<32>)meta.hash_value, 1);
        last_len.write(meta.hash_value[7:0], (bit<32>)hdr.ipv4.totalLen);
        port_counter.count((bit<32>)standard_metadata.ingress_port);
    }
}

control SREgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    action add_trace(bit<32> swid) {
        hdr.traces.push_front(1);
        hdr.traces[0].setValid();
        hdr.traces[0].swid = swid;
        hdr.traces[0].qdepth = (bit<32>)standard_metadata.deq_qdepth;
    }
    table swtrace {
        actions = { add_trace; NoAction; }
        default_action = NoAction();
    }
    apply {
        swtrace.apply();
    }
}

control SRCompute(inout headers hdr, inout metadata meta) { apply { } }

control SRDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.srcRoutes);
        packet.emit(hdr.traces);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(SRParser(), SRVerify(), SRIngress(), SREgress(), SRCompute(), SRDeparser()) main;
