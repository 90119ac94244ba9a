/* A tour of language features the front end must accept. */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255

typedef bit<48> mac_t;
type bit<32> Addr_t;

enum Color { Red, Green, Blue }
enum bit<8> Proto { TCP = 6, UDP = 17, ICMP = 1 }

error { BadVersion }

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    mac_t dst;
    mac_t src;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  tos;
    bit<16> len;
    bit<16> id;
    bit<3>  flags;
    bit<13> frag;
    bit<8>  ttl;
    Proto   proto;
    bit<16> csum;
    bit<32> src;
    bit<32> dst;
}

header opt_t {
    bit<8> kind;
    varbit<320> data;
}

header tcp_t { bit<16> sport; bit<16> dport; }
header udp_t { bit<16> sport; bit<16> dport; }

header_union l4_t {
    tcp_t tcp;
    udp_t udp;
}

struct pair<T> {
    T first;
    T second;
}

struct learn_t {
    mac_t  src;
    bit<9> port;
}

struct headers {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   eth;
    ipv4_t       ipv4;
    opt_t        opt;
    l4_t         l4;
}

struct metadata {
    pair<bit<16>> ports;
    Color   color;
    bit<16> l4_len;
    bit<8>  meter_color;
    bool    flag;
}

const bit<32> TABLE_SIZE = 1 << 10;
const int<8> MINUS_ONE = -1;

bit<16> swap_bytes(in bit<16> x) {
    return x[7:0] ++ x[15:8];
}

parser FParser(packet_in pkt, out headers hdr, inout metadata meta,
               inout standard_metadata_t sm) {
    value_set<bit<16>>(4) special_types;

    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            special_types: accept;
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4w4, error.BadVersion);
        transition select(hdr.ipv4.ihl) {
            5: dispatch;
            default: parse_opt;
        }
    }
    state parse_opt {
        pkt.extract(hdr.opt, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32 - 8));
        transition dispatch;
    }
    state dispatch {
        transition select(hdr.ipv4.proto) {
            Proto.TCP: parse_tcp;
            Proto.UDP: parse_udp;
            default: accept;
        }
    }
    state parse_tcp {
        pkt.extract(hdr.l4.tcp);
        transition accept;
    }
    state parse_udp {
        pkt.extract(hdr.l4.udp);
        pkt.advance(0);
        transition accept;
    }
}

control FVerify(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.len, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}

control Acl(inout headers hdr, inout metadata meta, inout standard_metadata_t sm)(bit<32> n) {
    direct_counter(CounterType.packets) acl_hits;
    @name("drop_it") action deny() { mark_to_drop(sm); }
    action permit() { }
    table acl {
        key = {
            hdr.ipv4.src : ternary @name("src_addr");
            hdr.ipv4.dst : ternary;
            hdr.ipv4.proto : exact;
            meta.ports.first : range;
            hdr.l4.tcp.isValid() : exact;
        }
        actions = { deny; permit; }
        default_action = permit;
        counters = acl_hits;
        size = n;
        const entries = {
            priority = 10: (0x0a000000 &&& 0xff000000, _, Proto.TCP, 0 .. 1023, true) : deny();
            (_, 32w0x0a000001, Proto.UDP, _, false) : permit();
        }
    }
    apply {
        acl.apply();
    }
}

control FIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Acl(1024) acl_a;
    @name(".global_acl") Acl(64) acl_b;
    direct_meter<bit<8>>(MeterType.bytes) dmeter;
    meter(32w64, MeterType.packets) pmeter;
    action_profile(128) ap;
    bit<8> local_tmp = 0;

    action to_cpu() {
        sm.egress_spec = CPU_PORT;
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = sm.ingress_port;
        hdr.packet_in._pad = 0;
    }
    action forward(bit<9> port, mac_t dmac) {
        sm.egress_spec = port;
        hdr.eth.dst = dmac;
        dmeter.read(meta.meter_color);
    }
    @name("learn") action learn_mac() {
        digest<learn_t>(1, { hdr.eth.src, sm.ingress_port });
    }
    action set_color(Color c) {
        meta.color = c;
    }
    table l2 {
        key = { hdr.eth.dst : exact; }
        actions = { forward; to_cpu; @defaultonly NoAction; }
        meters = dmeter;
        size = TABLE_SIZE;
    }
    table learn_tbl {
        key = { hdr.eth.src : exact; }
        actions = { learn_mac; NoAction; }
        const default_action = learn_mac();
        largest_priority_wins = false;
        priority_delta = 5;
    }
    table profiled {
        key = { hdr.ipv4.dst : lpm; }
        actions = { forward; }
        implementation = ap;
    }
    apply {
        local_tmp = local_tmp + 1;
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }
        switch (l2.apply().action_run) {
            forward: { learn_tbl.apply(); }
            to_cpu:
            NoAction: { }
        }
        if (!learn_tbl.apply().hit) {
            profiled.apply();
        }
        acl_a.apply(hdr, meta, sm);
        acl_b.apply(hdr, meta, sm);
        pmeter.execute_meter((bit<32>)sm.ingress_port, meta.meter_color);
        meta.ports = { hdr.l4.udp.sport, hdr.l4.udp.dport };
        meta.ports = { first = swap_bytes(hdr.l4.udp.sport), second = 16w0 };
        meta.flag = meta.color == Color.Red ? true : false;
        switch (meta.color) {
            Color.Red: { meta.l4_len = 1; }
            Color.Green:
            Color.Blue: { meta.l4_len = 2; }
            default: { }
        }
        bit<16> x = 16w0x00ff |+| 16w0xff00;
        x = x |-| 1;
        x = (bit<16>)(int<16>)MINUS_ONE;
        int<16> y = -5;
        y = y >> 1;
        x = x << 2;
        bit<32> c = (bit<16>)hdr.ipv4.proto ++ 8w0 ++ x[15:8];
        hdr.ipv4.ttl = (bit<8>)c;
        hdr.ipv4.src = (bit<32>)(Addr_t)hdr.ipv4.dst;
        if (hdr.l4.udp.isValid()) {
            hdr.l4.udp = {#};
        }
        log_msg("ttl={}", { hdr.ipv4.ttl });
        random(meta.meter_color, 0, 255);
        clone(CloneType.I2E, 32w5);
        resubmit_preserving_field_list(0);
        truncate(64);
        for (bit<8> i = 0; i < 4; i = i + 1) {
            local_tmp = local_tmp + i;
        }
        for (bit<8> j in 1 .. 3) {
            local_tmp = local_tmp ^ j;
        }
    }
}

control FEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1 && sm.egress_rid != 0) {
            mark_to_drop(sm);
        }
    }
}

control FCompute(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.len, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}

control FDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.l4);
    }
}

V1Switch(FParser(), FVerify(), FIngress(), FEgress(), FCompute(), FDeparser()) main;
