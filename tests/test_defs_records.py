"""The frozen records (defs/records.py: the metric registry's, the reader table's) behave as the
frozen dataclasses they replace: checked against `dataclasses.dataclass(frozen=True)` itself, the
same class declared both ways."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from yoloprof.defs.metrics import METRICS, spec
from yoloprof.defs.records import Record, fields, replace
from yoloprof.readers.options import option


class Rec(Record):
    name: str
    top: int = option(20, "rows")
    grep: str | None = None


@dataclasses.dataclass(frozen=True)
class Dc:
    name: str
    top: int = dataclasses.field(default=20, metadata={"help": "rows"})
    grep: str | None = None


CALLS = [(("a",), {}), (("a", 5), {}), ((), {"name": "a", "grep": "x"}), (("a",), {"top": 0, "grep": None})]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_construction_repr_equality_and_hash_are_a_frozen_dataclass(args, kwargs):
    r, d = Rec(*args, **kwargs), Dc(*args, **kwargs)
    assert repr(r).replace("Rec(", "Dc(") == repr(d)
    assert [getattr(r, f.name) for f in fields(r)] == [getattr(d, f.name) for f in dataclasses.fields(d)]
    assert r == Rec(*args, **kwargs) and hash(r) == hash(Rec(*args, **kwargs))
    assert r != Rec("other") and r != d  # another class is never equal, as between dataclasses


def test_fields_defaults_metadata_and_class_attributes():
    assert [(f.name, f.default) for f in fields(Rec)][1:] == [(f.name, f.default) for f in dataclasses.fields(Dc)][1:]
    assert fields(Rec)[1].metadata["help"] == "rows" and (Rec.top, Rec.grep) == (Dc.top, Dc.grep)
    assert not hasattr(Rec, "name") and not hasattr(Dc, "name")  # a required field has no class default


@pytest.mark.parametrize(("args", "kwargs"), [((), {}), (("a",), {"bogus": 1}), (("a",), {"name": "b"}),
                                              (("a", 1, None, 4), {})])
def test_bad_calls_raise_type_error_like_a_dataclass(args, kwargs):
    with pytest.raises(TypeError):
        Dc(*args, **kwargs)
    with pytest.raises(TypeError):
        Rec(*args, **kwargs)


def test_frozen_and_replace():
    r = Rec("a")
    with pytest.raises(AttributeError, match="cannot assign to field 'top'"):
        r.top = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del r.top  # type: ignore[misc]
    assert replace(r, top=3) == Rec("a", 3) and r.top == 20
    assert repr(replace(r, grep="g")).replace("Rec(", "Dc(") == repr(dataclasses.replace(Dc("a"), grep="g"))


def test_records_pickle_and_copy_as_objects_do():
    r = Rec("a", 3, "g")
    assert pickle.loads(pickle.dumps(r)) == r and copy.deepcopy(r) == r and copy.copy(r) == r
    assert pickle.loads(pickle.dumps(METRICS[0])) == METRICS[0] and spec(METRICS[0].name) == METRICS[0]
