/* core.p4 for the p4switch target: the P4-16 core library declarations
 * (error codes, packet_in/packet_out, verify, NoAction, match kinds),
 * written from the P4-16 language specification. */

/* _CORE_P4_ is the customary guard macro; programs test it to know core.p4 is included. */
#ifndef _CORE_P4_
#define _CORE_P4_

/* Standard error codes raised by the parser primitives. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* The packet being parsed. */
extern packet_in {
    /* Extract a fixed-size header and advance the cursor. */
    void extract<T>(out T hdr);
    /* Extract a header with one varbit field of the given size in bits. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* Read bits without advancing the cursor. */
    T lookahead<T>();
    /* Skip the given number of bits. */
    void advance(in bit<32> sizeInBits);
    /* Size of the packet in bytes. */
    bit<32> length();
}

/* The packet being assembled by a deparser. */
extern packet_out {
    /* Append a header (if valid), or every valid header of a struct/union/stack. */
    void emit<T>(in T hdr);
}

/* Reject the packet with error `toSignal` unless `check` holds (parsers only). */
extern void verify(in bool check, in error toSignal);

/* Compile-time check: the program is rejected (with `message`) when `check` is false. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

/* The action that does nothing, the default of tables without a default_action. */
@noWarn("unused")
action NoAction() {}

/* Match kinds every target provides. */
match_kind {
    exact,
    ternary,
    lpm
}

/* Names a list of actions (used by action profile properties). */
extern action_list<T> {
    action_list(T actions);
}

#endif
