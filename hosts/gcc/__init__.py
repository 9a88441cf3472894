"""Google Congestion Control (draft-ietf-rmcat-gcc-02) as sans-I/O cores.

Receiver (receiver.py): packet groups (groups.py), an arrival-time filter (trendline.py, the
default, or the draft's kalman.py), the adaptive threshold and over-use detector (detector.py), the
AIMD remote rate controller (aimd.py); its reports are RTCP receiver reports with a REMB (wire.py).
Sender (sender.py): the loss-based controller (loss.py) under the REMB, a video-like source and a
pacer. docs/background/e2e.md, "GCC".
"""

from hosts.gcc.params import FILTERS, GccParams
from hosts.gcc.receiver import GccReceiver
from hosts.gcc.sender import GccSender
from hosts.gcc.wire import REPORT_BYTES, GccReport, decode_report, encode_report

__all__ = ["GccParams", "FILTERS", "GccReceiver", "GccSender", "GccReport", "REPORT_BYTES", "encode_report",
           "decode_report"]
