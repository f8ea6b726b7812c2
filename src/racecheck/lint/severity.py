"""Which evidence may make an error: the held-out record, by evidence kind (issue 14).

Eighteen held-out rounds gave 122 true errors of 274 (45%), and each round's
fixes to the last round's false errors left the next round near 50%. lint20
classified every recorded error verdict of those rounds
(``tests/lint/data/heldout_verdicts.csv``) by the evidence the finding rested
on and, for the false ones, by why that evidence did not mean a race. 111 of
the 152 false errors are one of three causes no evidence kind short of a
counted resource sees: the package runs the method once per object or one at a
time (56), a lock, claim or merge the lint does not see excludes the second
task (33), or the interleaving happens and loses nothing (22). A spawn the
package shows says nothing about a claim between the spawn and the method
(14 of its 19 false errors were excluded that way); a fan-out in the module
mostly races harmlessly or over other objects.

Only one kind held up across rounds: **a counted resource** (RC102's check
compares a count with ``<``/``>`` and the act moves it by one: issue 14's
``if self.opened < self.max_size`` and ``if self.tokens > 0``), 6 of 6 over
five rounds and five packages. A bound on a count is written only where many
users are expected at once, and every racer's step is real, so neither "runs
once" nor "harmless" applies. Every other kind is a warning that names its
evidence and its record; the finding is still reported, and ``racecheck lint``
still exits 1 on it.
"""

from __future__ import annotations

from dataclasses import replace

from racecheck.lint.findings import Finding

#: evidence kind -> (true, errors) over the eighteen held-out rounds, each error
#: under the rules of its round (tests/lint/test_lint_severity_gate.py checks these
#: against the recorded verdicts)
HELD_OUT: dict[str, tuple[int, int]] = {
    "a counted resource": (6, 6),
    "a spawn the package shows": (11, 30),
    "a fan-out in the module": (8, 18),
    "the shape alone": (83, 138),
    "a class named as shared": (5, 10),
    "RC101, a write read back": (3, 39),
    "RC106, a thread started": (0, 12),
    "RC107, several loops": (6, 21),
}

#: what a held-back error's message ends with
GATE_NOTE = "(an error needs evidence that held up on held-out code: a counted resource)"

#: the evidence kinds that keep an error (at least 90% true on held-out code)
RELIABLE = frozenset({"a counted resource"})


def record(kind: str) -> str:
    """``held out, 11 of 30 such errors were true``."""
    true, total = HELD_OUT[kind]
    return f"held out, {true} of {total} errors resting on {kind} were true"


def demote(finding: Finding, kind: str, said: str = "") -> Finding:
    """The finding as a warning that names its evidence and that evidence's record.

    ``said`` is what the message already says about the evidence (a spawn's place);
    nothing is added to it but the record.
    """
    if finding.severity != "error" or kind in RELIABLE:
        return finding
    note = f" ({said})" if said else ""
    return replace(
        finding,
        severity="warning",
        message=f"{finding.message}{note}; a warning: {record(kind)} {GATE_NOTE}",
    )


def shape_severity(finding: Finding) -> str:
    """The severity the rules before this gate gave: an error the gate held back counts.

    The excuses before the gate (lifecycle steps, callers holding a lock, claims,
    evidence of concurrency) are tested by whether a shape still reaches an error;
    since lint20 such a shape reaches this gate and, unless its evidence is a
    counted resource, leaves it a warning. Tests of the excuses compare this.
    """
    if finding.severity == "error" or finding.message.endswith(GATE_NOTE):
        return "error"
    return finding.severity
