"""Make user strings safe to print on a terminal.

Scenario, variant, task and thread names, descriptions, exception messages and
source lines all come from the code under test. Printed raw, an ESC sequence
in one clears the screen or retitles the window (OSC), a carriage return
overwrites the line, a C1 control or NUL confuses the terminal, a bidi override
reorders what the reader sees, and a lone surrogate cannot be encoded at all
(``UnicodeEncodeError`` in the middle of a report). So every front end passes
what it prints through :func:`terminal_safe`, which spells such characters the
way Python's ``repr`` does (``\\x1b``, ``\\x9b``, ``\\ud800``, ``\\u202e``): the
reader still sees what was there, and the terminal interprets none of it.
"""

from __future__ import annotations

import re

#: C0 controls but newline, DEL and C1 controls, lone surrogates, and the
#: bidirectional formatting characters (the "Trojan source" set)
_UNSAFE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
_UNSAFE_ONE_LINE = re.compile(
    "[\x00-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _spell(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char == "\t":
        return "\\t"
    if char == "\r":
        return "\\r"
    if char == "\n":
        return "\\n"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: object, *, one_line: bool = False) -> str:
    """``text`` with every control character escaped; newlines kept unless ``one_line``."""
    if not isinstance(text, str):
        text = safe_str(text)
    pattern = _UNSAFE_ONE_LINE if one_line else _UNSAFE
    return pattern.sub(_spell, text)


def safe_str(value: object) -> str:
    """``str(value)`` that never raises.

    An exception raised by the code under test may have a ``__str__`` that
    itself raises; that must not turn a found race into an error of racecheck's.
    """
    try:
        text = str(value)
    except BaseException as exc:  # any failure of user code
        if isinstance(exc, KeyboardInterrupt):
            raise
        return f"<{type(value).__name__} object; str() raised {type(exc).__name__}>"
    if not isinstance(text, str):  # a str subclass is fine; anything else is not
        return f"<{type(value).__name__} object>"
    return text
