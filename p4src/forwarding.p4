/*
 * forwarding.p4 -- plain IPv4 forwarding with ECMP: destination prefix -> one egress port,
 * or a group of equal-cost ports of which the flow's hash picks one.
 * MAC addresses and TTL are left alone: the switches act as one flat layer-2/3 fabric whose
 * hosts all share 10.0.0.0/16 with static ARP entries.
 *
 * ipv4_routes    LPM on the destination.  An entry points (P4Runtime indirect table) at a
 *                member of ecmp_selector -- forward(port), one path -- or at a group of such
 *                members, the destination's equal-cost next hops (controller/topology.py).
 * ecmp_selector  members forward(port); in a group, the member chosen for a packet is
 *                crc16(flowlet, srcAddr, dstAddr, protocol, l4_src_port, l4_dst_port) modulo
 *                the group's size, weights counted as repeats.  With flowlets off (flowlet.p4,
 *                meta.flowlet = 0) every packet of a flow (same 5-tuple) thus leaves through
 *                the same port -- no reordering -- and flows spread over the group; with
 *                them on, each flowlet of a flow is placed anew.  The flowlet number comes
 *                first: CRC-16 starts from 0, so a leading 0 leaves the per-flow hash as it
 *                was, and (unlike a trailing field, whose CRC terms are nearly the identity)
 *                its changes move every bit the switches pick with.  A member's weight w makes the choice (hash mod n*w) / w: the
 *                controller gives switches at different distances from the hosts different
 *                weights so that their choices use different hash bits (with one weight
 *                everywhere, CRC's linearity would make every switch on a path pick the same
 *                index, "polarisation", and a fat tree would use half its cores).
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
    @max_group_size(ECMP_MAX_GROUP_SIZE)
    action_selector(HashAlgorithm.crc16, 32w1024, 32w16) ecmp_selector;

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action no_route() {
        meta.drop_reason = DROP_NO_ROUTE;
    }

    table ipv4_routes {
        key = {
            hdr.ipv4.dstAddr: lpm;
            meta.flowlet: selector;
            hdr.ipv4.srcAddr: selector;
            hdr.ipv4.dstAddr: selector;
            hdr.ipv4.protocol: selector;
            meta.l4_src_port: selector;
            meta.l4_dst_port: selector;
        }
        actions = { forward; no_route; }
        default_action = no_route();
        implementation = ecmp_selector;
        size = 4096;
    }

    apply {
        flowlets.apply(hdr, meta, standard_metadata);
        ipv4_routes.apply();
    }
}

#endif
