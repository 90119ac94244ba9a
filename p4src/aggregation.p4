/*
 * aggregation.p4 -- the aggregation pipeline for packets to UDP port 9100:
 * membership/validation -> slot state -> value processors -> result sender.
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

    apply {
        membership.apply(hdr, meta, standard_metadata);
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
