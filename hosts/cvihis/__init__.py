"""CVIHIS end-to-end delay-based congestion control, as sans-I/O state machines.

Events and a clock in, decisions out: no sockets, sleeps, threads or wall clock, so the same
objects run in the virtual-time simulator and in real hosts. See docs/background/cvihis.md.
"""

from hosts.cvihis.areas import AREAS, TARGET_AREA, Command
from hosts.cvihis.params import CvihisParams
from hosts.cvihis.receiver import CvihisReceiver, Mode
from hosts.cvihis.sender import CvihisSender
from hosts.cvihis.wire import Feedback, FeedbackError, decode_feedback, encode_feedback

__all__ = [
    "AREAS",
    "TARGET_AREA",
    "Command",
    "CvihisParams",
    "CvihisReceiver",
    "CvihisSender",
    "Feedback",
    "FeedbackError",
    "Mode",
    "decode_feedback",
    "encode_feedback",
]
