"""What waking another process costs on this machine: two processes pass a byte back and forth
over two pipes, on one core and then on two (docs/howto/netns.md, "At higher link rates").

    python -m tests.bench.wakeup [--round-trips 20000]

Why: in a netns run every frame that crosses a hop wakes the next process (a switch, a host),
and each report wakes several threads across the switch and the runner. Printed per round trip
(two wake-ups): the wall time, and the CPU the measuring process spent, which on a virtual
machine includes the cost of waking a sleeping virtual CPU. As root, the two cores once more
with idle CPUs polling instead of halting (a latency request of 0 µs held on
/dev/cpu_dma_latency, as cyclictest holds one), and the kernel's idle driver and halt-poll
setting, which decide what a wake-up of an idle virtual CPU costs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path

CPU_DMA_LATENCY = Path("/dev/cpu_dma_latency")
IDLE = Path("/sys/devices/system/cpu/cpuidle")
HALT_POLL = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")


def round_trip(cpus: tuple[int, int], n: int) -> tuple[float, float]:
    """(wall µs, this process's CPU µs) per round trip, this process on ``cpus[0]``, its peer on ``cpus[1]``."""
    to_peer, from_me = os.pipe()
    to_me, from_peer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the peer: echo every byte
        try:
            os.sched_setaffinity(0, {cpus[1]})
            for _ in range(n):
                os.read(to_peer, 1)
                os.write(from_peer, b"x")
        finally:
            os._exit(0)
    mask = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {cpus[0]})
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(n):
            os.write(from_me, b"x")
            os.read(to_me, 1)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        os.sched_setaffinity(0, mask)
        os.waitpid(pid, 0)
        for fd in (to_peer, from_me, to_me, from_peer):
            os.close(fd)
    return wall / n * 1e6, cpu / n * 1e6


@contextlib.contextmanager
def idle_polling() -> Iterator[bool]:
    """Idle CPUs poll while this is held (a PM QoS latency request of 0 µs: it lasts as long as
    the file stays open); yields False where the request cannot be made (not root, no file)."""
    try:
        fd = os.open(CPU_DMA_LATENCY, os.O_WRONLY)
    except OSError:
        yield False
        return
    try:
        os.write(fd, struct.pack("i", 0))
        yield True
    finally:
        os.close(fd)


def idle_settings() -> str:
    """The idle driver and governor, and haltpoll's guest_halt_poll_ns where it is loaded."""
    def read(p: Path) -> str:
        try:
            return p.read_text().strip()
        except OSError:
            return "?"
    out = f"idle driver {read(IDLE / 'current_driver')}, governor {read(IDLE / 'current_governor_ro')}"
    return out + (f", guest_halt_poll_ns {read(HALT_POLL)}" if HALT_POLL.exists() else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--round-trips", type=int, default=20_000)
    args = p.parse_args(argv)
    cpus = sorted(os.sched_getaffinity(0))
    for label, pair in (("one core", (cpus[0], cpus[0])), ("two cores", (cpus[0], cpus[-1]))):
        if label == "two cores" and len(cpus) < 2:
            print("two cores: this process may use one CPU only")
            continue
        wall, cpu = round_trip(pair, args.round_trips)
        print(f"{label}: round trip {wall:.1f} µs, CPU of the measuring process {cpu:.1f} µs per round trip")
    print(idle_settings())
    if len(cpus) >= 2:
        with idle_polling() as polling:
            if polling:
                wall, cpu = round_trip((cpus[0], cpus[-1]), args.round_trips)
                print(f"two cores, idle CPUs polling: round trip {wall:.1f} µs, "
                      f"CPU of the measuring process {cpu:.1f} µs per round trip")
            else:
                print(f"two cores, idle CPUs polling: not measured ({CPU_DMA_LATENCY} needs root)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
