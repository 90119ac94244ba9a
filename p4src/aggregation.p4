/*
 * aggregation.p4 -- the aggregation pipeline for packets to UDP port 9100:
 * membership/validation -> (header-only packets: K zeros filled in) -> slot state ->
 * value processors -> result sender.
 *
 * A header-only packet (AGG_FLAG_NO_VALUES, docs/protocol.md "Collectives") is accepted by
 * membership with the short lengths and then becomes the full packet it stands for: K zero
 * values, full IPv4/UDP lengths, the flag cleared.  Everything after it (slots, sums,
 * partials, stored results, resends, multicast) is the allreduce pipeline unchanged.  Zeros
 * cannot change a sum: adding 0 never clips (|+| of v and 0 is v), and a first contribution
 * writes 0, which the next ones add to.  The overflow bit is cleared (an empty packet clips
 * nothing); the exponent field is kept, because float32 workers piggy-back the exponent of
 * the slot's next block on it (hosts/ina/quantize.py) and zeros need none: an exponent of 0
 * never wins the max.
 */
#ifndef AGG_AGGREGATION_P4
#define AGG_AGGREGATION_P4

#include "agg_membership.p4"
#include "agg_slot_state.p4"
#include "agg_values.p4"
#include "agg_result.p4"

control Aggregation(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    AggMembership() membership;
    AggSlotState() slot_state;
    AggValues() values;
    AggResultSender() result_sender;

#define AGG_ZERO_VALUE(i) hdr.values.v##i = 0;
    action fill_in_zeros() {
        hdr.values.setValid();
        AGG_FOR_EACH_VALUE(AGG_ZERO_VALUE)
        hdr.ipv4.totalLen = AGG_IPV4_LENGTH;
        hdr.udp.length = AGG_UDP_LENGTH;
        hdr.agg.flags = hdr.agg.flags & ~AGG_FLAG_NO_VALUES;
        hdr.agg.overflow = 0;
        meta.resized = 1;
    }

    apply {
        membership.apply(hdr, meta, standard_metadata);
        if (meta.drop_reason == DROP_NONE && (hdr.agg.flags & AGG_FLAG_NO_VALUES) != 0) {
            fill_in_zeros();
        }
        if (meta.drop_reason == DROP_NONE) {
            slot_state.apply(hdr, meta);
        }
        if (meta.drop_reason == DROP_NONE) {
            values.apply(hdr, meta);
            result_sender.apply(hdr, meta, standard_metadata);
        }
    }
}

#endif
