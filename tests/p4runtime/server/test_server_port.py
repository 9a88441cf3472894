"""P4RuntimeServer binding: a port that is in use is a clear error, never a shared port."""

from __future__ import annotations

import errno
import socket

import grpc
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from p4switch.p4runtime import NullDevice, P4RuntimeCore
from p4switch.p4runtime.server import P4RuntimeServer, ServerBindError


def _core() -> P4RuntimeCore:
    return P4RuntimeCore(NullDevice(), device_id=1)


def test_port_held_by_another_socket_is_reported_as_in_use() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ServerBindError, match=f"127.0.0.1:{port}: address already in use") as info:
            P4RuntimeServer(_core(), f"127.0.0.1:{port}").start()
    assert info.value.errno == errno.EADDRINUSE


def test_a_second_server_on_the_same_port_is_refused_and_the_first_keeps_serving() -> None:
    """grpcio binds with SO_REUSEPORT unless told not to; then both servers would listen and
    the kernel would split the clients between them."""
    first = P4RuntimeServer(_core(), "127.0.0.1:0")
    port = first.start()
    try:
        with pytest.raises(ServerBindError, match="already in use"):
            P4RuntimeServer(_core(), f"127.0.0.1:{port}").start()
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(pb.CapabilitiesRequest(), timeout=10)
        assert reply.p4runtime_api_version == first.core.api_version
    finally:
        first.stop(grace=0)


def test_a_port_freed_by_a_stopped_server_can_be_bound_again() -> None:
    first = P4RuntimeServer(_core(), "127.0.0.1:0")
    port = first.start()
    first.stop(grace=0)
    again = P4RuntimeServer(_core(), f"127.0.0.1:{port}")
    try:
        assert again.start() == port
    finally:
        again.stop(grace=0)


@pytest.mark.parametrize("address, reason", [("no-port-here", "expected HOST:PORT"),
                                             ("127.0.0.1:notaport", "expected HOST:PORT")])
def test_malformed_address_names_the_address(address: str, reason: str) -> None:
    with pytest.raises(ServerBindError, match=f"cannot listen on {address}: {reason}"):
        P4RuntimeServer(_core(), address).start()
