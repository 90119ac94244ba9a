/*
 * parser.p4 -- Ethernet / IPv4 / UDP or TCP, and on UDP destination port 9100 (ours) or
 * 9200 (SwitchML) the aggregation header followed by the K values; on 9300 (ATP) the
 * aggregation header, ATP's and the K values.
 *
 * meta.l4_src_port / l4_dst_port hold the UDP or TCP ports of an option-less, unfragmented
 * datagram and stay 0 otherwise (v1model zeroes user metadata): the flow key ECMP hashes.
 *
 * The values are extracted only when num_elements equals AGG_K, so that ingress can tell a
 * wrong K (agg valid, values invalid, num_elements != K) from a truncated packet (agg or
 * values invalid).  v1model hands packets whose parsing failed to ingress anyway, with the
 * headers that could not be extracted left invalid.
 */
#ifndef AGG_PARSER_P4
#define AGG_PARSER_P4

parser AggParser(packet_in packet,
                 out headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        /* Only option-less, unfragmented datagrams: with options the UDP header is not where
           we look, and a fragment does not hold a whole UDP datagram (MF = flags bit 0). */
        transition select(hdr.ipv4.ihl, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (4w5, 3w0 &&& 3w1, 13w0, IP_PROTO_UDP): parse_udp;
            (4w5, 3w0 &&& 3w1, 13w0, IP_PROTO_TCP): parse_tcp;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        meta.l4_src_port = hdr.tcp.srcPort;
        meta.l4_dst_port = hdr.tcp.dstPort;
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        meta.l4_src_port = hdr.udp.srcPort;
        meta.l4_dst_port = hdr.udp.dstPort;
        transition select(hdr.udp.dstPort) {
            AGG_UDP_PORT: parse_agg;
            SWITCHML_UDP_PORT: parse_agg;
            ATP_UDP_PORT: parse_atp;
            default: accept;
        }
    }

    state parse_agg {
        packet.extract(hdr.agg);
        transition select(hdr.agg.num_elements) {
            AGG_NUM_ELEMENTS: parse_values;
            default: accept;
        }
    }

    state parse_atp {
        packet.extract(hdr.agg);
        packet.extract(hdr.atp);
        transition select(hdr.agg.num_elements) {
            AGG_NUM_ELEMENTS: parse_values;
            default: accept;
        }
    }

    state parse_values {
        packet.extract(hdr.values);
        transition accept;
    }
}

control AggVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    /* Checksums are not verified: hosts and links in the emulation do not corrupt packets. */
    apply { }
}

#endif
