/*
 * main.p4 -- the in-network aggregation switch (v1model).
 *
 * IPv4 packets to UDP port 9100 are aggregation packets of our design (aggregation.p4), to
 * port 9200 SwitchML's (switchml/switchml.p4), to 9300 ATP's (atp/atp.p4): each design its
 * own control, tables and registers, dispatched by port (contracts/designs/); other IPv4
 * packets are forwarded by ipv4_routes (forwarding.p4) unless they claim the service address as
 * source; everything else is dropped.  Every drop with
 * a reason is counted in drop_reasons (ingress) or egress_drops (egress), indexed by DROP_*.
 * docs/protocol.md describes the protocol, the tables and the counters.
 */
/* The architecture comes from the repository's own core.p4 and v1model.p4 (p4switch/include),
 * by path, so every compiler reads the same declarations and none needs an include path of its
 * own: a p4c whose p4include is missing (a bundle copied without its links) compiles this as
 * is.  With those headers real p4c writes the same P4Info as with its own, and bmv2 JSON that
 * differs only in names p4c derives from line numbers (tests/p4src/test_p4src_p4c.py).  A copy
 * of p4src elsewhere needs p4switch/include beside it. */
#include "../p4switch/include/core.p4"
/* counter<I> and register<T, I> (and their index types) are declared by v1model.p4 only from
 * version 20200408 on; v1model.p4 defaults to 20180101 (as p4c's), so the version is chosen here. */
#define V1MODEL_VERSION 20200408
#include "../p4switch/include/v1model.p4"

#include "headers.p4"
#include "parser.p4"
#include "aggregation.p4"
#include "switchml/switchml.p4"
#include "atp/atp.p4"
#include "forwarding.p4"
#include "egress_rewrite.p4"
#include "deparser.p4"

control AggIngress(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    counter<bit<32>>(DROP_REASON_COUNT, CounterType.packets_and_bytes) drop_reasons;
    Aggregation() aggregation;
    SwitchML() switchml;
    Atp() atp;
    Ipv4Forwarding() forwarding;

    apply {
        bool routed = false;            /* forwarded by its IPv4 destination */
        if (!hdr.ipv4.isValid()) {
            meta.drop_reason = DROP_NOT_IPV4;
        } else if (hdr.udp.isValid() && hdr.udp.dstPort == AGG_UDP_PORT) {
            aggregation.apply(hdr, meta, standard_metadata);
        } else if (hdr.udp.isValid() && hdr.udp.dstPort == SWITCHML_UDP_PORT) {
            switchml.apply(hdr, meta, standard_metadata);
        } else if (hdr.udp.isValid() && hdr.udp.dstPort == ATP_UDP_PORT) {
            atp.apply(hdr, meta, standard_metadata);
            routed = meta.atp_route == 1;        /* on to the job's parameter server */
        } else if (hdr.ipv4.srcAddr == SERVICE_IP) {
            /* Only this switch speaks for the service address (results); a forwarded packet
               from it is a host forging results to a worker's port. */
            meta.drop_reason = DROP_SPOOFED_SOURCE;
        } else {
            routed = true;
        }
        if (routed && meta.drop_reason == DROP_NONE) {
            forwarding.apply(hdr, meta, standard_metadata);
        }
        if (meta.drop_reason != DROP_NONE) {
            drop_reasons.count((bit<32>)meta.drop_reason);
            mark_to_drop(standard_metadata);
        }
    }
}

V1Switch(AggParser(), AggVerifyChecksum(), AggIngress(), AggEgress(),
         AggComputeChecksum(), AggDeparser()) main;
