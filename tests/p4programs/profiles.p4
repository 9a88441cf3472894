/*
 * profiles.p4 -- indirect tables and parser value sets, all programmed at run time.
 *
 * PARSER: EtherType 0x0800 -> IPv4 (then TCP/UDP ports); an EtherType in
 * the value set MyParser.tunnel_types [CP] -> a 4-byte tunnel tag
 * (hdr.tag), then IPv4.
 * INGRESS (IPv4 only, others dropped):
 *   by_port (exact on the ingress port), an action_profile instance
 *     (nhops): its members pick the egress port (set_port) or drop;
 *   else (miss) by_dst (lpm on the destination), an action_selector
 *     instance (@max_group_size(4), crc32 over the addresses and ports,
 *     10-bit output): set_port and mark; on a miss or an empty group
 *     (apply().hit false) the frame goes to port 100.
 * hdr.ipv4.diffserv := the 'mark' parameter of the member that ran.
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header tag_t {
    bit<16> id;
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

header ports_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

struct headers_t {
    ethernet_t ethernet;
    tag_t      tag;
    ipv4_t     ipv4;
    ports_t    ports;
}

struct metadata_t {
    bit<16> sport;
    bit<16> dport;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    value_set<bit<16>>(4) tunnel_types;

    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800:       parse_ipv4;
            tunnel_types: parse_tag;
            default:      accept;
        }
    }

    state parse_tag {
        pkt.extract(hdr.tag);
        transition select(hdr.tag.etherType) {
            0x0800:  parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            6:       parse_ports;
            17:      parse_ports;
            default: accept;
        }
    }

    state parse_ports {
        pkt.extract(hdr.ports);
        meta.sport = hdr.ports.srcPort;
        meta.dport = hdr.ports.dstPort;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }

    action set_port(bit<9> port, bit<8> mark) {
        sm.egress_spec = port;
        hdr.ipv4.diffserv = mark;
    }

    action_profile(32w8) nhops;

    @max_group_size(4)
    action_selector(HashAlgorithm.crc32, 32w16, 32w10) paths;

    table by_port {
        key = { sm.ingress_port : exact; }
        actions = { set_port; drop; }
        implementation = nhops;
        size = 16;
    }

    table by_dst {
        key = {
            hdr.ipv4.dstAddr : lpm;
            hdr.ipv4.srcAddr : selector;
            hdr.ipv4.dstAddr : selector;
            meta.sport       : selector;
            meta.dport       : selector;
        }
        actions = { set_port; }
        implementation = paths;
        size = 16;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            drop();
        } else if (!by_port.apply().hit) {
            if (!by_dst.apply().hit) {
                sm.egress_spec = 100;
            }
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.tag);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ports);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
