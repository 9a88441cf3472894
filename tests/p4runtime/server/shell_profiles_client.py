"""Programs load_balance.p4's action selector with the real p4runtime-shell; run as a subprocess.

Usage: python -m tests.p4runtime.server.shell_profiles_client ADDR P4INFO_TXT DEVICE_CONFIG
Prints one JSON object with what it read back and how refused writes were answered.
"""

from __future__ import annotations

import json
import sys

from google.protobuf import json_format
from p4runtime_sh import shell as sh
from p4runtime_sh.p4runtime import P4RuntimeWriteException

SEL = "LbIngress.wcmp.implementation"


def as_dicts(entities) -> list[dict]:
    return [json_format.MessageToDict(e.msg()) for e in entities]


def refused(fn) -> str:
    try:
        fn()
    except P4RuntimeWriteException as e:
        return str(e)
    return "accepted"


def main(addr: str, p4info: str, device_config: str) -> dict:
    out: dict = {}
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1), config=sh.FwdPipeConfig(p4info, device_config),
             verbose=False)
    try:
        for port in (1, 2, 3):
            m = sh.ActionProfileMember(SEL)(member_id=port, action="LbIngress.set_nhop")
            m.action["nhop_mac"] = f"02:00:00:00:00:0{port}"
            m.action["port"] = str(port)
            m.insert()
        g = sh.ActionProfileGroup(SEL)(group_id=1)
        g.add(1).add(2).add(3, weight=2)
        g.insert()
        te = sh.TableEntry("LbIngress.wcmp")
        te.match["hdr.ipv4.dstAddr"] = "10.0.0.0/8"
        te.group_id = 1
        te.insert()
        out["members"] = as_dicts(sh.ActionProfileMember(SEL).read())
        out["groups"] = as_dicts(sh.ActionProfileGroup(SEL).read())
        out["entries"] = as_dicts(sh.TableEntry("LbIngress.wcmp").read())
        out["delete_member_in_group"] = refused(lambda: sh.ActionProfileMember(SEL)(member_id=1).delete())
        out["delete_group_in_use"] = refused(lambda: sh.ActionProfileGroup(SEL)(group_id=1).delete())
        dup = sh.ActionProfileMember(SEL)(member_id=1, action="LbIngress.set_nhop")
        dup.action["nhop_mac"] = "02:00:00:00:00:01"
        dup.action["port"] = "1"
        out["duplicate_member"] = refused(dup.insert)
    finally:
        sh.teardown()
    return out


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])), flush=True)
