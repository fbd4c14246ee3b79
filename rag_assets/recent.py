"""A bounded map of recent values: the least recently used key goes first past `size`.

The caches of a search (query vectors, rows read by id, whole retrievals) keep recent values
the same way; one class, thread-safe, counting its hits and misses."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

V = TypeVar("V")


class Recent(Generic[V]):
    def __init__(self, size: int) -> None:
        self.size = size
        self.hits = self.misses = 0
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._values.get(key)
            if value is None:
                self.misses += 1
                return None
            self._values.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self.size:
                self._values.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Hashable]:
        """The keys, least recently used first (a copy: the map may change meanwhile)."""
        with self._lock:
            return iter(list(self._values))
