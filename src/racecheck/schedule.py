"""Schedules and their one-line tokens.

A schedule is the sequence of decisions a run took. Each decision is recorded
as ``(n, choice)``: how many actors were enabled and the index of the one that
ran, where index 0 is the runtime's natural order. Only points with a real
choice (``n > 1``) are recorded, so a schedule is short and an all-zero
schedule is the uncontrolled behaviour.

Keeping ``n`` next to every choice is what makes **divergence** detectable at
the exact step: if a replay reaches decision *i* with a different number of
enabled actors, the program took another path than the one recorded.

Token layout (never eval'd or unpickled)::

    rc1:<backend>:<granularity>:py<major><minor>:<label fingerprint>:<payload>

The payload is base64url(zlib(varints)); zlib's checksum rejects corruption.
"""

from __future__ import annotations

import base64
import hashlib
import sys
import zlib
from dataclasses import dataclass

from racecheck.errors import TokenError

FORMAT = "rc1"
BACKENDS = ("asyncio", "threads", "trio")
GRANULARITIES = ("task", "access", "line", "opcode")

Decision = tuple[int, int]  # (number of enabled actors, chosen index)


def python_tag() -> str:
    return f"py{sys.version_info.major}{sys.version_info.minor}"


def fingerprint(label: str) -> str:
    """A short, stable hash of the target's label (module:qualname or scenario[variant])."""
    return hashlib.blake2s(label.encode(), digest_size=4).hexdigest()


@dataclass(frozen=True)
class Schedule:
    backend: str
    granularity: str
    python: str
    target: str  # fingerprint of the label
    decisions: tuple[Decision, ...]

    @property
    def preemptions(self) -> int:
        """Deviations from the natural order: the size shrinking minimises."""
        return sum(1 for _, choice in self.decisions if choice)

    def encode(self) -> str:
        raw = bytearray()
        _put_varint(raw, len(self.decisions))
        for n, choice in self.decisions:
            _put_varint(raw, n)
            _put_varint(raw, choice)
        payload = base64.urlsafe_b64encode(zlib.compress(bytes(raw), 9)).decode().rstrip("=")
        return ":".join((FORMAT, self.backend, self.granularity, self.python, self.target, payload))

    @classmethod
    def decode(cls, token: str) -> Schedule:
        if not isinstance(token, str):
            raise TokenError(f"a schedule token is a string, not {type(token).__name__}")
        token = token.strip()
        parts = token.split(":")
        if len(parts) != 6 or parts[0] != FORMAT:
            if parts and parts[0].startswith("rc") and parts[0] != FORMAT:
                raise TokenError(
                    f"schedule token format {parts[0]!r} is not supported (want {FORMAT})"
                )
            raise TokenError(
                "malformed schedule token: expected"
                " rc1:<backend>:<granularity>:py<ver>:<target>:<data>"
            )
        _, backend, granularity, python, target, payload = parts
        if backend not in BACKENDS:
            raise TokenError(f"malformed schedule token: unknown backend {backend!r}")
        if granularity not in GRANULARITIES:
            raise TokenError(f"malformed schedule token: unknown granularity {granularity!r}")
        try:
            raw = zlib.decompress(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            pos, count = _get_varint(raw, 0)
            decisions = []
            for _ in range(count):
                pos, n = _get_varint(raw, pos)
                pos, choice = _get_varint(raw, pos)
                if not 0 <= choice < n:
                    raise ValueError("choice out of range")
                decisions.append((n, choice))
            if pos != len(raw):
                raise ValueError("trailing data")
        except (ValueError, zlib.error, IndexError) as exc:
            raise TokenError(f"malformed schedule token: corrupt data ({exc})") from None
        return cls(backend, granularity, python, target, tuple(decisions))

    def check_compatible(self, *, backend: str, label: str) -> None:
        """Refuse a token recorded for another target, backend or Python."""
        if self.backend != backend:
            raise TokenError(
                f"schedule token is for the {self.backend} backend; this target runs on {backend}"
            )
        if self.target != fingerprint(label):
            raise TokenError(
                f"schedule token was recorded for another target (fingerprint {self.target},"
                f" this is {fingerprint(label)} for {label})"
            )
        if self.python != python_tag():
            # Bytecode, line numbering and asyncio's callback order all differ
            # between minor versions, so a schedule means nothing elsewhere.
            raise TokenError(
                f"schedule token was recorded on {self.python}, this is {python_tag()}:"
                " schedules only replay on the Python minor version that recorded them"
            )


def token_label_matches(token: str, label: str) -> bool:
    """True when ``token`` was recorded for the target labelled ``label``."""
    return Schedule.decode(token).target == fingerprint(label)


def _put_varint(out: bytearray, value: int) -> None:
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def _get_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return pos, result
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")
