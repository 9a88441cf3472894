"""An empty P4Runtime server: the ceiling of Write throughput for a server written in Python.

    python -m tests.bench.p4rt_floor --port N [--kind aio|sync]

Why: tests/bench/p4rt_writes.py measures p4switch the way a controller writes (Python client,
raw stubs). Part of each Write's time is the client's and part is the gRPC runtime's, whatever
the server does; this server does nothing (every arbitration is granted, every Write answered
at once without being decoded), so the same client against it shows how much of p4switch's
time is its own. ``aio`` is grpc.aio, as p4switch; ``sync`` is grpcio's thread-pool server.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor

import grpc
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2 as pb

EMPTY = b""  # a WriteResponse has no fields


def _granted(req: pb.StreamMessageRequest) -> pb.StreamMessageResponse:
    arb = pb.MasterArbitrationUpdate(device_id=req.arbitration.device_id, election_id=req.arbitration.election_id,
                                     status=status_pb2.Status(code=0))
    return pb.StreamMessageResponse(arbitration=arb)


def _handlers(write, stream) -> grpc.GenericRpcHandler:  # noqa: ANN001
    return grpc.method_handlers_generic_handler("p4.v1.P4Runtime", {
        "Write": grpc.unary_unary_rpc_method_handler(write, request_deserializer=bytes,
                                                     response_serializer=bytes),
        "StreamChannel": grpc.stream_stream_rpc_method_handler(
            stream, request_deserializer=pb.StreamMessageRequest.FromString,
            response_serializer=pb.StreamMessageResponse.SerializeToString)})


async def _serve_aio(port: int) -> None:
    async def write(_request: bytes, _context: object) -> bytes:
        return EMPTY

    async def stream(requests, _context):  # noqa: ANN001, ANN202
        async for req in requests:
            if req.HasField("arbitration"):
                yield _granted(req)

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((_handlers(write, stream),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


def _serve_sync(port: int) -> None:
    def stream(requests, _context):  # noqa: ANN001, ANN202
        for req in requests:
            if req.HasField("arbitration"):
                yield _granted(req)

    server = grpc.server(ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((_handlers(lambda _r, _c: EMPTY, stream),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    server.wait_for_termination()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.p4rt_floor", description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--kind", choices=("aio", "sync"), default="aio")
    args = p.parse_args(argv)
    if args.kind == "aio":
        asyncio.run(_serve_aio(args.port))
    else:
        _serve_sync(args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
