"""BMv2's Thrift counter, meter and register calls on p4switch's runtime state.

Why: ``counter_read``/``counter_write``/``counter_reset``, ``meter_set_rates``/``meter_get_rates``
and ``register_read``/``register_write``/``register_reset`` lines of a simple_switch_CLI commands
file, for indexed arrays and for a table's direct counter and meter (the CLI turns a direct
resource's name into its table and an entry handle). A mixin of
``p4switch.thrift_tables.StandardTables``: the entry handles are its books'.

Meters: BMv2 takes a rate in units per microsecond (a float) and a burst in units, per rate,
committed first; P4Runtime's config (what the pipeline runs) is in units per second, so a rate
``r`` is stored as ``round(r * 1e6)``. BMv2 answers the rates as they were set, and so does
p4switch: the floats given are kept beside the config they made and answered while the meter
still has that config (one P4Runtime wrote since is answered from its own numbers). An
unconfigured meter answers no rates, as BMv2's. The checks are BMv2's: as many rates as the
meter has (``BAD_RATES_LIST``), each rate no smaller than the one before
(``INVALID_INFO_RATE_VALUE``); a refused set leaves the meter as it was.
"""

from __future__ import annotations

from typing import Any

from bm_runtime.standard import ttypes as T

from p4switch.state.externs import MeterConfig
from p4switch.thrift_entries import table_error

CounterCode = T.CounterOperationErrorCode
MeterCode = T.MeterOperationErrorCode
RegisterCode = T.RegisterOperationErrorCode
RATE_COUNT = 2  # v1model meters are two-rate three-colour (BMv2's "rate_count": 2)


def counter_error(name: str) -> T.InvalidCounterOperation:
    return T.InvalidCounterOperation(code=getattr(CounterCode, name))


def meter_error(name: str) -> T.InvalidMeterOperation:
    return T.InvalidMeterOperation(code=getattr(MeterCode, name))


def register_error(name: str) -> T.InvalidRegisterOperation:
    return T.InvalidRegisterOperation(code=getattr(RegisterCode, name))


def meter_config(rates: list) -> MeterConfig | None:
    """The P4Runtime config of BMv2 rates ``[committed, peak]``, or None when BMv2 refuses them
    for their order (raises for their number)."""
    if len(rates) != RATE_COUNT:
        raise meter_error("BAD_RATES_LIST")
    (cir, cburst), (pir, pburst) = ((r.units_per_micros, r.burst_size) for r in rates)
    if pir < cir:
        raise meter_error("INVALID_INFO_RATE_VALUE")
    if min(cir, pir, cburst, pburst) < 0:
        raise meter_error("ERROR")
    return MeterConfig(round(cir * 1e6), int(cburst), round(pir * 1e6), int(pburst))


def rate_list(config: MeterConfig | None, given: tuple | None) -> list:
    """BMv2's answer for a meter: nothing when unconfigured, else its rates, committed first."""
    if config is None:
        return []
    if given is not None and given[0] == config:
        return [T.BmMeterRateConfig(units_per_micros=r, burst_size=b) for r, b in given[1]]
    return [T.BmMeterRateConfig(units_per_micros=config.cir / 1e6, burst_size=config.cburst),
            T.BmMeterRateConfig(units_per_micros=config.pir / 1e6, burst_size=config.pburst)]


class ExternCalls:
    """Counter, meter and register calls (mixin: needs ``_table``, ``_entry``, ``_run``, ``_fresh``)."""

    _holder: Any
    _run: Any

    def __init__(self) -> None:
        self._given: dict[Any, tuple] = {}  # meter cell key -> (config, rates as given)

    def _reset_externs(self) -> None:
        self._given = {}

    def _state(self) -> Any:
        self._fresh()  # type: ignore[attr-defined]
        return self._holder.state

    # ---- indexed counters ---------------------------------------------------------------------
    def _counter(self, name: str, index: int | None) -> Any:
        c = getattr(self._state(), 'counters_by_name', {}).get(name)
        if c is None:
            raise counter_error("INVALID_COUNTER_NAME")
        if index is not None and not 0 <= index < c.size:
            raise counter_error("INVALID_INDEX")
        return c

    def bm_counter_read(self, cxt_id: int, counter_name: str, index: int) -> T.BmCounterValue:
        def read() -> T.BmCounterValue:
            packets, nbytes = self._counter(counter_name, index).read(index)
            return T.BmCounterValue(bytes=nbytes, packets=packets)
        return self._run(read)

    def bm_counter_write(self, cxt_id: int, counter_name: str, index: int, value: Any) -> None:
        def write() -> None:
            c = self._counter(counter_name, index)
            c.write(index, value.packets & (2**64 - 1), value.bytes & (2**64 - 1))
        self._run(write)

    def bm_counter_reset_all(self, cxt_id: int, counter_name: str) -> None:
        self._run(lambda: self._counter(counter_name, None).reset())

    # ---- direct counters ----------------------------------------------------------------------
    def _direct_counter(self, table_name: str, handle: int | None) -> Any:
        t, facts, book = self._table(table_name)  # type: ignore[attr-defined]
        if t.info.direct_counter is None:
            raise table_error("COUNTERS_DISABLED")
        if handle is None:
            return [e for _, e in book.items()]
        return self._entry(book, handle, check_version=False)  # type: ignore[attr-defined]

    def bm_mt_read_counter(self, cxt_id: int, table_name: str, entry_handle: int) -> T.BmCounterValue:
        def read() -> T.BmCounterValue:
            packets, nbytes = self._direct_counter(table_name, entry_handle).direct_counter.snapshot()
            return T.BmCounterValue(bytes=nbytes, packets=packets)
        return self._run(read)

    def bm_mt_write_counter(self, cxt_id: int, table_name: str, entry_handle: int, value: Any) -> None:
        def write() -> None:
            e = self._direct_counter(table_name, entry_handle)
            e.direct_counter.set(value.packets & (2**64 - 1), value.bytes & (2**64 - 1))
        self._run(write)

    def bm_mt_reset_counters(self, cxt_id: int, table_name: str) -> None:
        def reset() -> None:
            for e in self._direct_counter(table_name, None):
                e.direct_counter.set(0, 0)
        self._run(reset)

    # ---- indexed meters -----------------------------------------------------------------------
    def _meter(self, name: str, index: int | None) -> Any:
        m = getattr(self._state(), 'meters_by_name', {}).get(name)
        if m is None:
            raise meter_error("INVALID_METER_NAME")
        if index is not None and not 0 <= index < m.size:
            raise meter_error("INVALID_INDEX")
        return m

    def _set_cell(self, key: Any, cell: Any, rates: list) -> None:
        config = meter_config(rates)
        cell.configure(config)
        self._given[key] = (config, tuple((r.units_per_micros, r.burst_size) for r in rates))

    def bm_meter_set_rates(self, cxt_id: int, meter_array_name: str, index: int, rates: list) -> None:
        def set_rates() -> None:
            m = self._meter(meter_array_name, index)
            self._set_cell((m.name, index), m.cell(index), rates)
        self._run(set_rates)

    def bm_meter_array_set_rates(self, cxt_id: int, meter_array_name: str, rates: list) -> None:
        def set_all() -> None:
            m = self._meter(meter_array_name, None)
            meter_config(rates)  # refused before any cell changes
            for i in range(m.size):
                self._set_cell((m.name, i), m.cell(i), rates)
        self._run(set_all)

    def bm_meter_get_rates(self, cxt_id: int, meter_array_name: str, index: int) -> list:
        def get() -> list:
            m = self._meter(meter_array_name, index)
            return rate_list(m.config(index), self._given.get((m.name, index)))
        return self._run(get)

    # ---- direct meters ------------------------------------------------------------------------
    def _direct_meter(self, table_name: str, handle: int) -> Any:
        t, facts, book = self._table(table_name)  # type: ignore[attr-defined]
        if t.info.direct_meter is None:
            raise table_error("METERS_DISABLED")
        return self._entry(book, handle, check_version=False)  # type: ignore[attr-defined]

    def bm_mt_set_meter_rates(self, cxt_id: int, table_name: str, entry_handle: int, rates: list) -> None:
        def set_rates() -> None:
            e = self._direct_meter(table_name, entry_handle)
            try:
                self._set_cell(("direct", table_name, e._handle), e.direct_meter, rates)
            except T.InvalidMeterOperation:  # BMv2's table call answers a meter refusal as ERROR
                raise table_error("ERROR") from None
        self._run(set_rates)

    def bm_mt_get_meter_rates(self, cxt_id: int, table_name: str, entry_handle: int) -> list:
        def get() -> list:
            e = self._direct_meter(table_name, entry_handle)
            return rate_list(e.direct_meter.config, self._given.get(("direct", table_name, e._handle)))
        return self._run(get)

    # ---- registers ----------------------------------------------------------------------------
    def _register(self, name: str, index: int | None) -> Any:
        r = getattr(self._state(), 'registers_by_name', {}).get(name)
        if r is None:
            raise register_error("INVALID_REGISTER_NAME")
        if index is not None and not 0 <= index < r.size:
            raise register_error("INVALID_INDEX")
        return r

    def bm_register_read(self, cxt_id: int, register_name: str, index: int) -> int:
        return self._run(lambda: self._register(register_name, index).read(index))

    def bm_register_write(self, cxt_id: int, register_name: str, index: int, value: int) -> None:
        self._run(lambda: self._register(register_name, index).write(index, value))

    def bm_register_read_all(self, cxt_id: int, register_name: str) -> list:
        def read_all() -> list:
            r = self._register(register_name, None)
            return [r.read(i) for i in range(r.size)]
        return self._run(read_all)

    def bm_register_reset(self, cxt_id: int, register_name: str) -> None:
        def reset() -> None:
            r = self._register(register_name, None)
            for i in range(r.size):
                r.write(i, 0)
        self._run(reset)
