/*
 * agg_slot_state.p4 -- per slot version: who has contributed, how many, and whether the
 * stored values are the final result (SwitchML's bitmap checker).  Decides
 * meta.slot_action and meta.value_op for the value processors and the result sender.
 *
 * State of cell c = 2 * (slot_base + slot) + version:
 *   owner[c]         generation of the job installation that last used the cell; a cell
 *                    owned by another generation is stale (left by an earlier job on the
 *                    same slots) and counts as empty -- bmv2 cannot reset registers over
 *                    P4Runtime, so the controller never has to
 *   seen[c]          bit i set: contributor i's contribution is in this version
 *   count[c]         contributions so far; reset to 0 when the slot completes, so that
 *                    "seen and count == 0" means "this version is complete"
 *   result_ready[c]  the value registers hold the final result (root: on completion;
 *                    non-root: once the parent's result came down)
 * A contribution of version v clears the contributor's bit in version 1 - v: the worker only
 * moves to the other version after it has the result of this one, so the other version's bit
 * is stale by then and the cell can be reused.
 */
#ifndef AGG_SLOT_STATE_P4
#define AGG_SLOT_STATE_P4

control AggSlotState(inout headers_t hdr, inout metadata_t meta) {
    register<bit<16>, bit<32>>(AGG_CELLS) owner;
    register<bit<32>, bit<32>>(AGG_CELLS) seen;
    register<bit<8>, bit<32>>(AGG_CELLS) count;
    register<bit<1>, bit<32>>(AGG_CELLS) result_ready;

    apply {
        meta.cell = ((meta.slot_base + (bit<32>)hdr.agg.slot) << 1) | (bit<32>)hdr.agg.version;
        bit<16> cell_owner;
        owner.read(cell_owner, meta.cell);
        bit<8> arrived = 0;
        bit<32> this_seen = 0;
        if (cell_owner == meta.generation) {
            count.read(arrived, meta.cell);
            seen.read(this_seen, meta.cell);
        }

        if (meta.from_parent == 1) {
            /* A result may only land on a version of this installation that is not
               collecting a new round. */
            if (cell_owner != meta.generation || arrived != 0) {
                meta.drop_reason = DROP_STALE_RESULT;
            } else {
                result_ready.write(meta.cell, 1);
                meta.slot_action = SLOT_PARENT_RESULT;
                meta.value_op = VALUE_STORE;
            }
        } else {
            bit<32> mask = (bit<32>)1 << meta.contributor;
            bit<32> other_cell = meta.cell ^ 1;
            bit<32> other_seen;
            seen.read(other_seen, other_cell);
            seen.write(other_cell, other_seen & ~mask);

            if ((this_seen & mask) == 0) {
                owner.write(meta.cell, meta.generation);
                seen.write(meta.cell, this_seen | mask);
                meta.value_op = VALUE_ADD;
                if (arrived == 0) {
                    meta.first = 1;
                    result_ready.write(meta.cell, 0);
                }
                bit<8> now = arrived + 1;
                if (now == meta.fan_in) {
                    count.write(meta.cell, 0);
                    result_ready.write(meta.cell, meta.is_root);
                    meta.slot_action = SLOT_COMPLETE;
                } else {
                    count.write(meta.cell, now);
                    meta.slot_action = SLOT_ABSORB;
                }
            } else if (arrived != 0) {
                meta.slot_action = SLOT_DUPLICATE;
            } else {
                /* Retransmission of a completed version: answer (root or result known) or
                   re-send the partial aggregate up (non-root still waiting). */
                meta.slot_action = SLOT_RESEND;
                meta.value_op = VALUE_LOAD;
                result_ready.read(meta.have_result, meta.cell);
            }
        }
    }
}

#endif
