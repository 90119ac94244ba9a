/* v1model.p4 for the p4switch target: the declarations of the v1model architecture
 * (bmv2 simple_switch), written from the v1model documentation. */

/* _V1_MODEL_P4_ is the customary guard macro; programs test it to know v1model.p4 is included. */
#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

/* Date-like version of this architecture description. As with p4c, a program that does not
 * choose one gets 20180101: v1model then declares no port type name of its own (so programs may
 * declare PortId_t themselves), and counter, meter and register are indexed by bit<32> and not
 * generic in their index type. Version 20200408 or later (#define V1MODEL_VERSION 20200408
 * before the include, or -DV1MODEL_VERSION=20200408) adds the typedefs and counter<I>,
 * meter<I> and register<T, I>. */
#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

/* Additional match kinds of v1model. */
match_kind {
    range,
    optional,
    selector
}

const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9> PortId_t;
typedef bit<48> EgressInstance_t;
typedef bit<16> McastGrp_t;
#define __V1MODEL_PORT_TYPE PortId_t
#else
#define __V1MODEL_PORT_TYPE bit<9>
#endif

/* Intrinsic metadata of every packet (bmv2 simple_switch fields). */
@metadata @name("standard_metadata")
struct standard_metadata_t {
    __V1MODEL_PORT_TYPE ingress_port;
    __V1MODEL_PORT_TYPE egress_spec;      /* set in ingress: output port */
    __V1MODEL_PORT_TYPE egress_port;      /* read in egress: the port in use */
    bit<32> instance_type;     /* normal, clone, resubmit, recirculate, replication */
    bit<32> packet_length;
    @alias("queueing_metadata.enq_timestamp") bit<32> enq_timestamp;
    @alias("queueing_metadata.enq_qdepth") bit<19> enq_qdepth;
    @alias("queueing_metadata.deq_timedelta") bit<32> deq_timedelta;
    @alias("queueing_metadata.deq_qdepth") bit<19> deq_qdepth;
    @alias("intrinsic_metadata.ingress_global_timestamp") bit<48> ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp") bit<48> egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp") bit<16> mcast_grp;
    @alias("intrinsic_metadata.egress_rid") bit<16> egress_rid;
    bit<1> checksum_error;     /* set when verify_checksum failed */
    error parser_error;        /* error raised by the parser, NoError otherwise */
    @alias("intrinsic_metadata.priority") bit<3> priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* The indexed externs counter, meter and register. From version 20200408 on they are generic
 * in the type I of their index (counter<I>, meter<I>, register<T, I>); before it they are
 * counter, meter and register<T>, indexed by bit<32>. */
#if V1MODEL_VERSION >= 20200408
#define __V1MODEL_INDEX I
#else
#define __V1MODEL_INDEX bit<32>
#endif

/* Indexed packet and/or byte counters. */
#if V1MODEL_VERSION >= 20200408
extern counter<I>
#else
extern counter
#endif
{
    counter(bit<32> size, CounterType type);
    void count(in __V1MODEL_INDEX index);
}

/* One counter per entry of the table that names it in its `counters` property. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

/* Indexed two-rate three-colour meters. */
#if V1MODEL_VERSION >= 20200408
extern meter<I>
#else
extern meter
#endif
{
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in __V1MODEL_INDEX index, out T result);
}

/* One meter per entry of the table that names it in its `meters` property. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* An array of `size` stateful cells of type T. */
#if V1MODEL_VERSION >= 20200408
extern register<T, I>
#else
extern register<T>
#endif
{
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in __V1MODEL_INDEX index);
    void write(in __V1MODEL_INDEX index, in T value);
}

#undef __V1MODEL_INDEX

/* Action profile: actions shared by the entries of several tables. */
extern action_profile {
    action_profile(bit<32> size);
}

/* A pseudo-random number in [lo, hi]. */
extern void random<T>(out T result, in T lo, in T hi);

/* Send `data` to the control plane. */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

/* Drop the packet at the end of ingress (sets egress_spec to the drop port). */
@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (hash(data) mod max) (result = base when max is 0). */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* Action selector: an action profile choosing a member by hash. */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/* Set standard_metadata.checksum_error when condition holds and the checksum is wrong. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* Write the checksum of `data` into `checksum` when condition holds. */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* As above, with the packet payload appended to `data`. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Resubmit the original packet to the ingress parser after ingress. */
extern void resubmit<T>(in T data);
extern void resubmit_preserving_field_list(bit<8> index);

/* Send the deparsed packet back to the ingress parser after egress. */
extern void recirculate<T>(in T data);
extern void recirculate_preserving_field_list(bit<8> index);

/* Clone the packet to a clone session (I2E: after ingress, E2E: after egress). */
extern void clone(in CloneType type, in bit<32> session);
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Keep at most `length` bytes of the packet when it is sent. */
extern void truncate(in bit<32> length);

extern void assert(in bool check);
extern void assume(in bool check);

/* Log a message, optionally with data substituted for "{}" placeholders. */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The programmable blocks of the architecture. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

control VerifyChecksum<H, M>(inout H hdr, inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);

control ComputeChecksum<H, M>(inout H hdr, inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif
