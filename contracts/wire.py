"""The wire and service contracts of in-network aggregation, in one place.

p4src/headers.p4 states the same numbers for the switch; tests/contracts/test_wire.py reads
that file and fails if the two disagree.  hosts (the workers' codec), controller (the table
entries it installs) and topologies (addresses it must not hand to a host) import them here.

The aggregation header, 16 bytes in network byte order (docs/protocol.md):

    byte 0      msg_type (high 4 bits) | version (bit 3) | overflow (bit 2) | flags (bits 1..0)
    byte 1      exponent (biased, unsigned; the switch keeps the max)
    bytes 2-3   job_id
    bytes 4-5   slot (relative to the job)
    bytes 6-7   contributor (index of the sender at this switch)
    bytes 8-11  chunk_offset (element offset of the first value)
    bytes 12-13 num_elements (K)
    bytes 14-15 owner (with FLAG_TO_OWNER: the rank a result's values go to)
followed by K signed 32-bit values, or by none when flags has FLAG_NO_VALUES.
"""

# The aggregation service: the address every worker sends to, the switches answer from.
SERVICE_IP = "10.0.255.254"
SERVICE_MAC = "02:00:0a:00:ff:fe"
AGG_UDP_PORT = 9100            # UDP destination port that marks aggregation traffic
SWITCHML_UDP_PORT = 9200       # ... of SwitchML's (the same header and values, its own switch)
ATP_UDP_PORT = 9300            # ... of ATP's (the header, ATP's 12 bytes, the values)
ATP_SERVER_PORT_BASE = 24000   # ATP's parameter server of job J binds UDP 24000 + J
WORKER_PORT_BASE = 20000       # workers of job J bind UDP port WORKER_PORT_BASE + J
MAX_JOB_ID = 65535 - WORKER_PORT_BASE

# The header (p4src/headers.p4, header agg_t) and the values after it.
MSG_CONTRIBUTION = 1
MSG_RESULT = 2
HEADER_LEN = 16
HEADER_FORMAT = "!BBHHHIHH"    # struct layout of the 16 bytes above
# flags (docs/protocol.md, "Collectives"); 0 = the allreduce packet of before.
FLAG_NO_VALUES = 1             # header only: counts as K zeros (results: values withheld)
FLAG_TO_OWNER = 2              # a result's values go only towards the worker rank `owner`
NO_OWNER = 0xFFFF              # an owner no switch has a port towards: values to nobody
VALUE_BYTES = 4                # each value is an int<32>
MAX_CONTRIBUTORS = 64          # width of the switch's contributor bitmap (slot_state.seen)

# The frames around a payload on the wire: Ethernet (14), IPv4 (20), UDP (8) or TCP with
# timestamps (32); an aggregation frame adds the header above.  A TCP frame carries at most
# TCP_PAYLOAD_PER_FRAME bytes at a 1500-byte MTU (1500 - 20 - 32).
INA_FRAME_OVERHEAD = 14 + 20 + 8 + HEADER_LEN
TCP_PAYLOAD_PER_FRAME = 1448
TCP_FRAME_BYTES = TCP_PAYLOAD_PER_FRAME + 32 + 20 + 14

# Compile-time parameters of p4src (headers.p4's #define defaults).
DEFAULT_K = 64                 # AGG_K: values per aggregation packet
DEFAULT_WINDOW = 32            # aggregation slots (rounds in flight) per job (default_window)
MIN_DEFAULT_WINDOW = 16        # the fewest default_window gives
WINDOW_COVER_S = 0.0014        # link time a default window's frames fill on a shaped link
WINDOW_DEFAULT_HELP = (f"(default: {MIN_DEFAULT_WINDOW}-{DEFAULT_WINDOW} by the link rate and K, "
                       "contracts/wire.py default_window)")       # the commands' --window help
# The largest window: a job's slot_count is bit<16> (headers.p4 agg_metadata_t, agg_jobs'
# parameters in docs/protocol.md), so a switch holds at most 65535 slots of one job.
MAX_WINDOW = 65535
DEFAULT_SLOTS = 1024           # AGG_SLOTS: aggregation slots per switch
ECMP_MAX_GROUP_SIZE = 256      # forwarding.p4: most buckets of an ECMP group (ports x weight)
ECMP_BUCKETS = 4096            # forwarding.p4: ecmp_buckets entries, all groups of a switch
# The AGG_K values p4src compiles (docs/protocol.md): powers of two whose packets fit a
# 1500-byte IP MTU (K = 256: 20 + 8 + 16 + 1024 = 1068 bytes; 512 would not).
SWITCH_K_VALUES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


# ATP's header after the aggregation header (p4src/headers.p4 atp_t): level, resend,
# collision, ecn (byte 0, from the top bit), rack, 16 bits reserved, bitmap0, bitmap1.
ATP_HEADER_LEN = 12
ATP_HEADER_FORMAT = "!BBHII"
ATP_LEVEL_RACK, ATP_LEVEL_UP, ATP_LEVEL_PS = 0, 1, 2
ATP_MAX_MEMBERS = 32           # width of bitmap0 / bitmap1: workers per rack, racks
ATP_DEFAULT_AGGREGATORS = 2 * 1024   # atp.p4 ATP_AGGREGATORS: AGG_CELLS at AGG_SLOTS 1024


def atp_server_port(job_id: int) -> int:
    """UDP port of job `job_id`'s ATP parameter server (the switches route to it)."""
    return ATP_SERVER_PORT_BASE + job_id


def worker_port(job_id: int) -> int:
    """UDP port that every worker of job `job_id` binds and receives results on."""
    return WORKER_PORT_BASE + job_id


def packet_size(k: int) -> int:
    """UDP payload bytes of one aggregation packet carrying k values."""
    return HEADER_LEN + VALUE_BYTES * k


def default_window(bw_mbit: float | None, k: int, delay_ms: float | None = None) -> int:
    """The window a job gets unless told (--window): enough rounds in flight to cover a
    round trip, and no more.  On a link shaped to bw_mbit, the fewest slots (from
    MIN_DEFAULT_WINDOW to DEFAULT_WINDOW) whose frames fill WINDOW_COVER_S of it; each slot
    beyond only waits in the shaper's queue and made each packet dearer: leafspine:2,1,4 at
    100 Mbit/s, K = 256, on 2 cores, ina took 1.03-1.08x its bound with 16 slots (1.4 ms of
    frames) and 1.08-1.35x with 32 (docs/native.md, "The window, by link rate").
    Faster links, smaller frames (K = 64 at 100 Mbit/s) and unshaped links need more frames
    in flight, and so does a link delay, which the emulated round trip adds: DEFAULT_WINDOW."""
    if not bw_mbit or delay_ms:
        return DEFAULT_WINDOW
    frame_s = (INA_FRAME_OVERHEAD + VALUE_BYTES * k) * 8 / (bw_mbit * 1e6)
    return max(MIN_DEFAULT_WINDOW, min(DEFAULT_WINDOW, int(WINDOW_COVER_S / frame_s + 0.5)))


def header_only_size() -> int:
    """UDP payload bytes of a FLAG_NO_VALUES packet: the header alone."""
    return HEADER_LEN
