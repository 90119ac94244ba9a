/*
 * forwarding.p4 -- plain IPv4 forwarding with ECMP: destination prefix -> one egress port,
 * or a group of equal-cost ports of which the flow's hash picks one.
 * MAC addresses and TTL are left alone: the switches act as one flat layer-2/3 fabric whose
 * hosts all share 10.0.0.0/16 with static ARP entries.
 *
 * ipv4_routes    LPM on the destination -> forward(port), one path, or ecmp(group, buckets),
 *                the destination's equal-cost next hops (controller/topology.py); a miss
 *                drops (DROP_NO_ROUTE).
 * ecmp_buckets   (group, bucket) -> forward(port).  ecmp() sets bucket =
 *                crc16(flowlet, srcAddr, dstAddr, protocol, l4_src_port, l4_dst_port) mod
 *                buckets; a group of n ports with weight w has n * w buckets, bucket b leading
 *                to the (b / w)-th of its sorted ports (controller/entries.py).
 *                With flowlets off (flowlet.p4, meta.flowlet = 0) every packet of a flow (same
 *                5-tuple) thus leaves through the same port -- no reordering -- and flows
 *                spread over the group; with them on, each flowlet of a flow is placed anew.
 *                The flowlet number comes first: CRC-16 starts from 0, so a leading 0 leaves
 *                the per-flow hash as it was, and (unlike a trailing field, whose CRC terms
 *                are nearly the identity) its changes move every bit the switches pick with.
 *                The weight makes the choice (hash mod n*w) / w: the controller gives switches
 *                at different distances from the hosts different weights so that their
 *                choices use different hash bits (with one weight everywhere, CRC's linearity
 *                would make every switch on a path pick the same index, "polarisation", and a
 *                fat tree would use half its cores).
 * The hash and the bucket table are spelled out, not an action_selector, so that bmv2 runs
 * the program as written: p4c's bmv2 back end gives a table with an action profile or
 * selector no default action ("Target does not support default_action ... (due to action
 * profiles)"), and the choice of a member no longer depends on how a target weighs members.
 * Packets without UDP/TCP ports hash with ports 0.  Aggregation traffic (UDP port 9100)
 * never comes here: it follows its job's reduction tree (aggregation.p4).
 */
#ifndef AGG_FORWARDING_P4
#define AGG_FORWARDING_P4

#include "flowlet.p4"

control Ipv4Forwarding(inout headers_t hdr,
                       inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    Flowlets() flowlets;

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action no_route() {
        meta.drop_reason = DROP_NO_ROUTE;
    }

    action ecmp(bit<16> group, bit<16> buckets) {
        meta.ecmp_group = group;
        hash(meta.ecmp_bucket, HashAlgorithm.crc16, 16w0,
             { meta.flowlet, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               meta.l4_src_port, meta.l4_dst_port },
             buckets);
    }

    table ipv4_routes {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { forward; ecmp; no_route; }
        default_action = no_route();
        size = 4096;
    }

    table ecmp_buckets {
        key = {
            meta.ecmp_group: exact;
            meta.ecmp_bucket: exact;
        }
        actions = { forward; no_route; }
        default_action = no_route();
        size = ECMP_BUCKETS;
    }

    apply {
        flowlets.apply(hdr, meta, standard_metadata);
        switch (ipv4_routes.apply().action_run) {
            ecmp: { ecmp_buckets.apply(); }
        }
    }
}

#endif
