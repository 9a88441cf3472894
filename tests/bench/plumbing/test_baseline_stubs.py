"""A baseline commit's p4switch, run by the netns parts from its own files (tests/bench/run.py's
``_baseline_tree``), answers P4Runtime Reads under today's .venv: the tree gets the P4Runtime stubs
of its day's dispatch (``_stubs_of_its_day``), so the generic handlers its server registers first
(Read yielding wire bytes) are the ones served, as when it was written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench import p4rt_writes as pw
from tests.bench.run import ALINEA, NETNS_BASELINE, _baseline_tree, _stubs_of_its_day

#: a server as 55f310b's registers its handlers: its own generic Read (answers as wire bytes) first,
#: then the stubs' servicer; one Read by a client through the stubs; prints what the client got
SERVER_AND_READ = """
import asyncio, grpc
from p4.v1 import p4runtime_pb2 as pb, p4runtime_pb2_grpc as stubs

class Servicer(stubs.P4RuntimeServicer):
    async def Read(self, request, context):
        yield pb.ReadResponse(entities=[pb.Entity()]).SerializeToString()

async def main():
    server, servicer = grpc.aio.server(), Servicer()
    read = grpc.unary_stream_rpc_method_handler(servicer.Read, request_deserializer=pb.ReadRequest.FromString,
                                                response_serializer=bytes)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("p4.v1.P4Runtime", {"Read": read}),))
    stubs.add_P4RuntimeServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            got = [r async for r in stubs.P4RuntimeStub(channel).Read(pb.ReadRequest())]
            print("entities", sum(len(r.entities) for r in got))
        except grpc.aio.AioRpcError as e:
            print(e.code().name, e.details())
    await server.stop(None)

asyncio.run(main())
"""


def _served(cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-c", SERVER_AND_READ], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_generic_read_handler_registered_first_is_served_with_the_stubs_of_its_day(tmp_path: Path) -> None:
    _stubs_of_its_day(tmp_path)
    assert (tmp_path / "p4" / "v1" / "p4runtime_pb2.py").is_file()
    assert _served(tmp_path) == "entities 1"


@pytest.mark.slow
@pytest.mark.netns
def test_the_netns_baselines_p4switch_answers_a_counter_read() -> None:
    from controlplane.p4runtime_client import GrpcController
    from tests.switch.simnet import program

    if pw.resolve_commit(NETNS_BASELINE) is None:
        pytest.skip(f"commit {NETNS_BASELINE} is not in this clone")
    with _baseline_tree(NETNS_BASELINE) as tree, pw.p4switch_server(tree) as addr:
        ctl = GrpcController(addr, device_id=0)
        try:
            ctl.use_p4info(program(str(ALINEA)).p4info)
            assert ctl.read_counter("MyIngress.rx", 1) == (0, 0)
        finally:
            ctl.close()
