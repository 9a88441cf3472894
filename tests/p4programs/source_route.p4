/*
 * source_route.p4 -- the sender lists the egress port of every hop.
 *
 * Frame: Ethernet (EtherType 0x88B6), up to 8 hop entries {bos:1,
 * port:15} (the last one has bos = 1), then IPv4.  Each switch sends the
 * frame out of the first entry's port and removes that entry
 * (pop_front); the switch that removes the last one restores EtherType
 * 0x0800.  IPv4 TTL - 1 at each hop.  Frames without hops: dropped.
 */
#include <core.p4>
#include <v1model.p4>

#define MAX_HOPS 8

const bit<16> TYPE_SRCROUTE = 0x88B6;
const bit<16> TYPE_IPV4 = 0x0800;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header hop_t {
    bit<1>  bos;
    bit<15> port;
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

struct headers {
    ethernet_t      ethernet;
    hop_t[MAX_HOPS] hops;
    ipv4_t          ipv4;
}

struct metadata { }

parser SrParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_SRCROUTE: parse_hop;
            TYPE_IPV4:     parse_ipv4;
            default:       accept;
        }
    }

    state parse_hop {
        packet.extract(hdr.hops.next);
        transition select(hdr.hops.last.bos) {
            1: parse_ipv4;
            default: parse_hop;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control SrVerify(inout headers hdr, inout metadata meta) {
    apply { }
}

control SrIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    action next_hop() {
        standard_metadata.egress_spec = (bit<9>)hdr.hops[0].port;
        hdr.hops.pop_front(1);
    }

    action last_hop() {
        hdr.ethernet.etherType = TYPE_IPV4;
    }

    action decrement_ttl() {
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    apply {
        if (hdr.hops[0].isValid()) {
            if (hdr.hops[0].bos == 1) {
                last_hop();
            }
            next_hop();
            if (hdr.ipv4.isValid()) {
                decrement_ttl();
            }
        } else {
            drop();
        }
    }
}

control SrEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control SrCompute(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control SrDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.hops);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(SrParser(), SrVerify(), SrIngress(), SrEgress(), SrCompute(),
         SrDeparser()) main;
