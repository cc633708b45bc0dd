"""Value checks written as data: the vocabulary of the spec schema and the backend settings.

A :class:`Check` is a predicate with a description (``"an integer >= 1"``), so
a table of settings (:mod:`sdpembed.backend_options`) or of spec fields
(:mod:`sdpembed.experiments.schema`) states each accepted value once and
every error message is written from it: ``expected an integer >= 1; got 2.5
(float)``. Checks follow scikit-learn's parameter validation: a boolean is
not a number, and an integer-valued setting rejects ``2.0``.
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Check", "Integer", "Number", "Boolean", "Text", "OneOf", "ListOf", "Table",
           "Anything", "NoneOr", "PlainName", "type_name", "is_int", "is_number", "as_int",
           "did_you_mean"]


def is_int(v) -> bool:
    """An integer that is not a bool (numpy integers included)."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def is_number(v) -> bool:
    """A real number that is not a bool (integers included; NaN included)."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def did_you_mean(name: Any, choices: Iterable[Any]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to ``name``, or ``""``."""
    choices = [str(c) for c in choices]
    close = difflib.get_close_matches(str(name), choices, n=1)
    if not close:   # a case slip ("lowrank", "Knn_Accuracy") is too short a match for difflib
        close = [c for c in choices if c.lower() == str(name).lower()][:1]
    return f" (did you mean {close[0]!r}?)" if close else ""


def type_name(value) -> str:
    """TOML-style name of a value's type, for messages."""
    if isinstance(value, bool):
        return "boolean"
    if is_int(value):
        return "integer"
    if is_number(value):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "table"
    return type(value).__name__


class Check:
    """A predicate on a value, with the words that describe what it accepts."""

    what: str = "a value"

    def __call__(self, value) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def names(self) -> tuple:
        """The strings accepted by name (for a "did you mean"); none for most checks."""
        return ()

    def problem(self, value) -> str | None:
        """``None`` if ``value`` passes, else ``"expected ...; got ..."`` (and, for a
        string near one of :meth:`names`, ``"(did you mean ...?)"``)."""
        if self(value):
            return None
        hint = did_you_mean(value, self.names()) if isinstance(value, str) else ""
        return f"expected {self.what}; got {value!r} ({type_name(value)}){hint}"


@dataclass(frozen=True)
class Integer(Check):
    """An integer (not a bool) in ``[lo, hi]``."""

    lo: int | None = None
    hi: int | None = None

    @property
    def what(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"an integer in [{self.lo}, {self.hi}]"
        if self.lo is not None:
            return f"an integer >= {self.lo}"
        if self.hi is not None:
            return f"an integer <= {self.hi}"
        return "an integer"

    def __call__(self, v) -> bool:
        return is_int(v) and (self.lo is None or v >= self.lo) \
            and (self.hi is None or v <= self.hi)


@dataclass(frozen=True)
class Number(Check):
    """A real number (integers included, bools not) in an interval; finite unless ``inf``."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    inf: bool = False

    @property
    def what(self) -> str:
        lo = None if self.lo is None else ("> " if self.lo_open else ">= ") + f"{self.lo:g}"
        hi = None if self.hi is None else ("< " if self.hi_open else "<= ") + f"{self.hi:g}"
        if lo and hi:
            a = "(" if self.lo_open else "["
            b = ")" if self.hi_open else "]"
            text = f"a number in {a}{self.lo:g}, {self.hi:g}{b}"
        else:
            text = "a number" + (f" {lo}" if lo else "") + (f" {hi}" if hi else "")
        return text + (" (inf allowed)" if self.inf else "")

    def __call__(self, v) -> bool:
        if not is_number(v) or math.isnan(v):
            return False
        if math.isinf(v) and not (self.inf and v > 0):
            return False
        if self.lo is not None and (v <= self.lo if self.lo_open else v < self.lo):
            return False
        return not (self.hi is not None and (v >= self.hi if self.hi_open else v > self.hi))


@dataclass(frozen=True)
class Boolean(Check):
    what: str = "true or false"

    def __call__(self, v) -> bool:
        return isinstance(v, (bool, np.bool_))


@dataclass(frozen=True)
class Text(Check):
    """A string; one of ``choices`` if given; non-empty if asked."""

    choices: tuple | None = None
    nonempty: bool = False

    @property
    def what(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        return "a non-empty string" if self.nonempty else "a string"

    def names(self) -> tuple:
        return tuple(self.choices or ())

    def __call__(self, v) -> bool:
        if not isinstance(v, str):
            return False
        if self.choices is not None:
            return v in self.choices
        return bool(v.strip()) or not self.nonempty


_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class PlainName(Check):
    """A plain file name: letters, digits, ``._-``, not starting with a dot, at most 100 long.

    No path separators, no ``..``, nothing absolute: a spec's names become
    file and folder names under ``--out`` and may not point anywhere else.
    """

    what: str = ("a plain file name (letters, digits, '.', '_', '-'; no '/' or '..'; "
                 "at most 100 characters)")

    def __call__(self, v) -> bool:
        return isinstance(v, str) and bool(_PLAIN_NAME.match(v)) and ".." not in v


@dataclass(frozen=True)
class OneOf(Check):
    """Any of several checks."""

    options: tuple

    def __init__(self, *options: Check):
        object.__setattr__(self, "options", tuple(options))

    @property
    def what(self) -> str:
        return " or ".join(c.what for c in self.options)

    def __call__(self, v) -> bool:
        return any(c(v) for c in self.options)

    def names(self) -> tuple:
        return tuple(n for c in self.options for n in c.names())


@dataclass(frozen=True)
class NoneOr(Check):
    """``None`` or what ``check`` accepts (in TOML, ``None`` is written ``"none"``)."""

    check: Check

    @property
    def what(self) -> str:
        return f"{self.check.what} or 'none'"

    def __call__(self, v) -> bool:
        return v is None or self.check(v)

    def names(self) -> tuple:
        return self.check.names() + ("none",)


@dataclass(frozen=True)
class ListOf(Check):
    """A list (or tuple) of items passing ``item``, with length bounds and optional distinctness."""

    item: Check
    min_len: int = 1
    max_len: int | None = None
    distinct: bool = False

    @property
    def what(self) -> str:
        n = "a non-empty list" if self.min_len == 1 else (
            "a list" if self.min_len == 0 else f"a list of at least {self.min_len}")
        extra = f" (at most {self.max_len})" if self.max_len is not None else ""
        return f"{n} of {'distinct ' if self.distinct else ''}items, each {self.item.what}{extra}"

    def __call__(self, v) -> bool:
        if not isinstance(v, Sequence) or isinstance(v, str):
            return False
        if len(v) < self.min_len or (self.max_len is not None and len(v) > self.max_len):
            return False
        if not all(self.item(x) for x in v):
            return False
        if self.distinct:
            try:
                return len(set(v)) == len(v)
            except TypeError:
                return False
        return True


@dataclass(frozen=True)
class Table(Check):
    what: str = "a table"

    def __call__(self, v) -> bool:
        return isinstance(v, Mapping)


@dataclass(frozen=True)
class Anything(Check):
    what: str = "a value"

    def __call__(self, v) -> bool:
        return True


def describe_value(value: Any) -> str:
    """``'abc' (string)``: a value and its type, for messages."""
    return f"{value!r} ({type_name(value)})"


def as_int(value: Any, name: str, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as an ``int``, or :class:`~sdpembed.exceptions.InputError` naming ``name``.

    Integer-valued parameters take integers only (numpy integers included), as
    scikit-learn's ``Interval(Integral, ...)``: ``2.7`` is refused, not
    truncated to 2, and so are ``2.0`` and ``True``.
    """
    check = Integer(lo, hi)
    if not check(value):
        from .exceptions import InputError

        raise InputError(f"{name} must be {check.what}; got {describe_value(value)}")
    return int(value)
