/*
 * calc.p4 -- a calculator answering on the port it was asked on.
 *
 * Request: Ethernet (EtherType 0x88B6), then {magic 0x43 'C',
 * version 0x01, op, reserved, a:32, b:32, result:32}.  The parser only
 * takes the header when the first two bytes (read with lookahead) are
 * 0x43 0x01.  ops: '+' 0x2B, '-' 0x2D, '&' 0x26, '|' 0x7C, '^' 0x5E
 * set result; the frame goes back out of its ingress port with the MAC
 * addresses swapped.  Unknown op, wrong magic/version, other frames:
 * dropped.
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> CALC_ETYPE = 0x88B6;
const bit<8>  CALC_MAGIC = 0x43;
const bit<8>  CALC_VERSION = 0x01;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header calc_t {
    bit<8>  magic;
    bit<8>  version;
    bit<8>  op;
    bit<8>  reserved;
    bit<32> a;
    bit<32> b;
    bit<32> result;
}

struct headers { ethernet_t ethernet; calc_t calc; }
struct metadata { }

parser CalcParser(packet_in packet, out headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            CALC_ETYPE: check_calc;
            default:    accept;
        }
    }

    state check_calc {
        bit<16> peek = packet.lookahead<bit<16>>();
        transition select(peek[15:8], peek[7:0]) {
            (CALC_MAGIC, CALC_VERSION): parse_calc;
            default:                    accept;
        }
    }

    state parse_calc {
        packet.extract(hdr.calc);
        transition accept;
    }
}

control CalcVerify(inout headers hdr, inout metadata meta) {
    apply { }
}

control CalcIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action reply(bit<32> value) {
        bit<48> tmp = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = tmp;
        hdr.calc.result = value;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }

    action op_add() { reply(hdr.calc.a + hdr.calc.b); }
    action op_sub() { reply(hdr.calc.a - hdr.calc.b); }
    action op_and() { reply(hdr.calc.a & hdr.calc.b); }
    action op_or()  { reply(hdr.calc.a | hdr.calc.b); }
    action op_xor() { reply(hdr.calc.a ^ hdr.calc.b); }

    action op_drop() {
        mark_to_drop(standard_metadata);
    }

    table calculate {
        key = { hdr.calc.op : exact; }
        actions = { op_add; op_sub; op_and; op_or; op_xor; op_drop; }
        const default_action = op_drop();
        const entries = {
            0x2B : op_add();
            0x2D : op_sub();
            0x26 : op_and();
            0x7C : op_or();
            0x5E : op_xor();
        }
    }

    apply {
        if (hdr.calc.isValid()) {
            calculate.apply();
        } else {
            op_drop();
        }
    }
}

control CalcEgress(inout headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control CalcCompute(inout headers hdr, inout metadata meta) {
    apply { }
}

control CalcDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.calc);
    }
}

V1Switch(CalcParser(), CalcVerify(), CalcIngress(), CalcEgress(),
         CalcCompute(), CalcDeparser()) main;
