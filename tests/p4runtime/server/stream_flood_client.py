"""A controller that becomes primary, queues PacketOuts as fast as it can, and waits to be killed.

    python -m tests.p4runtime.server.stream_flood_client ADDR ELECTION_LOW COUNT

Used by test_server_streams: the test SIGKILLs this process and checks the switch stops
serving its PacketOuts and frees its election id. Prints ``primary`` once arbitration
succeeded and ``queued`` when every PacketOut is handed to gRPC.
"""

from __future__ import annotations

import queue
import sys
import time

import grpc
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc


def main() -> None:
    addr, low, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    channel = grpc.insecure_channel(addr)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    out: queue.Queue = queue.Queue()
    arb = pb.StreamMessageRequest()
    arb.arbitration.device_id = 1
    arb.arbitration.election_id.low = low
    out.put(arb)
    stream = stub.StreamChannel(iter(out.get, None))
    if next(stream).arbitration.status.code != 0:
        print("not primary", flush=True)
        return
    print("primary", flush=True)
    pkt = pb.StreamMessageRequest()
    pkt.packet.payload = bytes(64)
    pkt.packet.metadata.add(metadata_id=1, value=b"\x01")
    pkt.packet.metadata.add(metadata_id=2, value=b"\x00")
    for _ in range(count):
        out.put(pkt)
    print("queued", flush=True)
    time.sleep(60)  # bounded: the test kills us long before


if __name__ == "__main__":
    main()
