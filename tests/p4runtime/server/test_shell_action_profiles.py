"""The real p4runtime-shell programs an action selector of load_balance.p4 over gRPC; the
pipeline the server loaded then spreads flows over the group's members."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

from google.protobuf import text_format

from p4switch.device import P4SwitchDevice, PipelineHolder
from p4switch.p4runtime import P4RuntimeCore
from p4switch.p4runtime.server import P4RuntimeServer
from tests.p4runtime.indirect import LOAD_BALANCE, ipv4_udp, program
from tests.paths import ROOT


def test_p4runtime_shell_programs_members_groups_and_entries(tmp_path) -> None:
    prog = program(LOAD_BALANCE)
    holder = PipelineHolder()
    core = P4RuntimeCore(P4SwitchDevice(holder, inject=lambda port, frame: None, cpu_port=None, seed=1), device_id=1)
    srv = P4RuntimeServer(core, address="127.0.0.1:0")
    port = srv.start()
    try:
        info_path = tmp_path / "p4info.txt"
        info_path.write_text(text_format.MessageToString(prog.p4info))
        cfg_path = tmp_path / "load_balance.p4switch.bin"
        cfg_path.write_bytes(prog.device_config)
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.run([sys.executable, "-m", "tests.p4runtime.server.shell_profiles_client", f"127.0.0.1:{port}",
                               str(info_path), str(cfg_path)], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=120)
    finally:
        srv.stop(grace=0.5)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])

    assert sorted(m["memberId"] for m in out["members"]) == [1, 2, 3]
    (grp,) = out["groups"]
    assert [(m["memberId"], m["weight"]) for m in grp["members"]] == [(1, 1), (2, 1), (3, 2)]
    (entry,) = out["entries"]
    assert entry["action"] == {"actionProfileGroupId": 1}
    assert "FAILED_PRECONDITION" in out["delete_member_in_group"]
    assert "FAILED_PRECONDITION" in out["delete_group_in_use"]
    assert "ALREADY_EXISTS" in out["duplicate_member"]

    rng = random.Random(11)
    counts = {1: 0, 2: 0, 3: 0}
    for _ in range(200):
        frame = ipv4_udp(rng.getrandbits(32), 0x0A000001, rng.getrandbits(16), rng.getrandbits(16))
        ports = set()
        for _ in range(2):
            pkt = holder.pipeline.new_packet(frame, 9, 1000)
            holder.pipeline.run_ingress(pkt)
            ports.add(pkt.std("egress_spec"))
        (p,) = ports
        counts[p] += 1
    assert min(counts.values()) > 0 and counts[3] > max(counts[1], counts[2])  # member 3 has weight 2
