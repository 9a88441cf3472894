/*
 * load_balance.p4 -- flow-consistent load balancing two ways.
 *
 * ecmp_group (exact on the IPv4 destination): set_group(base, count)
 * hashes (crc16) the 5-tuple into 0..count-1 and ecmp_nhop (exact on
 * that index) gives the next hop (MAC, port).  wcmp (lpm on the
 * destination) is an action_selector table: the control plane puts
 * members (set_nhop) into groups, the selector hashes the same fields.
 * Destinations in neither table: dropped.  All packets of one flow take
 * one port.
 */
#include <core.p4>
#include <v1model.p4>

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

header ports_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    ports_t    ports;
}

struct metadata {
    bit<14> ecmp_index;
    bit<16> sport;
    bit<16> dport;
}

parser LbParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800:  parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            6:       parse_ports;
            17:      parse_ports;
            default: accept;
        }
    }
    state parse_ports {
        packet.extract(hdr.ports);
        meta.sport = hdr.ports.srcPort;
        meta.dport = hdr.ports.dstPort;
        transition accept;
    }
}

control LbVerify(inout headers hdr, inout metadata meta) {
    apply { }
}

control LbIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_group(bit<14> base, bit<14> count) {
        hash(meta.ecmp_index, HashAlgorithm.crc16, base,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               meta.sport, meta.dport },
             count);
    }

    table ecmp_group {
        key = { hdr.ipv4.dstAddr : exact; }
        actions = { set_group; @defaultonly NoAction; }
        default_action = NoAction();
        size = 256;
    }

    action set_nhop(bit<48> nhop_mac, bit<9> port) {
        hdr.ethernet.dstAddr = nhop_mac;
        standard_metadata.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ecmp_nhop {
        key = { meta.ecmp_index : exact; }
        actions = { set_nhop; drop; }
        default_action = drop();
        size = 1024;
    }

    table wcmp {
        key = {
            hdr.ipv4.dstAddr  : lpm;
            hdr.ipv4.srcAddr  : selector;
            hdr.ipv4.protocol : selector;
            meta.sport        : selector;
            meta.dport        : selector;
        }
        actions = { set_nhop; drop; }
        default_action = drop();
        implementation = action_selector(HashAlgorithm.crc16, 32w128, 32w14);
        size = 256;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            drop();
        } else if (ecmp_group.apply().hit) {
            ecmp_nhop.apply();
        } else {
            wcmp.apply();
        }
    }
}

control LbEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control LbCompute(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control LbDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ports);
    }
}

V1Switch(LbParser(), LbVerify(), LbIngress(), LbEgress(), LbCompute(),
         LbDeparser()) main;
