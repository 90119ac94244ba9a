/* A do-nothing V1Switch `main` for front-end tests of programs that declare no pipeline of
 * their own (the front end rejects a program without `main`). */
#include <v1model.p4>

struct empty_headers_t { }
struct empty_meta_t { }

parser EmptyParser(packet_in pkt, out empty_headers_t hdr, inout empty_meta_t meta,
                   inout standard_metadata_t sm) {
    state start { transition accept; }
}
control EmptyChecksum(inout empty_headers_t hdr, inout empty_meta_t meta) { apply { } }
control EmptyPipe(inout empty_headers_t hdr, inout empty_meta_t meta,
                  inout standard_metadata_t sm) { apply { } }
control EmptyDeparser(packet_out pkt, in empty_headers_t hdr) { apply { } }

V1Switch(EmptyParser(), EmptyChecksum(), EmptyPipe(), EmptyPipe(), EmptyChecksum(),
         EmptyDeparser()) main;
