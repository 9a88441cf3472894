"""Where a Write's time goes in-process: parsing the request vs applying it.

    python -m tests.bench.write_parse

Why: the profile behind p4switch/p4runtime/wire.py. For 1000 ipv4_lpm inserts (1 and 100 per
WriteRequest) it times protobuf's parse and wire.py's, each followed by the core applying the
parsed request, best of 3 rounds; ratios matter more than the absolute figures on a shared
machine.
"""

from __future__ import annotations

import sys
import time

from p4.v1 import p4runtime_pb2 as pb

from controlplane.p4runtime_client import InProcessController
from p4switch.p4runtime.wire import WriteRequest, parse_write_request
from tests.bench.fuzz import configured_switch
from tests.bench.p4rt_writes import lpm_updates


def main() -> int:
    sw, _sched, _ = configured_switch("alinea")
    InProcessController(sw.p4rt, election=(0, 2))
    p4info = sw.state.p4info
    ins = lpm_updates(p4info, pb.Update.INSERT, 1000)
    dels = lpm_updates(p4info, pb.Update.DELETE, 1000)
    core = sw.p4rt

    def req(ups: list) -> pb.WriteRequest:
        return pb.WriteRequest(device_id=0, election_id=pb.Uint128(low=2), updates=ups)

    for batch in (1, 100):
        blobs = [req(ins[i:i + batch]).SerializeToString() for i in range(0, 1000, batch)]
        for name, parse in (("protobuf", pb.WriteRequest.FromString), ("wire.py", parse_write_request)):
            best: tuple[float, float] | None = None
            for _ in range(3):
                t = time.perf_counter()
                parsed = [parse(b) for b in blobs]
                tp = time.perf_counter() - t
                t = time.perf_counter()
                for r in parsed:
                    core.write(r)
                tw = time.perf_counter() - t
                core.write(req(dels[:500]))
                core.write(req(dels[500:]))
                best = (tp, tw) if best is None or tp + tw < sum(best) else best
            if name == "wire.py" and not isinstance(parsed[0], WriteRequest):
                raise SystemExit("wire.py did not take its fast path")
            print(f"{batch} update(s) per Write, {name}: parse {best[0]:.3f} s + apply {best[1]:.3f} s "
                  f"per 1000 updates -> {1000 / sum(best):,.0f} updates/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
