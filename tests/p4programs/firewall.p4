/*
 * firewall.p4 -- stateful firewall: only connections opened from inside.
 *
 * ipv4_lpm forwards (next-hop MAC, port).  direction (exact on ingress
 * port and chosen egress port) says whether a packet goes out (0:
 * inside -> outside) or in (1).  An outgoing TCP SYN sets two bits of a
 * Bloom filter (two registers, crc16 and crc32 of the 4-tuple, 4096
 * cells).  An incoming TCP packet passes only when both bits of its
 * reversed 4-tuple are set; other incoming TCP: dropped (counted in
 * blocked[ingress port]).  Non-TCP traffic and packets between ports
 * without a direction entry are not filtered.
 */
#include <core.p4>
#include <v1model.p4>

#define BLOOM_SIZE 4096
#define TCP_SYN 0x02

typedef bit<32> ip4_t;

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
    ip4_t   srcAddr;
    ip4_t   dstAddr;
}

header tcp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<32> seqNo;
    bit<32> ackNo;
    bit<4>  dataOffset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgentPtr;
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    tcp_t      tcp;
}

struct metadata {
    bit<32> pos1;
    bit<32> pos2;
    bit<1>  bit1;
    bit<1>  bit2;
    bit<1>  direction;
    bit<1>  filtered;
}

register<bit<1>>(BLOOM_SIZE) bloom1;
register<bit<1>>(BLOOM_SIZE) bloom2;

parser FwParser(packet_in packet, out headers hdr, inout metadata meta,
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
            6:       parse_tcp;
            default: accept;
        }
    }
    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }
}

control FwVerify(inout headers hdr, inout metadata meta) {
    apply { }
}

control FwIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) blocked;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action ipv4_forward(bit<48> dstAddr, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { ipv4_forward; drop; }
        default_action = drop();
        size = 1024;
    }

    action set_direction(bit<1> dir) {
        meta.direction = dir;
        meta.filtered = 1;
    }

    table direction {
        key = {
            standard_metadata.ingress_port : exact;
            standard_metadata.egress_spec  : exact;
        }
        actions = { set_direction; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    /* Positions of a 4-tuple given in connection order (inside first). */
    action bloom_positions(ip4_t inside, ip4_t outside,
                           bit<16> inside_port, bit<16> outside_port) {
        hash(meta.pos1, HashAlgorithm.crc16, 32w0,
             { inside, outside, inside_port, outside_port, hdr.ipv4.protocol },
             (bit<32>)BLOOM_SIZE);
        hash(meta.pos2, HashAlgorithm.crc32, 32w0,
             { inside, outside, inside_port, outside_port, hdr.ipv4.protocol },
             (bit<32>)BLOOM_SIZE);
    }

    action remember() {
        bloom1.write(meta.pos1, 1);
        bloom2.write(meta.pos2, 1);
    }

    action recall() {
        bloom1.read(meta.bit1, meta.pos1);
        bloom2.read(meta.bit2, meta.pos2);
    }

    action block() {
        mark_to_drop(standard_metadata);
        blocked.count((bit<32>)standard_metadata.ingress_port);
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            drop();
        } else {
            ipv4_lpm.apply();
            if (hdr.tcp.isValid()) {
                direction.apply();
                if (meta.filtered == 1) {
                    if (meta.direction == 0) {
                        bloom_positions(hdr.ipv4.srcAddr, hdr.ipv4.dstAddr,
                                        hdr.tcp.srcPort, hdr.tcp.dstPort);
                        if ((hdr.tcp.flags & TCP_SYN) != 0) {
                            remember();
                        }
                    } else {
                        bloom_positions(hdr.ipv4.dstAddr, hdr.ipv4.srcAddr,
                                        hdr.tcp.dstPort, hdr.tcp.srcPort);
                        recall();
                        if (meta.bit1 == 0 || meta.bit2 == 0) {
                            block();
                        }
                    }
                }
            }
        }
    }
}

control FwEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control FwCompute(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control FwDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.tcp);
    }
}

V1Switch(FwParser(), FwVerify(), FwIngress(), FwEgress(), FwCompute(),
         FwDeparser()) main;
