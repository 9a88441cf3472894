/*
 * alinea.p4 -- hop-by-hop ALINEA data plane (P4_16, v1model).
 *
 * Routes IPv4 like a router (one next hop, or an equal-cost group picked
 * by a 5-tuple hash in an action selector) and models, per INGRESS port p, the buffer
 * of the paper's "incoming interface": occupancy[p] counts the packets
 * that arrived on p and are still queued in this switch.  A packet is
 * admitted while occupancy[p] < capacity(p), otherwise dropped
 * (overflow).  Every report_interval_us, at the next IPv4 arrival on p
 * (or at a report poll for p, a packet-out from this switch's own
 * controller, once two intervals have passed), an ingress-to-egress
 * clone leaves through p itself,
 * rewritten in egress into an ALINEA report (EtherType 0x88B5) for the
 * upstream neighbour.  Reports arriving from a downstream neighbour go
 * to the controller (packet-in), never further.
 *
 * Per-destination classes (docs/howto/fabric.md, "Head-of-line blocking"): the
 * control plane may map destination prefixes to a class (dst_class); a
 * class-c packet goes to egress priority queue c and every per-port
 * cell of the buffer model is kept per (port, class).  Reports take the
 * top priority, above every class: BMv2 resets a clone's priority, so
 * with classes the report clone goes to REPORT_RECIRC_PORT (a port with
 * no link), is built there and recirculated (report_path), and ingress
 * sends it out of its port on the reports' priority.  Without dst_class
 * entries every packet is class 0 on priority 0 and a report clone goes
 * straight out of its port: one class, as before.
 *
 * docs/reference/dataplane.md explains the design; docs/reference/wire-format.md gives the
 * byte layout of the report and of the packet-in/out metadata.
 *
 * Build-time parameters (override with -D):
 *   CPU_PORT -- the port BMv2 was started with as --cpu-port (255).
 */

#include <core.p4>
#include <v1model.p4>

/* ------------------------------------------------------------------ */
/* Build-time parameters and sizes                                     */
/* ------------------------------------------------------------------ */

#ifndef CPU_PORT
#define CPU_PORT 255
#endif

/* Cells of every per-port register and counter: one per 9-bit port. */
#define PORT_COUNT 512
/* Classes per port (3 bits) and cells of the per-(port, class) registers:
   cell port * CLASS_COUNT + class. */
#define CLASS_COUNT 8
#define CELL_COUNT 4096
/* Destination prefixes dst_class maps to a class. */
#define DST_CLASS_SIZE 1024
/* Routes in ipv4_lpm. */
#define IPV4_LPM_SIZE 1024
/* Equal-cost groups (ecmp_group entries) and members of their selector. */
#define ECMP_GROUPS 256
#define ECMP_MEMBERS 1024
/* Next hops a group may hold (P4Info max_group_size). */
#define ECMP_MAX_GROUP 16
/* Bits of the selector's 5-tuple hash. */
#define ECMP_HASH_BITS 16
/* The clone session that reports on port p is REPORT_SESSION_BASE + p;
   its one replica must go out of port p. */
#define REPORT_SESSION_BASE 1000
/* Id of the user-metadata field list kept in report clones (and in their
   recirculation, with classes). */
#define REPORT_FIELD_LIST 1
/* With classes, the report sessions' port: no link behind it, nothing but
   report clones in its queue (so they wait for nothing); egress builds the
   report there and recirculates it (report_path). */
#define REPORT_RECIRC_PORT 510
/* Multicast (docs/howto/multicast.md): group addresses mcast_route holds, the
   copies one switch makes of a group's packet (its child ports), and the
   ring of pending multicast packets per ingress port: 2^MCAST_RING_BITS
   places for each port below 2^MCAST_PORT_BITS (MCAST_SLOTS in all). */
#define MCAST_ROUTES 256
#define MCAST_RING_BITS 10
#define MCAST_PORT_BITS 6
#define MCAST_SLOTS 65536
/* Bytes of an Ethernet header and of an ALINEA report header. */
#define ETH_HDR_BYTES 14
#define REPORT_HDR_BYTES 42
// ---- pgmcc NAK aggregation (docs/howto/multicast.md, "NAK aggregation"): slots of
// the (session, sequence) -> last forwarded NAK table, a power of two.
#define NAK_SLOTS 4096
// ---- end pgmcc NAK aggregation

typedef bit<9>  port_t;
typedef bit<3>  class_t;
typedef bit<48> mac_t;
typedef bit<32> ipv4_addr_t;

const port_t  PORT_CPU = CPU_PORT;
const port_t  PORT_REPORT_RECIRC = REPORT_RECIRC_PORT;

const bit<16> ETHERTYPE_IPV4   = 0x0800;
/* IEEE 802 local experimental EtherType 1: not assigned to anyone. */
const bit<16> ETHERTYPE_ALINEA = 0x88B5;
const bit<8>  IPPROTO_TCP      = 6;
const bit<8>  IPPROTO_UDP      = 17;
// ---- pgmcc NAK aggregation: pgmcc feedback goes to this UDP port (hosts/pgmcc/wire.py);
// a NAK is its type 2.  No other frame is parsed past UDP.
const bit<16> PGMCC_FEEDBACK_PORT = 5002;
const bit<8>  PGMCC_NAK           = 2;
// ---- end pgmcc NAK aggregation

const bit<4>  ALINEA_VERSION        = 2;
const bit<4>  ALINEA_MSG_OCCUPANCY  = 1;
/* Report flag: at least one overflow drop since the previous report. */
const bit<8>  ALINEA_FLAG_OVERFLOW  = 0x01;
/* The report's class sits in the flags' top three bits (bits 7-5). */
const bit<8>  ALINEA_CLASS_SHIFT    = 5;

/* A report frame is exactly the Ethernet and report headers. */
const bit<32> REPORT_FRAME_BYTES = ETH_HDR_BYTES + REPORT_HDR_BYTES;
/* A report poll reports a port only within 2^POLL_LIVE_SHIFT of its
   report intervals after its last arrival: an idle port (a flow that has
   not started, or has ended) stays silent, as without polls. */
const bit<8> POLL_LIVE_SHIFT = 5;

/* standard_metadata.instance_type values (BMv2 numbering). */
const bit<32> PKT_INSTANCE_TYPE_NORMAL        = 0;
const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;
const bit<32> PKT_INSTANCE_TYPE_RECIRC        = 4;
const bit<32> PKT_INSTANCE_TYPE_REPLICATION   = 5;

/* Parser errors of our own, on top of core.p4's. */
error {
    IPv4HeaderUnsupported   // IPv4 version != 4 or options present (IHL != 5)
}

/* ------------------------------------------------------------------ */
/* Headers                                                             */
/* ------------------------------------------------------------------ */

/* Metadata in front of a frame sent to the controller (P4Runtime
   PacketIn.metadata). */
@controller_header("packet_in")
header packet_in_t {
    port_t  ingress_port;   // port the frame arrived on
    bit<7>  _pad;           // zero, pads the first two bytes
    /* For a report: the ALINEA law parameters the control plane stored
       for the port it arrived on (MyIngress.report_ingress), so that the
       switch agent always runs with what the switch holds. */
    bit<32> o_min_ppm;      // O_min, parts per million of the buffer
    bit<32> o_max_ppm;      // O_max, parts per million of the buffer
    bit<48> w_max_bps;      // W_max, b/s per unit of occupancy error
    bit<48> w_min_bps;      // W_min, b/s per unit of occupancy error
    bit<48> k_p_bps;        // PI damping gain, b/s per unit (0: none)
    bit<48> r_max_bps;      // R_max, b/s
    bit<48> r_floor_bps;    // rate floor, b/s
    /* For a report: this switch's own data packets toward the reporting
       neighbour (out of the port the report arrived on), two wrapping
       counts; the agent's forecast of a rate command's delay on BMv2's
       egress queue (docs/howto/bmv2.md) needs both. */
    bit<32> fwd_pkts;       // IPv4 packets routed to that port (queued)
    bit<32> deq_pkts;       // of those, packets that have left its queue
}

/* Metadata in front of a frame from the controller (P4Runtime
   PacketOut.metadata).  report_poll = 0: the frame is sent, unchanged,
   out of egress_port.  report_poll = 1: a report poll; the frame goes
   nowhere, and egress_port's report is built now if two of its
   intervals have passed since its last report, so that a port whose
   upstream neighbour sends slowly is still reported. */
@controller_header("packet_out")
header packet_out_t {
    port_t  egress_port;    // port to send the frame out of, or to report on
    bit<1>  report_poll;    // 1: report poll (see above)
    class_t poll_class;     // a poll's class of egress_port's buffer (0 with one class)
    bit<3>  _pad;           // zero, pads the header to 2 bytes
}

header ethernet_t {
    mac_t   dstAddr;
    mac_t   srcAddr;
    bit<16> etherType;
}

/*
 * ALINEA occupancy report, 42 bytes, network byte order, right after
 * the Ethernet header (EtherType 0x88B5).  See docs/reference/wire-format.md.
 */
header alinea_report_t {
    bit<4>  version;        // ALINEA_VERSION
    bit<4>  msg_type;       // ALINEA_MSG_OCCUPANCY
    bit<8>  flags;          // ALINEA_FLAG_* bits; bits 7-5: class; others zero
    bit<16> node_id;        // reporting switch (configured per port)
    bit<16> port;           // reporting switch's port whose buffer this is
    bit<32> occupancy;      // packets of this port's arrivals queued now
    bit<32> capacity;       // packets the port's buffer admits
    bit<48> timestamp;      // µs since the switch started, when built
    bit<32> seq;            // per port, 1 for the first report, +1 each
    bit<32> drops;          // overflow drops on this port since last report
    bit<32> interval_us;    // configured minimum report interval, µs
    bit<32> drained;        // this port's arrivals that have left, wraps
    bit<48> drained_ts;     // µs, when the last of them left (0: none yet)
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

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> len;
    bit<16> checksum;
}

/* The first four bytes of a TCP header: its ports, for the ECMP hash
   only (the rest of the header stays payload, never read or changed). */
header tcp_ports_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

// ---- pgmcc NAK aggregation: the datagram header (hosts/datagram.py) and the
// first 8 bytes of pgmcc feedback (hosts/pgmcc/wire.py), parsed only on
// PGMCC_FEEDBACK_PORT.
header hbh_datagram_t {
    bit<16> magic;
    bit<8>  version;
    bit<8>  kind;
    bit<16> flow;
    bit<16> rtt;
    bit<32> seq;
    bit<64> ts_ns;
}

header pgmcc_feedback_t {
    bit<8>  fb_type;
    bit<8>  flags;
    bit<16> rid;
    bit<32> nak_seq;
}
// ---- end pgmcc NAK aggregation

struct headers_t {
    packet_out_t    packet_out;
    packet_in_t     packet_in;
    ethernet_t      ethernet;
    alinea_report_t report;
    ipv4_t          ipv4;
    udp_t           udp;
    tcp_ports_t     tcp_ports;
    hbh_datagram_t   datagram;      // pgmcc NAK aggregation only
    pgmcc_feedback_t pgmcc_fb;      // pgmcc NAK aggregation only
}

/*
 * User metadata.  The fields marked @field_list(REPORT_FIELD_LIST) are
 * the ones an ingress-to-egress report clone keeps (all others are 0 in
 * the clone): the port to report on and its configuration.
 */
struct metadata_t {
    port_t  model_port;     // port whose buffer model applies (arrival or polled port)
    class_t data_class;     // dst_class's class of the destination (0 if none)
    bit<32> model_cell;     // model_port * CLASS_COUNT + class: its per-class cell
    bit<1>  modelled;       // port_config has an entry for model_port
    bit<1>  admitted;       // this packet holds a slot of occupancy[ingress_port]
    bit<1>  report_due;     // the arrival port's report interval has elapsed
    bit<1>  counted;        // counted in fwd_pkts[egress_spec]: count it in deq_pkts
    bit<1>  routed;         // a route (direct or an ECMP member) set egress_spec
    bit<16> ecmp_group;     // ipv4_lpm chose an equal-cost group: its id (ecmp_group's key)
    bit<16> l4_src;         // UDP or TCP source port, 0 if none: selector field
    bit<16> l4_dst;         // UDP or TCP destination port, 0 if none: selector field
    bit<16> mcast_group;    // mcast_route's PRE group for a group address (0: unicast)
    bit<3>  mcast_copies;   // copies this switch makes of it (1..4): mcast_port0..
    port_t  mcast_port0;
    port_t  mcast_port1;
    port_t  mcast_port2;
    port_t  mcast_port3;
    bit<32> mcast_slot;     // an admitted multicast packet's place in mcast_left
    bit<1>  last_copy;      // egress: this copy is its packet's last to leave
    port_t  copy_port;      // ingress: the child port count_copy counts a copy for
    @field_list(REPORT_FIELD_LIST)
    port_t  report_port;    // port whose buffer is reported (= model_port)
    @field_list(REPORT_FIELD_LIST)
    class_t report_class;   // class of that buffer reported (= data_class, or the poll's)
    @field_list(REPORT_FIELD_LIST)
    bit<32> capacity;       // set_port.capacity_pkts
    @field_list(REPORT_FIELD_LIST)
    bit<32> report_interval_us;
    @field_list(REPORT_FIELD_LIST)
    bit<16> node_id;
    @field_list(REPORT_FIELD_LIST)
    mac_t   port_mac;       // MAC address of report_port
    @field_list(REPORT_FIELD_LIST)
    mac_t   upstream_mac;   // MAC address of the neighbour behind report_port
    @field_list(REPORT_FIELD_LIST)
    bit<3>  report_priority; // with classes: the reports' egress priority (report_path)
    bit<48> nak_hold;        // pgmcc NAK aggregation: the session's hold (us), 0: off
    bit<1>  nak_repeat;      // pgmcc NAK aggregation: a repeat within the hold, dropped
}

/* ------------------------------------------------------------------ */
/* Per-(port, class) state shared by ingress and egress                */
/* (cell p * CLASS_COUNT + c; one class: c = 0)                        */
/* ------------------------------------------------------------------ */

/* Packets of class c that arrived on port p and are still queued here. */
register<bit<32>>(CELL_COUNT) occupancy;
/* ingress_global_timestamp (µs) of the packet that triggered (p, c)'s last report. */
register<bit<48>>(CELL_COUNT) last_report_ts;
/* ingress_global_timestamp (µs) of the last IPv4 arrival of class c on p:
   a report poll reports (p, c) only while it has seen traffic lately. */
register<bit<48>>(CELL_COUNT) last_arrival_ts;
/* Sequence number of (p, c)'s last report. */
register<bit<32>>(CELL_COUNT) report_seq;
/* Overflow drops of class c on p since (p, c)'s last report. */
register<bit<32>>(CELL_COUNT) overflow_drops;
/* IPv4 packets of class c routed to EGRESS port p (ingress), and how
   many of them have left p's egress queue (egress); both wrap.  Their
   difference is the routed packets in p's queue of class c; a report of
   class c arriving on p carries both to the agent (packet_in.fwd_pkts,
   packet_in.deq_pkts). */
register<bit<32>>(CELL_COUNT) fwd_pkts;
register<bit<32>>(CELL_COUNT) deq_pkts;
/* Packets of class c that arrived on port p and have left this switch's
   egress queue (wrapping), and the egress_global_timestamp (µs) of the
   last of them.  A report carries both: the upstream hop reads the drain
   of its buffer from two reports exactly, where counts alone would be
   a packet off at either end of every interval (docs/reference/wire-format.md). */
register<bit<32>>(CELL_COUNT) drained_pkts;
register<bit<48>>(CELL_COUNT) last_drain_ts;
/* Multicast: a packet holds one slot of its ingress buffer until its LAST
   copy leaves this switch (docs/howto/multicast.md).  An admitted multicast
   packet takes the next place of its ingress port's ring (mcast_next, per
   port, wraps) and writes there how many of its copies are still queued;
   each copy's egress counts one down, and the copy that reaches 0 frees the
   buffer slot as a unicast departure does.  A place still taken refuses
   the packet as an overflow. */
register<bit<32>>(PORT_COUNT) mcast_next;
register<bit<8>>(MCAST_SLOTS) mcast_left;

/* The cell of (port, class) in the registers above: a macro, not a
   function, so that p4switch's engine runs every statement using it
   (docs/background/engine.md: function calls in expressions still run on the
   closures); p4c expands it as cpp does. */
#define CELL_OF(port, cls) (((bit<32>)(port) << 3) | (bit<32>)(cls))

/* ------------------------------------------------------------------ */
/* Parser                                                              */
/* ------------------------------------------------------------------ */

parser MyParser(packet_in pkt,
                out headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    state start {
        transition select(standard_metadata.ingress_port) {
            PORT_CPU: parse_cpu;
            default:  parse_ethernet;
        }
    }

    /* A recirculated report is a plain frame whatever ingress port the
       target gives it (BMv2: 0; p4switch keeps the clone's, the CPU port
       for a report poll's). */
    state parse_cpu {
        transition select(standard_metadata.instance_type) {
            PKT_INSTANCE_TYPE_RECIRC: parse_ethernet;
            default:                  parse_packet_out;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4:   parse_ipv4;
            ETHERTYPE_ALINEA: parse_report;
            default:          accept;
        }
    }

    state parse_report {
        pkt.extract(hdr.report);
        transition accept;
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4w4 && hdr.ipv4.ihl == 4w5,
               error.IPv4HeaderUnsupported);
        /* Only a first (or unfragmented) fragment carries the UDP or TCP header. */
        transition select(hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (13w0, IPPROTO_UDP): parse_udp;
            (13w0, IPPROTO_TCP): parse_tcp_ports;
            default:             accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        meta.l4_src = hdr.udp.srcPort;
        meta.l4_dst = hdr.udp.dstPort;
        transition select(hdr.udp.dstPort) {
            PGMCC_FEEDBACK_PORT: parse_pgmcc_feedback;
            default:             accept;
        }
    }

    // ---- pgmcc NAK aggregation
    state parse_pgmcc_feedback {
        pkt.extract(hdr.datagram);
        pkt.extract(hdr.pgmcc_fb);
        transition accept;
    }
    // ---- end pgmcc NAK aggregation

    /* TCP's ports, so that the ECMP hash spreads a host pair's TCP
       connections as it spreads UDP flows (the kernel's TCP in netns). */
    state parse_tcp_ports {
        pkt.extract(hdr.tcp_ports);
        meta.l4_src = hdr.tcp_ports.srcPort;
        meta.l4_dst = hdr.tcp_ports.dstPort;
        transition accept;
    }
}

/* ------------------------------------------------------------------ */
/* Checksum verification                                               */
/* ------------------------------------------------------------------ */

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.diffserv,
              hdr.ipv4.totalLen,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.fragOffset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.srcAddr,
              hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

/* ------------------------------------------------------------------ */
/* Ingress                                                             */
/* ------------------------------------------------------------------ */

control MyIngress(inout headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {

    /* Every frame received, per ingress port. */
    counter(PORT_COUNT, CounterType.packets_and_bytes) rx;
    /* Drops, one array per reason, each indexed by INGRESS port. */
    counter(PORT_COUNT, CounterType.packets_and_bytes) drop_parser_error;
    counter(PORT_COUNT, CounterType.packets_and_bytes) drop_bad_checksum;
    counter(PORT_COUNT, CounterType.packets_and_bytes) drop_unsupported;
    counter(PORT_COUNT, CounterType.packets_and_bytes) drop_spoofed_report;
    counter(PORT_COUNT, CounterType.packets_and_bytes) drop_no_route;
    counter(PORT_COUNT, CounterType.packets_and_bytes) drop_ttl_expired;
    counter(PORT_COUNT, CounterType.packets_and_bytes) drop_overflow;
    counter(PORT_COUNT, CounterType.packets_and_bytes) drop_nak_repeat;  // pgmcc NAK aggregation
    /* The routed IPv4 frames queued for each egress port (every class):
       those count_forwarded and count_copy count in fwd_pkts, at the
       length the frame arrived with (BMv2 counts a packet's ingress
       length in either pipeline, and a routed frame keeps its length), so
       that it pairs with MyEgress.tx_routed, their departures.  The switch
       agent reads it (P4Runtime Read) for the mean frame its queue stamps
       departures for now, which turns its law's b/s into the queue's
       packets/s (docs/background/alinea.md, "Bits, not packets"). */
    counter(PORT_COUNT, CounterType.packets_and_bytes) fwd_routed;

    /* --- drops, one action per reason --- */

    action discard_parser_error() {
        mark_to_drop(standard_metadata);
        drop_parser_error.count((bit<32>)standard_metadata.ingress_port);
    }

    action discard_bad_checksum() {
        mark_to_drop(standard_metadata);
        drop_bad_checksum.count((bit<32>)standard_metadata.ingress_port);
    }

    /* Neither IPv4 nor an ALINEA report (ARP, IPv6, ...): no L2 switching. */
    action discard_unsupported() {
        mark_to_drop(standard_metadata);
        drop_unsupported.count((bit<32>)standard_metadata.ingress_port);
    }

    // ---- pgmcc NAK aggregation (docs/howto/multicast.md, "NAK aggregation") ----
    /* PGM's router NAK aggregation for pgmcc sessions: the first NAK for a
       (session, sequence) goes upstream and its repeats within the
       session's hold are dropped.  A slot per hash of (session, sequence)
       holds the key and the time of the last NAK forwarded; a collision
       overwrites the slot (the colliding NAK is forwarded: never a wrong
       drop).  Sessions opt in through nak_aggregation entries. */
    register<bit<48>>(NAK_SLOTS) nak_key;
    register<bit<48>>(NAK_SLOTS) nak_ts;

    action set_nak_hold(bit<48> hold_us) {
        meta.nak_hold = hold_us;
    }

    table nak_aggregation {
        key = { hdr.datagram.flow: exact; }
        actions = { set_nak_hold; NoAction; }
        const default_action = NoAction();
        size = 256;
    }

    action discard_nak_repeat() {
        mark_to_drop(standard_metadata);
        drop_nak_repeat.count((bit<32>)standard_metadata.ingress_port);
    }
    // ---- end pgmcc NAK aggregation

    action discard_ttl_expired() {
        mark_to_drop(standard_metadata);
        drop_ttl_expired.count((bit<32>)standard_metadata.ingress_port);
    }

    /* The arrival port's modelled buffer is full.  Also counts the drop
       for the next report (read and write in one action: atomic in BMv2). */
    action discard_overflow() {
        mark_to_drop(standard_metadata);
        drop_overflow.count((bit<32>)standard_metadata.ingress_port);
        @atomic {
            bit<32> n;
            overflow_drops.read(n, meta.model_cell);
            overflow_drops.write(meta.model_cell, n + 1);
        }
    }

    /* --- packet-out from the controller --- */

    /* Send the controller's frame, without its packet_out header, out of
       the port it names.  No routing, no buffer model. */
    action send_from_cpu() {
        standard_metadata.egress_spec = hdr.packet_out.egress_port;
        hdr.packet_out.setInvalid();
    }

    /* --- ALINEA reports from neighbours --- */

    /* The port faces an ALINEA neighbour: hand the report to the
       controller with the port it came in on and the law parameters
       stored for that port (the egress port toward that neighbour). */
    action report_to_cpu(bit<32> o_min_ppm,
                         bit<32> o_max_ppm,
                         bit<48> w_max_bps,
                         bit<48> w_min_bps,
                         bit<48> k_p_bps,
                         bit<48> r_max_bps,
                         bit<48> r_floor_bps) {
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = standard_metadata.ingress_port;
        hdr.packet_in._pad = 0;
        hdr.packet_in.o_min_ppm = o_min_ppm;
        hdr.packet_in.o_max_ppm = o_max_ppm;
        hdr.packet_in.w_max_bps = w_max_bps;
        hdr.packet_in.w_min_bps = w_min_bps;
        hdr.packet_in.k_p_bps = k_p_bps;
        hdr.packet_in.r_max_bps = r_max_bps;
        hdr.packet_in.r_floor_bps = r_floor_bps;
        bit<32> fwd;
        bit<32> deq;
        bit<32> cell = CELL_OF(standard_metadata.ingress_port,
                               (class_t)(hdr.report.flags >> ALINEA_CLASS_SHIFT));
        fwd_pkts.read(fwd, cell);
        deq_pkts.read(deq, cell);
        hdr.packet_in.fwd_pkts = fwd;
        hdr.packet_in.deq_pkts = deq;
        standard_metadata.egress_spec = PORT_CPU;
    }

    /* A report on a port that faces no ALINEA neighbour (e.g. a host):
       spoofed, dropped. */
    action drop_spoofed() {
        mark_to_drop(standard_metadata);
        drop_spoofed_report.count((bit<32>)standard_metadata.ingress_port);
    }

    /* One entry per neighbour-facing port, holding the ALINEA parameters
       of the law that regulates this switch's rate out of that port. */
    table report_ingress {
        key = {
            standard_metadata.ingress_port : exact;
        }
        actions = {
            report_to_cpu;
            @defaultonly drop_spoofed;
        }
        const default_action = drop_spoofed();
        size = PORT_COUNT;
    }

    /* --- per-port buffer model --- */

    /* The arrival port is modelled: copy its configuration to metadata
       (the report fields are kept in report clones). */
    action set_port(bit<32> capacity_pkts,
                    bit<32> report_interval_us,
                    bit<16> node_id,
                    mac_t   port_mac,
                    mac_t   upstream_mac) {
        meta.modelled = 1;
        meta.report_port = meta.model_port;
        meta.report_class = meta.data_class;
        meta.capacity = capacity_pkts;
        meta.report_interval_us = report_interval_us;
        meta.node_id = node_id;
        meta.port_mac = port_mac;
        meta.upstream_mac = upstream_mac;
    }

    /* One entry per modelled (and reported) port; no entry: not modelled. */
    table port_config {
        key = {
            meta.model_port : exact;
        }
        actions = {
            set_port;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = PORT_COUNT;
    }

    /* Take a slot of the arrival port's buffer if one is free.  Read, test
       and write in one action: BMv2 holds the register's lock for the
       whole action, so egress's release cannot interleave. */
    action admit() {
        @atomic {
            bit<32> occ;
            occupancy.read(occ, meta.model_cell);
            meta.admitted = (occ < meta.capacity) ? 1w1 : 1w0;
            occupancy.write(meta.model_cell, occ + (bit<32>)meta.admitted);
        }
    }

    /* A multicast packet's admission: a slot of the arrival port's buffer
       as admit(), and the next place of the port's ring of pending
       multicast packets, which must be free (its packet's copies all gone);
       the place then holds the copies to come.  One action: atomic against
       egress's copy_departs. */
    action admit_mcast() {
        @atomic {
            bit<32> occ;
            bit<32> next;
            bit<8> left;
            occupancy.read(occ, meta.model_cell);
            mcast_next.read(next, (bit<32>)meta.model_port);
            bit<32> slot = ((bit<32>)meta.model_port << MCAST_RING_BITS)
                           | (next & ((32w1 << MCAST_RING_BITS) - 1));
            mcast_left.read(left, slot);
            meta.admitted = (occ < meta.capacity && left == 0
                             && (meta.model_port >> MCAST_PORT_BITS) == 0) ? 1w1 : 1w0;
            occupancy.write(meta.model_cell, occ + (bit<32>)meta.admitted);
            mcast_next.write((bit<32>)meta.model_port, next + (bit<32>)meta.admitted);
            mcast_left.write(slot, (meta.admitted == 1w1) ? (bit<8>)meta.mcast_copies : left);
            meta.mcast_slot = slot;
        }
    }

    /* Is a report on model_port due?  If so, restart its interval now,
       in the same action, so that one packet only triggers it.  An
       arrival triggers it after one interval; a report poll only after
       two, and only while the port has seen an arrival lately, so that
       polls fill the gaps of a slow neighbour's arrivals and leave the
       reports' pace alone otherwise. */
    action check_report_due() {
        @atomic {
            bit<48> now = standard_metadata.ingress_global_timestamp;
            bit<48> wait = (bit<48>)meta.report_interval_us;
            bit<48> last;
            bit<48> arrived;
            last_report_ts.read(last, meta.model_cell);
            last_arrival_ts.read(arrived, meta.model_cell);
            bool live = arrived != 0 && now - arrived < (wait << POLL_LIVE_SHIFT);
            bool due = hdr.packet_out.isValid() ? (live && now - last >= wait + wait)
                                                 : now - last >= wait;
            last_report_ts.write(meta.model_cell, due ? now : last);
            last_arrival_ts.write(meta.model_cell,
                                  hdr.packet_out.isValid() ? arrived : now);
            meta.report_due = due ? 1w1 : 1w0;
        }
    }

    /* Clone this packet (as received) to model_port's report session;
       egress turns the clone into the report. */
    action request_report() {
        clone_preserving_field_list(CloneType.I2E,
            REPORT_SESSION_BASE + (bit<32>)meta.model_port,
            REPORT_FIELD_LIST);
    }

    /* A report poll has done its work: it goes nowhere. */
    action drop_poll() {
        mark_to_drop(standard_metadata);
    }

    /* A routed packet goes to the egress queue of egress_spec: count it
       there (egress counts it again when it leaves the queue). */
    action count_forwarded() {
        bit<32> cell = CELL_OF(standard_metadata.egress_spec, meta.data_class);
        @atomic {
            bit<32> n;
            fwd_pkts.read(n, cell);
            fwd_pkts.write(cell, n + 1);
        }
        fwd_routed.count((bit<32>)standard_metadata.egress_spec);
        meta.counted = 1;
    }

    /* A multicast packet's copy to meta.copy_port goes to that port's
       egress queue: counted there as a routed packet (egress counts the copy
       when it leaves).  No parameter: p4switch's engine runs an action
       without parameters in its own walk. */
    action count_copy() {
        bit<32> cell = CELL_OF(meta.copy_port, meta.data_class);
        @atomic {
            bit<32> n;
            fwd_pkts.read(n, cell);
            fwd_pkts.write(cell, n + 1);
        }
        fwd_routed.count((bit<32>)meta.copy_port);
    }

    /* Hand the packet to the PRE: one copy per child port of its group. */
    action replicate() {
        standard_metadata.mcast_grp = meta.mcast_group;
        meta.counted = 1;
    }

    /* --- per-destination classes --- */

    /* The destination's class: its egress priority queue is the class
       (the reports' is above every class: report_path). */
    action set_class(class_t data_class) {
        meta.data_class = data_class;
        standard_metadata.priority = data_class;
    }

    /* A report built at REPORT_RECIRC_PORT and recirculated: out of the
       port it reports on, on the reports' priority, which BMv2 honours
       here (a unicast from ingress), not on a clone. */
    action send_report() {
        standard_metadata.egress_spec = meta.report_port;
        standard_metadata.priority = meta.report_priority;
        truncate(REPORT_FRAME_BYTES);
    }

    /* One entry per destination prefix when the topology has classes
       (options.classes > 1); none otherwise: class 0, priority 0. */
    table dst_class {
        key = {
            hdr.ipv4.dstAddr : lpm;
        }
        actions = {
            set_class;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = DST_CLASS_SIZE;
    }

    /* --- IPv4 routing --- */

    action ipv4_forward(mac_t dst_mac, mac_t src_mac, port_t port) {
        hdr.ethernet.dstAddr = dst_mac;
        hdr.ethernet.srcAddr = src_mac;
        standard_metadata.egress_spec = port;
        meta.routed = 1;
    }

    /* The destination has several equal-cost next hops: ecmp_group
       picks one of group_id's members by the packet's 5-tuple. */
    action set_ecmp_group(bit<16> group_id) {
        meta.ecmp_group = group_id;
    }

    /* No route (the default), or a route that discards. */
    action drop() {
        mark_to_drop(standard_metadata);
        drop_no_route.count((bit<32>)standard_metadata.ingress_port);
    }

    /* --- multicast --- */

    /* A group address: its PRE group, and the copies this switch makes of
       it with their egress ports (the first `copies` of port0..port3). */
    action set_mcast(bit<16> group, bit<3> copies,
                     port_t port0, port_t port1, port_t port2, port_t port3) {
        meta.mcast_group = group;
        meta.mcast_copies = copies;
        meta.mcast_port0 = port0;
        meta.mcast_port1 = port1;
        meta.mcast_port2 = port2;
        meta.mcast_port3 = port3;
        meta.routed = 1;
    }

    /* One entry per multicast group this switch replicates; unicast
       addresses miss it and are routed by ipv4_lpm. */
    table mcast_route {
        key = {
            hdr.ipv4.dstAddr : exact;
        }
        actions = {
            set_mcast;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = MCAST_ROUTES;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr : lpm;
        }
        actions = {
            ipv4_forward;
            set_ecmp_group;
            drop;
        }
        const default_action = drop();
        size = IPV4_LPM_SIZE;
    }

    /* Equal-cost next hops: one entry per group id, pointing to an
       action-profile group of ipv4_forward members written over
       P4Runtime; the selector hashes the 5-tuple, so a flow keeps its
       path.  No entry, or an empty group: dropped as no route. */
    @max_group_size(ECMP_MAX_GROUP)
    action_selector(HashAlgorithm.crc16, ECMP_MEMBERS, ECMP_HASH_BITS) ecmp_selector;

    table ecmp_group {
        key = {
            meta.ecmp_group     : exact;
            hdr.ipv4.srcAddr    : selector;
            hdr.ipv4.dstAddr    : selector;
            hdr.ipv4.protocol   : selector;
            meta.l4_src         : selector;
            meta.l4_dst         : selector;
        }
        actions = {
            ipv4_forward;
            @defaultonly drop;
        }
        const default_action = drop();
        implementation = ecmp_selector;
        size = ECMP_GROUPS;
    }

    apply {
        if (standard_metadata.instance_type != PKT_INSTANCE_TYPE_RECIRC) {
            rx.count((bit<32>)standard_metadata.ingress_port);
        }

        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_RECIRC) {
            /* Only report_path recirculates: a report of this switch's. */
            if (hdr.report.isValid()) {
                send_report();
            } else {
                discard_unsupported();
            }
        } else if (standard_metadata.parser_error != error.NoError) {
            discard_parser_error();
        } else if (standard_metadata.checksum_error == 1w1) {
            discard_bad_checksum();
        } else if (hdr.packet_out.isValid() && hdr.packet_out.report_poll == 1w0) {
            send_from_cpu();
        } else if (hdr.report.isValid() && !hdr.packet_out.isValid()) {
            /* Reports are never forwarded: to the controller or dropped. */
            report_ingress.apply();
        } else if (hdr.ipv4.isValid() || hdr.packet_out.isValid()) {
            /* An IPv4 arrival, or a report poll naming the port. */
            if (hdr.packet_out.isValid()) {
                meta.model_port = hdr.packet_out.egress_port;
                meta.data_class = hdr.packet_out.poll_class;
            } else {
                meta.model_port = standard_metadata.ingress_port;
                dst_class.apply();
            }
            meta.model_cell = CELL_OF(meta.model_port, meta.data_class);
            port_config.apply();
            /* Any IPv4 arrival on a modelled port may trigger its report,
               whatever becomes of the packet itself. */
            if (meta.modelled == 1w1) {
                check_report_due();
                if (meta.report_due == 1w1) {
                    request_report();
                }
            }
            // ---- pgmcc NAK aggregation
            meta.nak_repeat = 1w0;
            if (hdr.pgmcc_fb.isValid() && hdr.pgmcc_fb.fb_type == PGMCC_NAK) {
                meta.nak_hold = 48w0;
                nak_aggregation.apply();
                if (meta.nak_hold != 48w0) {
                    /* The slot: session xor sequence, folded to NAK_SLOTS (a
                       power of two); a session's consecutive NAKs take
                       consecutive slots.  No hash extern: p4switch's engine
                       runs this arithmetic in its own walk. */
                    bit<32> slot = ((bit<32>)hdr.datagram.flow ^ hdr.pgmcc_fb.nak_seq)
                                   & (bit<32>)(NAK_SLOTS - 1);
                    bit<48> key = hdr.datagram.flow ++ hdr.pgmcc_fb.nak_seq;
                    bit<48> seen;
                    bit<48> at;
                    nak_key.read(seen, slot);
                    nak_ts.read(at, slot);
                    if (seen == key && standard_metadata.ingress_global_timestamp - at < meta.nak_hold) {
                        meta.nak_repeat = 1w1;
                    } else {
                        nak_key.write(slot, key);
                        nak_ts.write(slot, standard_metadata.ingress_global_timestamp);
                    }
                }
            }
            // ---- end pgmcc NAK aggregation
            if (hdr.packet_out.isValid()) {
                drop_poll();
            } else if (meta.nak_repeat == 1w1) {
                discard_nak_repeat();  // pgmcc NAK aggregation
            } else {
                mcast_route.apply();
                if (meta.mcast_group == 16w0) {
                    switch (ipv4_lpm.apply().action_run) {
                        set_ecmp_group: {
                            ecmp_group.apply();
                        }
                    }
                }
                if (meta.routed == 1w1) {
                    if (hdr.ipv4.ttl <= 8w1) {
                        discard_ttl_expired();
                    } else {
                        hdr.ipv4.ttl = hdr.ipv4.ttl - 8w1;
                        if (meta.modelled == 1w1) {
                            if (meta.mcast_group == 16w0) {
                                admit();
                            } else {
                                admit_mcast();
                            }
                            if (meta.admitted == 1w0) {
                                discard_overflow();
                            }
                        }
                        if (meta.modelled == 1w0 || meta.admitted == 1w1) {
                            if (meta.mcast_group == 16w0) {
                                count_forwarded();
                            } else {
                                replicate();
                                meta.copy_port = meta.mcast_port0;
                                count_copy();
                                if (meta.mcast_copies > 3w1) {
                                    meta.copy_port = meta.mcast_port1;
                                    count_copy();
                                }
                                if (meta.mcast_copies > 3w2) {
                                    meta.copy_port = meta.mcast_port2;
                                    count_copy();
                                }
                                if (meta.mcast_copies > 3w3) {
                                    meta.copy_port = meta.mcast_port3;
                                    count_copy();
                                }
                            }
                        }
                    }
                }
            }
        } else {
            discard_unsupported();
        }
    }
}

/* ------------------------------------------------------------------ */
/* Egress                                                              */
/* ------------------------------------------------------------------ */

control MyEgress(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {

    /* Every frame sent, per egress port (reports and packet-ins too). */
    counter(PORT_COUNT, CounterType.packets_and_bytes) tx;
    /* Of those, the routed IPv4 frames (the ones counted in deq_pkts),
       per egress port, every class: the switch agent reads it (P4Runtime
       Read) for the mean size of the frames each port sends, which turns
       its law's b/s into the queue's packets/s (docs/background/alinea.md, "Bits,
       not packets").  Not tx: a report clone is counted there at the
       length of the packet that triggered it. */
    counter(PORT_COUNT, CounterType.packets_and_bytes) tx_routed;

    /* An admitted packet leaves the queue: free its slot of the buffer of
       the port it arrived on (ingress_port is kept for NORMAL packets).
       Read and write in one action: atomic against ingress's admit. */
    action release() {
        bit<32> cell = CELL_OF(standard_metadata.ingress_port, meta.data_class);
        @atomic {
            bit<32> occ;
            occupancy.read(occ, cell);
            occupancy.write(cell, (occ == 0) ? 32w0 : occ - 1);
        }
        @atomic {
            bit<32> n;
            drained_pkts.read(n, cell);
            drained_pkts.write(cell, n + 1);
            last_drain_ts.write(cell, standard_metadata.egress_global_timestamp);
        }
    }

    /* A multicast copy leaves its queue: one copy fewer of its packet
       pending (mcast_left); the last one frees the packet's buffer slot. */
    action copy_departs() {
        @atomic {
            bit<8> left;
            mcast_left.read(left, meta.mcast_slot);
            mcast_left.write(meta.mcast_slot, (left == 0) ? 8w0 : left - 1);
            meta.last_copy = (left == 1) ? 1w1 : 1w0;
        }
    }

    /* A multicast copy's next hop: the addresses of the port it leaves by. */
    action set_next_hop(mac_t dst_mac, mac_t src_mac) {
        hdr.ethernet.dstAddr = dst_mac;
        hdr.ethernet.srcAddr = src_mac;
    }

    /* One entry per port a multicast group leaves by. */
    table mcast_next_hop {
        key = {
            standard_metadata.egress_port : exact;
        }
        actions = {
            set_next_hop;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = PORT_COUNT;
    }

    /* A packet counted in fwd_pkts[egress_port] has left that port's
       queue. */
    action count_dequeued() {
        bit<32> cell = CELL_OF(standard_metadata.egress_port, meta.data_class);
        @atomic {
            bit<32> n;
            deq_pkts.read(n, cell);
            deq_pkts.write(cell, n + 1);
        }
        tx_routed.count((bit<32>)standard_metadata.egress_port);
    }

    /* Turn a report clone (the triggering packet as received, with the
       field list of metadata) into the ALINEA report for
       meta.report_port, addressed to the upstream neighbour. */
    action build_report() {
        bit<32> idx = CELL_OF(meta.report_port, meta.report_class);
        bit<32> occ;
        bit<32> drops;
        bit<32> seq;
        bit<32> drained;
        bit<48> drained_ts;

        occupancy.read(occ, idx);
        @atomic {
            drained_pkts.read(drained, idx);
            last_drain_ts.read(drained_ts, idx);
        }
        @atomic {
            overflow_drops.read(drops, idx);
            overflow_drops.write(idx, 0);
        }
        @atomic {
            report_seq.read(seq, idx);
            seq = seq + 1;
            report_seq.write(idx, seq);
        }

        hdr.packet_out.setInvalid();
        hdr.packet_in.setInvalid();
        hdr.ipv4.setInvalid();
        hdr.udp.setInvalid();
        hdr.tcp_ports.setInvalid();

        hdr.ethernet.setValid();
        hdr.ethernet.dstAddr = meta.upstream_mac;
        hdr.ethernet.srcAddr = meta.port_mac;
        hdr.ethernet.etherType = ETHERTYPE_ALINEA;

        hdr.report.setValid();
        hdr.report.version = ALINEA_VERSION;
        hdr.report.msg_type = ALINEA_MSG_OCCUPANCY;
        hdr.report.flags = ((bit<8>)meta.report_class << ALINEA_CLASS_SHIFT)
                           | ((drops == 0) ? 8w0 : ALINEA_FLAG_OVERFLOW);
        hdr.report.node_id = meta.node_id;
        hdr.report.port = (bit<16>)meta.report_port;
        hdr.report.occupancy = occ;
        hdr.report.capacity = meta.capacity;
        hdr.report.timestamp = standard_metadata.egress_global_timestamp;
        hdr.report.seq = seq;
        hdr.report.drops = drops;
        hdr.report.interval_us = meta.report_interval_us;
        hdr.report.drained = drained;
        hdr.report.drained_ts = drained_ts;

        /* Drop the clone's payload: the frame is the two headers only. */
        truncate(REPORT_FRAME_BYTES);
    }

    /* With classes: the report, built at REPORT_RECIRC_PORT, goes back to
       ingress, which sends it out of report_port on `priority`, the top
       one (BMv2 gives a clone priority 0 and PI no class of service, so a
       report clone sent straight out would wait behind every class). */
    action recirculate_report(bit<3> priority) {
        meta.report_priority = priority;
        recirculate_preserving_field_list(REPORT_FIELD_LIST);
    }

    /* One entry, for REPORT_RECIRC_PORT, when the topology has classes;
       none otherwise: the report leaves the port its session names. */
    table report_path {
        key = {
            standard_metadata.egress_port : exact;
        }
        actions = {
            recirculate_report;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = 1;
    }

    apply {
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            build_report();
            report_path.apply();
        } else if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_NORMAL) {
            if (meta.admitted == 1w1) {
                release();
            }
            if (meta.counted == 1w1) {
                count_dequeued();
            }
        } else if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_REPLICATION) {
            mcast_next_hop.apply();
            if (meta.admitted == 1w1) {
                copy_departs();
                if (meta.last_copy == 1w1) {
                    release();
                }
            }
            if (meta.counted == 1w1) {
                count_dequeued();
            }
        }
        tx.count((bit<32>)standard_metadata.egress_port);
    }
}

/* ------------------------------------------------------------------ */
/* Checksum update                                                     */
/* ------------------------------------------------------------------ */

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.diffserv,
              hdr.ipv4.totalLen,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.fragOffset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.srcAddr,
              hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

/* ------------------------------------------------------------------ */
/* Deparser                                                            */
/* ------------------------------------------------------------------ */

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.report);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.tcp_ports);
        pkt.emit(hdr.datagram);  // pgmcc NAK aggregation: parsed on PGMCC_FEEDBACK_PORT only
        pkt.emit(hdr.pgmcc_fb);  // pgmcc NAK aggregation
    }
}

V1Switch(MyParser(),
         MyVerifyChecksum(),
         MyIngress(),
         MyEgress(),
         MyComputeChecksum(),
         MyDeparser()) main;
