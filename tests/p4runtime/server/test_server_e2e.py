"""End to end over gRPC: the real p4runtime-shell against P4RuntimeServer + a loopback device.

The device answers every packet-out with a packet-in (payload reversed, the
egress port as ingress port), counts it per port, and looks the first four
payload bytes up in the LPM table to count the hit into its direct counter.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import subprocess
import sys

import grpc
import pytest
from google.protobuf import text_format
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from p4switch.p4runtime import NullDevice, P4RuntimeCore
from p4switch.p4runtime.server import P4RuntimeServer
from tests.p4runtime.p4info_builder import demo_p4info
from tests.paths import ROOT


class LoopbackDevice(NullDevice):
    core: P4RuntimeCore | None = None

    def packet_out(self, payload: bytes, metadata: dict[str, int]) -> None:
        super().packet_out(payload, metadata)
        port = metadata["egress_port"]
        self.state.counters_by_name["MyIngress.port_pkts"].count(port, len(payload))
        hit = self.state.tables_by_name["MyIngress.ipv4_lpm"].lookup((int.from_bytes(payload[:4], "big"),))
        if hit is not None:
            hit.direct_counter.count(len(payload))
        self.core.packet_in(payload[::-1], {"ingress_port": port, "reason": 2})


@pytest.fixture()
def server():
    device = LoopbackDevice()
    core = P4RuntimeCore(device, device_id=1)
    device.core = core
    srv = P4RuntimeServer(core, address="127.0.0.1:0")
    port = srv.start()
    try:
        yield srv, device, f"127.0.0.1:{port}"
    finally:
        srv.stop(grace=0.5)


def test_p4runtime_shell_end_to_end(server, tmp_path):
    srv, device, addr = server
    p4info, ids = demo_p4info()
    info_path = tmp_path / "p4info.txt"
    info_path.write_text(text_format.MessageToString(p4info))
    cfg_path = tmp_path / "device.bin"
    cfg_path.write_bytes(b"opaque device config")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "tests.p4runtime.server.shell_client", addr, str(info_path), str(cfg_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])

    assert device.device_config == b"opaque device config" and device.loads == 1
    assert out["api_version"] == srv.core.api_version
    (entry,) = out["after_insert"]
    assert base64.b64decode(entry["match"][0]["lpm"]["value"]) == bytes([10, 0, 0, 0])
    assert [base64.b64decode(p["value"]) for p in entry["action"]["action"]["params"]] == [b"\x03", b"\xaa\xbb"]
    assert "ALREADY_EXISTS" in out["duplicate"]
    (entry,) = out["after_modify"]
    assert base64.b64decode(entry["action"]["action"]["params"][0]["value"]) == b"\x04"
    assert out["after_delete"] == []

    payload = b"\x0a\x01\x02\x03payload"
    assert device.packet_outs == [(payload, {"egress_port": 5, "pad": 0})]
    (pin,) = out["packet_in"]
    assert base64.b64decode(pin["payload"]) == payload[::-1]
    md = {m["metadataId"]: base64.b64decode(m["value"]) for m in pin["metadata"]}
    assert md == {1: b"\x05", 2: b"\x02"}

    by_index = {c.get("index", {}).get("index", "0"): c.get("data", {}) for c in out["counters"]}
    assert len(out["counters"]) == 8 and by_index["5"] == {"packetCount": "1"}
    (direct,) = out["direct"]
    assert direct["data"] == {"packetCount": "1", "byteCount": str(len(payload))}


def test_write_errors_carry_p4_error_details_over_grpc(server):
    srv, device, addr = server
    p4info, ids = demo_p4info()
    with grpc.insecure_channel(addr) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        arb = pb.StreamMessageRequest()
        arb.arbitration.device_id = 1
        arb.arbitration.election_id.low = 1
        requests: queue.Queue = queue.Queue()
        requests.put(arb)
        stream = stub.StreamChannel(iter(requests.get, None), timeout=10)  # kept open
        first = next(stream)
        assert first.arbitration.status.code == 0

        with pytest.raises(grpc.RpcError) as exc:
            stub.Write(pb.WriteRequest(device_id=1, election_id=pb.Uint128(low=1)), timeout=5)
        assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION

        req = pb.SetForwardingPipelineConfigRequest(device_id=1, election_id=pb.Uint128(low=1),
                                                    action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.config.p4info.CopyFrom(p4info)
        stub.SetForwardingPipelineConfig(req, timeout=5)

        te = pb.TableEntry(table_id=ids["MyIngress.ipv4_lpm"])
        te.match.add(field_id=1).lpm.CopyFrom(pb.FieldMatch.LPM(value=b"\x0a\x00\x00\x01", prefix_len=8))
        te.action.action.action_id = ids["MyIngress.drop"]
        ok = pb.TableEntry()
        ok.CopyFrom(te)
        ok.match[0].lpm.value = b"\x0a\x00\x00\x00"
        write = pb.WriteRequest(device_id=1, election_id=pb.Uint128(low=1))
        write.updates.add(type=pb.Update.INSERT).entity.table_entry.CopyFrom(ok)
        write.updates.add(type=pb.Update.INSERT).entity.table_entry.CopyFrom(te)
        with pytest.raises(grpc.RpcError) as exc:
            stub.Write(write, timeout=5)
        assert exc.value.code() == grpc.StatusCode.UNKNOWN
        raw = dict(exc.value.trailing_metadata())["grpc-status-details-bin"]
        status = status_pb2.Status.FromString(raw)
        codes = []
        for detail in status.details:
            err = pb.Error()
            assert detail.Unpack(err)
            codes.append(err.canonical_code)
        assert codes == [0, 3]

        with pytest.raises(grpc.RpcError) as exc:
            stub.Write(pb.WriteRequest(device_id=1, election_id=pb.Uint128(low=2)), timeout=5)
        assert exc.value.code() == grpc.StatusCode.PERMISSION_DENIED
        requests.put(None)
        stream.cancel()


def test_duplicate_election_id_ends_the_second_stream(server):
    srv, device, addr = server
    with grpc.insecure_channel(addr) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        arb = pb.StreamMessageRequest()
        arb.arbitration.device_id = 1
        arb.arbitration.election_id.low = 1
        q1: queue.Queue = queue.Queue()
        q1.put(arb)
        s1 = stub.StreamChannel(iter(q1.get, None), timeout=10)
        assert next(s1).arbitration.status.code == 0
        s2 = stub.StreamChannel(iter([arb]), timeout=10)
        with pytest.raises(grpc.RpcError) as exc:
            next(s2)
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        q1.put(None)
        s1.cancel()
