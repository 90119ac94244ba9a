/*
 * switchml/switchml.p4 -- SwitchML (Sapio et al., NSDI'21), its switch algorithm as the
 * paper states it, for IPv4/UDP packets to port 9200 (contracts/designs/switchml.py).
 *
 * One switch aggregates (a single rack: the controller refuses a job whose hosts hang off
 * different switches).  A job has a pool of slot_count slots reserved for it on the switch
 * (slot_base .. slot_base + slot_count - 1, the controller's allocator); each slot has two
 * copies (the packet's version bit), so that a worker may send a slot's next chunk into the
 * other copy while stragglers still retransmit into this one, and a slot is reused without
 * a reset.  The packet is agg_t followed by the K values: the fields mean what they mean for
 * our design (slot = the paper's idx, version = ver, contributor = wid, chunk_offset = off,
 * exponent: the block exponent of the slot's next chunk, whose max comes back); the switch
 * reads no offset; flags must be 0 (SwitchML computes allreduce only).
 *
 * State of cell c = 2 * (slot_base + slot) + version (the invariants of the paper's pool):
 *   switchml_seen[c]   bit w set: worker w's packet is in this copy's current aggregation.
 *                      Setting it clears w's bit of the other copy (w has moved on to this
 *                      copy, so its packet for the other one is done with); a packet whose
 *                      bit is already set is a retransmission.
 *   switchml_count[c]  first-seen packets so far, modulo fan_in: 0 = the copy holds a
 *                      complete result (or was never used); only first-seen packets move it
 *   pool values        AggValues (agg_values.p4, its own registers): the first packet of an
 *                      aggregation writes its values and exponent, later ones add; a
 *                      retransmission to a complete copy loads the stored result
 * The controller zeroes switchml_seen and switchml_count of a job's cells when it installs
 * the job (controller/switchml.py): as in SwitchML, a pool starts clean.
 *
 * Outcomes, counted in switchml_events (EVENT_* indices):
 *   first seen, incomplete        EVENT_ADDED: consumed
 *   first seen, completes         EVENT_COMPLETED: the result to every worker (multicast)
 *   retransmission, complete      EVENT_RESULT_RESENT: the stored result back to the sender
 *   retransmission, incomplete    EVENT_DUPLICATE: consumed
 * Results are addressed per port by egress_rewrite.p4 (agg_result_addresses, as for every
 * design) and leave from UDP port 9200.
 *
 * Tables (controller/switchml.py writes them):
 *   switchml_jobs     job_id                                 -> switchml_job
 *   switchml_workers  job_id, standard_metadata.ingress_port -> switchml_worker(wid)
 */
#ifndef SWITCHML_P4
#define SWITCHML_P4

#include "../agg_wellformed.p4"
#include "../agg_values.p4"

control SwitchML(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    AggWellFormed() well_formed;
    AggValues() pool;
    register<bit<64>, bit<32>>(AGG_CELLS) switchml_seen;
    register<bit<8>, bit<32>>(AGG_CELLS) switchml_count;
    counter<bit<32>>(EVENT_COUNT, CounterType.packets_and_bytes) switchml_events;

    action switchml_job(bit<8> fan_in, bit<32> slot_base, bit<16> slot_count,
                        bit<16> mcast_group) {
        meta.fan_in = fan_in;
        meta.slot_base = slot_base;
        meta.slot_count = slot_count;
        meta.mcast_group = mcast_group;
    }

    table switchml_jobs {
        key = { hdr.agg.job_id: exact; }
        actions = { switchml_job; @defaultonly NoAction; }
        default_action = NoAction();
        size = 256;
    }

    action switchml_worker(bit<16> wid) {
        meta.contributor = wid;
    }

    table switchml_workers {
        key = {
            hdr.agg.job_id: exact;
            standard_metadata.ingress_port: exact;
        }
        actions = { switchml_worker; @defaultonly NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    action to_workers() {
        hdr.agg.msg_type = MSG_RESULT;
        standard_metadata.mcast_grp = meta.mcast_group;
        switchml_events.count((bit<32>)EVENT_COMPLETED);
    }

    action back_to_sender() {
        hdr.agg.msg_type = MSG_RESULT;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
        switchml_events.count((bit<32>)EVENT_RESULT_RESENT);
    }

    action consume(bit<8> event) {
        mark_to_drop(standard_metadata);
        switchml_events.count((bit<32>)event);
    }

    apply {
        well_formed.apply(hdr, meta);
        if (meta.drop_reason != DROP_NONE) {
            /* malformed: counted and dropped by the ingress control */
        } else if (!switchml_jobs.apply().hit) {
            meta.drop_reason = DROP_UNKNOWN_JOB;
        } else if (!switchml_workers.apply().hit) {
            meta.drop_reason = DROP_NOT_MEMBER;
        } else if (hdr.agg.msg_type != MSG_CONTRIBUTION) {
            meta.drop_reason = DROP_BAD_MSG_TYPE;
        } else if (hdr.agg.flags != 0) {
            meta.drop_reason = DROP_UNSUPPORTED_FLAGS;
        } else if (hdr.agg.contributor != meta.contributor) {
            meta.drop_reason = DROP_WRONG_CONTRIBUTOR;
        } else if (hdr.agg.slot >= meta.slot_count
                   || meta.slot_base + (bit<32>)hdr.agg.slot >= AGG_SLOTS) {
            meta.drop_reason = DROP_SLOT_RANGE;
        }
        if (meta.drop_reason == DROP_NONE) {
            meta.cell = ((meta.slot_base + (bit<32>)hdr.agg.slot) << 1)
                        | (bit<32>)hdr.agg.version;
            bit<32> other = meta.cell ^ 1;
            bit<64> mask = (bit<64>)1 << (bit<8>)meta.contributor;   /* bmv2: 8-bit shifts */
            bit<64> seen;
            bit<8> count;
            switchml_seen.read(seen, meta.cell);
            switchml_count.read(count, meta.cell);
            if ((seen & mask) == 0) {
                switchml_seen.write(meta.cell, seen | mask);
                bit<64> other_seen;
                switchml_seen.read(other_seen, other);
                switchml_seen.write(other, other_seen & ~mask);
                /* count 0 before this packet: it opens the aggregation and writes */
                meta.first = (count == 0) ? 1w1 : 1w0;
                bit<8> now = count + 1;
                if (now == meta.fan_in) {
                    now = 0;
                }
                switchml_count.write(meta.cell, now);
                meta.value_op = VALUE_ADD;
                meta.slot_action = (now == 0) ? SLOT_COMPLETE : SLOT_ABSORB;
            } else if (count == 0) {
                meta.value_op = VALUE_LOAD;
                meta.slot_action = SLOT_RESEND;
            } else {
                meta.slot_action = SLOT_DUPLICATE;
            }
            pool.apply(hdr, meta);
            /* The values changed in flight; an IPv4 UDP checksum of 0 means "none". */
            hdr.udp.checksum = 0;
            if (meta.slot_action == SLOT_COMPLETE) {
                to_workers();
            } else if (meta.slot_action == SLOT_RESEND) {
                back_to_sender();
            } else if (meta.slot_action == SLOT_ABSORB) {
                consume(EVENT_ADDED);
            } else {
                consume(EVENT_DUPLICATE);
            }
        }
    }
}

#endif
