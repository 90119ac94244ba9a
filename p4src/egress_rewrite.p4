/*
 * egress_rewrite.p4 -- addresses each copy of a result to the member on its egress port:
 * destination MAC, IPv4 address and UDP port of that member (a worker: its host and port
 * 20000 + job; a child switch: the service address and port 9100), source = the service
 * address.  A result copy for a port without an entry is dropped and counted.
 *
 * Table: agg_result_addresses  job_id, standard_metadata.egress_port -> result_to
 */
#ifndef AGG_EGRESS_REWRITE_P4
#define AGG_EGRESS_REWRITE_P4

control AggEgress(inout headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    counter<bit<32>>(DROP_REASON_COUNT, CounterType.packets_and_bytes) egress_drops;

    action result_to(bit<48> mac, bit<32> ip, bit<16> udp_port) {
        hdr.ethernet.srcAddr = SERVICE_MAC;
        hdr.ethernet.dstAddr = mac;
        hdr.ipv4.srcAddr = SERVICE_IP;
        hdr.ipv4.dstAddr = ip;
        hdr.udp.srcPort = AGG_UDP_PORT;
        hdr.udp.dstPort = udp_port;
    }

    action unaddressed() {
        egress_drops.count((bit<32>)DROP_NO_RESULT_ADDRESS);
        mark_to_drop(standard_metadata);
    }

    table agg_result_addresses {
        key = {
            hdr.agg.job_id: exact;
            standard_metadata.egress_port: exact;
        }
        actions = { result_to; @defaultonly unaddressed; }
        default_action = unaddressed();
        size = 4096;
    }

    apply {
        if (hdr.agg.isValid() && hdr.agg.msg_type == MSG_RESULT) {
            agg_result_addresses.apply();
        }
    }
}

#endif
