"""The worker process of ``isolate="process"`` (see :mod:`racecheck.stress.process`).

``python -m racecheck.stress.worker CONFIG_JSON``: import the target, run the
in-process campaign, and write one JSON line per run to the file descriptor
the parent passed. Leaves with ``os._exit``: threads a hung run left behind
must not keep the process alive, and the parent starts a fresh worker.
"""

from __future__ import annotations

import faulthandler
import inspect
import json
import os
import sys
from typing import Any


def main(argv: list[str]) -> None:
    config = json.loads(argv[1])
    sys.path[:] = config["sys_path"]
    out = os.fdopen(config["fd"], "w", buffering=1, encoding="utf-8")

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    from racecheck.errors import one_line
    from racecheck.stress.process import TargetRef, resolve
    from racecheck.stress.runner import Campaign

    try:
        target = resolve(TargetRef(**config["ref"]))
    except BaseException as exc:  # the parent reports it as one line
        send({"error": f"cannot load the target in a worker process: {one_line(exc)}"})
        os._exit(3)
    is_async = inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004
    )
    campaign = Campaign(
        target,
        is_async=is_async,
        runs=config["runs"],
        parallel=config["parallel"],
        timeout=config["timeout"],
        seed=config["seed"],
        label=config["label"],
    )
    campaign.stop_after_hang = True
    dump_after = float(config["dump_after"])

    def on_run(hung: bool, failures: list[dict[str, Any]]) -> None:
        send({"hung": hung, "failures": failures})
        # armed again for the next run: its C watchdog needs no GIL
        faulthandler.dump_traceback_later(dump_after, exit=True, file=sys.stderr)

    campaign.on_run = on_run
    # a crash in C (a segfault in an extension) leaves its stack for the parent
    faulthandler.enable(file=sys.stderr, all_threads=True)
    faulthandler.dump_traceback_later(dump_after, exit=True, file=sys.stderr)
    report = campaign.run()
    faulthandler.cancel_dump_traceback_later()
    send({"done": True, "notes": report.notes})
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
