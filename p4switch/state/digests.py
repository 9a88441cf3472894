"""Digest buffering as P4Runtime's DigestEntry config defines it (sans-I/O).

Per digest id: messages are buffered until ``max_list_size`` distinct ones are
waiting or ``max_timeout_ns`` passed since the first; then they leave as one
list. Lists sent but not yet acknowledged stay in a cache for ``ack_timeout_ns``;
a message already in the cache or in the buffer is dropped as a duplicate.
Time is passed in; ``next_deadline_ns`` tells a scheduler when to poll next.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from .errors import invalid


@dataclass(frozen=True, slots=True)
class DigestConfig:
    max_timeout_ns: int = 0
    max_list_size: int = 1
    ack_timeout_ns: int = 0

    def check(self, name: str) -> DigestConfig:
        for field in ("max_timeout_ns", "max_list_size", "ack_timeout_ns"):
            if getattr(self, field) < 0:
                raise invalid(f"digest '{name}': negative {field} {getattr(self, field)}")
        return self


@dataclass(frozen=True, slots=True)
class DigestList:
    digest_id: int
    list_id: int
    data: tuple[Hashable, ...]
    timestamp_ns: int


class DigestBuffer:
    """Buffer, cache and list ids of one digest instance."""

    def __init__(self, digest_id: int, name: str) -> None:
        self.id = digest_id
        self.name = name
        self.config: DigestConfig | None = None  # None: learning disabled, digests dropped
        self.listener: Callable[[DigestBuffer], None] | None = None
        self._buffer: list[Hashable] = []
        self._pending: set[Hashable] = set()
        self._first_ns = 0
        self._cache: dict[int, tuple[int, tuple[Hashable, ...]]] = {}  # list id -> (sent ns, data)
        self._cached: dict[Hashable, int] = {}  # message -> list id holding it
        self._next_list_id = 1
        self.dropped = 0

    @property
    def enabled(self) -> bool:
        return self.config is not None

    def configure(self, config: DigestConfig | None) -> None:
        """Enable (or reconfigure) learning; None disables it and empties the buffers."""
        if config is not None:
            config.check(self.name)
        self.config = config
        if config is None:
            self._buffer.clear()
            self._pending.clear()
            self._cache.clear()
            self._cached.clear()

    def add(self, data: Hashable, now_ns: int) -> bool:
        """A message from the data plane (e.g. a tuple of ints); False if dropped."""
        if self.config is None or data in self._pending or data in self._cached:
            self.dropped += 1
            return False
        if not self._buffer:
            self._first_ns = now_ns
        self._buffer.append(data)
        self._pending.add(data)
        if self.listener is not None:
            self.listener(self)
        return True

    def pending(self) -> int:
        return len(self._buffer)

    def poll(self, now_ns: int) -> list[DigestList]:
        """Expire old cache entries; return the list that is due, if any."""
        cfg = self.config
        if cfg is None:
            return []
        self._expire(now_ns, cfg)
        lists = []
        while self._buffer:
            full = cfg.max_list_size > 0 and len(self._buffer) >= cfg.max_list_size
            if not full and now_ns - self._first_ns < cfg.max_timeout_ns:
                break
            lists.append(self._send(now_ns, cfg))
        return lists

    def ack(self, list_id: int) -> bool:
        """The primary acknowledged a list: its messages may be learned again."""
        item = self._cache.pop(list_id, None)
        if item is None:
            return False
        for msg in item[1]:
            if self._cached.get(msg) == list_id:
                del self._cached[msg]
        return True

    def next_deadline_ns(self) -> int | None:
        """When ``poll`` next has something to do (send or expire), or None."""
        cfg = self.config
        if cfg is None:
            return None
        times = []
        if self._buffer:
            full = cfg.max_list_size > 0 and len(self._buffer) >= cfg.max_list_size
            times.append(self._first_ns if full else self._first_ns + cfg.max_timeout_ns)
        if self._cache:
            times.append(min(sent for sent, _ in self._cache.values()) + cfg.ack_timeout_ns)
        return min(times) if times else None

    def _send(self, now_ns: int, cfg: DigestConfig) -> DigestList:
        size = cfg.max_list_size if cfg.max_list_size > 0 else len(self._buffer)
        data = tuple(self._buffer[:size])
        del self._buffer[:size]
        self._pending.difference_update(data)
        if self._buffer:
            self._first_ns = now_ns
        list_id = self._next_list_id
        self._next_list_id = list_id + 1 if list_id < (1 << 64) - 1 else 1
        if cfg.ack_timeout_ns > 0:
            self._cache[list_id] = (now_ns, data)
            for msg in data:
                self._cached[msg] = list_id
        return DigestList(self.id, list_id, data, now_ns)

    def _expire(self, now_ns: int, cfg: DigestConfig) -> None:
        for list_id, (sent, _) in list(self._cache.items()):
            if now_ns - sent >= cfg.ack_timeout_ns:
                self.ack(list_id)
