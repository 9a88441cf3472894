"""TFRC (RFC 5348) as sans-I/O cores: the equation, the receiver's loss event rate, the sender's rate."""

from hosts.tfrc.equation import loss_rate_for, throughput_Bps
from hosts.tfrc.loss_events import LossEvents
from hosts.tfrc.receiver import TfrcReceiver
from hosts.tfrc.sender import TfrcReport, TfrcSender

__all__ = ["throughput_Bps", "loss_rate_for", "LossEvents", "TfrcReceiver", "TfrcSender", "TfrcReport"]
