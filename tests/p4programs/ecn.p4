/*
 * ecn.p4 -- explicit congestion notification in egress.
 *
 * Forwarding: port_fwd (exact on the ingress port) names the egress
 * port.  In egress, an ECN-capable IPv4 packet (ECN 01 or 10) that found
 * at least ECN_THRESHOLD packets in its queue (enq_qdepth) leaves with
 * ECN 11 (congestion experienced); the IPv4 checksum is recomputed.
 */
#include <core.p4>
#include <v1model.p4>

#define ECN_THRESHOLD 10

const bit<19> QUEUE_THRESHOLD = ECN_THRESHOLD;
const bit<2>  ECN_NOT_ECT = 0;
const bit<2>  ECN_CE = 3;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
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

struct headers { ethernet_t ethernet; ipv4_t ipv4; }
struct metadata { }

parser EcnParser(packet_in pkt, out headers hdr, inout metadata meta,
                 inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control EcnVerify(inout headers hdr, inout metadata meta) {
    apply { }
}

control EcnIngress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t std) {
    action to_port(bit<9> port) {
        std.egress_spec = port;
    }
    action drop() {
        mark_to_drop(std);
    }
    table port_fwd {
        key = { std.ingress_port : exact; }
        actions = { to_port; drop; }
        default_action = drop();
    }
    apply {
        port_fwd.apply();
    }
}

control EcnEgress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t std) {
    action mark_ce() {
        hdr.ipv4.ecn = ECN_CE;
    }
    apply {
        if (hdr.ipv4.isValid()
                && hdr.ipv4.ecn != ECN_NOT_ECT
                && hdr.ipv4.ecn != ECN_CE
                && std.enq_qdepth >= QUEUE_THRESHOLD) {
            mark_ce();
        }
    }
}

control EcnCompute(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control EcnDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(EcnParser(), EcnVerify(), EcnIngress(), EcnEgress(),
         EcnCompute(), EcnDeparser()) main;
