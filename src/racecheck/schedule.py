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
import binascii
import hashlib
import re
import sys
import zlib
from dataclasses import dataclass

from racecheck.errors import TokenError

FORMAT = "rc1"
BACKENDS = ("asyncio", "threads", "trio")
GRANULARITIES = ("task", "access", "line", "opcode")

Decision = tuple[int, int]  # (number of enabled actors, chosen index)

#: The longest token accepted, in characters. A schedule of 100,000 decisions
#: (the default ``max_steps``) with varied choices encodes to well under 200 KB;
#: anything longer is refused before any decoding work.
MAX_TOKEN_CHARS = 512 * 1024
#: The most bytes a payload may inflate to: a zlib bomb stops here.
MAX_RAW_BYTES = 4 * 1024 * 1024
_ALPHABET = re.compile(r"[A-Za-z0-9_-]+")
_PYTHON = re.compile(r"py[0-9]{2,4}")
_TARGET = re.compile(r"[0-9a-f]{1,64}")
#: the last tokens decoded (see Schedule.decode); a handful bounds the memory
_DECODED: dict[str, Schedule] = {}
_CACHE_SIZE = 4


def python_tag() -> str:
    return f"py{sys.version_info.major}{sys.version_info.minor}"


def fingerprint(label: str) -> str:
    """A short, stable hash of the target's label (module:qualname or scenario[variant])."""
    # surrogatepass: a label may carry a lone surrogate (a name decoded with
    # surrogateescape, or a hostile string); it still needs a stable hash.
    return hashlib.blake2s(label.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


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
        """Parse ``token``; a :class:`TokenError` for anything malformed.

        A front end asks for the same token several times (to find the variant
        it was recorded for, then to replay it), so the last few decoded tokens
        are kept: a command decodes its token once.
        """
        if not isinstance(token, str):
            raise TokenError(f"a schedule token is a string, not {type(token).__name__}")
        if len(token) > MAX_TOKEN_CHARS + 64:  # before strip(), which copies
            raise TokenError(_too_long(len(token)))
        token = token.strip()
        cached = _DECODED.get(token)
        if cached is not None:
            return cached
        schedule = _decode_uncached(token)
        if len(_DECODED) >= _CACHE_SIZE:
            _DECODED.pop(next(iter(_DECODED)))
        _DECODED[token] = schedule
        return schedule

    def check_compatible(self, *, backend: str, label: str, granularity: str | None = None) -> None:
        """Refuse a token recorded for another target, backend, granularity or Python."""
        if self.backend != backend:
            raise TokenError(
                f"schedule token is for the {self.backend} backend; this target runs on {backend}"
            )
        if granularity is not None and self.granularity != granularity:
            # The scheduling points differ, so the decisions mean other things.
            raise TokenError(
                f"schedule token was recorded with granularity={self.granularity!r}; this replay"
                f" uses {granularity!r} (pass granularity={self.granularity!r})"
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


def _too_long(length: int) -> str:
    return (
        f"malformed schedule token: {length} characters, more than the"
        f" {MAX_TOKEN_CHARS} a schedule token can have"
    )


def _decode_uncached(token: str) -> Schedule:
    """The decoder proper. Every step is bounded before it allocates.

    The length is capped, the payload must be pure base64url, inflation stops
    at :data:`MAX_RAW_BYTES`, and the decision count is checked against the
    bytes that are left before a single decision is built.
    """
    if len(token) > MAX_TOKEN_CHARS:
        raise TokenError(_too_long(len(token)))
    parts = token.split(":", 6)  # bounded: a token of colons makes no huge list
    if len(parts) != 6 or parts[0] != FORMAT:
        if parts and parts[0].startswith("rc") and parts[0] != FORMAT and len(parts[0]) < 8:
            raise TokenError(f"schedule token format {parts[0]!r} is not supported (want {FORMAT})")
        raise TokenError(
            "malformed schedule token: expected rc1:<backend>:<granularity>:py<ver>:<target>:<data>"
        )
    _, backend, granularity, python, target, payload = parts
    if backend not in BACKENDS:
        raise TokenError(f"malformed schedule token: unknown backend {backend[:40]!r}")
    if granularity not in GRANULARITIES:
        raise TokenError(f"malformed schedule token: unknown granularity {granularity[:40]!r}")
    if not _PYTHON.fullmatch(python):
        raise TokenError(f"malformed schedule token: bad Python version {python[:40]!r}")
    if not _TARGET.fullmatch(target):
        raise TokenError(f"malformed schedule token: bad target fingerprint {target[:40]!r}")
    if not _ALPHABET.fullmatch(payload):
        bad = next((c for c in payload if not _ALPHABET.fullmatch(c)), "")
        raise TokenError(
            f"malformed schedule token: {bad!r} is not a base64url character"
            if bad
            else "malformed schedule token: no data"
        )
    try:
        compressed = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(compressed, MAX_RAW_BYTES + 1)
        if len(raw) > MAX_RAW_BYTES or inflater.unconsumed_tail:
            raise ValueError(f"it inflates to more than {MAX_RAW_BYTES} bytes")
        raw += inflater.flush()
        if not inflater.eof:
            raise ValueError("the data is truncated")
        if inflater.unused_data:
            raise ValueError(f"{len(inflater.unused_data)} stray bytes after the data")
        pos, count = _get_varint(raw, 0)
        # every decision takes at least two bytes: refuse a count the data cannot hold
        if count > (len(raw) - pos) // 2:
            raise ValueError(f"it claims {count} decisions in {len(raw) - pos} bytes")
        decisions: list[Decision] = []
        shared: dict[Decision, Decision] = {}  # most decisions repeat: keep one tuple each
        for _ in range(count):
            pos, n = _get_varint(raw, pos)
            pos, choice = _get_varint(raw, pos)
            if not 0 <= choice < n:
                raise ValueError("choice out of range")
            pair = (n, choice)
            decisions.append(shared.setdefault(pair, pair))
        if pos != len(raw):
            raise ValueError(f"{len(raw) - pos} bytes after the last decision")
    except (ValueError, zlib.error, IndexError, binascii.Error) as exc:
        raise TokenError(f"malformed schedule token: corrupt data ({exc})") from None
    return Schedule(backend, granularity, python, target, tuple(decisions))


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
