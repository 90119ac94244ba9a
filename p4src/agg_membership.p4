/*
 * agg_membership.p4 -- which job and which member a packet belongs to, and whether it is
 * well formed (agg_wellformed.p4), a known job, a member port, the port's own contributor
 * index, the message type the port may send, a slot inside the job's window.  On failure it
 * only sets meta.drop_reason; the ingress control counts and drops.
 *
 * Tables (filled by the controller, see docs/protocol.md):
 *   agg_jobs     job_id                          -> job_root | job_nonroot
 *   agg_members  job_id, standard_metadata.ingress_port -> member_child | member_parent
 */
#ifndef AGG_MEMBERSHIP_P4
#define AGG_MEMBERSHIP_P4

#include "agg_wellformed.p4"

control AggMembership(inout headers_t hdr,
                      inout metadata_t meta,
                      in standard_metadata_t standard_metadata) {
    action job_root(bit<16> generation, bit<8> fan_in, bit<32> slot_base, bit<16> slot_count,
                    bit<16> mcast_group) {
        meta.generation = generation;
        meta.fan_in = fan_in;
        meta.slot_base = slot_base;
        meta.slot_count = slot_count;
        meta.mcast_group = mcast_group;
        meta.is_root = 1;
    }

    action job_nonroot(bit<16> generation, bit<8> fan_in, bit<32> slot_base,
                       bit<16> slot_count, bit<16> mcast_group,
                       bit<9> parent_port, bit<16> contributor_at_parent) {
        meta.generation = generation;
        meta.fan_in = fan_in;
        meta.slot_base = slot_base;
        meta.slot_count = slot_count;
        meta.mcast_group = mcast_group;
        meta.is_root = 0;
        meta.parent_port = parent_port;
        meta.contributor_at_parent = contributor_at_parent;
    }

    table agg_jobs {
        key = { hdr.agg.job_id: exact; }
        actions = { job_root; job_nonroot; @defaultonly NoAction; }
        default_action = NoAction();
        size = 256;
    }

    /* A host, or a child switch sending its partial aggregate, below this switch. */
    action member_child(bit<16> contributor) {
        meta.from_parent = 0;
        meta.contributor = contributor;
    }

    /* The port towards the parent switch: results come down through it. */
    action member_parent() {
        meta.from_parent = 1;
    }

    table agg_members {
        key = {
            hdr.agg.job_id: exact;
            standard_metadata.ingress_port: exact;
        }
        actions = { member_child; member_parent; @defaultonly NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    AggWellFormed() well_formed;

    apply {
        well_formed.apply(hdr, meta);
        if (meta.drop_reason != DROP_NONE) {
            /* malformed: counted and dropped by the ingress control */
        } else if (!agg_jobs.apply().hit) {
            meta.drop_reason = DROP_UNKNOWN_JOB;
        } else if (!agg_members.apply().hit) {
            meta.drop_reason = DROP_NOT_MEMBER;
        } else if (meta.from_parent == 1) {
            if (hdr.agg.msg_type != MSG_RESULT) {
                meta.drop_reason = DROP_BAD_MSG_TYPE;
            }
        } else if (hdr.agg.msg_type != MSG_CONTRIBUTION) {
            meta.drop_reason = DROP_BAD_MSG_TYPE;
        } else if (hdr.agg.contributor != meta.contributor) {
            meta.drop_reason = DROP_WRONG_CONTRIBUTOR;
        }
        /* The second test guards the registers against a controller that believes the
           switch has more than AGG_SLOTS slots. */
        if (meta.drop_reason == DROP_NONE && (hdr.agg.slot >= meta.slot_count
                || meta.slot_base + (bit<32>)hdr.agg.slot >= AGG_SLOTS)) {
            meta.drop_reason = DROP_SLOT_RANGE;
        }
    }
}

#endif
