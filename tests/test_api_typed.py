"""The public API is typed: every function of `yoloprof.__all__` and every public method of its
classes has annotations on every parameter and a concrete return type, `Any` nowhere in them (no
`**opts: Any`, no `-> Any`), and the result TypedDicts they return hold no `Any` either. The
annotations are resolved with `typing.get_type_hints`, as a type checker reads them."""

from __future__ import annotations

import inspect
import types
import typing

import pandas
import pytest

import yoloprof
from yoloprof.analysis.run import AnalysisResult
from yoloprof.api import PathLike, Profile
from yoloprof.capturing.userloop import decorators
from yoloprof.capturing.userloop import public_types
from yoloprof.capturing.userloop.decorators import Timing
from yoloprof.capturing.userloop.loop import Profile as LoopProfile
from yoloprof.config.capture_settings import CaptureSettings
from yoloprof.defs.json_types import JSONObject

# torch's two names in the hints, without importing torch (a second of CPU): only Any is sought.
_TORCH = types.SimpleNamespace(nn=types.SimpleNamespace(Module=type("Module", (), {})),
                               device=type("device", (), {}))
# Names the modules import only for type checking (TYPE_CHECKING blocks), to resolve their hints.
TYPE_ONLY = {"pd": pandas, "AnalysisResult": AnalysisResult, "CaptureSettings": CaptureSettings,
             "PathLike": PathLike, "Profile": Profile, "torch": _TORCH, "Timing": Timing,
             "JSONObject": JSONObject, "Timed": decorators.Timed, "Profiled": decorators.Profiled,
             **{n: getattr(public_types, n) for n in ("P", "R", "LoopOptions")}}

# Public names typed elsewhere than api.py/readers (capture/ and config/ are other work's): each
# is listed with the reason, and the test fails when one becomes clean so the list only shrinks.
NOT_YET: dict[str, str] = {}


def _public() -> list[tuple[str, object]]:
    out = []
    for name in yoloprof.__all__:
        obj = getattr(yoloprof, name)
        if inspect.isclass(obj):
            out += [(f"{name}.{m}", f) for m, f in vars(obj).items()
                    if (not m.startswith("_") or m == "__init__") and (inspect.isfunction(f) or
                                                                        isinstance(f, (classmethod, property)))]
        elif callable(obj):
            out.append((name, obj))
    return out


def _function(obj: object) -> typing.Callable:
    if isinstance(obj, property):
        return obj.fget
    if isinstance(obj, classmethod):
        return obj.__func__
    return obj  # type: ignore[return-value]


def _anys(hint: object, seen: frozenset = frozenset()) -> bool:
    """Whether `Any` appears in a resolved hint, through unions, generics and TypedDict fields."""
    if hint is typing.Any:
        return True
    if isinstance(hint, typing.ForwardRef) or id(hint) in seen:
        return False  # the recursive JSON alias
    seen = seen | {id(hint)}
    if typing.is_typeddict(hint):
        return any(_anys(h, seen) for h in typing.get_type_hints(hint, localns=TYPE_ONLY).values())
    return any(_anys(a, seen) for a in typing.get_args(hint))


def _problems(name: str, obj: object) -> list[str]:
    fn = _function(obj)
    if isinstance(fn, types.ModuleType):  # `yoloprof.capture`: the package is callable
        fn = type(fn).__call__
    hints = typing.get_type_hints(fn, globalns={**TYPE_ONLY, **getattr(fn, "__globals__", {})})
    sig = inspect.signature(fn)
    bad = []
    for p in sig.parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.name not in hints:
            bad.append(f"{name}: parameter {p.name} has no annotation")
        elif _anys(hints[p.name]):
            bad.append(f"{name}: parameter {p.name} is {hints[p.name]}")
    if "return" not in hints:
        bad.append(f"{name}: no return annotation")
    elif _anys(hints["return"]):
        bad.append(f"{name}: returns {hints['return']}")
    return bad


def test_the_public_api_has_full_annotations_without_any():
    problems = {n: _problems(n, o) for n, o in _public()}
    bad = [p for n, ps in problems.items() if n.split(".")[0] not in NOT_YET for p in ps]
    assert not bad, "\n".join(bad)
    cleaned = [n for n in NOT_YET if not any(ps for k, ps in problems.items() if k.split(".")[0] == n)]
    assert not cleaned, f"typed now, remove from NOT_YET: {cleaned}"


def test_the_walk_sees_the_reader_methods_and_catches_any():
    names = {n for n, _ in _public()}
    assert {"load", "compare", "ab", "analyze", "read_results", "capture", "Profile.summary",
            "Profile.modules", "Profile.hotspots", "Profile.kernels", "Profile.compare"} <= names

    def loose(x: int, **opts: typing.Any) -> dict[str, typing.Any]:
        return {}

    def bare(x, y: int) -> int:
        return y

    assert len(_problems("loose", loose)) == 2
    assert _problems("bare", bare) == ["bare: parameter x has no annotation"]


@pytest.mark.parametrize("name", ["summary", "kernels", "compare", "analyze"])
def test_return_types_are_named(name):
    fn = getattr(yoloprof.Profile, name, None) or getattr(yoloprof, name)
    hint = typing.get_type_hints(fn, globalns={**TYPE_ONLY, **fn.__globals__})["return"]
    assert hint is not dict and typing.get_origin(hint) is not dict


def test_all_is_the_eager_names_and_the_lazy_ones():
    eager = {"__version__", "ProfileError", "UsageError", "YoloprofError", "capture"}
    assert len(yoloprof.__all__) == len(set(yoloprof.__all__))
    assert set(yoloprof.__all__) == eager | set(yoloprof._LAZY)


def test_loop_options_are_the_loop_profiles_keywords():
    keywords = {n: p.default for n, p in inspect.signature(LoopProfile.__init__).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert set(public_types.LoopOptions.__annotations__) == set(keywords)
    for fn in (yoloprof.profile, yoloprof.profileit):
        hints = typing.get_type_hints(fn, globalns={**TYPE_ONLY, **fn.__globals__})
        assert typing.get_args(hints["options"]) == (public_types.LoopOptions,)
