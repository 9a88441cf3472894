/*
 * v1model.p4 -- the v1model architecture (the P4_14 abstract switch,
 * as run by BMv2 simple_switch), as this project declares it.
 *
 * Written for the hbh-alinea project from the BMv2 documentation
 * (docs/simple_switch.md: standard metadata, primitives, after-ingress
 * and after-egress behaviour) and the P4_16 specification.  Names,
 * widths and signatures are those p4c programs use, so that programs
 * compile unchanged; the text and comments are our own.
 *
 * Pipeline: Parser -> VerifyChecksum -> Ingress -> traffic manager
 *           (queues, clone, multicast) -> Egress -> ComputeChecksum
 *           -> Deparser.
 *
 * Packet instance types (standard_metadata.instance_type) as BMv2
 * numbers them -- programs declare their own constants for them:
 *   0 NORMAL        a packet received on a port (or unicast from ingress)
 *   1 INGRESS_CLONE a clone made at the end of ingress (CloneType.I2E)
 *   2 EGRESS_CLONE  a clone made at the end of egress (CloneType.E2E)
 *   3 COALESCED     (unused by simple_switch)
 *   4 RECIRC        a recirculated packet, back in ingress
 *   5 REPLICATION   a multicast copy, in egress
 *   6 RESUBMIT      a resubmitted packet, back in ingress
 */

#ifndef _HBH_V1MODEL_P4_
#define _HBH_V1MODEL_P4_
/* The guard name p4c's v1model.p4 defines: programs test it to know v1model is in. */
#define _V1_MODEL_P4_

#include "core.p4"

/*
 * Version of this architecture description, as a date YYYYMMDD.  A
 * program may define V1MODEL_VERSION before including this file (or
 * with -D) to get the declarations of a given version:
 *   20180101 (default): counter/meter/register indices are bit<32>;
 *   20200408 and later: counter<I>, meter<I>, register<T, I> take the
 *                       index type as a type parameter, PortId_t exists.
 */
#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif
#if V1MODEL_VERSION < 0
#error "V1MODEL_VERSION must be a non-negative number (a date such as 20200408)"
#elif V1MODEL_VERSION < 20180101 || V1MODEL_VERSION > 20200408
#error "unknown V1MODEL_VERSION: this v1model.p4 knows versions 20180101 to 20200408"
#endif

/* The version, readable by the program and by the target. */
const bit<32> __v1model_version = V1MODEL_VERSION;

/*
 * Match kinds v1model adds to core.p4's exact/ternary/lpm:
 *   range    -- lo <= key <= hi; entries need a priority
 *   optional -- either exact on a value or a wildcard; entries need a priority
 *   selector -- a key field fed to the hash of an action_selector
 */
match_kind {
    range,
    optional,
    selector
}

#if V1MODEL_VERSION >= 20200408
/* A port number (9 bits in BMv2: ports 0..510, 511 is the drop port). */
typedef bit<9> PortId_t;
#endif

/*
 * Per-packet metadata the architecture fills in and reads.  Times are
 * microseconds since the switch started; lengths are bytes; queue
 * depths are packets.  "Egress only" fields hold 0 during ingress.
 */
/*
 * @alias: the names BMv2 gives these fields in its JSON (`field_aliases`,
 * filled by p4c's BMv2 back end from these annotations); simple_switch's
 * queueing and intrinsic metadata are found under them.
 */
@metadata @name("standard_metadata")
struct standard_metadata_t {
    /* Port the packet arrived on.  Read-only.  Kept into egress for
       NORMAL packets; 0 for clones unless preserved by the program. */
    bit<9>  ingress_port;
    /* Ingress writes the output port here.  mark_to_drop() sets it to
       the drop port (511 in BMv2); ingress ending with that value drops
       the packet. */
    bit<9>  egress_spec;
    /* Egress only, read-only: the port the packet will leave on. */
    bit<9>  egress_port;
    /* Which kind of packet instance this is: see the table above. */
    bit<32> instance_type;
    /* Length of the packet in bytes as received (0 for clones and
       resubmits unless preserved in a field list). */
    bit<32> packet_length;
    /* Egress only: time (µs) the packet entered its egress queue. */
    @alias("queueing_metadata.enq_timestamp")
    bit<32> enq_timestamp;
    /* Egress only: depth of the egress queue (packets) at enqueue. */
    @alias("queueing_metadata.enq_qdepth")
    bit<19> enq_qdepth;
    /* Egress only: time (µs) the packet spent in the egress queue. */
    @alias("queueing_metadata.deq_timedelta")
    bit<32> deq_timedelta;
    /* Egress only: depth of the egress queue (packets) at dequeue. */
    @alias("queueing_metadata.deq_qdepth")
    bit<19> deq_qdepth;
    /* Time (µs) the packet arrived at ingress.  Read-only. */
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48> ingress_global_timestamp;
    /* Egress only: time (µs) the packet started egress.  Read-only. */
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48> egress_global_timestamp;
    /* Ingress writes a multicast group here; 0 means no multicast. */
    @alias("intrinsic_metadata.mcast_grp")
    bit<16> mcast_grp;
    /* Egress only: the replication id of a multicast copy. */
    @alias("intrinsic_metadata.egress_rid")
    bit<16> egress_rid;
    /* 1 when a verify_checksum call in VerifyChecksum found a mismatch. */
    bit<1>  checksum_error;
    /* The error the parser signalled, error.NoError when it accepted. */
    error   parser_error;
    /* Priority (egress queue) of the packet, 0 lowest; ingress may write it. */
    @alias("intrinsic_metadata.priority")
    bit<3>  priority;
}

/* What a counter cell counts. */
enum CounterType {
    packets,            // one per count() call
    bytes,              // the packet's length in bytes per count() call
    packets_and_bytes   // both
}

/* What a meter measures its rates in. */
enum MeterType {
    packets,            // packets per second
    bytes               // bytes per second
}

/* The colours a meter writes into its result (a bit<W> with W >= 2). */
#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

#if V1MODEL_VERSION >= 20200408
/*
 * An array of `size` counter cells, indexed from 0; the control plane
 * reads them (P4Runtime CounterEntry).  An index >= size is ignored.
 */
extern counter<I> {
    counter(bit<32> size, CounterType type);
    /* Count the current packet in cell `index`. */
    void count(in I index);
}
#else
/*
 * An array of `size` counter cells, indexed from 0; the control plane
 * reads them (P4Runtime CounterEntry).  An index >= size is ignored.
 */
extern counter {
    counter(bit<32> size, CounterType type);
    /* Count the current packet in cell `index`. */
    void count(in bit<32> index);
}
#endif

/*
 * One counter cell per entry of the table that names it in its
 * `counters` property; the hit entry's cell counts every packet that
 * hits it (whether or not the action calls count()).
 */
extern direct_counter {
    direct_counter(CounterType type);
    /* Count in the cell of the entry that matched (optional). */
    void count();
}

#if V1MODEL_VERSION >= 20200408
/*
 * An array of `size` two-rate three-colour meters (RFC 2698), indexed
 * from 0; the control plane sets each cell's CIR/CBS/PIR/PBS.
 */
extern meter<I> {
    meter(bit<32> size, MeterType type);
    /* Meter the current packet with cell `index`; write its colour
       (V1MODEL_METER_COLOR_*) into `result`.  An unconfigured cell
       gives GREEN. */
    void execute_meter<T>(in I index, out T result);
}
#else
/*
 * An array of `size` two-rate three-colour meters (RFC 2698), indexed
 * from 0; the control plane sets each cell's CIR/CBS/PIR/PBS.
 */
extern meter {
    meter(bit<32> size, MeterType type);
    /* Meter the current packet with cell `index`; write its colour
       (V1MODEL_METER_COLOR_*) into `result`.  An unconfigured cell
       gives GREEN. */
    void execute_meter<T>(in bit<32> index, out T result);
}
#endif

/*
 * One meter per entry of the table that names it in its `meters`
 * property; the packet is metered by the entry it hits.
 */
extern direct_meter<T> {
    direct_meter(MeterType type);
    /* The colour (V1MODEL_METER_COLOR_*) of the current packet. */
    void read(out T result);
}

#if V1MODEL_VERSION >= 20200408
/*
 * An array of `size` cells of type T that keep their values across
 * packets, indexed from 0; all cells start at 0.  A read at an index
 * >= size gives 0 and a write there is ignored.
 */
extern register<T, I> {
    register(bit<32> size);
    /* Cell `index` into `result`. */
    @noSideEffects
    void read(out T result, in I index);
    /* `value` into cell `index`. */
    void write(in I index, in T value);
}
#else
/*
 * An array of `size` cells of type T that keep their values across
 * packets, indexed from 0; all cells start at 0.  A read at an index
 * >= size gives 0 and a write there is ignored.
 */
extern register<T> {
    register(bit<32> size);
    /* Cell `index` into `result`. */
    @noSideEffects
    void read(out T result, in bit<32> index);
    /* `value` into cell `index`. */
    void write(in bit<32> index, in T value);
}
#endif

/*
 * A table implementation (`implementation = ...`) whose entries point
 * at members (action + parameters) shared between entries; `size` is
 * the number of members.
 */
extern action_profile {
    action_profile(bit<32> size);
}

/*
 * Write into `result` a uniformly distributed value with
 * lo <= result <= hi.
 */
extern void random<T>(out T result, in T lo, in T hi);

/*
 * Send `data` (usually a struct of fields) to the control plane as a
 * digest (learning) message.  `receiver` identifies the digest in the
 * target; the values are those at the time of the call.  BMv2 sends it
 * at the end of ingress; P4Runtime delivers it as a DigestList.
 */
extern void digest<T>(in bit<32> receiver, in T data);

/* Hash and checksum algorithms known to the target. */
enum HashAlgorithm {
    crc32,          // CRC-32 (IEEE 802.3)
    crc32_custom,   // CRC-32 with a target-configured polynomial
    crc16,          // CRC-16 (ARC / IBM)
    crc16_custom,   // CRC-16 with a target-configured polynomial
    random,         // a random number, ignoring the data
    identity,       // the data itself, truncated to the output width
    csum16,         // the 16-bit one's complement Internet checksum (RFC 1071)
    xor16           // the XOR of the data's 16-bit words
}

/*
 * Mark the packet to be dropped: sets egress_spec to the drop port (in
 * egress, the packet is dropped when egress ends).  A later assignment
 * to egress_spec undoes it.
 */
@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/*
 * result = base + (H(data) % max) with H the hash `algo` of the
 * concatenated bits of `data` (a list or struct of fields); when
 * max == 0 the result is base.
 */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo,
                             in T base, in D data, in M max);

/*
 * A table implementation that, like action_profile, holds members and
 * groups of members; a group entry picks one member by hashing the
 * `selector` key fields with `algorithm` to `outputWidth` bits.
 */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size,
                    bit<32> outputWidth);
}

/* Where a clone starts: I2E after ingress, E2E after egress. */
enum CloneType {
    I2E,    // ingress to egress: the packet as received, into egress
    E2E     // egress to egress: the packet as deparsed, into egress again
}

/*
 * An old-style checksum unit (kept for programs written against early
 * v1model versions): get() returns the 16-bit ones' complement checksum
 * of `data`.  Prefer verify_checksum / update_checksum.
 */
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/*
 * Check a checksum after the parser (call only in VerifyChecksum):
 * when `condition` is true and the `algo` checksum of `data` is not
 * equal to `checksum`, set standard_metadata.checksum_error to 1.
 * The packet is not dropped by the architecture.
 */
extern void verify_checksum<T, O>(in bool condition, in T data,
                                  in O checksum, HashAlgorithm algo);

/*
 * Compute a checksum before the deparser (call only in
 * ComputeChecksum): when `condition` is true, `checksum` = `algo`
 * checksum of `data`.
 */
@pure
extern void update_checksum<T, O>(in bool condition, in T data,
                                  inout O checksum, HashAlgorithm algo);

/*
 * As verify_checksum, over `data` followed by the packet's payload (the
 * bytes after the last extracted header), e.g. TCP/UDP checksums.
 */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data,
                                               in O checksum, HashAlgorithm algo);

/*
 * As update_checksum, over `data` followed by the packet's payload (the
 * bytes after the last emitted header).
 */
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data,
                                               inout O checksum, HashAlgorithm algo);

/*
 * Clone the packet at the end of this control (I2E from ingress, E2E
 * from egress) to the clone session `session`, which the control plane
 * maps to an egress port (and optionally a truncation length).  User
 * metadata of the clone starts at 0.  Only the last clone call of a
 * pass takes effect.
 */
extern void clone(in CloneType type, in bit<32> session);

/*
 * As clone(), and keep in the clone the final values (at the end of this
 * control) of the user-metadata fields annotated @field_list(index).
 * `index` must be a compile-time constant.
 */
extern void clone_preserving_field_list(in CloneType type, in bit<32> session,
                                        bit<8> index);

/*
 * At the end of ingress, run ingress again on the packet as received
 * (instance_type RESUBMIT), keeping the user-metadata fields annotated
 * @field_list(index).  Takes priority over forwarding.
 */
extern void resubmit_preserving_field_list(bit<8> index);

/*
 * At the end of egress, send the deparsed packet back to the start of
 * the parser (instance_type RECIRC), keeping the user-metadata fields
 * annotated @field_list(index).
 */
extern void recirculate_preserving_field_list(bit<8> index);

/* Older forms taking the list of fields to keep as an argument. */
@deprecated("Please use clone_preserving_field_list instead.")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);
@deprecated("Please use resubmit_preserving_field_list instead.")
extern void resubmit<T>(in T data);
@deprecated("Please use recirculate_preserving_field_list instead.")
extern void recirculate<T>(in T data);

/*
 * When the packet leaves the switch, keep at most its first `length`
 * bytes (after deparsing).  Applies to the instance that called it;
 * when called several times, the smallest length wins.
 */
extern void truncate(in bit<32> length);

/*
 * Debugging checks:
 * assert -- when `check` is false, the target reports the failure (file
 *           and line) and may stop processing;
 * assume -- a fact verification tools take as given; at run time it
 *           behaves like assert.
 */
extern void assert(in bool check);
extern void assume(in bool check);

/*
 * Write a line to the switch's log.  In the second form each `{}` in
 * `msg` is replaced by the next member of `data` (a list or struct).
 */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* Parses the packet into headers; user metadata starts at 0. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

/* Checks checksums (only verify_checksum* calls), before ingress. */
control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

/* Chooses the egress port (egress_spec), multicast group, clones. */
@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

/* Runs per output packet after the queue: rewrites, drops, clones. */
@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

/* Computes checksums (only update_checksum* calls), after egress. */
control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

/* Serialises the headers (only emit calls), before the payload. */
@deparser
control Deparser<H>(packet_out b, in H hdr);

/* The v1model switch: the six blocks, in pipeline order. */
package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif  /* _HBH_V1MODEL_P4_ */
