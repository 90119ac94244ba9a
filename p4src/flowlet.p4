/*
 * flowlet.p4 -- flowlet switching for host traffic: after a pause longer than the flowlet
 * gap, or once a flowlet has carried its maximum of bytes, a flow's next packets may take
 * another of its equal-cost paths.
 *
 * Per-flow ECMP keeps each TCP stream on one path, so a few elephant streams (a ring's
 * inter-pod hops) land on the cores as the hash falls, often two on one core and none on
 * another.  Cutting a stream into flowlets at its pauses and hashing each flowlet anew
 * spreads the bytes, and no packet overtakes an earlier one of its flow as long as the gap
 * is longer than the difference between the paths' delays: everything sent before the pause
 * has left the old path (Kandula et al., "Dynamic load balancing without packet reordering",
 * CCR 2007; Vanini et al., "LetFlow", NSDI 2017).  A stream that never pauses stays one
 * flowlet; a byte limit cuts it into flowcells of that size regardless of pauses (He et al.,
 * "Presto", SIGCOMM 2015: 64 KB), which spreads evenly but may reorder (TCP recovers).
 * Consecutive flowlet numbers move the CRC bits the switches pick with in a fixed cycle, so
 * a flow's flowlets take a switch's ports in turn.
 *
 * flowlet_gap        keyless; its default action, written by the controller (P4Runtime MODIFY
 *                    of the default entry), is set_flowlet_gap(gap_us, max_bytes) (0: no such
 *                    limit).  The initial default, NoAction, leaves flowlets off: meta.flowlet
 *                    stays 0, forwarding.p4's ECMP is per flow and the registers stay 0.
 * flowlet_seen_us    per cell (crc32 of the 5-tuple mod FLOWLET_CELLS): ingress timestamp, in
 *                    microseconds, of the last packet that hashed to the cell.
 * flowlet_number     per cell: the number of the cell's current flowlet; +1 when a packet comes
 *                    more than the gap after the cell's previous one, or would take the
 *                    flowlet past max_bytes.  Flows that share a cell share its flowlets.
 * flowlet_bytes      per cell: bytes (packet lengths) of the current flowlet so far.
 * meta.flowlet       out: the number ECMP hashes with the 5-tuple.
 */
#ifndef AGG_FLOWLET_P4
#define AGG_FLOWLET_P4

control Flowlets(in headers_t hdr,
                 inout metadata_t meta,
                 in standard_metadata_t standard_metadata) {
    register<bit<48>, bit<32>>(FLOWLET_CELLS) flowlet_seen_us;
    register<bit<16>, bit<32>>(FLOWLET_CELLS) flowlet_number;
    register<bit<32>, bit<32>>(FLOWLET_CELLS) flowlet_bytes;
    bit<48> gap_us = 0;
    bit<32> max_bytes = 0;

    action set_flowlet_gap(bit<48> gap, bit<32> max_flowlet_bytes) {
        gap_us = gap;
        max_bytes = max_flowlet_bytes;
    }

    table flowlet_gap {
        actions = { set_flowlet_gap; NoAction; }
        default_action = NoAction();
        size = 1;
    }

    apply {
        flowlet_gap.apply();
        if (gap_us != 0 || max_bytes != 0) {
            bit<32> cell;
            hash(cell, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
                   meta.l4_src_port, meta.l4_dst_port },
                 (bit<32>)FLOWLET_CELLS);
            bit<48> now = standard_metadata.ingress_global_timestamp;
            bit<32> length = standard_metadata.packet_length;
            bit<48> seen;
            bit<16> number;
            bit<32> bytes;
            flowlet_seen_us.read(seen, cell);
            flowlet_number.read(number, cell);
            flowlet_bytes.read(bytes, cell);
            if ((gap_us != 0 && now - seen > gap_us) ||
                (max_bytes != 0 && bytes + length > max_bytes)) {
                number = number + 1;
                flowlet_number.write(cell, number);
                bytes = 0;
            }
            flowlet_bytes.write(cell, bytes + length);
            flowlet_seen_us.write(cell, now);
            meta.flowlet = number;
        }
    }
}

#endif
