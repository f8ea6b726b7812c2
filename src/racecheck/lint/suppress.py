"""``# racecheck: ignore[RC101]`` comments, read with :mod:`tokenize`.

Comments are found with the tokenizer rather than a regular expression over
lines so that the text inside a string literal never counts as a comment.
A bare ``# racecheck: ignore`` silences every code on its line.
"""

from __future__ import annotations

import io
import re
import tokenize

#: every code on the line
ALL = frozenset({"*"})

_DIRECTIVE = re.compile(r"#\s*racecheck:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)


def suppressions(source: str) -> dict[int, frozenset[str]]:
    """Line number -> the codes ignored on it (:data:`ALL` for a bare ignore)."""
    found: dict[int, frozenset[str]] = {}
    if _DIRECTIVE.search(source) is None:
        # Tokenizing costs more than parsing; a file with no directive anywhere in
        # its text (most files) cannot have one in a comment.
        return found
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return found  # the parser reports the real problem
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        match = _DIRECTIVE.search(token.string)
        if match is None:
            continue
        listed = match.group("codes")
        if listed is None:
            codes = ALL
        else:
            codes = frozenset(c.strip().upper() for c in listed.split(",") if c.strip())
        line = token.start[0]
        found[line] = found.get(line, frozenset()) | codes
    return found


def is_suppressed(code: str, line: int, table: dict[int, frozenset[str]]) -> bool:
    codes = table.get(line)
    if not codes:
        return False
    return "*" in codes or any(code.startswith(c) for c in codes)
