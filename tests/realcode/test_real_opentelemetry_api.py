"""opentelemetry-api 1.5.0: two threads can both install the global tracer provider.

``trace.set_tracer_provider(p)`` may install a provider once; a second call
is refused with the warning "Overriding of current TracerProvider is not
allowed". 1.5.0 checks ``if _TRACER_PROVIDER is not None`` and then assigns
the module global, nothing held in between: two threads setting up tracing
at once both pass the check and both install, and tracers already made
through the proxy keep the first thread's provider (upstream issue 2181,
"Race condition in set_tracer_provider()"). 1.6.0 installs through
``Once.do_once``: a fast-path read of ``_done``, then the check again under
the ``Once``'s lock, which is made when ``opentelemetry.trace`` is imported
(a lock racecheck adopts, not one made in the run).

The user test puts the global back to "not set yet" first, as a fresh
process would have it: racecheck runs the test body once per schedule.
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

pytest.importorskip("opentelemetry.trace")

USER_TEST = """
import logging
import threading

import pytest
from opentelemetry import trace


class Provider(trace.TracerProvider):
    def get_tracer(self, *args, **kwargs):
        raise NotImplementedError  # only which provider gets installed matters here


class Refusals(logging.Handler):
    def __init__(self):
        super().__init__()
        self.count = 0

    def emit(self, record):
        self.count += 1


@pytest.mark.racecheck
def test_two_threads_set_up_tracing_at_once():
    # as in a fresh process: no provider installed yet
    trace._TRACER_PROVIDER = None
    once = getattr(trace, "_TRACER_PROVIDER_SET_ONCE", None)  # 1.6.0 and later
    if once is not None:
        once._done = False
    refusals = Refusals()
    logger = logging.getLogger("opentelemetry.trace")
    logger.addHandler(refusals)
    try:
        workers = [
            threading.Thread(target=trace.set_tracer_provider, args=(Provider(),))
            for _ in range(2)
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        logger.removeHandler(refusals)
    assert refusals.count == 1, "two threads both installed the global tracer provider"
"""


class TestOpentelemetryApi(FailsItsUserTest, FlaggedByTheDetector):
    """What the detector sees: the check decides a store another thread's store beat.
    The fixed release re-checks the fast path under the Once's lock.
    """

    library = "opentelemetry-api"
    module = "opentelemetry"
    user_test = USER_TEST
    symptom = "two threads both installed the global tracer provider"
    finding = "lost update"
    finding_shows = ("global _TRACER_PROVIDER", "__init__.py:473", "__init__.py:477")
