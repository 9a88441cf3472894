/*
 * mirror.p4 -- port mirroring with clone sessions.
 *
 * port_fwd (exact on the ingress port) forwards to a port.
 * ingress_mirror (exact on the EtherType): mirror(session) clones the
 * frame as received (I2E) to the clone session's port.
 * egress_mirror (exact on the egress port): mirror_out(session) clones
 * the frame as sent (E2E).  Clones leave truncated to 64 bytes, with
 * the source MAC replaced by 02:00:00:00:00:ff (I2E) or
 * 02:00:00:00:00:fe (E2E) so they can be told apart.
 */
#include <core.p4>
#include <v1model.p4>

#define MIRROR_TRUNCATE_BYTES 64

const bit<32> INSTANCE_NORMAL = 0;
const bit<32> INSTANCE_I2E = 1;
const bit<32> INSTANCE_E2E = 2;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct headers { ethernet_t ethernet; }
struct metadata { }

parser MirParser(packet_in packet, out headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control MirVerify(inout headers hdr, inout metadata meta) {
    apply { }
}

control MirIngress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    action to_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    action drop() {
        mark_to_drop(standard_metadata);
    }
    table port_fwd {
        key = { standard_metadata.ingress_port : exact; }
        actions = { to_port; drop; }
        default_action = drop();
    }

    action mirror(bit<32> session) {
        clone(CloneType.I2E, session);
    }
    table ingress_mirror {
        key = { hdr.ethernet.etherType : exact; }
        actions = { mirror; NoAction; }
        default_action = NoAction();
    }

    apply {
        port_fwd.apply();
        ingress_mirror.apply();
    }
}

control MirEgress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action mirror_out(bit<32> session) {
        clone(CloneType.E2E, session);
    }
    table egress_mirror {
        key = { standard_metadata.egress_port : exact; }
        actions = { mirror_out; NoAction; }
        default_action = NoAction();
    }

    action shorten(bit<48> tag) {
        hdr.ethernet.srcAddr = tag;
        truncate(MIRROR_TRUNCATE_BYTES);
    }

    apply {
        if (standard_metadata.instance_type == INSTANCE_I2E) {
            shorten(48w0x0200000000ff);
        } else if (standard_metadata.instance_type == INSTANCE_E2E) {
            shorten(48w0x0200000000fe);
        } else if (standard_metadata.instance_type == INSTANCE_NORMAL) {
            egress_mirror.apply();
        }
    }
}

control MirCompute(inout headers hdr, inout metadata meta) {
    apply { }
}

control MirDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(MirParser(), MirVerify(), MirIngress(), MirEgress(), MirCompute(),
         MirDeparser()) main;
