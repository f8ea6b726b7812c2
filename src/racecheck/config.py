"""Configuration and profiles, shared by the pytest plugin and the CLI.

A setting can come from five places. The first that gives it wins:

1. the command line (``--racecheck-schedules`` / ``racecheck run --schedules``);
2. the environment (``RACECHECK_STRATEGY``, ``RACECHECK_SCHEDULES``,
   ``RACECHECK_SEED``, ``RACECHECK_DB``);
3. the selected profile's own options, then the pytest ini options
   (``racecheck_schedules = ...``), then ``[tool.racecheck]`` in
   ``pyproject.toml``;
4. the marker (``@pytest.mark.racecheck(schedules=...)``) or the scenario's options;
5. the defaults (auto, 1000 schedules, seed 0).

A profile (``--racecheck-profile`` / ``racecheck run --profile`` >
``RACECHECK_PROFILE`` > ini ``racecheck_profile`` > ``profile`` in
``[tool.racecheck]``) may carry a ``schedules_multiplier``. It scales the
budget that won, wherever it came from, *except* a budget typed on the command
line: a number someone just typed means exactly that number. Built in: ``ci``
(x10) and ``dev`` (/10, at least 1); ``[tool.racecheck.profiles.NAME]`` defines
more, or refines these.

This module is the engine's side of the plugin boundary: it never imports
pytest. Bad values raise :class:`racecheck.errors.UsageError` with one line
naming where the value came from.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from racecheck.errors import UsageError

DEFAULTS: dict[str, Any] = {"strategy": "auto", "schedules": 1000, "seed": 0}

#: environment variables and the setting each one gives
ENVIRONMENT = {
    "RACECHECK_STRATEGY": "strategy",
    "RACECHECK_SCHEDULES": "schedules",
    "RACECHECK_SEED": "seed",
    "RACECHECK_DB": "db",
}
PROFILE_ENV = "RACECHECK_PROFILE"

#: the settings a project file or a profile may give, and their kinds
KINDS: dict[str, str] = {
    "strategy": "strategy",
    "schedules": "positive",
    "seed": "int",
    "detect": "bool",
    "trace_packages": "names",
    "report_dir": "text",
    "db": "text",
    "paths": "names",
    "profile": "text",
}
_PROFILE_ONLY = {"schedules_multiplier": "multiplier"}

BUILTIN_PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"schedules_multiplier": Fraction(10)},
    "dev": {"schedules_multiplier": Fraction(1, 10)},
}


def parse(name: str, value: Any, where: str) -> Any:
    """``value`` (from text or TOML) as setting ``name`` wants it, or a one-line UsageError."""
    kind = KINDS.get(name) or _PROFILE_ONLY.get(name)
    if kind is None:
        known = ", ".join(sorted(KINDS))
        raise UsageError(f"{where}: unknown racecheck setting {name!r} (known: {known})")
    bad = f"{where}: {name} must be"
    if kind == "strategy":
        from racecheck.strategies import STRATEGIES

        text = str(value).strip()
        if text not in STRATEGIES:
            raise UsageError(
                f"{where}: unknown strategy {text!r}; choose one of {', '.join(STRATEGIES)}"
            )
        return text
    if kind in ("positive", "int"):
        number = _integer(value)
        if number is None:
            raise UsageError(f"{bad} an integer, not {value!r}")
        if kind == "positive" and number < 1:
            raise UsageError(f"{bad} at least 1, not {number}")
        return number
    if kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off", ""):
            return False
        raise UsageError(f"{bad} true or false, not {value!r}")
    if kind == "names":
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
            raise UsageError(f"{bad} a list of strings, not {value!r}")
        names: list[str] = []
        for item in items:
            names += [part.strip() for part in item.replace("\n", ",").split(",") if part.strip()]
        return names
    if kind == "multiplier":
        try:
            factor = Fraction(str(value).strip())
        except (ValueError, ZeroDivisionError):
            raise UsageError(f"{bad} a positive number, not {value!r}") from None
        if factor <= 0 or isinstance(value, bool):
            raise UsageError(f"{bad} a positive number, not {value!r}")
        return factor
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{bad} a non-empty string, not {value!r}")
    return value.strip()


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


# ---------------------------------------------------------------- pyproject


def find_pyproject(start: str | os.PathLike[str]) -> Path | None:
    """The nearest ``pyproject.toml`` at ``start`` or above it (the project root's)."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


@dataclass
class ProjectFile:
    """``[tool.racecheck]`` of one pyproject.toml, validated."""

    path: Path | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)


def load_project(start: str | os.PathLike[str]) -> ProjectFile:
    path = find_pyproject(start)
    if path is None:
        return ProjectFile()
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    table = data.get("tool", {}).get("racecheck", {})
    where = f"{path} [tool.racecheck]"
    if not isinstance(table, dict):
        raise UsageError(f"{where} must be a table")
    project = ProjectFile(path=path)
    for name, value in table.items():
        if name == "profiles":
            if not isinstance(value, dict):
                raise UsageError(f"{where}: profiles must be a table of tables")
            for pname, options in value.items():
                if not isinstance(options, dict):
                    raise UsageError(f"{where}: profiles.{pname} must be a table")
                pwhere = f"{path} [tool.racecheck.profiles.{pname}]"
                project.profiles[pname] = {
                    key: parse(key, val, pwhere) for key, val in options.items()
                }
            continue
        project.settings[name] = parse(name, value, where)
    return project


# ------------------------------------------------------------------ layers


@dataclass
class Layers:
    """Every source of settings of one session, already validated."""

    command_line: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    #: ini options (pytest) over [tool.racecheck]
    project: dict[str, Any] = field(default_factory=dict)
    profile_name: str | None = None
    profile: dict[str, Any] = field(default_factory=dict)

    @property
    def multiplier(self) -> Fraction:
        factor = self.profile.get("schedules_multiplier", Fraction(1))
        return factor if isinstance(factor, Fraction) else Fraction(factor)

    def get(self, name: str, default: Any = None) -> Any:
        """A session-wide setting (report_dir, db, paths, ...) by precedence."""
        for layer in (self.command_line, self.environment, self.profile, self.project):
            if name in layer:
                return layer[name]
        return default

    def resolve(self, marker: Mapping[str, Any]) -> dict[str, Any]:
        """The options of one test or scenario variant, ``marker`` being its own."""
        options = dict(DEFAULTS)
        options.update(marker)
        for name in ("strategy", "schedules", "seed", "detect"):
            value = self.get(name)
            if value is not None:
                options[name] = value
        packages = [
            *options.get("trace_packages", ()),
            *self.project.get("trace_packages", ()),
            *self.profile.get("trace_packages", ()),
            *self.command_line.get("trace_packages", ()),
        ]
        if packages:
            options["trace_packages"] = list(dict.fromkeys(packages))
        if "schedules" not in self.command_line and self.multiplier != 1:
            budget = options["schedules"]
            if isinstance(budget, int) and not isinstance(budget, bool):
                options["schedules"] = max(1, int(budget * self.multiplier))
        return options


def environment_settings(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for var, name in ENVIRONMENT.items():
        value = env.get(var)
        if value is not None and value.strip():
            out[name] = parse(name, value, var)
    return out


def build_layers(
    *,
    command_line: Mapping[str, Any],
    project: ProjectFile,
    ini: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    profile: str | None = None,
    profile_flag: str = "--racecheck-profile",
) -> Layers:
    """Validate every source and pick the profile; ``command_line`` holds given options only."""
    env = os.environ if env is None else env
    layers = Layers(
        command_line=dict(command_line),
        environment=environment_settings(env),
        project={**project.settings, **(ini or {})},
    )
    name, where = profile, profile_flag
    if not name and env.get(PROFILE_ENV, "").strip():
        name, where = env[PROFILE_ENV].strip(), PROFILE_ENV
    if not name:
        name, where = layers.project.get("profile"), "the profile setting"
    if name:
        known = {**{k: dict(v) for k, v in BUILTIN_PROFILES.items()}}
        for pname, options in project.profiles.items():
            known[pname] = {**known.get(pname, {}), **options}
        if name not in known:
            raise UsageError(
                f"{where}: unknown profile {name!r}; known profiles: {', '.join(sorted(known))}"
            )
        layers.profile_name = name
        layers.profile = known[name]
    return layers


def describe(layers: Layers) -> str:
    """One line for a run's header: which profile is active and what it does."""
    if not layers.profile_name:
        return ""
    factor = layers.multiplier
    scale = f", schedules x{factor}" if factor != 1 else ""
    return f"racecheck profile: {layers.profile_name}{scale}"
