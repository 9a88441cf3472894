"""The laws-together model asks its laws once a step (controlplane/fluid_laws.py ``LawBatch``,
engine/src/analysis/fluid_loop.rs): a step's reports in one call, answered as the controllers answer
them one by one."""

from __future__ import annotations

import pytest

import topo.analysis.fluid_network as fn
from controlplane.fluid_laws import CALL_INTS, HostControl, LawBatch, SwitchControl


def _fabric():  # type: ignore[no-untyped-def]
    from topo.experiments.hol import HolSetup, hol_topology

    return hol_topology(HolSetup(), "alinea", incast=True)  # hosts' laws and switches', twins among them


class _Watched:
    """The model's batch, its calls kept."""

    calls: list[list[int]] = []

    def __init__(self, controls):  # type: ignore[no-untyped-def]
        self.real = LawBatch(controls)

    def answer(self, calls):  # type: ignore[no-untyped-def]
        _Watched.calls.append(list(calls))
        return self.real.answer(calls)


def test_a_step_asks_its_laws_once_with_all_its_reports(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    _Watched.calls = []
    run, answered, steps = fn._Network.run, [], []

    def counted(self):  # type: ignore[no-untyped-def]
        out = run(self)
        answered.append(self.plant.answers())
        steps.append(self.steps_run)
        return out

    monkeypatch.setattr(fn, "LawBatch", _Watched)
    monkeypatch.setattr(fn._Network, "run", counted)
    fn.network_peaks(_fabric(), 3.0)
    sizes = [len(c) // CALL_INTS for c in _Watched.calls]
    assert all(len(c) % CALL_INTS == 0 for c in _Watched.calls)
    assert len(sizes) <= sum(steps)  # at most one call a step
    assert max(sizes) > 1  # ... with every report of the step
    assert sum(sizes) == sum(answered)


def test_the_batch_answers_as_the_controllers_one_by_one(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    _Watched.calls = []
    monkeypatch.setattr(fn, "LawBatch", _Watched)
    fn.network_peaks(_fabric(), 3.0)
    calls = list(_Watched.calls)
    assert calls

    def controls():  # type: ignore[no-untyped-def]
        return list(fn._Network(_fabric(), 3.0, 1.0).controls.values())

    batch = LawBatch(controls())
    alone = controls()
    kinds = set()
    for step in calls:
        got = batch.answer(step)
        want = []
        for j in range(0, len(step), CALL_INTS):
            c, said = alone[step[j]], step[j + 1:j + CALL_INTS]
            kinds.add(type(c))
            if isinstance(c, SwitchControl):
                value = c.on_report(*said[:4], bool(said[4]), *said[5:])
                want += [c.law.rate, float(value)]
            else:
                assert isinstance(c, HostControl)
                c.on_report(*said[:3], bool(said[3]), *said[4:6])
                want += [c.law.rate, c.law.rate]
        assert got == want  # the same floats, to the last bit
    assert kinds == {HostControl, SwitchControl}


def test_a_batch_that_answers_too_few_numbers_fails_the_model_in_one_line(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    class Short:
        def __init__(self, controls):  # type: ignore[no-untyped-def]
            pass

        def answer(self, calls):  # type: ignore[no-untyped-def]
            return [0.0]

    monkeypatch.setattr(fn, "LawBatch", Short)
    with pytest.raises(ValueError, match=r"the laws gave 1 numbers for \d+ reports \(two each\)"):
        fn.network_peaks(_fabric(), 1.0)
