/*
 * core.p4 -- the P4_16 core library, as this project declares it.
 *
 * Written for the hbh-alinea project from the P4_16 language
 * specification (v1.2.x, section "P4 core library"); it declares the
 * same names and signatures so that programs written for p4c compile
 * against it unchanged, but the text and comments are our own.
 *
 * Every P4_16 program includes this file, directly or through an
 * architecture file such as v1model.p4.
 */

#ifndef _HBH_CORE_P4_
#define _HBH_CORE_P4_
/* The guard name p4c's core.p4 defines: programs and fragments test it
   (`#ifdef _CORE_P4_`) to know the core library is in. */
#define _CORE_P4_

/*
 * Errors the parser runtime may signal.  A program may add its own
 * members with further `error { ... }` declarations; all of them merge
 * into the one `error` type.
 */
error {
    NoError,               // no error: the parser reached `accept`
    PacketTooShort,        // extract/lookahead/advance ran past the end of the packet
    NoMatch,               // a select expression matched no case (and had no default)
    StackOutOfBounds,      // extract into `.next` of a full header stack, or index out of range
    HeaderTooShort,        // variable-size extract: the size given exceeds the varbit field's maximum
    ParserTimeout,         // the parser ran longer than the target allows
    ParserInvalidArgument  // an argument to a parser operation is invalid (e.g. a negative advance)
}

/*
 * The packet being parsed: a byte string with a cursor that only moves
 * forward.  Instances exist only as the first parameter of a parser.
 */
extern packet_in {
    /*
     * Copy the fixed-size header `hdr` (a header, or `.next` of a stack)
     * out of the packet at the cursor, mark it valid and move the cursor
     * past it.  Signals PacketTooShort when fewer bits remain.
     */
    void extract<T>(out T hdr);

    /*
     * Same for a header that ends with one varbit field: the field gets
     * `variableFieldSizeInBits` bits (a multiple of 8).  Signals
     * HeaderTooShort when that exceeds the field's declared maximum.
     */
    void extract<T>(out T variableSizeHeader,
                    in bit<32> variableFieldSizeInBits);

    /*
     * The next sizeof(T) bits of the packet, read as a T, without moving
     * the cursor.  T is a bit<W>, a header or a struct of fixed size.
     * Signals PacketTooShort when fewer bits remain.
     */
    T lookahead<T>();

    /* Move the cursor forward by `sizeInBits` bits without extracting. */
    void advance(in bit<32> sizeInBits);

    /* Length of the whole packet in bytes (targets may leave it unsupported). */
    bit<32> length();
}

/*
 * The packet being built by a deparser: headers are appended in call
 * order, then the unparsed rest of the received packet follows.
 */
extern packet_out {
    /*
     * Append `hdr` to the output.  For a header: only if it is valid.
     * For a header stack, union or struct: each member in declaration
     * order, recursively (invalid headers are skipped).
     */
    void emit<T>(in T hdr);
}

/*
 * In a parser: when `check` is false, stop parsing, record `toSignal`
 * as the parser error and go to the `reject` state.
 */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing; the implicit default action of a table. */
@noWarn("unused")
action NoAction() {}

/*
 * The match kinds every target knows.  Architectures add more
 * (v1model: range, optional, selector).
 *   exact   -- the key equals the entry's value
 *   ternary -- (key & mask) == (value & mask); entries need a priority
 *   lpm     -- longest prefix match; the longest matching prefix wins
 */
match_kind {
    exact,
    ternary,
    lpm
}

/*
 * Compile-time assertion: the front end rejects the program when
 * `check` (a compile-time constant) is false, printing `message`.
 * Evaluates to true when it passes, so it can initialise a constant.
 */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif  /* _HBH_CORE_P4_ */
