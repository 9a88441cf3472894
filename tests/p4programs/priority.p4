/*
 * priority.p4 -- everything from port 1 goes to port 2; the low three bits of the
 * EtherType choose standard_metadata.priority (the egress priority queue), and
 * egress writes the queue metadata it saw into the source MAC so a test can read it:
 * bytes 6..7 = enq_qdepth (low 16 bits), bytes 8..11 = deq_timedelta (µs).
 * Used by tests/switch/test_sim_priority.py.
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etherType;
}

struct headers_t { ethernet_t ethernet; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        sm.priority = hdr.ethernet.etherType[2:0];
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.ethernet.src = ((bit<16>)sm.enq_qdepth) ++ sm.deq_timedelta;
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
