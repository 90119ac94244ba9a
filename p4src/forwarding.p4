/*
 * forwarding.p4 -- plain IPv4 forwarding: destination /32 (or any prefix) -> egress port.
 * MAC addresses and TTL are left alone: the switches act as one flat layer-2/3 fabric whose
 * hosts all share 10.0.0.0/16 with static ARP entries.
 */
#ifndef AGG_FORWARDING_P4
#define AGG_FORWARDING_P4

control Ipv4Forwarding(inout headers_t hdr,
                       inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action no_route() {
        meta.drop_reason = DROP_NO_ROUTE;
    }

    table ipv4_routes {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { forward; no_route; }
        default_action = no_route();
        size = 4096;
    }

    apply {
        ipv4_routes.apply();
    }
}

#endif
