/*
 * egress_rewrite.p4 -- addresses each copy of a result to the member on its egress port:
 * destination MAC, IPv4 address and UDP port of that member (a worker: its host and port
 * 20000 + job; a child switch: the service address and port 9100), source = the service
 * address and the UDP port the design's packets are sent to (9100 ours, 9200 SwitchML, 9300
 * ATP).  ATP's acknowledgements on their way up to the top of the job's tree keep their
 * addresses (meta.result_up).  A result copy for a port without an entry is dropped and counted.
 *
 * A result with AGG_FLAG_TO_OWNER (a sum into shards or to a root: docs/protocol.md
 * "Collectives") keeps its values only on the port towards its owner rank; every other copy
 * leaves header only (values removed, IPv4/UDP lengths shortened by 4K, AGG_FLAG_NO_VALUES
 * set).  It is not dropped: it still tells a worker that the slot's round is complete (its
 * window moves on), and a child switch stores it as K zeros (aggregation.p4), which only
 * ever go on to ports that are not towards the owner either.
 *
 * Tables: agg_result_addresses  job_id, standard_metadata.egress_port -> result_to
 *         agg_owner_ports       job_id, owner, standard_metadata.egress_port -> toward_owner;
 *                               default (miss) strip_values.  Invariant: on every switch of
 *                               a job's tree, one entry per worker rank below the switch,
 *                               naming the child port that leads to it (controller/entries.py);
 *                               results never leave through the parent port, so ranks above
 *                               need none, and an owner no entry names (NO_OWNER) gets its
 *                               values nowhere.
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
        hdr.udp.srcPort = hdr.udp.dstPort;   /* from the port its design's packets go to */
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

    /* This port leads towards the owner: the copy keeps its values. */
    action toward_owner() { }

    action strip_values() {
        hdr.values.setInvalid();
        hdr.ipv4.totalLen = AGG_HEADER_ONLY_IPV4_LENGTH;
        hdr.udp.length = AGG_HEADER_ONLY_UDP_LENGTH;
        hdr.agg.flags = hdr.agg.flags | AGG_FLAG_NO_VALUES;
        meta.resized = 1;
    }

    table agg_owner_ports {
        key = {
            hdr.agg.job_id: exact;
            hdr.agg.owner: exact;
            standard_metadata.egress_port: exact;
        }
        actions = { toward_owner; @defaultonly strip_values; }
        default_action = strip_values();
        size = 65536;
    }

    apply {
        if (hdr.agg.isValid() && hdr.agg.msg_type == MSG_RESULT && meta.result_up == 0) {
            agg_result_addresses.apply();
            if ((hdr.agg.flags & AGG_FLAG_TO_OWNER) != 0) {
                agg_owner_ports.apply();
            }
        }
    }
}

#endif
