/*
 * agg_result.p4 -- where an accepted aggregation packet goes (SwitchML's result sender),
 * and the agg_events counter that records what happened to it.
 *
 *   SLOT_ABSORB, SLOT_DUPLICATE   consumed: dropped (not an error, not in drop_reasons)
 *   SLOT_COMPLETE                 root: result to every member through the job's multicast
 *                                 group; non-root: the partial aggregate up to the parent,
 *                                 as a contribution with this switch's index at the parent
 *   SLOT_RESEND                   stored result unicast back to the sender; a non-root that
 *                                 has no result yet re-sends its partial up instead
 *   SLOT_PARENT_RESULT            the parent's result to every member below this switch
 * Results are addressed per member port in egress (egress_rewrite.p4).
 */
#ifndef AGG_RESULT_P4
#define AGG_RESULT_P4

control AggResultSender(inout headers_t hdr,
                        inout metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    counter<bit<32>>(EVENT_COUNT, CounterType.packets_and_bytes) agg_events;

    action to_members(bit<8> event) {
        hdr.agg.msg_type = MSG_RESULT;
        standard_metadata.mcast_grp = meta.mcast_group;
        agg_events.count((bit<32>)event);
    }

    action back_to_sender() {
        hdr.agg.msg_type = MSG_RESULT;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
        agg_events.count((bit<32>)EVENT_RESULT_RESENT);
    }

    action up_to_parent(bit<8> event) {
        hdr.agg.msg_type = MSG_CONTRIBUTION;
        hdr.agg.contributor = meta.contributor_at_parent;
        standard_metadata.egress_spec = meta.parent_port;
        agg_events.count((bit<32>)event);
    }

    action consume(bit<8> event) {
        mark_to_drop(standard_metadata);
        agg_events.count((bit<32>)event);
    }

    apply {
        /* The values changed in flight; an IPv4 UDP checksum of 0 means "none". */
        hdr.udp.checksum = 0;
        if (meta.slot_action == SLOT_ABSORB) {
            consume(EVENT_ADDED);
        } else if (meta.slot_action == SLOT_DUPLICATE) {
            consume(EVENT_DUPLICATE);
        } else if (meta.slot_action == SLOT_COMPLETE) {
            if (meta.is_root == 1) {
                to_members(EVENT_COMPLETED);
            } else {
                up_to_parent(EVENT_SENT_UP);
            }
        } else if (meta.slot_action == SLOT_RESEND) {
            if (meta.is_root == 1 || meta.have_result == 1) {
                back_to_sender();
            } else {
                up_to_parent(EVENT_PARTIAL_RESENT);
            }
        } else if (meta.slot_action == SLOT_PARENT_RESULT) {
            to_members(EVENT_PARENT_RESULT);
        }
    }
}

#endif
