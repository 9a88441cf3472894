/*
 * tunnel.p4 -- a label tunnel between edge switches.
 *
 * At the ingress edge, tunnel_ingress (lpm on the IPv4 destination)
 * encap(id) puts a 6-byte tunnel header between Ethernet and IPv4
 * (EtherType 0x88B6, inner type kept in the header).  In the core,
 * tunnel_fwd (exact on the tunnel id) forwards (hop count + 1); at the
 * egress edge its decap action removes the header again.
 * IPv4 with no tunnel route, unknown tunnels, other frames: dropped.
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4   = 0x0800;
const bit<16> ETHERTYPE_TUNNEL = 0x88B6;

header ethernet_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header tunnel_h {
    bit<16> inner_type;
    bit<16> tunnel_id;
    bit<8>  hops;
    bit<8>  reserved;
}

header ipv4_h {
    bit<8>  version_ihl;
    bit<8>  tos;
    bit<16> total_len;
    bit<16> id;
    bit<16> flags_frag;
    bit<8>  ttl;
    bit<8>  proto;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    ethernet_h ethernet;
    tunnel_h   tunnel;
    ipv4_h     ipv4;
}

struct meta_t { }

parser TunParser(packet_in pkt, out headers_t h, inout meta_t m,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.ethernet);
        transition select(h.ethernet.ether_type) {
            ETHERTYPE_TUNNEL: parse_tunnel;
            ETHERTYPE_IPV4:   parse_ipv4;
            default:          accept;
        }
    }
    state parse_tunnel {
        pkt.extract(h.tunnel);
        transition select(h.tunnel.inner_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default:        accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(h.ipv4);
        transition accept;
    }
}

control TunVerify(inout headers_t h, inout meta_t m) {
    apply { }
}

control TunIngress(inout headers_t h, inout meta_t m,
                   inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }

    action encap(bit<16> id) {
        h.tunnel.setValid();
        h.tunnel.inner_type = h.ethernet.ether_type;
        h.tunnel.tunnel_id = id;
        h.tunnel.hops = 0;
        h.tunnel.reserved = 0;
        h.ethernet.ether_type = ETHERTYPE_TUNNEL;
    }

    table tunnel_ingress {
        key = { h.ipv4.dst : lpm; }
        actions = { encap; drop; }
        default_action = drop();
    }

    action tunnel_forward(bit<9> port) {
        h.tunnel.hops = h.tunnel.hops + 1;
        sm.egress_spec = port;
    }

    action decap(bit<9> port, bit<48> dmac) {
        h.ethernet.ether_type = h.tunnel.inner_type;
        h.ethernet.dst = dmac;
        h.tunnel.setInvalid();
        sm.egress_spec = port;
    }

    table tunnel_fwd {
        key = { h.tunnel.tunnel_id : exact; }
        actions = { tunnel_forward; decap; drop; }
        default_action = drop();
    }

    apply {
        if (h.ipv4.isValid() && !h.tunnel.isValid()) {
            tunnel_ingress.apply();
        }
        if (h.tunnel.isValid()) {
            tunnel_fwd.apply();
        } else {
            drop();
        }
    }
}

control TunEgress(inout headers_t h, inout meta_t m,
                  inout standard_metadata_t sm) {
    apply { }
}

control TunCompute(inout headers_t h, inout meta_t m) {
    apply { }
}

control TunDeparser(packet_out pkt, in headers_t h) {
    apply {
        pkt.emit(h.ethernet);
        pkt.emit(h.tunnel);
        pkt.emit(h.ipv4);
    }
}

V1Switch(TunParser(), TunVerify(), TunIngress(), TunEgress(),
         TunCompute(), TunDeparser()) main;
