"""Time for the switch: one injected scheduler, integer nanoseconds.

Why: the same switch objects run in virtual time (the ``sim`` binding, deterministic and
faster than real time) and in real time (the ``netns`` binding). They never read a clock or
sleep themselves; they ask a :class:`Scheduler` for ``now_ns()`` and register callbacks.

Ordering and lateness (both schedulers):

* Events run in order of their due time; events due at the same time run in the order they
  were scheduled (a sequence number breaks ties), so runs are reproducible.
* A callback scheduled for a time already in the past is *late*: it runs as soon as possible,
  before events due later, and late events among themselves run in due-time order. Time never
  goes backwards: in :class:`VirtualScheduler` ``now_ns()`` stays at the current time while a
  late callback runs; in :class:`RealtimeScheduler` ``now_ns()`` is the real clock, which is
  at or after the due time (the loop can be late when busy; all due callbacks then run back to
  back in due-time order).
* Exceptions: a virtual-time callback's exception propagates out of ``run*``/``step`` (a bug
  must stop a simulation); a real-time loop logs it and keeps serving (one bad packet must not
  stop the switch) - see ``RealtimeScheduler(on_error=...)``.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import selectors
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

import hbh_engine as _engine

log = logging.getLogger(__name__)

__all__ = [
    "Handle",
    "Scheduler",
    "TimerHandle",
    "VirtualScheduler",
    "RealtimeScheduler",
    "FifoDelay",
    "DelayedCalls",
    "NOT_LENT",
]


class _NotLent:
    """The type of :data:`NOT_LENT`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_LENT"


#: :meth:`RealtimeScheduler.try_now`'s answer when the loop did not lend its state (nothing ran)
NOT_LENT: Any = _NotLent()


class Handle(Protocol):
    """A scheduled callback that can be cancelled before it runs."""

    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """What core objects use for time: integer ns and callbacks (no threads, no sleep)."""

    def now_ns(self) -> int: ...

    def call_at(self, t_ns: int, fn: Callable[..., Any], *args: Any) -> Handle: ...

    def call_later(self, dt_ns: int, fn: Callable[..., Any], *args: Any) -> Handle: ...


def _check_time(value: int, what: str) -> int:
    """Integer ns only: a float here means a unit bug somewhere, say so at once."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int number of nanoseconds, got {value!r}")
    return value


# The event heap, its handles and the virtual-time loop are the engine's (engine/src/net/sched.rs):
# the same contract as above, run without a Python frame per event. ``EventHeap`` keys entries by
# (due time, insertion number); ``VirtualScheduler`` adds a FIFO for events due at the current
# time (O(1), the order stays exactly one heap's) and runs callbacks until a time or until idle.
TimerHandle = _engine.TimerHandle
VirtualScheduler = _engine.VirtualScheduler
#: A connection's calls in virtual time (engine/src/net/channel.rs): ``FifoDelay().delay(now, draw)``
#: keeps them in order; ``DelayedCalls(sched, fifo, median_ns, target, behind)`` is a callable
#: whose calls reach ``target`` ``median_ns`` later on ``fifo`` (topo/sim/control_latency.py).
FifoDelay = _engine.FifoDelay
DelayedCalls = _engine.DelayedCalls
_EventHeap = _engine.EventHeap


class RealtimeScheduler:
    """The same calls on the wall clock, executed on ONE loop thread that this object owns.

    Why one thread: the switch state is touched only by callbacks on this loop, so the
    core needs no locks. Other threads (gRPC, Thrift handlers) hand work over with
    :meth:`call_soon_threadsafe` or :meth:`run_sync`. File descriptors (AF_PACKET sockets) are
    watched with ``selectors`` on the same loop (:meth:`add_reader`), so no reader threads.

    ``now_ns()`` is ``time.monotonic_ns()`` minus the value at construction: the switch clock
    starts at 0, as BMv2's does. ``call_at``/``call_later`` are safe from any thread.

    One loop turn: the :meth:`call_soon_threadsafe` calls, then every due timer - including
    timers that those callbacks schedule for now (the TM re-arms a port's service that way, so
    a backlog drains within one turn) - up to a budget of ``MAX_TIMERS_PER_TURN`` callbacks or
    ``TURN_BUDGET_NS``, then one poll of the file descriptors. The poll does not block when
    the budget ran out or the next timer is due within ``spin_ns`` (a short spin in the engine,
    the GIL free and the core yielded each time round, until the timer or a ready reader,
    because a wake-up from sleep costs tens of µs); otherwise it
    blocks until a reader is ready or the next timer's time, which a Linux timerfd delivers
    with kernel timer precision (epoll's own timeout is in whole ms, up to 1 ms late).
    CPU trade-off: an idle switch sleeps; a timer at most ``spin_ns`` away is waited for by
    spinning, i.e. at most ``spin_ns`` of CPU per timer. At high packet rates timers come closer
    than that and the loop spins all the time, a core's worth: right for a switch with a core of
    its own, a loss where the switch shares the cores with the rest of an emulation (``spin_ns=0``;
    docs/howto/netns.md). Without a timerfd (not Linux) the
    wait falls back to epoll's millisecond resolution.
    """

    #: at most this many timer callbacks run between two polls of the file descriptors
    MAX_TIMERS_PER_TURN = 1024
    #: ... and at most this long (ns) is spent on timers before the readers are polled again
    TURN_BUDGET_NS = 5_000_000
    #: a timer due within this many ns is waited for by spinning instead of sleeping (the default
    #: of ``spin_ns``)
    SPIN_NS = 50_000
    #: the interpreter's switch interval (s) once the engine runs the loop's turns: at most this
    #: long does another thread's Python keep the engine's loop waiting for the GIL
    ENGINE_GIL_INTERVAL_S = 200e-6

    def __init__(self, on_error: Callable[[BaseException], None] | None = None, *, spin_ns: int = SPIN_NS) -> None:
        """``spin_ns``: a timer due within this many ns is waited for by spinning (0: never spin,
        sleep until each timer); see the class docstring for the trade-off."""
        if spin_ns < 0:
            raise ValueError(f"spin time {spin_ns} ns: give 0 (never spin) or more")
        self.spin_ns = spin_ns
        self._origin = time.monotonic_ns()
        self._wall_origin_ns = time.time_ns()
        self._events = _EventHeap()  # its own (Rust) lock makes each call on it atomic
        self._soon: deque[tuple[Callable[..., Any], tuple]] = deque()
        self._selector = selectors.DefaultSelector()
        #: the epoll instance a spin watches (``_engine.spin_until``); None: not epoll, Python spins
        self._spin_fd: int | None = self._selector.fileno() if isinstance(self._selector, selectors.EpollSelector) \
            else None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, (self._drain_wake_pipe, ()))
        self._timerfd = _TimerFd.open()
        self._in_timers = False
        self._engine_loop: Any = None  # hbh_engine.PortServer that runs the idle turns (set_engine_loop)
        self._armed_ns: int | None = None  # due time (ns, switch clock) the timerfd is armed for
        if self._timerfd is not None:
            self._selector.register(self._timerfd.fileno(), selectors.EVENT_READ, (self._timer_fired, ()))
        self._thread: threading.Thread | None = None
        # the switch state's owner: the loop thread, except while it sleeps in its poll, when
        # try_call may lend the state to the calling thread (see try_call)
        self._state = threading.Lock()
        self._loop_ident: int | None = None  # threading.get_ident() of the state's owner
        self._loop_wants_state = False
        self._running = False
        self._closed = False
        self._on_error = on_error or self._log_error

    # ---- clock -------------------------------------------------------------------------
    def now_ns(self) -> int:
        return time.monotonic_ns() - self._origin

    @property
    def monotonic_origin_ns(self) -> int:
        """``time.monotonic_ns()`` at which ``now_ns()`` was 0 (the engine's TM reads the clock itself)."""
        return self._origin

    @property
    def engine_heap(self) -> _EventHeap:
        """The heap: the engine's TM pushes its wake-ups there itself, as :meth:`call_at` does on
        the loop thread (the TM is only driven by the state's owner). The heap locks itself."""
        return self._events

    @property
    def wake_fd(self) -> int:
        """The read end of the wake-up pipe: readable when another thread queued work for the
        loop (the engine's port server returns to the loop then)."""
        return self._wake_r

    @property
    def on_error(self) -> Callable[[BaseException], None]:
        """What a callback's exception is handed to (the loop keeps serving)."""
        return self._on_error

    @property
    def wall_origin_ns(self) -> int:
        """Wall-clock time (ns since the Unix epoch) at which ``now_ns()`` was 0."""
        return self._wall_origin_ns

    # ---- scheduling --------------------------------------------------------------------
    def call_at(self, t_ns: int, fn: Callable[..., Any], *args: Any) -> TimerHandle:
        if type(t_ns) is not int:  # noqa: E721 - the fast path; _check_time says what is wrong
            _check_time(t_ns, "t_ns")
        if threading.get_ident() == self._loop_ident:  # the loop looks at its timers before it sleeps
            return self._events.push(t_ns, fn, args)
        handle, first = self._events.push_first(t_ns, fn, args)  # one atomic step in the engine
        if first:
            self._wake()
        return handle

    def call_later(self, dt_ns: int, fn: Callable[..., Any], *args: Any) -> TimerHandle:
        if _check_time(dt_ns, "dt_ns") < 0:
            raise ValueError(f"dt_ns must be >= 0, got {dt_ns}")
        return self.call_at(self.now_ns() + dt_ns, fn, *args)

    def call_soon_threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the loop thread as soon as possible (FIFO among such calls)."""
        self._soon.append((fn, args))
        self._wake()

    def pending(self) -> int:
        return len(self._events) + len(self._soon)

    def run_sync(self, fn: Callable[..., Any], *args: Any, timeout: float | None = 5.0) -> Any:
        """Run ``fn(*args)`` on the loop thread and return its result (or re-raise its error).

        Called from the loop thread itself it simply calls ``fn`` (no deadlock). Raises
        ``TimeoutError`` when the loop did not finish the call within ``timeout`` seconds and
        ``RuntimeError`` when the loop is not running.
        """
        if self.in_loop_thread():
            return fn(*args)
        if not self._running:
            raise RuntimeError("RealtimeScheduler.run_sync: the loop is not running (call start() first)")
        future = self.submit(fn, *args)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            name = getattr(fn, "__qualname__", repr(fn))
            raise TimeoutError(f"RealtimeScheduler.run_sync: {name} did not complete within {timeout} s") from None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Run ``fn(*args)`` on the loop thread; its result or error arrives in the returned Future.

        Why besides :meth:`run_sync`: a caller on an asyncio loop (the P4Runtime server) must
        not block its thread while the switch works; it awaits the future instead.
        """
        future: Future = Future()

        def call() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to the waiting thread, which re-raises
                future.set_exception(exc)

        self.call_soon_threadsafe(call)
        return future

    def try_call(self, fn: Callable[[], Any]) -> Future | None:
        """Run ``fn()`` at once on the calling thread if the loop is asleep; else None.

        Why: a P4Runtime Write handed to the loop thread and its answer handed back cost two
        thread wake-ups, more than a one-update Write itself. When the loop sleeps in its poll
        (an idle switch, or one waiting for its next timer) it touches no state, so the caller
        may run ``fn`` itself, as the state's owner for that call: ``in_loop_thread()`` is true
        for it and the loop, should it wake meanwhile, waits for ``fn`` to end before it touches
        anything. A busy loop (it is not asleep, or it is waiting to take its state back) is
        never delayed: the caller gets None and uses :meth:`submit`. After ``fn`` the loop is
        woken when ``fn`` left it work to do sooner than it planned. While the engine runs the
        loop's turns (:meth:`set_engine_loop`) it lends the state the same way, from its own
        waits (``PortServer.try_lend``). :meth:`try_now` is the same without the Future.
        """
        try:
            out = self.try_now(fn)
        except BaseException as exc:  # handed to the caller, as submit would
            future: Future = Future()
            future.set_running_or_notify_cancel()
            future.set_exception(exc)
            return future
        if out is NOT_LENT:
            return None
        future = Future()
        future.set_running_or_notify_cancel()
        future.set_result(out)
        return future

    def try_now(self, fn: Callable[[], Any]) -> Any:
        """:meth:`try_call` answered on the spot: ``fn()``'s result (its exception raised here),
        or :data:`NOT_LENT` when the loop could not lend its state (``fn`` did not run).

        Why: the caller that waits for the answer anyway (the compiled P4Runtime front end, on its
        own thread) paid about 10 µs of Python for the Future it got and read at once.

        The compiled P4Runtime front end takes and gives back the state by these same steps
        without running Python (engine/src/p4rt/p4rtnative.rs): keep the two alike."""
        if not self._running or self._loop_wants_state:
            return NOT_LENT
        engine = None
        if not self._state.acquire(blocking=False):
            engine = self._engine_loop if self._in_timers else None
            if engine is None or not engine.try_lend():
                return NOT_LENT
        events = self._events
        due_before = events.next_due()
        owner, self._loop_ident = self._loop_ident, threading.get_ident()
        try:
            return fn()
        finally:
            due_after = events.next_due()
            if engine is None:
                self._loop_ident = None
                self._state.release()
            else:  # the loop thread, waiting in the engine, owns the state again
                self._loop_ident = owner
                engine.end_lend()
            if self._soon or (due_after is not None and (due_before is None or due_after < due_before)):
                self._wake()

    def wait_until(self, predicate: Callable[[], bool], timeout: float, poll: float = 0.005) -> bool:
        """Poll ``predicate`` (evaluated on the loop thread) until true or ``timeout`` seconds.

        For tests and adapters in other threads: returns the last value, never blocks longer
        than ``timeout`` (plus one evaluation).
        """
        deadline = time.monotonic() + timeout
        while True:
            if self.run_sync(predicate, timeout=max(timeout, 0.1)):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)

    # ---- file descriptors --------------------------------------------------------------
    def add_reader(self, fd: Any, callback: Callable[..., Any], *args: Any) -> None:
        """Call ``callback(*args)`` on the loop thread whenever ``fd`` is readable."""
        if self._closed:
            raise RuntimeError("RealtimeScheduler.add_reader: the scheduler is stopped")
        if self._running and not self.in_loop_thread():
            self.run_sync(self.add_reader, fd, callback, *args)
            return
        key = self._registered(fd)
        if key is not None:
            self._selector.modify(fd, selectors.EVENT_READ, (callback, args))
        else:
            self._selector.register(fd, selectors.EVENT_READ, (callback, args))

    def remove_reader(self, fd: Any) -> bool:
        """Stop watching ``fd``; returns whether it was watched."""
        if self._running and not self.in_loop_thread():
            return self.run_sync(self.remove_reader, fd)
        if self._registered(fd) is None:
            return False
        self._selector.unregister(fd)
        return True

    def _registered(self, fd: Any) -> selectors.SelectorKey | None:
        try:
            return self._selector.get_key(fd)
        except KeyError:
            return None

    # ---- thread ------------------------------------------------------------------------
    def start(self) -> None:
        """Start the loop thread (once)."""
        if self._closed:
            raise RuntimeError("RealtimeScheduler: cannot start after stop()")
        if self._thread is not None:
            raise RuntimeError("RealtimeScheduler: already started")
        self._running = True
        self._thread = threading.Thread(target=self._loop, name="p4switch-loop", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop, join its thread (bounded by ``timeout``) and close the selector."""
        if self._closed:
            return
        self._running = False
        self._wake()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                raise TimeoutError(f"RealtimeScheduler.stop: loop thread did not stop within {timeout} s")
        self._closed = True
        self._selector.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        if self._timerfd is not None:
            self._timerfd.close()

    @property
    def running(self) -> bool:
        return self._running

    @property
    def precise_wait(self) -> bool:
        """True when waits use a timerfd (sub-ms precision), False on epoll's ms timeout."""
        return self._timerfd is not None

    @property
    def closed(self) -> bool:
        """True after stop(): the selector is gone, readers cannot be added or removed."""
        return self._closed

    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._loop_ident

    def __enter__(self) -> RealtimeScheduler:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # ---- the loop ----------------------------------------------------------------------
    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # pipe full (a wake-up is pending anyway) or closed
            os.write(self._wake_w, b"\0")

    def set_engine_loop(self, server: Any) -> bool:
        """Let ``server`` (an ``hbh_engine.PortServer`` on this loop's heap) run the loop's turns
        while only the engine has work: its timers, its ports and the waits between them
        (``PortServer.run``); the loop takes over again when a descriptor of its own is ready.
        Returns False (and changes nothing) where the selector is not epoll.

        While the engine runs them the loop never sleeps in its own poll; :meth:`try_call` then
        takes the state from the engine while it waits (``PortServer.try_lend``), and callers
        find it busy otherwise and hand their work over (:meth:`submit`), which wakes it.

        It also lowers the process's switch interval to ``ENGINE_GIL_INTERVAL_S``. Why: the
        engine's turns hold the GIL, and a thread of Python's that has it (a P4Runtime Read
        takes 0.8 ms of a core, a Thrift call a few hundred µs) kept the engine waiting until it
        blocked or the interval, 5 ms by default, ran out: 200 packets at 500 Mb/s. At 500 Mb/s
        on paper-1router the lower interval halved the losses (docs/howto/netns.md)."""
        if self._spin_fd is None:
            return False
        self._engine_loop = server
        sys.setswitchinterval(min(sys.getswitchinterval(), self.ENGINE_GIL_INTERVAL_S))
        return True

    def _loop(self) -> None:
        self._state.acquire()
        self._loop_ident = threading.get_ident()
        try:
            while self._running:
                self._run_soon()
                more = self._run_due_timers()
                if self._engine_loop is not None and not more and not self._soon:
                    self._engine_turns()
                    self._poll(0.0)
                else:
                    self._poll(0.0 if more else self._wait_s())
        finally:
            self._loop_ident = None  # a later thread may get the same ident
            self._state.release()

    def _engine_turns(self) -> None:
        """The engine's turns (:meth:`set_engine_loop`), timer callbacks' ``run_due`` a no-op there
        as in :meth:`_run_due_timers`. Should the engine's wait itself fail, the error is reported
        once and the loop goes on with its own turns (the ports' callbacks still serve them)."""
        self._in_timers = True
        try:
            self._engine_loop.run(self._spin_fd, self.spin_ns)
        except Exception as exc:
            self._engine_loop = None
            self._on_error(exc)
        finally:
            self._in_timers = False

    def _wait_s(self) -> float | None:
        """How long the next poll may block: 0 to spin, None to block (the timerfd wakes us)."""
        if self._soon:
            return 0.0
        due = self._events.next_due()
        if due is None:
            return None
        delta = due - self.now_ns()
        if delta <= self.spin_ns:
            if delta > 0 and self._spin_fd is not None:
                _engine.spin_until(self._spin_fd, self._origin, due)  # in the engine, the GIL free
            elif delta > 0:
                os.sched_yield()  # spinning: let other runnable threads and processes have the core
            return 0.0
        if self._timerfd is not None:
            if due != self._armed_ns:
                self._timerfd.arm(self._origin + due)
                self._armed_ns = due
            return None
        return delta / 1e9  # no timerfd: epoll rounds up to whole milliseconds

    def _poll(self, timeout: float | None) -> None:
        ready = self._select(timeout) if timeout != 0.0 else self._selector.select(0.0)
        for key, _mask in ready:
            callback, args = key.data
            self._guarded(callback, args)

    def _select(self, timeout: float | None) -> list:
        """A poll that may sleep: the state is free for :meth:`try_call` meanwhile."""
        me = self._loop_ident
        self._loop_ident = None
        self._state.release()
        try:
            return self._selector.select(timeout)
        finally:
            self._loop_wants_state = True  # no new try_call from here on; one under way ends first
            self._state.acquire()
            self._loop_wants_state = False
            self._loop_ident = me

    def _drain_wake_pipe(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    def _timer_fired(self) -> None:
        if self._timerfd is not None:
            self._timerfd.clear()
        self._armed_ns = None

    def _run_soon(self) -> None:
        for _ in range(len(self._soon)):
            fn, args = self._soon.popleft()
            self._guarded(fn, args)

    def run_due(self) -> bool:
        """Run the timers due now, right away, from inside a loop callback.

        For a callback that handles a batch of items (a port reading many frames per wake-up):
        calling this between items runs the work an item scheduled for now (the TM's service
        of the packet just queued) before the next item, as the loop would between two
        wake-ups; so a batch does not pile up in the TM queues. Same budget as a loop turn;
        returns True when the budget ran out. A no-op when called from a timer callback.
        """
        if self._running and not self.in_loop_thread():
            raise RuntimeError("RealtimeScheduler.run_due: call it on the loop thread")
        if self._in_timers:
            return False
        return self._run_due_timers()

    def _run_due_timers(self) -> bool:
        """Run every timer that is due, in due-time order, including those that the callbacks
        run here schedule for now; stop after MAX_TIMERS_PER_TURN callbacks or TURN_BUDGET_NS.

        Returns True when the budget ended the turn (timers may still be due): the loop then
        polls the readers without blocking and comes back. Why: a packet served by the TM
        re-arms the port's service at "now"; running it in this turn lets egress drain a whole
        batch of ingress, and the budget keeps a callback that re-arms itself for "now" forever
        from starving the readers.
        """
        self._in_timers = True
        try:  # the engine pops and runs them, on this object's clock
            return self._events.run_due(self._origin, self.MAX_TIMERS_PER_TURN, self.TURN_BUDGET_NS, self._on_error)
        finally:
            self._in_timers = False

    def _guarded(self, fn: Callable[..., Any], args: tuple) -> None:
        try:
            fn(*args)
        except Exception as exc:
            self._on_error(exc)

    @staticmethod
    def _log_error(exc: BaseException) -> None:
        log.error("p4switch loop: callback failed: %r", exc, exc_info=exc)


class _TimeSpec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _ITimerSpec(ctypes.Structure):
    _fields_ = [("it_interval", _TimeSpec), ("it_value", _TimeSpec)]


class _TimerFd:
    """A Linux timerfd on CLOCK_MONOTONIC (the clock of ``time.monotonic_ns``), via libc.

    Why: ``epoll_wait`` (behind ``selectors``) takes whole milliseconds, so a timer due in
    0.2 ms would fire up to 1 ms late; a timerfd armed at an absolute nanosecond time becomes
    readable when it expires (kernel hrtimer), so the loop blocks in the same epoll call as for
    the sockets and wakes at the timer's time plus the kernel's wake-up latency. Python 3.11
    has no ``os.timerfd_create``, hence ctypes.
    """

    CLOCK_MONOTONIC = 1
    TFD_TIMER_ABSTIME = 1

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self._fd = fd

    @classmethod
    def open(cls) -> _TimerFd | None:
        """A non-blocking timerfd, or None where there is none (not Linux, no libc symbol)."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            create = libc.timerfd_create
            libc.timerfd_settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_ITimerSpec),
                                             ctypes.c_void_p]
        except (OSError, AttributeError):
            return None
        fd = create(cls.CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC)
        return cls(libc, fd) if fd >= 0 else None

    def fileno(self) -> int:
        return self._fd

    def arm(self, t_monotonic_ns: int) -> None:
        """Expire once at ``t_monotonic_ns`` (absolute; a time in the past expires at once)."""
        t = max(t_monotonic_ns, 1)  # all zeros would disarm it
        spec = _ITimerSpec(_TimeSpec(0, 0), _TimeSpec(t // 1_000_000_000, t % 1_000_000_000))
        if self._libc.timerfd_settime(self._fd, self.TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"timerfd_settime: {os.strerror(err)}")

    def clear(self) -> None:
        """Consume the expiration so the fd is no longer readable."""
        with contextlib.suppress(BlockingIOError):
            os.read(self._fd, 8)

    def close(self) -> None:
        os.close(self._fd)
