/*
 * atp/atp.p4 -- ATP (Lao et al., "ATP: In-network Aggregation for Multi-tenant Learning",
 * NSDI'21), its switch as the paper describes it, for IPv4/UDP packets to port 9300
 * (contracts/designs/atp.py).  Best effort: the switch aggregates what it can, and every
 * job's parameter server (a host process, hosts/atp/ps.py) completes the rest.
 *
 * Workers send each fragment (K values at chunk_offset) to the switches' service address,
 * UDP port 9300, naming an aggregator they chose by hashing (job, sequence): agg.slot.  Aggregators are not reserved: every ATP job on the switch shares the pool.
 * A switch aggregates a job's packets at its level (atp_jobs): level 0, a rack switch, sums
 * its rack's workers (bitmap0, by worker index); level 1, the next switch up, sums the
 * racks (bitmap1, by rack).  At most two levels.
 *
 * State of aggregator a (ATP_AGGREGATORS of them, shared by all jobs):
 *   atp_tag[a]     0: free; else 1 << 63 | generation << 34 | level << 32 | chunk_offset:
 *                  the fragment it holds, of which installation of which job (the
 *                  controller's generation, unique per installed job, as in agg_jobs), at
 *                  which level.  A packet for another fragment is a collision; so a tag a
 *                  lost acknowledgement left behind never passes for a later job's.
 *   atp_bitmap[a]  the members (workers, or racks) summed in; atp_count[a] how many
 *   atp_ecn[a]     some packet summed in arrived ECN-marked (IPv4 ECN = CE)
 *   values         AtpValues: the running sum.  A fragment's first packet writes it, a later
 *                  one adds; a packet whose add overflows int32 goes on alone, with its
 *                  own values, and poisons the aggregator:
 *   atp_poisoned[a] an add into it overflowed: its sum is lost, so every later packet of
 *                  the fragment goes on alone too (the members summed before resend theirs:
 *                  a resend frees the aggregator)
 * An aggregator stays taken after its sum went on, until the parameter server's
 * acknowledgement (the result, msg_type RESULT) passes the switch on its way down: that
 * frees it.  So a duplicate of a packet already summed is still recognised and consumed.
 *
 * Outcomes of a worker's or rack's packet (atp_events, ATP_EVENT_* indices):
 *   free aggregator, or the fragment's, new member   ADDED (consumed), or at fan_in
 *                      COMPLETED: the sum goes on, up to the parent (level 0 under a level 1)
 *                      or to the parameter server
 *   member already in the bitmap                       DUPLICATE: consumed
 *   the aggregator holds another fragment              COLLISION: on to the parameter
 *                                                      server unaggregated (collision set)
 *   the add overflows, or overflowed before            OVERFLOW: on unaggregated (overflow
 *                                                      set), the aggregator poisoned
 *   a retransmission (resend set)                      RESEND: the fragment's aggregator
 *                                                      freed, the packet on to the server
 * "On to the parameter server" is by IPv4 routing to the job's server (its MAC and IPv4
 * address, from atp_jobs), at level ATP_LEVEL_PS: the switches on the way route it on
 * untouched, and the one the server hangs off (ps_here) sends it from the service address
 * to the server's UDP port ps_port.  (Addressed to the server from the start, a worker on
 * the server's own host would never send its fragments out; with that worker's address as
 * source, the host would drop them as martians.)  The acknowledgement comes from the server's host to the switch: a switch
 * below the top sends it up (ACK_UP); the top, and every switch it comes down to, frees the
 * fragment's aggregator and multicasts it to the job's members below (ACK_DOWN), each copy
 * addressed by egress_rewrite.p4 (agg_result_addresses, as for every design).
 *
 * Tables (controller/atp.py writes them):
 *   atp_jobs     job_id                                 -> atp_job
 *   atp_members  job_id, standard_metadata.ingress_port -> atp_child(index) | atp_parent
 */
#ifndef ATP_P4
#define ATP_P4

#ifndef ATP_AGGREGATORS
#define ATP_AGGREGATORS AGG_CELLS
#endif

const bit<2> ATP_LEVEL_RACK = 0;   /* a worker's packet: summed by its rack's switch */
const bit<2> ATP_LEVEL_UP   = 1;   /* a rack's sum: summed by the next level */
const bit<2> ATP_LEVEL_PS   = 2;   /* for the parameter server alone */

const bit<8> ATP_EVENT_ADDED     = 0;
const bit<8> ATP_EVENT_COMPLETED = 1;
const bit<8> ATP_EVENT_DUPLICATE = 2;
const bit<8> ATP_EVENT_COLLISION = 3;
const bit<8> ATP_EVENT_OVERFLOW  = 4;
const bit<8> ATP_EVENT_RESEND    = 5;
const bit<8> ATP_EVENT_ACK_UP    = 6;
const bit<8> ATP_EVENT_ACK_DOWN  = 7;
#define ATP_EVENT_COUNT 8

const bit<2> ATP_VALUES_NONE  = 0;
const bit<2> ATP_VALUES_WRITE = 1;   /* a fragment's first packet: its values are the sum */
const bit<2> ATP_VALUES_ADD   = 2;   /* add (saturating; an overflow poisons the aggregator) */

/* One of the K running sums (one instance per value, as agg_values.p4's AggValue): the
   first packet writes it, a later one adds (saturating, `overflow` set when it clipped).
   The sum goes to `sum`, never into the packet: a packet whose add overflowed goes on with
   its own values. */
control AtpValue(in int<32> value, out int<32> sum, in bit<32> cell, in bit<2> op,
                 inout bit<1> overflow) {
    register<bit<32>, bit<32>>(ATP_AGGREGATORS) cells;

    apply {
        sum = value;
        if (op == ATP_VALUES_WRITE) {
            cells.write(cell, (bit<32>)value);
        } else if (op == ATP_VALUES_ADD) {
            bit<32> held;
            cells.read(held, cell);
            sum = (int<32>)held |+| value;
            if (sum != (int<32>)held + value) {
                overflow = 1;
            }
            cells.write(cell, (bit<32>)sum);
        }
    }
}

#define ATP_VALUE_UNIT(i) AtpValue() value##i;
/* The lanes take their cell, operation and overflow bit from the metadata, as AggValue
   does: held in locals across K lanes, they overflowed the XDP back end's stack. */
#define ATP_VALUE_APPLY(i) value##i.apply(hdr.values.v##i, meta.atp_sums.s##i, meta.cell, \
                                          meta.atp_values_op, meta.clipped);
#define ATP_SUM_OUT(i) hdr.values.v##i = meta.atp_sums.s##i;

/* meta.cell: the aggregator; meta.atp_values_op: ATP_VALUES_*; meta.clipped: some add of
   the packet overflowed (0 on entry). */
control AtpValues(in headers_t hdr, inout metadata_t meta) {
    AGG_FOR_EACH_VALUE(ATP_VALUE_UNIT)

    apply {
        AGG_FOR_EACH_VALUE(ATP_VALUE_APPLY)
    }
}

control AtpSwitch(inout headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    AtpValues() atp_sums;
    register<bit<64>, bit<32>>(ATP_AGGREGATORS) atp_tag;
    register<bit<32>, bit<32>>(ATP_AGGREGATORS) atp_bitmap;
    register<bit<8>, bit<32>>(ATP_AGGREGATORS) atp_count;
    register<bit<1>, bit<32>>(ATP_AGGREGATORS) atp_ecn;
    register<bit<1>, bit<32>>(ATP_AGGREGATORS) atp_poisoned;
    counter<bit<32>>(ATP_EVENT_COUNT, CounterType.packets_and_bytes) atp_events;

    action atp_job(bit<16> generation, bit<2> level, bit<8> fan_in, bit<1> is_top,
                   bit<9> parent_port, bit<16> index_at_parent, bit<16> mcast_group,
                   bit<48> ps_mac, bit<32> ps_ip, bit<16> ps_port, bit<1> ps_here) {
        meta.generation = generation;
        meta.atp_level = level;
        meta.fan_in = fan_in;
        meta.is_root = is_top;
        meta.parent_port = parent_port;
        meta.contributor_at_parent = index_at_parent;
        meta.mcast_group = mcast_group;
        meta.atp_ps_mac = ps_mac;
        meta.atp_ps_ip = ps_ip;
        meta.atp_ps_port = ps_port;
        meta.atp_ps_here = ps_here;
    }

    table atp_jobs {
        key = { hdr.agg.job_id: exact; }
        actions = { atp_job; @defaultonly NoAction; }
        default_action = NoAction();
        size = 256;
    }

    /* A worker (level 0) or a rack's switch (level 1) below this switch, by its index. */
    action atp_child(bit<16> index) {
        meta.from_parent = 0;
        meta.contributor = index;
    }

    action atp_parent() {
        meta.from_parent = 1;
    }

    table atp_members {
        key = {
            hdr.agg.job_id: exact;
            standard_metadata.ingress_port: exact;
        }
        actions = { atp_child; atp_parent; @defaultonly NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    /* Unaggregated (or complete at the top): routed on to the job's parameter server. */
    action to_server(bit<8> event) {
        hdr.atp.level = ATP_LEVEL_PS;
        hdr.ethernet.dstAddr = meta.atp_ps_mac;
        hdr.ipv4.dstAddr = meta.atp_ps_ip;
        meta.atp_route = 1;
        atp_events.count((bit<32>)event);
    }

    action consume(bit<8> event) {
        mark_to_drop(standard_metadata);
        atp_events.count((bit<32>)event);
    }

    apply {
        if (!hdr.agg.isValid() || !hdr.atp.isValid()) {
            meta.drop_reason = DROP_TRUNCATED;
        } else if (hdr.agg.num_elements != AGG_NUM_ELEMENTS) {
            meta.drop_reason = DROP_WRONG_K;
        } else if (!hdr.values.isValid()) {
            meta.drop_reason = DROP_TRUNCATED;
        } else if (hdr.udp.length != ATP_UDP_LENGTH || hdr.ipv4.totalLen != ATP_IPV4_LENGTH) {
            meta.drop_reason = DROP_BAD_LENGTH;
        } else if (!atp_jobs.apply().hit) {
            meta.drop_reason = DROP_UNKNOWN_JOB;
        }
        if ((meta.drop_reason == DROP_NONE || meta.drop_reason == DROP_UNKNOWN_JOB)
                && hdr.atp.level == ATP_LEVEL_PS
                && hdr.agg.msg_type == MSG_CONTRIBUTION) {
            /* on its way to a server: routed on untouched, also by switches not in the
               job's tree (meta.atp_ps_here stays 0 without an atp_jobs entry) */
            if (meta.drop_reason == DROP_UNKNOWN_JOB) {
                meta.drop_reason = DROP_NONE;
            }
            meta.atp_route = 1;
            return;
        }
        if (meta.drop_reason != DROP_NONE) {
            return;
        }
        if (!atp_members.apply().hit) {
            meta.drop_reason = DROP_NOT_MEMBER;
        } else if (hdr.agg.flags != 0) {
            meta.drop_reason = DROP_UNSUPPORTED_FLAGS;
        } else if ((bit<32>)hdr.agg.slot >= ATP_AGGREGATORS) {
            meta.drop_reason = DROP_SLOT_RANGE;
        }
        if (meta.drop_reason != DROP_NONE) {
            return;
        }
        hdr.udp.checksum = 0;          /* values or ports change: 0 is "no checksum" */
        bit<32> a = (bit<32>)hdr.agg.slot;
        bit<64> tag = (64w1 << 63) | ((bit<64>)meta.generation << 34)
                      | ((bit<64>)meta.atp_level << 32) | (bit<64>)hdr.agg.chunk_offset;
        bit<64> held;
        atp_tag.read(held, a);

        if (hdr.agg.msg_type == MSG_RESULT) {
            /* the parameter server's acknowledgement, with the fragment's sum */
            if (meta.from_parent == 1 || meta.is_root == 1) {
                if (held == tag) {
                    atp_tag.write(a, 0);
                }
                standard_metadata.mcast_grp = meta.mcast_group;
                atp_events.count((bit<32>)ATP_EVENT_ACK_DOWN);
            } else {
                standard_metadata.egress_spec = meta.parent_port;
                meta.result_up = 1;
                atp_events.count((bit<32>)ATP_EVENT_ACK_UP);
            }
            return;
        }
        if (hdr.agg.msg_type != MSG_CONTRIBUTION || meta.from_parent == 1
                || hdr.atp.level != meta.atp_level) {
            meta.drop_reason = DROP_BAD_MSG_TYPE;
            return;
        }
        if (hdr.agg.contributor != meta.contributor) {
            meta.drop_reason = DROP_WRONG_CONTRIBUTOR;
            return;
        }
        bit<32> mine = (bit<32>)1 << (bit<8>)meta.contributor;   /* bmv2: 8-bit shifts */
        bit<1> marked = (hdr.ipv4.diffserv & 3) == 3 ? 1w1 : 1w0;
        hdr.atp.ecn = hdr.atp.ecn | marked;
        if (hdr.atp.resend == 1) {
            if (held == tag) {
                atp_tag.write(a, 0);
            }
            to_server(ATP_EVENT_RESEND);
        } else if (held != 0 && held != tag) {
            hdr.atp.collision = 1;
            to_server(ATP_EVENT_COLLISION);
        } else {
            bit<32> bitmap = 0;
            bit<8> count = 0;
            bit<1> ecn = 0;
            bit<1> poisoned = 0;
            if (held == tag) {
                atp_bitmap.read(bitmap, a);
                atp_count.read(count, a);
                atp_ecn.read(ecn, a);
                atp_poisoned.read(poisoned, a);
            }
            if (poisoned == 1) {
                /* an add into it overflowed: its sum is lost, every packet goes on alone */
                hdr.agg.overflow = 1;
                to_server(ATP_EVENT_OVERFLOW);
            } else if ((bitmap & mine) != 0) {
                consume(ATP_EVENT_DUPLICATE);
            } else {
                meta.cell = a;
                meta.atp_values_op = held == 0 ? ATP_VALUES_WRITE : ATP_VALUES_ADD;
                atp_sums.apply(hdr, meta);
                if (meta.clipped == 1) {
                    atp_poisoned.write(a, 1);
                    hdr.agg.overflow = 1;
                    to_server(ATP_EVENT_OVERFLOW);
                } else {
                    bitmap = bitmap | mine;
                    count = count + 1;
                    ecn = ecn | hdr.atp.ecn;
                    atp_tag.write(a, tag);
                    atp_bitmap.write(a, bitmap);
                    atp_count.write(a, count);
                    atp_ecn.write(a, ecn);
                    atp_poisoned.write(a, 0);
                    if (count != meta.fan_in) {
                        consume(ATP_EVENT_ADDED);
                    } else {
                        AGG_FOR_EACH_VALUE(ATP_SUM_OUT)
                        hdr.atp.ecn = ecn;
                        if (meta.atp_level == ATP_LEVEL_RACK) {
                            hdr.atp.bitmap0 = bitmap;
                        } else {
                            hdr.atp.bitmap1 = bitmap;
                        }
                        if (meta.is_root == 1) {
                            to_server(ATP_EVENT_COMPLETED);
                        } else {
                            /* the rack's sum, to the next level as its member */
                            hdr.atp.level = ATP_LEVEL_UP;
                            hdr.atp.bitmap1 = (bit<32>)1 << (bit<8>)meta.contributor_at_parent;
                            hdr.agg.contributor = meta.contributor_at_parent;
                            standard_metadata.egress_spec = meta.parent_port;
                            atp_events.count((bit<32>)ATP_EVENT_COMPLETED);
                        }
                    }
                }
            }
        }
    }
}

/* ATP's control: AtpSwitch, then, where the job's server hangs off this switch, what goes
   on to it readdressed from the service address to the server's port (so the packets of a
   worker on the server's own host are not martians there). */
control Atp(inout headers_t hdr,
            inout metadata_t meta,
            inout standard_metadata_t standard_metadata) {
    AtpSwitch() pipeline;

    apply {
        pipeline.apply(hdr, meta, standard_metadata);
        if (meta.atp_route == 1 && meta.atp_ps_here == 1 && meta.drop_reason == DROP_NONE) {
            hdr.ethernet.srcAddr = SERVICE_MAC;
            hdr.ipv4.srcAddr = SERVICE_IP;
            hdr.udp.dstPort = meta.atp_ps_port;
        }
    }
}

#endif
