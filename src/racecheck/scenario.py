"""Scenarios: a named race with its variants and what each variant must show.

A scenario file is a plain Python module (conventionally under ``scenarios/``)
that defines one or more module-level :class:`Scenario` objects. ``racecheck
run`` imports the file, explores every variant and compares the verdict with
the variant's expectation::

    SCENARIO = Scenario(
        name="changeset-7120",
        description="record_change races start_changeset across threads",
        variants={
            "buggy": Variant(buggy_target, expect="race"),
            "correct": Variant(correct_target, expect="safe"),
        },
    )

Expectations are ``"race"`` (some schedule raises), ``"deadlock"`` (some
schedule deadlocks) and ``"safe"`` (no explored schedule fails).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Expect = Literal["race", "deadlock", "safe"]
EXPECTATIONS: tuple[str, ...] = ("race", "deadlock", "safe")


@dataclass(frozen=True)
class Variant:
    """One version of the code under test (buggy, as proposed, correct...)."""

    target: Callable[[], Any]
    expect: Expect
    #: extra keyword arguments for :func:`racecheck.check` (backend, max_steps...)
    options: Mapping[str, Any] = field(default_factory=dict)
    #: one line: what this variant changes, shown by ``racecheck list``
    summary: str = ""

    def __post_init__(self) -> None:
        if self.expect not in EXPECTATIONS:
            raise ValueError(
                f"expect must be one of {', '.join(EXPECTATIONS)}, not {self.expect!r}"
            )
        if not callable(self.target):
            raise TypeError(f"variant target must be callable, not {self.target!r}")
        if not isinstance(self.options, Mapping):
            raise TypeError(f"variant options must be a mapping, not {self.options!r}")
        if not isinstance(self.summary, str):
            raise TypeError(f"variant summary must be a string, not {self.summary!r}")


@dataclass(frozen=True)
class Scenario:
    """A race scenario: one concurrent program, several variants of the code."""

    name: str
    variants: Mapping[str, Variant]
    description: str = ""
    #: where the race was reported, e.g. "agent-framework#6776"
    issue: str = ""
    #: the invariants the target asserts, in words (shown by ``racecheck list``)
    invariants: tuple[str, ...] = ()
    #: keyword arguments for :func:`racecheck.check` shared by every variant
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Checked here, at import, so a malformed scenario is one line naming
        # its file rather than a traceback from deep inside a run.
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"scenario name must be a non-empty string, not {self.name!r}")
        if not isinstance(self.variants, Mapping):
            raise TypeError(
                f"scenario {self.name!r}: variants must be a mapping of name to Variant,"
                f" not {type(self.variants).__name__}"
            )
        if not self.variants:
            raise ValueError(f"scenario {self.name!r} has no variants")
        for key, value in self.variants.items():
            if not isinstance(key, str) or not key:
                raise TypeError(
                    f"scenario {self.name!r}: variant names must be non-empty strings, not {key!r}"
                )
            if not isinstance(value, Variant):
                raise TypeError(
                    f"scenario {self.name!r}: variant {key!r} must be a racecheck.Variant,"
                    f" not {type(value).__name__}"
                )
        for attribute in ("description", "issue"):
            value = getattr(self, attribute)
            if not isinstance(value, str):
                raise TypeError(
                    f"scenario {self.name!r}: {attribute} must be a string, not {value!r}"
                )
        invariants = self.invariants
        if isinstance(invariants, str) or not all(isinstance(i, str) for i in invariants):
            raise TypeError(
                f"scenario {self.name!r}: invariants must be a tuple of strings, not {invariants!r}"
            )
        object.__setattr__(self, "invariants", tuple(invariants))
        if not isinstance(self.options, Mapping):
            raise TypeError(
                f"scenario {self.name!r}: options must be a mapping, not {self.options!r}"
            )

    def check_options(self, variant: str) -> dict[str, Any]:
        """Options for one variant: the scenario's, overridden by the variant's."""
        merged = dict(self.options)
        merged.update(self.variants[variant].options)
        return merged

    def label(self, variant: str) -> str:
        """The stable name a schedule token is bound to."""
        return f"{self.name}[{variant}]"


def scenario(
    *, expect: Expect, name: str | None = None, **options: Any
) -> Callable[[Callable[[], Any]], Scenario]:
    """Decorator for a one-variant scenario: ``@scenario(expect="race")``."""

    def wrap(target: Callable[[], Any]) -> Scenario:
        return Scenario(
            name=name or target.__name__,
            variants={"default": Variant(target, expect=expect)},
            description=(target.__doc__ or "").strip().splitlines()[0] if target.__doc__ else "",
            options=options,
        )

    return wrap
