"""Twelfth held-out round (issue 14, lintprec6): 45 packages, 3 errors.

Read after the rules were frozen (docs/lint.md, "Twelfth held-out round").
The one error whose stated evidence was wrong: twitchio's paginator
(``HTTPAsyncIterator._call_next``) counts down the results it may still
yield (``if self._max_results <= 0: raise StopAsyncIteration`` ...
``self._max_results -= 1``), and the counted-resource evidence called that
"shared by design". An object that is its own async iterator (it defines
``__anext__``) is consumed by one ``async for``; a count it keeps is that
consumer's progress, not a resource tasks share. Two tasks pulling one
iterator is misuse (async generators refuse it outright), which the
eleventh round's cut makes a warning. Each snippet sits next to the partner
that stays an error.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from racecheck.lint import lint_paths

_PAGINATOR = """
class Paginator:
    def __aiter__(self):
        return self

    async def __anext__(self):
        if not self._buffer:
            await self._call_next()
        return self._buffer.popleft()

    async def _call_next(self):
        if self._remaining <= 0:
            raise StopAsyncIteration
        page = await self._http.get(self._route)
        for item in page:
            self._remaining -= 1
            self._buffer.append(item)
"""


def count_findings(root: Path, source: str) -> list[tuple[int, str, str, str]]:
    """The findings on the count's check (line 12); the buffer's check in
    ``__anext__`` is a lazy fill judged as before."""
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "client.py").write_text(textwrap.dedent(source))
    return [(f.line, f.code, f.severity, f.message) for f in lint_paths([pkg]) if f.line == 12]


def test_a_count_kept_by_an_async_iterator_is_its_consumers_progress(tmp_path: Path) -> None:
    ((line, code, severity, message),) = count_findings(tmp_path, _PAGINATOR)
    assert (line, code, severity) == (12, "RC102", "warning")
    assert "counted resource" not in message
    assert "nothing in the package runs _call_next() in two tasks" in message


def test_the_same_count_in_an_object_that_is_only_iterable_stays_an_error(
    tmp_path: Path,
) -> None:
    # `__aiter__` hands out a fresh iterator each time: the object itself is no
    # one consumer's, and the count bounds what every caller takes from it
    iterable = _PAGINATOR.replace("return self\n", "return iter_pages(self)\n").replace(
        "async def __anext__(self):", "async def next_item(self):"
    )
    ((line, code, severity, message),) = count_findings(tmp_path, iterable)
    assert (line, code, severity) == (12, "RC102", "error")
    assert "a counted resource" in message


def test_an_async_iterator_named_shared_by_design_is_a_warning_that_says_so(
    tmp_path: Path,
) -> None:
    # a queue that several consumers drain with `async for`: its name says it is
    # shared, but since lintprec10 a class name alone makes no error (2 true of 6
    # such errors on the 429 packages of the held-out rounds)
    queue = _PAGINATOR.replace("class Paginator:", "class WorkQueue:")
    ((line, code, severity, message),) = count_findings(tmp_path, queue)
    assert (line, code, severity) == (12, "RC102", "warning")
    assert "`WorkQueue` is named as shared by design" in message
