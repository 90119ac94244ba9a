/*
 * agg_values.p4 -- the value processors (SwitchML's per-element ALUs) and the per-slot
 * exponent / overflow state.
 *
 * AggValue handles one of the K values with its own register array (one cell per slot
 * version); AggValues instantiates it K times through AGG_FOR_EACH_VALUE.  meta.value_op says
 * what to do:
 *   VALUE_ADD    first contribution of the version writes, later ones add with |+|
 *                (saturating); the packet's value becomes the running sum
 *   VALUE_LOAD   the stored value replaces the packet's (answering a retransmission)
 *   VALUE_STORE  the packet's value is stored (a result coming down from the parent)
 */
#ifndef AGG_VALUES_CTL_P4
#define AGG_VALUES_CTL_P4

control AggValue(inout int<32> value, in bit<32> cell, in bit<2> op, in bit<1> first,
                 inout bit<1> clipped) {
    register<bit<32>, bit<32>>(AGG_CELLS) cells;

    apply {
        if (op == VALUE_ADD) {
            if (first == 0) {
                bit<32> stored;
                cells.read(stored, cell);
                int<32> sum = (int<32>)stored |+| value;
                /* Saturation clipped iff the saturated sum differs from the wrapped one. */
                if (sum != (int<32>)stored + value) {
                    clipped = 1;
                }
                value = sum;
            }
            cells.write(cell, (bit<32>)value);
        } else if (op == VALUE_LOAD) {
            bit<32> stored;
            cells.read(stored, cell);
            value = (int<32>)stored;
        } else if (op == VALUE_STORE) {
            cells.write(cell, (bit<32>)value);
        }
    }
}

#define AGG_VALUE_UNIT(i) AggValue() value##i;
#define AGG_VALUE_APPLY(i) \
    value##i.apply(hdr.values.v##i, meta.cell, meta.value_op, meta.first, meta.clipped);

control AggValues(inout headers_t hdr, inout metadata_t meta) {
    AGG_FOR_EACH_VALUE(AGG_VALUE_UNIT)

    /* Largest block exponent and "some add clipped" of each slot version. */
    register<bit<8>, bit<32>>(AGG_CELLS) max_exponent;
    register<bit<1>, bit<32>>(AGG_CELLS) overflow;

    apply {
        AGG_FOR_EACH_VALUE(AGG_VALUE_APPLY)

        bit<8> stored_exponent;
        bit<1> stored_overflow;
        if (meta.value_op == VALUE_ADD) {
            if (meta.first == 0) {
                max_exponent.read(stored_exponent, meta.cell);
                if (stored_exponent > hdr.agg.exponent) {
                    hdr.agg.exponent = stored_exponent;
                }
                overflow.read(stored_overflow, meta.cell);
                hdr.agg.overflow = hdr.agg.overflow | stored_overflow;
            }
            /* A child switch's partial carries its own overflow bit in hdr.agg.overflow. */
            hdr.agg.overflow = hdr.agg.overflow | meta.clipped;
            max_exponent.write(meta.cell, hdr.agg.exponent);
            overflow.write(meta.cell, hdr.agg.overflow);
        } else if (meta.value_op == VALUE_LOAD) {
            max_exponent.read(stored_exponent, meta.cell);
            overflow.read(stored_overflow, meta.cell);
            hdr.agg.exponent = stored_exponent;
            hdr.agg.overflow = stored_overflow;
        } else if (meta.value_op == VALUE_STORE) {
            max_exponent.write(meta.cell, hdr.agg.exponent);
            overflow.write(meta.cell, hdr.agg.overflow);
        }
    }
}

#endif
