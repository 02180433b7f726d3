"""Frozen records: what a frozen dataclass gives, from one class statement: fields in declaration
order from the class' annotations, defaults (a plain value, or a `Field` carrying metadata),
construction by keyword or position, equality and hash by value, a dataclass' repr, and no
assignment after construction (AttributeError "cannot assign to field ..."). `fields(cls)` lists
them, as `dataclasses.fields` does (`.name`, `.default`, `.metadata`), and `replace(record,
**changes)` copies one, as `dataclasses.replace`. Pickling and copying work as for any object.

Why not dataclasses: the records every reader process builds at start-up (the metric registry,
the reader table, defs/metrics.py and readers/table.py) cost 9 ms of CPU there as frozen
dataclasses (each compiles six generated methods through exec), about as much as every other
yoloprof module of `summary` together, and importing dataclasses brings inspect, ast, dis and
tokenize (10 ms more for `get` of a profile.json, which needs none of them); these records cost
well under a millisecond. Type checkers see them as dataclasses (`dataclass_transform`, PEP 681).
Standard library only (the lowest layer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_kwargs: Any) -> Callable[[type], type]:  # typing's is 3.11+
        return lambda cls: cls


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()  # the default of a field without one (required)
_R = TypeVar("_R", bound="Record")


class Field:
    """One field of a record: its name, its default (`_MISSING`: required) and metadata (e.g. the
    CLI's, `readers.options.option`)."""

    __slots__ = ("default", "metadata", "name")

    def __init__(self, default: Any, metadata: dict[str, Any] | None = None) -> None:
        self.name = ""
        self.default = default
        self.metadata: dict[str, Any] = metadata or {}

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, metadata={self.metadata!r})"


def fields(record: Any) -> tuple[Field, ...]:
    """The fields of a record class or instance, in declaration order."""
    return record.__record_fields__


def replace(record: _R, **changes: Any) -> _R:
    """A copy of `record` with `changes`, as `dataclasses.replace`."""
    return type(record)(**{**{f.name: getattr(record, f.name) for f in fields(record)}, **changes})


@dataclass_transform(frozen_default=True)  # option(...) is a default to type checkers (Any)
class Record:
    """Base of the frozen records (module doc)."""

    __slots__ = ()
    __record_fields__: tuple[Field, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = []
        for name, hint in vars(cls).get("__annotations__", {}).items():
            if str(hint).startswith(("ClassVar", "typing.ClassVar")):
                continue
            value = vars(cls).get(name, _MISSING)
            field = value if isinstance(value, Field) else Field(value)
            field.name = name
            own.append(field)
            if field.default is _MISSING:
                if name in vars(cls):
                    delattr(cls, name)
            else:
                setattr(cls, name, field.default)  # as a dataclass: the class attribute is the default
        inherited = [f for f in cls.__record_fields__ if f.name not in {f.name for f in own}]
        cls.__record_fields__ = (*inherited, *own)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        all_fields = self.__record_fields__
        if len(args) > len(all_fields):
            raise TypeError(f"{type(self).__name__}() takes {len(all_fields)} arguments but {len(args)} "
                            "were given")
        values = dict(zip([f.name for f in all_fields], args))
        for name, value in kwargs.items():
            if name in values:
                raise TypeError(f"{type(self).__name__}() got multiple values for argument {name!r}")
            values[name] = value
        unknown = set(values) - {f.name for f in all_fields}
        if unknown:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {sorted(unknown)[0]!r}")
        for f in all_fields:
            value = values.get(f.name, f.default)
            if value is _MISSING:
                raise TypeError(f"{type(self).__name__}() missing required argument: {f.name!r}")
            object.__setattr__(self, f.name, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in self.__record_fields__)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__)
        return f"{type(self).__qualname__}({shown})"
