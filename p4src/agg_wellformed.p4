/*
 * agg_wellformed.p4 -- whether an aggregation packet is whole (every design's first check,
 * SwitchML's "validation" stage): complete header and K values, UDP and IPv4 lengths that
 * say exactly that (or, with AGG_FLAG_NO_VALUES, the header alone and lengths that say so).
 * On failure it only sets meta.drop_reason; the ingress control counts and drops.
 * No state: each design applies its own instance.
 */
#ifndef AGG_WELLFORMED_P4
#define AGG_WELLFORMED_P4

control AggWellFormed(in headers_t hdr, inout metadata_t meta) {
    apply {
        bool header_only = hdr.agg.isValid() && (hdr.agg.flags & AGG_FLAG_NO_VALUES) != 0;
        if (!hdr.agg.isValid()) {
            meta.drop_reason = DROP_TRUNCATED;
        } else if (hdr.agg.num_elements != AGG_NUM_ELEMENTS) {
            meta.drop_reason = DROP_WRONG_K;
        } else if (header_only) {
            /* aggregation.p4 fills in the K zeros once the packet is accepted */
            if (hdr.udp.length != AGG_HEADER_ONLY_UDP_LENGTH
                    || hdr.ipv4.totalLen != AGG_HEADER_ONLY_IPV4_LENGTH) {
                meta.drop_reason = DROP_BAD_LENGTH;
            }
        } else if (!hdr.values.isValid()) {
            meta.drop_reason = DROP_TRUNCATED;
        } else if (hdr.udp.length != AGG_UDP_LENGTH || hdr.ipv4.totalLen != AGG_IPV4_LENGTH) {
            meta.drop_reason = DROP_BAD_LENGTH;
        }
    }
}

#endif
