"""Reference components: small, self-contained re-creations of five reported races.

Each module keeps the upstream project's shape (class names, method names, call
order, awaits and data structures where they matter to the race) and puts the
buggy, as-proposed and correct variants side by side, so the difference
between them is the whole story. Agents and steps are scripted: no model, no
network. The scenarios in ``scenarios/`` drive them and assert the invariants.

- :mod:`~racecheck.reference.runtime`: marsys #40, ``RealRuntime`` validates a
  parallel branch against a sibling's agent (``_current_instance`` across an
  await).
- :mod:`~racecheck.reference.executor`: agent-framework PR #6776, an executor
  handling two sources' messages at once; an eager ``asyncio.Lock`` (and event
  queue) that breaks reuse across ``asyncio.run`` calls.
- :mod:`~racecheck.reference.workflow`: AutoBot #2204, steps of a parallel group
  sharing one execution context; the upstream isolated-context fix and its
  regressions (``KeyError: 'workflow_id'``, a lost PAUSE).
- :mod:`~racecheck.reference.changeset`: cleveragents #7120, ``record_change``
  racing ``start_changeset`` across threads.
- :mod:`~racecheck.reference.bridge`: cleveragents #7105, an ``_active_tasks`` set
  shared between worker threads and the event loop.
"""
