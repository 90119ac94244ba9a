/* @field_list indices given by named constants: an I2E clone made with the list named
 * KEEP_REASON carries `reason` into egress and not `scratch` (in the list KEEP_SCRATCH). */
#include <core.p4>
#include <v1model.p4>

const int KEEP_REASON = 7;
const bit<8> KEEP_SCRATCH = 9;
const bit<32> MIRROR_SESSION = 4;

header report_t {
    bit<8> reason;
    bit<8> scratch;
    bit<8> copy;
}

struct headers_t { report_t r; }
struct meta_t {
    @field_list(KEEP_REASON)
    bit<8> reason;
    @field_list(KEEP_SCRATCH)
    bit<8> scratch;
}

parser ReportParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.r); transition accept; }
}

control NoChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control Mirror(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.reason = hdr.r.reason + 1;
        meta.scratch = 0x55;
        sm.egress_spec = 2;
        clone_preserving_field_list(CloneType.I2E, MIRROR_SESSION, KEEP_REASON);
    }
}

control Report(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) {
            hdr.r.reason = meta.reason;
            hdr.r.scratch = meta.scratch;
            hdr.r.copy = 1;
        }
    }
}

control ReportDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.r); } }

V1Switch(ReportParser(), NoChecksum(), Mirror(), Report(), NoChecksum(), ReportDeparser()) main;
