"""The run's design as one type (gpurepro.model.design.DesignSpec): what the command line asks
for, what the journal keeps as ``options.stopping`` and what the decider reads back."""

from __future__ import annotations

import json

import pytest

from gpurepro.errors import JournalError
from gpurepro.model.design import DesignSpec
from tests.conftest import ROOT


def _designs():
    """Every design a committed journal or document holds, with where it is."""
    for path in sorted(ROOT.glob("results/**/*.journal.jsonl")):
        with path.open() as fh:
            header = json.loads(fh.readline())
        yield str(path.relative_to(ROOT)), (header.get("options") or {}).get("stopping")
    for path in sorted(ROOT.glob("results/**/*.json")):
        doc = json.loads(path.read_text())
        plan = doc.get("plan") if isinstance(doc, dict) else None
        if isinstance(plan, dict):
            yield str(path.relative_to(ROOT)), (plan.get("options") or {}).get("stopping")


def test_every_committed_design_reads_and_writes_back_byte_for_byte():
    designs = list(_designs())
    assert len(designs) > 50
    for where, d in designs:
        back = DesignSpec.from_json(d).to_json()
        assert json.dumps(back) == json.dumps(d), where


def test_the_kinds_and_what_each_journals():
    assert DesignSpec.fixed().to_json() is None and not DesignSpec.fixed().sequential
    until = DesignSpec.until_decided(0.05, 5, 25)
    assert until.to_json() == {"alpha": 0.05, "max_trials": 25, "step": 5}
    assert DesignSpec.from_json(until.to_json()) == until.__class__(
        "until_decided", 0.05, max_trials=25, step=5, keys=("alpha", "max_trials", "step"))
    asked = DesignSpec.decisive_request(0.05, 25, "halving", 0.9, "auto")
    assert asked.decisive and asked.to_json() == {
        "design": "decisive", "alpha": 0.05, "max_trials": 25, "spending": "halving",
        "supported_share": 0.9, "horizon": "auto"}
    assert DesignSpec.from_json(None) == DesignSpec.fixed()


@pytest.mark.parametrize("bad, where", [
    ({"alpha": "0.05"}, "options.stopping.alpha"),
    ({"alpha": float("inf")}, "options.stopping.alpha"),
    ({"alpha": 0.05, "design": "bold"}, "options.stopping.design"),
    ({"alpha": 0.05, "step": 2.5}, "options.stopping.step"),
    ({"alpha": 0.05, "priors": [1]}, "options.stopping.priors"),
    ({"alpha": 0.05, "spending": "lavish"}, "options.stopping.spending"),
    ({"alpha": 0.05, "horizon": "soon"}, "options.stopping.horizon"),
    ({"alpha": 0.05, "first": "main"}, "options.stopping.first"),
])
def test_a_design_of_the_wrong_shape_is_one_line_naming_its_key(bad, where):
    with pytest.raises(JournalError, match="^" + where.replace(".", r"\.") + ": ") as found:
        DesignSpec.from_json(bad)
    assert "\n" not in str(found.value)
