/*
 * agg_slot_state.p4 -- per slot version: which round it holds, who has contributed, how
 * many, and whether the stored values are the final result (SwitchML's bitmap checker,
 * extended so that late and duplicated packets are recognised).  Decides meta.slot_action
 * and meta.value_op for the value processors and the result sender.
 *
 * State of cell c = 2 * (slot_base + slot) + version:
 *   owner[c]         generation of the job installation that last used the cell; a cell
 *                    owned by another generation is stale (left by an earlier job on the
 *                    same slots) and counts as empty -- bmv2 cannot reset registers over
 *                    P4Runtime, so the controller never has to
 *   round_offset[c]  chunk_offset of the round the cell holds.  Rounds of one slot version
 *                    have strictly increasing offsets, so a packet with a smaller offset, or
 *                    another offset while the cell collects, belongs to a round the cell has
 *                    left: it is dropped (stale_contribution) and never added
 *   seen[c]          bit i set: contributor i's contribution is in this round
 *   count[c]         contributions so far; reset to 0 when the round completes, so that
 *                    "count == 0" means "this round is complete"
 *   result_ready[c]  the value registers hold the final result (root: on completion;
 *                    non-root: once the parent's result came down)
 * A round starts when a contribution with a larger offset reaches the cell.  On a complete
 * cell that is the slot's next round.  On a collecting cell it never happens while no switch
 * restarts (the protocol lets a worker send a slot's next round only after the previous one
 * is complete everywhere); after a restart a worker that is one round behind re-sends the
 * round before its current one (docs/protocol.md, "Switch restarts"), which nobody needs:
 * the larger offset supersedes it, so the round the others wait for can be collected.
 */
#ifndef AGG_SLOT_STATE_P4
#define AGG_SLOT_STATE_P4

control AggSlotState(inout headers_t hdr, inout metadata_t meta) {
    register<bit<16>, bit<32>>(AGG_CELLS) owner;
    register<bit<32>, bit<32>>(AGG_CELLS) round_offset;
    register<bit<64>, bit<32>>(AGG_CELLS) seen;
    register<bit<8>, bit<32>>(AGG_CELLS) count;
    register<bit<1>, bit<32>>(AGG_CELLS) result_ready;

    apply {
        meta.cell = ((meta.slot_base + (bit<32>)hdr.agg.slot) << 1) | (bit<32>)hdr.agg.version;
        bit<16> cell_owner;
        owner.read(cell_owner, meta.cell);
        bool fresh = cell_owner != meta.generation;
        bit<8> arrived = 0;
        bit<64> this_seen = 0;
        bit<32> cell_offset = 0;
        if (!fresh) {
            count.read(arrived, meta.cell);
            seen.read(this_seen, meta.cell);
            round_offset.read(cell_offset, meta.cell);
        }
        bool same_round = !fresh && cell_offset == hdr.agg.chunk_offset;

        if (meta.from_parent == 1) {
            /* A result may only land on the complete round it is the result of. */
            if (!same_round || arrived != 0) {
                meta.drop_reason = DROP_STALE_RESULT;
            } else {
                result_ready.write(meta.cell, 1);
                meta.slot_action = SLOT_PARENT_RESULT;
                meta.value_op = VALUE_STORE;
            }
        } else {
            bit<64> mask = (bit<64>)1 << (bit<8>)meta.contributor;   /* bmv2: shift amounts are 8 bits */
            if (fresh || hdr.agg.chunk_offset > cell_offset) {
                /* First contribution of a new round (or one that supersedes an unneeded
                   re-sent round, see above): it writes the values. */
                owner.write(meta.cell, meta.generation);
                round_offset.write(meta.cell, hdr.agg.chunk_offset);
                result_ready.write(meta.cell, 0);
                meta.first = 1;
                meta.value_op = VALUE_ADD;
                this_seen = 0;
                arrived = 0;
            } else if (!same_round) {
                meta.drop_reason = DROP_STALE_CONTRIBUTION;
            } else if (arrived == 0) {
                /* Retransmission of the complete round: answer (root or result known) or
                   re-send the partial aggregate up (non-root still waiting). */
                meta.slot_action = SLOT_RESEND;
                meta.value_op = VALUE_LOAD;
                result_ready.read(meta.have_result, meta.cell);
            } else if ((this_seen & mask) != 0) {
                meta.slot_action = SLOT_DUPLICATE;
            } else {
                meta.value_op = VALUE_ADD;
            }
            if (meta.value_op == VALUE_ADD) {
                /* A new contribution: into the bitmap and the count. */
                seen.write(meta.cell, this_seen | mask);
                bit<8> now = arrived + 1;
                if (now == meta.fan_in) {
                    count.write(meta.cell, 0);
                    result_ready.write(meta.cell, meta.is_root);
                    meta.slot_action = SLOT_COMPLETE;
                } else {
                    count.write(meta.cell, now);
                    meta.slot_action = SLOT_ABSORB;
                }
            }
        }
    }
}

#endif
