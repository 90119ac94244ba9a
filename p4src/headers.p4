/*
 * headers.p4 -- compile-time constants, wire headers and metadata of the aggregation program.
 *
 * Compile-time knobs (set with -D on the compiler command line):
 *   AGG_K      values per aggregation packet: 1, 2, 4, 8, 16, 32, 64, 128 or 256
 *              (default 64)
 *   AGG_SLOTS  aggregation slots on this switch, shared by all jobs (default 1024)
 * The wire format is specified in docs/protocol.md.
 */
#ifndef AGG_HEADERS_P4
#define AGG_HEADERS_P4

#ifndef AGG_K
#define AGG_K 64
#endif
#ifndef AGG_SLOTS
#define AGG_SLOTS 1024
#endif

/* Largest ECMP group (its ports times their weight: its buckets) of forwarding.p4. */
#define ECMP_MAX_GROUP_SIZE 256
/* Entries of forwarding.p4's ecmp_buckets: every switch's groups' buckets together. */
#define ECMP_BUCKETS 4096
/* Cells of flowlet.p4's per-flow state (flows are hashed into them). */
#define FLOWLET_CELLS 4096

/* Every slot has two versions; register cell of (slot, version) is 2 * slot + version. */
#define AGG_CELLS (2 * AGG_SLOTS)

#include "values.p4"

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_TCP   = 6;
const bit<8>  IP_PROTO_UDP   = 17;
const bit<16> AGG_UDP_PORT   = 9100;
/* SwitchML's packets (switchml/switchml.p4): the same header and values, its own port. */
const bit<16> SWITCHML_UDP_PORT = 9200;
/* ATP's packets (atp/atp.p4): the aggregation header, ATP's own (atp_t), the values. */
const bit<16> ATP_UDP_PORT = 9300;
const bit<16> AGG_NUM_ELEMENTS = AGG_K;
/* Lengths of a well-formed aggregation packet: UDP header + 16-byte header + K values. */
const bit<16> AGG_UDP_LENGTH  = 8 + 16 + 4 * AGG_K;
const bit<16> AGG_IPV4_LENGTH = 20 + AGG_UDP_LENGTH;
const bit<16> ATP_UDP_LENGTH  = 8 + 16 + 12 + 4 * AGG_K;
const bit<16> ATP_IPV4_LENGTH = 20 + ATP_UDP_LENGTH;

/* The aggregation service address: results leave the switch from it. */
const bit<48> SERVICE_MAC = 0x02000a00fffe;
const bit<32> SERVICE_IP  = 0x0a00fffe;      /* 10.0.255.254 */

const bit<4> MSG_CONTRIBUTION = 1;
const bit<4> MSG_RESULT       = 2;

/* agg_t.flags (docs/protocol.md, "Collectives"). */
const bit<2> AGG_FLAG_NO_VALUES = 1;   /* no values follow the header: they count as K zeros */
const bit<2> AGG_FLAG_TO_OWNER  = 2;   /* a result's values go only towards agg_t.owner */
/* Lengths of a header-only (NO_VALUES) aggregation packet. */
const bit<16> AGG_HEADER_ONLY_UDP_LENGTH  = 8 + 16;
const bit<16> AGG_HEADER_ONLY_IPV4_LENGTH = 20 + AGG_HEADER_ONLY_UDP_LENGTH;

/* Drop reasons: index of the drop_reasons / egress_drops counters (0 = not dropped). */
const bit<8> DROP_NONE              = 0;
const bit<8> DROP_NOT_IPV4          = 1;   /* unknown ethertype or truncated IPv4 header */
const bit<8> DROP_NO_ROUTE          = 2;   /* plain IPv4 packet without an ipv4_routes entry */
const bit<8> DROP_TRUNCATED         = 3;   /* aggregation packet shorter than header + K values */
const bit<8> DROP_WRONG_K           = 4;   /* num_elements is not this switch's AGG_K */
const bit<8> DROP_UNKNOWN_JOB       = 5;   /* no agg_jobs entry for job_id */
const bit<8> DROP_NOT_MEMBER        = 6;   /* ingress port is not a member port of the job */
const bit<8> DROP_WRONG_CONTRIBUTOR = 7;   /* contributor field differs from the port's index */
const bit<8> DROP_SLOT_RANGE        = 8;   /* slot >= the job's slot count */
const bit<8> DROP_BAD_MSG_TYPE      = 9;   /* contribution from parent, result from child, other */
const bit<8> DROP_STALE_RESULT      = 10;  /* parent's result for a version collecting a round */
const bit<8> DROP_NO_RESULT_ADDRESS = 11;  /* egress: no agg_result_addresses entry for the port */
const bit<8> DROP_STALE_CONTRIBUTION = 12; /* contribution of a round the slot version has left */
const bit<8> DROP_BAD_LENGTH        = 13;  /* UDP or IPv4 length is not that of header + K values
                                               (header only, with AGG_FLAG_NO_VALUES) */
const bit<8> DROP_SPOOFED_SOURCE    = 14;  /* forwarded packet claiming the service address */
const bit<8> DROP_UNSUPPORTED_FLAGS = 15;  /* header flags the packet's design does not implement */
#define DROP_REASON_COUNT 16

/* What happened to an accepted aggregation packet: index of the agg_events counter. */
const bit<8> EVENT_ADDED          = 0;     /* new contribution added, slot still incomplete */
const bit<8> EVENT_COMPLETED      = 1;     /* last contribution at the root: result multicast */
const bit<8> EVENT_SENT_UP        = 2;     /* last contribution at a non-root: partial to parent */
const bit<8> EVENT_DUPLICATE      = 3;     /* contribution already in, slot incomplete: ignored */
const bit<8> EVENT_RESULT_RESENT  = 4;     /* retransmission, slot complete: result unicast back */
const bit<8> EVENT_PARTIAL_RESENT = 5;     /* retransmission awaiting the parent: partial re-sent */
const bit<8> EVENT_PARENT_RESULT  = 6;     /* parent's result stored, multicast to the children */
#define EVENT_COUNT 7

/* What the slot state decided for this packet (metadata.slot_action). */
const bit<3> SLOT_NONE          = 0;
const bit<3> SLOT_ABSORB        = 1;
const bit<3> SLOT_COMPLETE      = 2;
const bit<3> SLOT_DUPLICATE     = 3;
const bit<3> SLOT_RESEND        = 4;
const bit<3> SLOT_PARENT_RESULT = 5;

/* What the value processors do with the packet's values (metadata.value_op). */
const bit<2> VALUE_NONE  = 0;
const bit<2> VALUE_ADD   = 1;   /* first contribution writes, later ones saturating-add */
const bit<2> VALUE_LOAD  = 2;   /* stored result/partial -> packet */
const bit<2> VALUE_STORE = 3;   /* packet (result from parent) -> stored */

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

/* The first four bytes of a TCP header: what ECMP hashes (forwarding.p4).  The rest of the
   TCP header stays payload, emitted unchanged. */
header tcp_ports_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

/* The 16-byte aggregation header (docs/design.md, docs/protocol.md). */
header agg_t {
    bit<4>  msg_type;
    bit<1>  version;
    bit<1>  overflow;
    bit<2>  flags;               /* AGG_FLAG_* */
    bit<8>  exponent;
    bit<16> job_id;
    bit<16> slot;
    bit<16> contributor;
    bit<32> chunk_offset;
    bit<16> num_elements;
    bit<16> owner;               /* with AGG_FLAG_TO_OWNER: the worker rank given the values */
}

/* ATP's 12 bytes after agg_t (atp/atp.p4 says what each means to the switch). */
header atp_t {
    bit<2>  level;               /* ATP_LEVEL_*: where the packet is aggregated next */
    bit<1>  resend;              /* a worker's retransmission: clear and force-forward */
    bit<1>  collision;           /* sent on unaggregated: its aggregator held another one */
    bit<1>  ecn;                 /* some packet summed into it arrived ECN-marked (CE) */
    bit<3>  reserved;
    bit<8>  rack;                /* the sender's rack: its first switch's index at level 1 */
    bit<16> reserved2;
    bit<32> bitmap0;             /* the rack's workers summed in (bit = worker index) */
    bit<32> bitmap1;             /* the racks summed in (bit = rack) */
}

/* The K values that follow the aggregation header: fields v0 .. v(K-1). */
#define AGG_VALUE_FIELD(i) int<32> v##i;
header agg_values_t {
    AGG_FOR_EACH_VALUE(AGG_VALUE_FIELD)
}

/* ATP's K running sums of one packet (atp/atp.p4 AtpValues), before they go into it. */
#define ATP_SUM_FIELD(i) int<32> s##i;
struct atp_sums_t {
    AGG_FOR_EACH_VALUE(ATP_SUM_FIELD)
}

struct headers_t {
    ethernet_t   ethernet;
    ipv4_t       ipv4;
    udp_t        udp;
    tcp_ports_t  tcp;
    agg_t        agg;
    atp_t        atp;
    agg_values_t values;
}

struct metadata_t {
    bit<8>  drop_reason;         /* DROP_*; non-zero drops the packet at the end of ingress */
    /* set by the parser from the UDP or TCP header, 0 for other protocols: ECMP's flow key */
    bit<16> l4_src_port;
    bit<16> l4_dst_port;
    bit<16> flowlet;             /* flowlet.p4: the flow's current flowlet (0: flowlets off) */
    bit<16> ecmp_group;          /* forwarding.p4's ecmp(): the route's ECMP group */
    bit<16> ecmp_bucket;         /* ... and the bucket of it this flow hashes to */
    /* from agg_jobs */
    bit<16> generation;          /* this installation of the job; slot state of another is stale */
    bit<8>  fan_in;              /* contributions that complete a slot at this switch */
    bit<32> slot_base;           /* the job's first slot on this switch */
    bit<16> slot_count;          /* the job's window on this switch */
    bit<16> mcast_group;         /* multicast group of the job's member ports below this switch */
    bit<1>  is_root;
    bit<9>  parent_port;         /* non-root: port towards the parent switch */
    bit<16> contributor_at_parent;
    /* from agg_members */
    bit<1>  from_parent;         /* the ingress port is the job's parent port */
    bit<16> contributor;         /* the ingress port's contributor index (child ports) */
    /* slot processing */
    bit<32> cell;                /* register cell of (slot_base + slot, version) */
    bit<3>  slot_action;         /* SLOT_* */
    bit<2>  value_op;            /* VALUE_* */
    bit<1>  have_result;         /* SLOT_RESEND: the cell holds the final result */
    bit<1>  first;               /* first contribution of a round: write, do not add */
    bit<1>  clipped;             /* some saturating add of this packet clipped */
    bit<1>  resized;             /* IPv4/UDP lengths rewritten: the IPv4 checksum is redone */
    /* ATP (atp/atp.p4): this switch's level for the job, the job's parameter server port,
       and "route the packet on towards its IPv4 destination" (the parameter server) */
    bit<2>  atp_level;
    bit<48> atp_ps_mac;
    bit<32> atp_ps_ip;
    bit<16> atp_ps_port;
    bit<1>  atp_ps_here;         /* the job's server hangs off this switch */
    bit<2>  atp_values_op;       /* ATP_VALUES_*: what AtpValues does with the values */
    atp_sums_t atp_sums;
    bit<1>  atp_route;
    bit<1>  result_up;           /* a result on its way up (ATP's acknowledgement from a
                                    server below this switch): it leaves as it came */
}

#endif
