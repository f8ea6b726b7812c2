"""aws-lambda-powertools 3.31.0: two failures from two threads do not open the circuit.

The circuit breaker (``utilities.circuit_breaker_alpha``) counts a circuit's
consecutive failures in a module-level dict, ``_LOCAL_FAILURES``, and trips
the circuit open when the count reaches ``failure_threshold``. The increment
was a plain read-modify-write: two threads whose calls fail at once both read
0 and both store 1, and a threshold of 2 is never reached (upstream
aws-powertools/powertools-lambda-python issue 8320, "the in-memory failure
counter's increment isn't atomic", fixed by PR 8323 in 3.31.1, which takes
``_COUNTERS_LOCK`` around every counter update and makes the persistence
layer's ``configure`` thread-safe).

The user's test keeps the circuit's state in an in-memory persistence layer
(the three store methods), as a test would instead of DynamoDB, and names a
new circuit in each run: the counters are module globals keyed by name.

This library found two racecheck bugs (docs/realcode.md, items 11 and 12):
the buggy release's token, replayed on 3.31.1, left its lock held and was
reported as a deadlock (fixed); and the fixed release under the detector was a
false "overwritten before read" of two equal settings: ``configure`` stores a
``NamedTuple`` of the circuit's settings under the layer's lock at every call, and
each thread reads back an equal one the other stored (fixed: an equal immutable
value is the reader's own, ``tests/detect/test_detector_equal_values.py``).
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

pytest.importorskip("aws_lambda_powertools")

USER_TEST = """
import threading
import uuid

import pytest
from aws_lambda_powertools.utilities.circuit_breaker_alpha import (
    CircuitBreakerConfig,
    CircuitState,
    circuit_breaker,
)
from aws_lambda_powertools.utilities.circuit_breaker_alpha.persistence.base import (
    CircuitBreakerPersistenceLayer,
)


class InMemoryStore(CircuitBreakerPersistenceLayer):
    def __init__(self):
        super().__init__()
        self.records = {}

    def _get_record(self, name):
        return self.records.get(name)

    def _put_record(self, record, condition=None, expected_opened_at=None):
        self.records[record.name] = record

    def _update_record(self, record):
        self.records[record.name] = record


@pytest.mark.racecheck
def test_two_failures_from_two_threads_trip_a_threshold_of_two():
    store = InMemoryStore()
    name = f"payments-{uuid.uuid4().hex}"  # a circuit of its own: no failures counted yet
    config = CircuitBreakerConfig(failure_threshold=2)

    @circuit_breaker(name=name, persistence_store=store, config=config)
    def charge():
        raise ConnectionError("payment backend down")

    def call():
        with pytest.raises(ConnectionError):
            charge()

    workers = [threading.Thread(target=call) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert store.get_state(name).state == CircuitState.OPEN, "two failures did not open the circuit"
"""


class TestAwsLambdaPowertools(FailsItsUserTest, FlaggedByTheDetector):
    """What the detector reports first on 3.31.0 is the other half of the same fix:
    both threads' ``configure`` writing the persistence layer's ``circuit_name``
    with no lock."""

    library = "aws-lambda-powertools"
    module = "aws_lambda_powertools"
    user_test = USER_TEST
    symptom = "two failures did not open the circuit"
    finding = "data race"
    finding_shows = ("data race on self.circuit_name", "at base.py:75")
