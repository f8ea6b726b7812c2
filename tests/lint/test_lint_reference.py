"""The lint on racecheck's reference components: buggy and as-proposed flagged, correct quiet.

Each reference module keeps its variants side by side, so findings are mapped
to the top-level class or function whose lines contain them. The expected
matrix is exact: a new finding anywhere in these files fails the test, so a
false positive on a correct variant (or on the shared, correct scaffolding) is
caught as well as a missed bug.

Two variants are not static shapes, and the matrix says so instead of faking a
rule for them:

* executor ``Executor`` (buggy): the executor runs handlers without holding
  anything, so two sources' deliveries overlap *inside* the collector handler.
  Nothing in ``Executor`` itself is racy; the race is a property of how the
  framework schedules handlers. What *is* static is the handler's own shape:
  the collector keeps the pending request in a closure dict across its await,
  and RC101 flags that in ``build_workflow``.
* changeset ``PlanExecutionContextLocked`` (as proposed): its real defect is
  semantic ("the most recent changeset" means whichever thread started last).
  RC105 catches its visible symptom: ``[-1]`` is read under the lock and the
  changeset is recorded into after the lock is released.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import racecheck.reference
from racecheck.lint import lint_paths

REFERENCE = Path(racecheck.reference.__file__).parent

#: module -> {top-level class or function: codes reported inside it}; absent = none
EXPECTED: dict[str, dict[str, set[str]]] = {
    "runtime.py": {"RealRuntime": {"RC101"}},  # RealRuntimeFixed: none
    "workflow.py": {
        "WorkflowExecutor": {"RC104"},
        "IsolatedContextWorkflowExecutor": {"RC104"},  # CorrectWorkflowExecutor: none
    },
    "executor.py": {
        "EagerLockExecutor": {"RC107"},
        "InProcRunnerContext": {"RC107"},
        # Executor (buggy) is dynamic: see the module docstring. Its handler is not:
        "build_workflow": {"RC101"},
        # LoopScopedLockExecutor, LoopScopedRunnerContext: none
    },
    "changeset.py": {
        "PlanExecutionContext": {"RC105"},
        "PlanExecutionContextLocked": {"RC105"},  # PlanExecutionContextFixed: none
    },
    "bridge.py": {
        "RxPyLangGraphBridge": {"RC105", "RC106"},
        "RxPyLangGraphBridgeAsyncioLock": {"RC105", "RC106"},  # RxPyLangGraphBridgeFixed: none
    },
}

#: the variants that must stay quiet
CORRECT = {
    "runtime.py": "RealRuntimeFixed",
    "workflow.py": "CorrectWorkflowExecutor",
    "executor.py": "LoopScopedLockExecutor",
    "changeset.py": "PlanExecutionContextFixed",
    "bridge.py": "RxPyLangGraphBridgeFixed",
}


def _containers(path: Path) -> list[tuple[str, int, int]]:
    tree = ast.parse(path.read_text())
    return [
        (node.name, node.lineno, node.end_lineno or node.lineno)
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _matrix(name: str) -> dict[str, set[str]]:
    path = REFERENCE / name
    containers = _containers(path)
    found: dict[str, set[str]] = {}
    for finding in lint_paths([path]):
        owner = next(
            (c for c, first, last in containers if first <= finding.line <= last), "<module>"
        )
        found.setdefault(owner, set()).add(finding.code)
    return found


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reference_matrix(name: str) -> None:
    assert _matrix(name) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_variant_is_quiet(name: str) -> None:
    assert CORRECT[name] not in _matrix(name)
    assert CORRECT[name] in {c for c, _, _ in _containers(REFERENCE / name)}
