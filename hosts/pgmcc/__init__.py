"""pgmcc (Rizzo): single-rate, TCP-friendly multicast congestion control, as sans-I/O cores.

Sender (sender.py): a TCP-like window (window.py) clocked by the ACKs of one receiver, the acker,
elected by the throughput estimate T ∝ 1/(RTT·√p) carried in the receivers' NAKs (election.py);
NAK-driven repairs that share the window but not its decisions; a fixed or adaptive timeout.
Receiver (receiver.py): the loss estimate, NAKs with retries, ACKs with a 32-bit bitmask while it is
the acker. Messages: wire.py. docs/howto/multicast.md, "pgmcc as implemented".
"""

from hosts.pgmcc.election import AckerElection, Switch, throughput
from hosts.pgmcc.params import ADAPTIVE, PgmccParams
from hosts.pgmcc.receiver import PgmccReceiver
from hosts.pgmcc.sender import PgmccSender, Transmission
from hosts.pgmcc.wire import (
    ACK,
    DATA_BYTES,
    FEEDBACK_BYTES,
    FEEDBACK_PORT,
    NAK,
    NAK_SEQ_OFFSET,
    NO_SEQ,
    DataTag,
    Feedback,
    decode_data,
    decode_feedback,
    encode_data,
    encode_feedback,
)

__all__ = ["PgmccParams", "ADAPTIVE", "PgmccSender", "PgmccReceiver", "Transmission", "AckerElection", "Switch",
           "throughput", "Feedback", "DataTag", "ACK", "NAK", "NO_SEQ", "DATA_BYTES", "FEEDBACK_BYTES",
           "FEEDBACK_PORT", "NAK_SEQ_OFFSET", "encode_data", "decode_data", "encode_feedback", "decode_feedback"]
