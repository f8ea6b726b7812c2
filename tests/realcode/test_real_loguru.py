"""loguru 0.7.2: removing handlers while another thread logs breaks its loop.

loguru's handlers are copy-on-write: ``_log`` iterates ``core.handlers.values()``
without a lock, and ``add``/``remove`` build a new dict under the logger's lock
(made at import, with the global ``logger``) and publish it. ``remove()`` of
several handlers copied once, published that copy after popping the first, and
went on popping from the dict it had just published: a thread logging at that
moment iterates a dict that shrinks under it and gets ``RuntimeError:
dictionary changed size during iteration`` (upstream Delgan/loguru issue 1183,
"RuntimeError when reinitializing logger"; fixed in 0.7.3, which copies the
dict for each handler it removes).
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

pytest.importorskip("loguru")

USER_TEST = """
import threading

import pytest
from loguru import logger


@pytest.mark.racecheck
def test_reconfiguring_the_logger_while_another_thread_logs():
    logger.remove()
    lines = []
    logger.add(lines.append, format="{message}")
    logger.add(lines.append, format="{message}")
    errors = []

    def work():
        try:
            logger.info("working")
        except RuntimeError as exc:
            errors.append(str(exc))

    def reconfigure():
        logger.remove()
        logger.add(lines.append, format="{message}")

    threads = [threading.Thread(target=work), threading.Thread(target=reconfigure)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    logger.remove()
    assert not errors, errors
"""


class TestLoguru(FailsItsUserTest, FlaggedByTheDetector):
    """What the detector sees on 0.7.2: ``remove()``'s ``pop`` on the dict it has
    published, unordered with the logging thread's loop over that dict. Until this
    round it reported the publication first (a dict changed before it was stored,
    and a loop blamed on a dict the logging thread never loaded), which 0.7.3 showed
    as a false alarm.
    """

    library = "loguru"
    module = "loguru"
    user_test = USER_TEST
    symptom = "dictionary changed size during iteration"
    finding = "data race"
    #: the loop and the ``pop`` (each named by whichever access the report ends on)
    finding_shows = (
        "called .pop() on",
        "_logger.py:1053",
        "called .values() on",
        "_logger.py:2031",
    )
