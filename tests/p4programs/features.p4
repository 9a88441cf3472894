/*
 * features.p4 -- exercises the P4_16 / v1model features alinea.p4 does
 * not use, each with an effect on forwarding that a test can observe.
 *
 * Send frames with correct IPv4 header checksums (inner ones too).
 * Port numbers below are switch ports.  Tables the control plane fills
 * are marked [CP]; everything else is const.
 *
 * ---------------------------------------------------------------------
 * DISPATCH on ethernet.etherType (parser select, value_set):
 *   0x0800 IPv4 path | 0x8847 MPLS path | 0x88B6 PROBE path |
 *   any EtherType the control plane put in value_set
 *   MyParser.probe_alias [CP] -> PROBE path | anything else -> L2 path.
 *
 * PARSER ERRORS (error type, verify, header stack bounds) -- the frame
 * leaves unchanged (IPv4 checksum recomputed) on a diagnostic port:
 *   more than 3 MPLS labels (StackOutOfBounds)     -> port 14
 *   frame ends inside a header (PacketTooShort)    -> port 15
 *   PROBE with version != 1 (verify, BadProbeVersion) -> port 13
 *
 * L2 PATH (digest, .miss/.hit, multicast):
 *   source MAC not in MyIngress.smac [CP]  -> one digest learn_t
 *       {src_mac, ingress_port} (receiver id 1) per frame;
 *   destination MAC in MyIngress.dmac [CP] -> out of that entry's port;
 *   otherwise -> multicast group 1 [CP: PRE group 1]; egress drops the
 *       copy whose egress_port equals the ingress_port.
 *
 * IPV4 PATH:
 *   checksum error (verify_checksum) -> dropped.
 *   TTL <= 1 -> dropped (mark_to_drop + exit: the forwarding below
 *       would otherwise override the drop).
 *   protocol 252..255 (select tuple case with mask 0xFC) -> dropped.
 *   non-first fragment (fragOffset 1..8191, select range) -> skips the
 *       ACL (so it is forwarded even when its first fragment is denied).
 *   ACL MyIngress.acl (const entries, ternary src / range L4 dst port /
 *   optional protocol; earlier entry = higher priority):
 *     src 10.0.0.0/8, dport 0..1023, TCP    -> dropped
 *     dport 5000..5999 (any src, any proto) -> DSCP 46, ECN kept
 *     src 192.168.0.0/16, UDP (any dport)   -> DSCP 10, ECN kept
 *     (a 10.x TCP packet to port 5001 matches only the 2nd entry)
 *   forwarding: MyIngress.host [CP] (exact dst) hit -> host_forward(dmac,
 *     port): out of port, dst MAC = dmac;
 *     miss -> MyIngress.lpm [CP] (lpm dst, direct counter, direct meter):
 *       forward(dmac, port): out of port, dst MAC = dmac; dropped when the
 *           entry's direct meter says RED;
 *       ecmp(base, count): out of base + crc16(src, dst, proto, sport,
 *           dport) % count -- same flow, same port;
 *       mcast(grp): multicast group grp (egress drops the copy to the
 *           ingress port);
 *       no match: dropped.
 *   forwarded packets: TTL - 1.
 *
 * MPLS PATH (header stack, .next/.last in a parser loop, lookahead,
 * push_front/pop_front, const entries), on the top label:
 *   100 -> pop it, out of port 3; when no label is left the EtherType
 *          becomes 0x0800 (inner IPv4 found by lookahead of its version);
 *   200 -> swap to 300, TTL - 1, out of port 4;
 *   400 -> push label 500 (TC, TTL copied from the old top, bos 0), out
 *          of port 5;
 *   other -> dropped.
 *
 * PROBE PATH: a 14-byte header {version:4 = 1, reserved:4, op:8
 * (serializable enum ProbeOp), a:16, b:32, result:32, status:8, pad:8}.
 * The reply leaves on the port the probe came in on.  After the op,
 * ingress sets status bit 7 (0x80) -- except for EXIT.  Send result = 0
 * and status = 0.  Ops (const entries keyed on the enum):
 *   1 ECHO     result = b (through a `type` conversion)
 *   2 SLICE    result = b[15:0] ++ a, then result[31:28] = 0xA
 *   3 COND     result = a > b[15:0] ? a : b[15:0]   (?:)
 *   4 HASH     result = CRC-32 (as zlib.crc32) of the 6 bytes a, b
 *   5 RANDOM   result in 1000..1999
 *   6 METER    status = 0x80 | colour of indirect meter cell a of
 *              MyIngress.probe_meter (0 green, 1 yellow, 2 red; an
 *              unconfigured cell is green)
 *   7 RESUBMIT ingress runs min(max(a, 1), 3) times (resubmit with a
 *              field list); result = that number
 *   8 RECIRC   egress runs k = min(max(a, 1), 3) times (recirculate
 *              with a field list); result = k, status = 0x80 | k
 *   9 EXIT     status = 0x01 exactly (exit skips the status marker)
 *  10 LOG      log_msg twice, assert(version == 1); result = 0x10C
 *   other op   status = 0xFF (default action)
 */

#include <core.p4>
#include <v1model.p4>

#define FL_RESUBMIT 1
#define FL_RECIRC 2

typedef bit<48> mac_t;
typedef bit<9>  port_t;
typedef bit<32> ipv4_addr_t;
/* A new type: converts to and from bit<32> only by explicit casts. */
type bit<32> Word_t;

const bit<16> ETH_IPV4  = 0x0800;
const bit<16> ETH_MPLS  = 0x8847;
const bit<16> ETH_PROBE = 0x88B6;
const bit<8>  IP_PROTO_TCP = 6;
const bit<8>  IP_PROTO_UDP = 17;

const port_t DIAG_PROBE_PORT = 13;
const port_t DIAG_STACK_PORT = 14;
const port_t DIAG_SHORT_PORT = 15;
const bit<16> FLOOD_GROUP = 1;
const bit<32> L2_LEARN_RECEIVER = 1;

const bit<32> PKT_INSTANCE_TYPE_NORMAL      = 0;
const bit<32> PKT_INSTANCE_TYPE_REPLICATION = 5;

error {
    BadProbeVersion
}

/* Serializable enum: a header field of this type is 8 bits on the wire. */
enum bit<8> ProbeOp {
    ECHO     = 1,
    SLICE    = 2,
    COND     = 3,
    HASH     = 4,
    RANDOM   = 5,
    METER    = 6,
    RESUBMIT = 7,
    RECIRC   = 8,
    EXIT     = 9,
    LOG      = 10
}

/* Plain enum: no representation, only comparisons. */
enum Path {
    L2,
    IPV4,
    MPLS,
    PROBE
}

header ethernet_t {
    mac_t   dstAddr;
    mac_t   srcAddr;
    bit<16> etherType;
}

header mpls_t {
    bit<20> label;
    bit<3>  tc;
    bit<1>  bos;
    bit<8>  ttl;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      diffserv;
    bit<16>     totalLen;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     fragOffset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdrChecksum;
    ipv4_addr_t srcAddr;
    ipv4_addr_t dstAddr;
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

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> len;
    bit<16> checksum;
}

/* At most one of tcp/udp is valid. */
header_union l4_t {
    tcp_t tcp;
    udp_t udp;
}

header probe_t {
    bit<4>  version;
    bit<4>  reserved;
    ProbeOp op;
    bit<16> a;
    bit<32> b;
    bit<32> result;
    bit<8>  status;
    bit<8>  pad;
}

struct headers_t {
    ethernet_t ethernet;
    mpls_t[3]  mpls;
    probe_t    probe;
    ipv4_t     ipv4;
    l4_t       l4;
}

struct learn_t {
    mac_t  src_mac;
    port_t ingress_port;
}

struct metadata_t {
    bit<16> l4_sport;
    bit<16> l4_dport;
    bit<1>  is_fragment;
    bit<1>  experimental;
    bit<2>  color;
    bit<16> ecmp_sel;
    @field_list(FL_RESUBMIT, FL_RECIRC)
    port_t  reply_port;
    @field_list(FL_RESUBMIT)
    bit<8>  passes;
    @field_list(FL_RECIRC)
    bit<8>  recirc_passes;
}

parser MyParser(packet_in pkt,
                out headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    /* EtherTypes the control plane wants handled as probes. */
    value_set<bit<16>>(4) probe_alias;

    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETH_IPV4:    parse_ipv4;
            ETH_MPLS:    parse_mpls;
            ETH_PROBE:   parse_probe;
            probe_alias: parse_probe;
            default:     accept;
        }
    }

    state parse_mpls {
        pkt.extract(hdr.mpls.next);
        transition select(hdr.mpls.last.bos) {
            1w0:     parse_mpls;
            default: parse_mpls_inner;
        }
    }

    /* No type field after MPLS: peek at the IP version nibble. */
    state parse_mpls_inner {
        transition select(pkt.lookahead<bit<4>>()) {
            4w4:     parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol, hdr.ipv4.fragOffset) {
            (IP_PROTO_TCP, 13w0):          parse_tcp;
            (IP_PROTO_UDP, 13w0):          parse_udp;
            (8w0xFC &&& 8w0xFC, _):        parse_experimental;
            (_, 13w1 .. 13w0x1FFF):        parse_fragment;
            default:                       accept;
        }
    }

    state parse_tcp {
        pkt.extract(hdr.l4.tcp);
        meta.l4_sport = hdr.l4.tcp.srcPort;
        meta.l4_dport = hdr.l4.tcp.dstPort;
        transition accept;
    }

    state parse_udp {
        pkt.extract(hdr.l4.udp);
        meta.l4_sport = hdr.l4.udp.srcPort;
        meta.l4_dport = hdr.l4.udp.dstPort;
        transition accept;
    }

    state parse_experimental {
        meta.experimental = 1;
        transition accept;
    }

    state parse_fragment {
        meta.is_fragment = 1;
        transition accept;
    }

    state parse_probe {
        pkt.extract(hdr.probe);
        verify(hdr.probe.version == 4w1, error.BadProbeVersion);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.totalLen, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {

    direct_counter(CounterType.packets_and_bytes) lpm_counter;
    direct_meter<bit<2>>(MeterType.packets) lpm_meter;
    meter(64, MeterType.packets) probe_meter;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    /* ---------------- L2 ---------------- */

    table smac {
        key = { hdr.ethernet.srcAddr : exact; }
        actions = { NoAction; }
        default_action = NoAction();
        size = 256;
    }

    action l2_forward(port_t port) {
        standard_metadata.egress_spec = port;
    }

    table dmac {
        key = { hdr.ethernet.dstAddr : exact; }
        actions = { l2_forward; @defaultonly NoAction; }
        default_action = NoAction();
        size = 256;
    }

    /* ---------------- IPv4 ---------------- */

    action deny() {
        mark_to_drop(standard_metadata);
    }

    /* New DSCP, ECN bits kept (slice and concatenation). */
    action set_class(bit<6> dscp) {
        hdr.ipv4.diffserv = dscp ++ hdr.ipv4.diffserv[1:0];
    }

    table acl {
        key = {
            hdr.ipv4.srcAddr  : ternary;
            meta.l4_dport     : range;
            hdr.ipv4.protocol : optional;
        }
        actions = { deny; set_class; NoAction; }
        default_action = NoAction();
        const entries = {
            (32w0x0A000000 &&& 32w0xFF000000, 16w0 .. 16w1023, IP_PROTO_TCP) : deny();
            (_, 16w5000 .. 16w5999, _) : set_class(46);
            (32w0xC0A80000 &&& 32w0xFFFF0000, _, IP_PROTO_UDP) : set_class(10);
        }
    }

    action forward(mac_t dmac, port_t port) {
        lpm_meter.read(meta.color);
        hdr.ethernet.dstAddr = dmac;
        standard_metadata.egress_spec = port;
    }

    /* Same as forward, without the meter: a direct meter may only be
       read by actions of the table that owns it. */
    action host_forward(mac_t dmac, port_t port) {
        hdr.ethernet.dstAddr = dmac;
        standard_metadata.egress_spec = port;
    }

    table host {
        key = { hdr.ipv4.dstAddr : exact; }
        actions = { host_forward; @defaultonly NoAction; }
        default_action = NoAction();
        size = 256;
    }

    action ecmp(port_t base, bit<16> count) {
        hash(meta.ecmp_sel, HashAlgorithm.crc16, 16w0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               meta.l4_sport, meta.l4_dport },
             count);
        standard_metadata.egress_spec = base + (port_t)meta.ecmp_sel;
    }

    action mcast(bit<16> grp) {
        standard_metadata.mcast_grp = grp;
    }

    table lpm {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { forward; ecmp; mcast; drop; }
        default_action = drop();
        counters = lpm_counter;
        meters = lpm_meter;
        size = 1024;
    }

    /* ---------------- MPLS ---------------- */

    action mpls_pop(port_t port) {
        hdr.mpls.pop_front(1);
        standard_metadata.egress_spec = port;
    }

    action mpls_swap(bit<20> label, port_t port) {
        hdr.mpls[0].label = label;
        hdr.mpls[0].ttl = hdr.mpls[0].ttl - 1;
        standard_metadata.egress_spec = port;
    }

    action mpls_push(bit<20> label, port_t port) {
        hdr.mpls.push_front(1);
        hdr.mpls[0].setValid();
        hdr.mpls[0].label = label;
        hdr.mpls[0].tc = hdr.mpls[1].tc;
        hdr.mpls[0].bos = 0;
        hdr.mpls[0].ttl = hdr.mpls[1].ttl;
        standard_metadata.egress_spec = port;
    }

    table mpls_lfib {
        key = { hdr.mpls[0].label : exact; }
        actions = { mpls_pop; mpls_swap; mpls_push; drop; }
        default_action = drop();
        const entries = {
            100 : mpls_pop(3);
            200 : mpls_swap(300, 4);
            400 : mpls_push(500, 5);
        }
    }

    /* ---------------- PROBE ---------------- */

    action op_echo() {
        Word_t w = (Word_t)hdr.probe.b;
        hdr.probe.result = (bit<32>)w;
    }

    action op_slice() {
        hdr.probe.result = hdr.probe.b[15:0] ++ hdr.probe.a;
        hdr.probe.result[31:28] = 4w0xA;
    }

    action op_cond() {
        hdr.probe.result = (hdr.probe.a > hdr.probe.b[15:0])
                           ? (bit<32>)hdr.probe.a
                           : (bit<32>)hdr.probe.b[15:0];
    }

    action op_hash() {
        hash(hdr.probe.result, HashAlgorithm.crc32, 32w0,
             { hdr.probe.a, hdr.probe.b }, 64w0x100000000);
    }

    action op_random() {
        random(hdr.probe.result, 32w1000, 32w1999);
    }

    action op_meter() {
        probe_meter.execute_meter((bit<32>)hdr.probe.a, meta.color);
        hdr.probe.status = (bit<8>)meta.color;
    }

    action op_resubmit() {
        meta.passes = meta.passes + 1;
    }

    action op_recirc() {
    }

    action op_exit() {
        hdr.probe.status = 1;
    }

    action op_log() {
        log_msg("probe LOG");
        log_msg("probe LOG a={} b={}", { hdr.probe.a, hdr.probe.b });
        assert(hdr.probe.version == 4w1);
        hdr.probe.result = 0x10C;
    }

    action op_unknown() {
        hdr.probe.status = 0x7F;
    }

    table probe_ops {
        key = { hdr.probe.op : exact; }
        actions = {
            op_echo; op_slice; op_cond; op_hash; op_random; op_meter;
            op_resubmit; op_recirc; op_exit; op_log;
            @defaultonly op_unknown;
        }
        const default_action = op_unknown();
        const entries = {
            ProbeOp.ECHO     : op_echo();
            ProbeOp.SLICE    : op_slice();
            ProbeOp.COND     : op_cond();
            ProbeOp.HASH     : op_hash();
            ProbeOp.RANDOM   : op_random();
            ProbeOp.METER    : op_meter();
            ProbeOp.RESUBMIT : op_resubmit();
            ProbeOp.RECIRC   : op_recirc();
            ProbeOp.EXIT     : op_exit();
            ProbeOp.LOG      : op_log();
        }
    }

    apply {
        if (standard_metadata.parser_error != error.NoError) {
            if (standard_metadata.parser_error == error.StackOutOfBounds) {
                standard_metadata.egress_spec = DIAG_STACK_PORT;
            } else if (standard_metadata.parser_error == error.PacketTooShort) {
                standard_metadata.egress_spec = DIAG_SHORT_PORT;
            } else if (standard_metadata.parser_error == error.BadProbeVersion) {
                standard_metadata.egress_spec = DIAG_PROBE_PORT;
            } else {
                mark_to_drop(standard_metadata);
            }
            exit;
        }

        Path path = Path.L2;
        if (hdr.mpls[0].isValid()) {
            path = Path.MPLS;
        } else if (hdr.probe.isValid()) {
            path = Path.PROBE;
        } else if (hdr.ipv4.isValid()) {
            path = Path.IPV4;
        }

        if (path == Path.L2) {
            if (smac.apply().miss) {
                digest<learn_t>(L2_LEARN_RECEIVER,
                                { hdr.ethernet.srcAddr, standard_metadata.ingress_port });
            }
            if (!dmac.apply().hit) {
                standard_metadata.mcast_grp = FLOOD_GROUP;
            }
        } else if (path == Path.MPLS) {
            switch (mpls_lfib.apply().action_run) {
                mpls_pop: {
                    if (!hdr.mpls[0].isValid()) {
                        hdr.ethernet.etherType = ETH_IPV4;
                    }
                }
            }
        } else if (path == Path.PROBE) {
            if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_NORMAL) {
                meta.reply_port = standard_metadata.ingress_port;
            }
            standard_metadata.egress_spec = meta.reply_port;
            switch (probe_ops.apply().action_run) {
                op_resubmit: {
                    if ((bit<16>)meta.passes < hdr.probe.a && meta.passes < 8w3) {
                        resubmit_preserving_field_list(FL_RESUBMIT);
                    } else {
                        hdr.probe.result = (bit<32>)meta.passes;
                    }
                }
                op_exit: {
                    exit;
                }
            }
            hdr.probe.status[7:7] = 1w1;
        } else {
            /* IPv4 */
            if (standard_metadata.checksum_error == 1 || meta.experimental == 1
                    || hdr.ipv4.ttl <= 1) {
                mark_to_drop(standard_metadata);
                exit;
            }
            if (meta.is_fragment == 0) {
                switch (acl.apply().action_run) {
                    deny: {
                        exit;
                    }
                }
            }
            if (host.apply().miss) {
                switch (lpm.apply().action_run) {
                    forward: {
                        if (meta.color == V1MODEL_METER_COLOR_RED) {
                            mark_to_drop(standard_metadata);
                            exit;
                        }
                    }
                    drop: {
                        exit;
                    }
                }
            }
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        }
    }
}

control MyEgress(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_REPLICATION
                && standard_metadata.egress_port == standard_metadata.ingress_port) {
            /* No copy back to where the packet came from. */
            mark_to_drop(standard_metadata);
        } else if (hdr.probe.isValid() && hdr.probe.op == ProbeOp.RECIRC) {
            hdr.probe.result = hdr.probe.result + 1;
            meta.recirc_passes = meta.recirc_passes + 1;
            hdr.probe.status[6:0] = (bit<7>)meta.recirc_passes;
            if (hdr.probe.result < (bit<32>)hdr.probe.a && meta.recirc_passes < 8w3) {
                recirculate_preserving_field_list(FL_RECIRC);
            }
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.totalLen, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.mpls);
        pkt.emit(hdr.probe);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.l4);
    }
}

V1Switch(MyParser(),
         MyVerifyChecksum(),
         MyIngress(),
         MyEgress(),
         MyComputeChecksum(),
         MyDeparser()) main;
