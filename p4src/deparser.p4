/*
 * deparser.p4 -- IPv4 header checksum of rewritten results and resized packets, and header
 * emission.
 */
#ifndef AGG_DEPARSER_P4
#define AGG_DEPARSER_P4

control AggComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        /* Only results and ATP's packets on to their server (atp/atp.p4) get new IPv4
           addresses, and only header-only packets filled in (aggregation.p4) or results
           stripped (egress_rewrite.p4) new lengths; other packets keep their checksum. */
        update_checksum(
            hdr.ipv4.isValid() && hdr.agg.isValid()
                && (hdr.agg.msg_type == MSG_RESULT || meta.resized == 1 || meta.atp_route == 1),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control AggDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.tcp);
        packet.emit(hdr.agg);
        packet.emit(hdr.atp);
        packet.emit(hdr.values);
    }
}

#endif
