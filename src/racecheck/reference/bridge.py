"""Reference component for cleveragents #7105: an Rx stream bridged onto an asyncio loop.

``RxPyLangGraphBridge`` connects a reactive stream to graph runs on an event
loop. The stream's ``flat_map`` calls ``create_future_task`` on a *worker pool
thread*; the graph runs as a task on an event loop that runs in *its own
thread*. The bridge remembers in-flight tasks in ``_active_tasks`` (a plain
``set``): the pool thread adds, a done-callback on the loop thread discards,
and ``cleanup_tasks`` / ``cleanup_tasks_async`` cancel what is left at
shutdown. Three threads touch one set, and none of the set operations is the
real problem -- each ``add``/``discard`` is atomic under the GIL -- the
problems are the *compound* operations around it:

* ``cleanup_tasks`` iterates the live set with a Python ``for`` loop while a
  pool thread adds or the loop thread discards: ``RuntimeError: Set changed
  size during iteration``, and whatever was not yet cancelled stays running.
* ``cleanup_tasks_async`` snapshots the set, awaits the snapshot, takes the
  difference for "late" tasks and then ``clear()``\\ s. A task a pool thread
  adds after the difference is dropped from tracking without being cancelled
  or awaited: cleanup returns while graph runs it never saw keep going.
* ``asyncio.ensure_future`` on a pool thread calls ``loop.call_soon`` from the
  wrong thread. asyncio's loop is not thread-safe: the handle lands in the
  ready queue without waking the loop (``call_soon_threadsafe`` writes to the
  loop's self-pipe; ``call_soon`` does not), so an idle loop can sleep on a
  task that is ready, and in debug mode asyncio raises outright.

The issue also predicts *leaked* tasks (a lost ``add``/``discard``). Under the
GIL each set operation is atomic, and the done-callback is registered after
the ``add``, so every discard runs after its add: with the loop kept awake,
nothing leaks in these workloads. The invariant is checked anyway (after every
workload) and holds for all three bridges.

Three bridges, side by side; the diff between them is the whole story.

``RxPyLangGraphBridge`` (buggy, as reported)
    The code the issue quotes.

``RxPyLangGraphBridgeAsyncioLock`` (as proposed: "add asyncio.Lock synchronization")
    An ``asyncio.Lock`` can only be awaited by a coroutine on its own loop. The
    pool thread and the sync ``cleanup_tasks`` cannot take it, so ``add`` and
    ``discard`` become small coroutines scheduled onto the loop, and the async
    cleanup holds the lock while it works. The lock serialises loop-side code
    that was already serial, and guards nothing across threads: the sync
    cleanup still iterates a set the loop thread mutates, and an ``add`` that
    queued behind the cleanup's lock runs *after* the cleanup cleared the set,
    so cleanup still misses tasks created while it runs. The pool thread still
    calls ``ensure_future`` off-loop.

``RxPyLangGraphBridgeFixed`` (correct)
    Everything that touches the loop happens on the loop: ``create_future_task``
    hands creation to the loop thread with ``loop.call_soon_threadsafe`` and
    returns a thread-safe ``concurrent.futures.Future`` to the pool thread. The
    set is only mutated under a ``threading.Lock`` (the sync cleanup may run on
    any thread), and a ``_closing`` flag, set under the same lock, makes "create
    a task" and "cleanup has started" mutually ordered: a task either exists in
    the set when cleanup snapshots it, or is never created. Cleanup snapshots
    under the lock and repeats until nothing is left, so it cancels *and*
    awaits every task.

The stream side is a tiny Rx of our own (``Subject``, ``flat_map``,
``WorkerPool`` on plain ``threading.Thread``\\ s and a ``queue.Queue``), with
RxPY's shape but none of its code. Unlike RxPY an inner error does not end the
stream, so every message is accounted for. No ``ThreadPoolExecutor``: its
module-level lock would predate racecheck's patching of ``threading``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import queue
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

__all__ = [
    "GRAPH_LATENCY",
    "VARIANTS",
    "Observable",
    "Observer",
    "RxPyLangGraphBridge",
    "RxPyLangGraphBridgeAsyncioLock",
    "RxPyLangGraphBridgeFixed",
    "StreamMessage",
    "Subject",
    "WorkerPool",
    "async_cleanup_shutdown",
    "flat_map",
    "stream",
    "sync_cleanup_shutdown",
]

T = TypeVar("T")
R = TypeVar("R")
T_co = TypeVar("T_co", covariant=True)

#: seconds a graph run "takes" (the model call); virtual under racecheck
GRAPH_LATENCY = 0.001


# --- a tiny Rx ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Observer(Generic[T]):
    on_next: Callable[[T], None]
    on_error: Callable[[BaseException], None]


class Observable(Generic[T]):
    def __init__(self, subscribe: Callable[[Observer[T]], None]) -> None:
        self._subscribe = subscribe

    def subscribe(self, observer: Observer[T]) -> None:
        self._subscribe(observer)

    def pipe(self, *operators: Callable[[Observable[Any]], Observable[Any]]) -> Observable[Any]:
        result: Observable[Any] = self
        for operator in operators:
            result = operator(result)
        return result


class Subject(Observable[T]):
    """A hot source: ``on_next`` pushes a value to every subscriber."""

    def __init__(self) -> None:
        self._observers: list[Observer[T]] = []
        super().__init__(self._observers.append)

    def on_next(self, value: T) -> None:
        for observer in list(self._observers):
            observer.on_next(value)


class WorkerPool:
    """A fixed pool of plain threads fed by a ``queue.Queue`` (Rx's thread-pool scheduler)."""

    def __init__(self, workers: int, name: str = "rx-pool") -> None:
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}") for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def shutdown(self) -> None:
        """Finish queued jobs, then stop and join every worker."""
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()


class FutureLike(Protocol[T_co]):
    """What ``flat_map`` needs of an inner result: an asyncio or concurrent future."""

    def add_done_callback(self, fn: Callable[[Any], object], /) -> None: ...


def _forward(observer: Observer[Any], future: Any) -> None:
    if future.cancelled():
        observer.on_error(asyncio.CancelledError())
    elif (exc := future.exception()) is not None:
        observer.on_error(exc)
    else:
        observer.on_next(future.result())


def flat_map(
    mapper: Callable[[T], FutureLike[R]], pool: WorkerPool
) -> Callable[[Observable[T]], Observable[R]]:
    """Map each value to a future on a pool thread; emit its outcome when it is done."""

    def operator(source: Observable[T]) -> Observable[R]:
        def subscribe(observer: Observer[R]) -> None:
            def map_one(value: T) -> None:
                try:
                    future = mapper(value)
                except Exception as exc:
                    observer.on_error(exc)
                    return
                future.add_done_callback(functools.partial(_forward, observer))

            source.subscribe(
                Observer(
                    lambda value: pool.submit(functools.partial(map_one, value)), observer.on_error
                )
            )

        return Observable(subscribe)

    return operator


# --- the bridge ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StreamMessage:
    msg_id: int
    payload: str


class _BridgeBase:
    """What the three bridges share: the loop, the graph and the pipeline."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._active_tasks: set[asyncio.Task[Any]] = set()

    async def execute_graph(self, msg: StreamMessage) -> StreamMessage:
        """Stands in for a LangGraph run: one model call, then the answer."""
        await asyncio.sleep(GRAPH_LATENCY)
        return StreamMessage(msg.msg_id, f"{msg.payload}: done")

    def create_future_task(self, msg: StreamMessage) -> FutureLike[StreamMessage]:
        raise NotImplementedError

    def create_pipeline(
        self, source: Observable[StreamMessage], pool: WorkerPool
    ) -> Observable[StreamMessage]:
        return source.pipe(flat_map(self.create_future_task, pool))

    def cleanup_tasks(self) -> None:
        raise NotImplementedError

    async def cleanup_tasks_async(self) -> None:
        raise NotImplementedError

    @property
    def active_task_count(self) -> int:
        return len(self._active_tasks)


class RxPyLangGraphBridge(_BridgeBase):
    """Buggy, as reported."""

    def create_future_task(self, msg: StreamMessage) -> asyncio.Future[StreamMessage]:
        # Runs on a pool thread: ensure_future touches the loop from the wrong thread.
        task: asyncio.Future[StreamMessage] = asyncio.ensure_future(
            self.execute_graph(msg), loop=self._loop
        )
        self._active_tasks.add(cast(asyncio.Task[Any], task))
        task.add_done_callback(lambda t: self._active_tasks.discard(cast(asyncio.Task[Any], t)))
        return task

    def cleanup_tasks(self) -> None:
        # Iterates the live set: a concurrent add/discard raises "Set changed size".
        for task in self._active_tasks:
            if not task.done():
                task.cancel()
        self._active_tasks.clear()

    async def cleanup_tasks_async(self) -> None:
        tasks = list(self._active_tasks)
        for task in tasks:
            if not task.done():
                task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        late_tasks = self._active_tasks - set(tasks)
        for task in late_tasks:
            if not task.done():
                task.cancel()
        # A task added after the difference above is forgotten here, never cancelled.
        self._active_tasks.clear()


class RxPyLangGraphBridgeAsyncioLock(_BridgeBase):
    """As proposed: an ``asyncio.Lock``, which only coroutines on the loop can take."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self._tasks_lock = asyncio.Lock()

    async def _add_task(self, task: asyncio.Task[Any]) -> None:
        async with self._tasks_lock:
            self._active_tasks.add(task)

    async def _remove_task(self, task: asyncio.Task[Any]) -> None:
        async with self._tasks_lock:
            self._active_tasks.discard(task)

    def create_future_task(self, msg: StreamMessage) -> asyncio.Future[StreamMessage]:
        task: asyncio.Future[StreamMessage] = asyncio.ensure_future(
            self.execute_graph(msg), loop=self._loop
        )
        # A pool thread cannot await the lock: queue the add onto the loop instead.
        asyncio.ensure_future(  # noqa: RUF006 -- fire-and-forget, as a quick fix would write it
            self._add_task(cast(asyncio.Task[Any], task)), loop=self._loop
        )
        task.add_done_callback(
            lambda t: self._loop.create_task(self._remove_task(cast(asyncio.Task[Any], t)))
        )
        return task

    def cleanup_tasks(self) -> None:
        # Sync code cannot take an asyncio.Lock either: still iterates the live set.
        for task in self._active_tasks:
            if not task.done():
                task.cancel()
        self._active_tasks.clear()

    async def cleanup_tasks_async(self) -> None:
        async with self._tasks_lock:
            tasks = list(self._active_tasks)
            for task in tasks:
                if not task.done():
                    task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            late_tasks = self._active_tasks - set(tasks)
            for task in late_tasks:
                if not task.done():
                    task.cancel()
            # Adds queued behind this lock run after the clear: their tasks are never cancelled.
            self._active_tasks.clear()


class RxPyLangGraphBridgeFixed(_BridgeBase):
    """Correct: tasks are created, tracked and cancelled on the loop thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self._tasks_lock = threading.Lock()
        self._closing = False

    def create_future_task(self, msg: StreamMessage) -> concurrent.futures.Future[StreamMessage]:
        # Runs on a pool thread: hand creation to the loop, give the pool a thread-safe future.
        result: concurrent.futures.Future[StreamMessage] = concurrent.futures.Future()
        self._loop.call_soon_threadsafe(self._spawn, msg, result)
        return result

    def _spawn(self, msg: StreamMessage, result: concurrent.futures.Future[StreamMessage]) -> None:
        """Runs on the loop thread. Create-and-track is atomic against cleanup's start."""
        with self._tasks_lock:
            if self._closing:
                result.cancel()
                return
            task = self._loop.create_task(self.execute_graph(msg))
            self._active_tasks.add(task)
        task.add_done_callback(functools.partial(self._task_done, result))

    def _task_done(
        self, result: concurrent.futures.Future[StreamMessage], task: asyncio.Task[StreamMessage]
    ) -> None:
        with self._tasks_lock:
            self._active_tasks.discard(task)
        if task.cancelled():
            result.cancel()
        elif (exc := task.exception()) is not None:
            result.set_exception(exc)
        else:
            result.set_result(task.result())

    def cleanup_tasks(self) -> None:
        """Cancel every task; safe from any thread (the cancels run on the loop)."""
        with self._tasks_lock:
            self._closing = True
            tasks = list(self._active_tasks)
        for task in tasks:
            self._loop.call_soon_threadsafe(task.cancel)

    async def cleanup_tasks_async(self) -> None:
        """Cancel and await every task, including any created while this runs."""
        with self._tasks_lock:
            self._closing = True
        while True:
            with self._tasks_lock:
                tasks = [task for task in self._active_tasks if not task.done()]
            if not tasks:
                return
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def active_task_count(self) -> int:
        with self._tasks_lock:
            return len(self._active_tasks)


#: variant name -> bridge class
VARIANTS: dict[str, type[_BridgeBase]] = {
    "buggy": RxPyLangGraphBridge,
    "as_proposed": RxPyLangGraphBridgeAsyncioLock,
    "correct": RxPyLangGraphBridgeFixed,
}

# --- the workloads ------------------------------------------------------------------------

INVARIANT_NO_SET_CHANGED = 'cleanup never fails with "Set changed size during iteration"'
INVARIANT_NO_LEAK = "after all messages complete, _active_tasks is empty (no leaked task)"
INVARIANT_CLEANUP_ALL = "cleanup cancels or awaits every task, including ones created while it runs"
INVARIANT_ALL_COMPLETE = "every message completes (with a result or cancelled)"


@contextmanager
def _event_loop_thread() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running in its own thread, stopped and joined on exit."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="event-loop")
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def _on_loop(loop: asyncio.AbstractEventLoop, coro: Awaitable[T]) -> T:
    """Run a coroutine on the loop thread and wait for it (from another thread)."""
    return asyncio.run_coroutine_threadsafe(cast(Any, coro), loop).result()


def _is_graph_run(task: asyncio.Task[Any]) -> bool:
    return getattr(task.get_coro(), "__qualname__", "") == "_BridgeBase.execute_graph"


def _graph_run_name(task: asyncio.Task[Any]) -> str:
    """``graph(msg-1)``: stable across runs, unlike asyncio's global ``Task-N`` names."""
    frame = getattr(task.get_coro(), "cr_frame", None)
    msg = frame.f_locals.get("msg") if frame is not None else None
    return f"graph(msg-{msg.msg_id})" if isinstance(msg, StreamMessage) else task.get_name()


async def _settle() -> None:
    """Wait until no other task is pending on this loop, then let callbacks run."""
    me = asyncio.current_task()
    while others := [task for task in asyncio.all_tasks() if task is not me]:
        await asyncio.wait(others)
    await asyncio.sleep(0)


@dataclass
class _Pipeline:
    bridge: _BridgeBase
    source: Subject[StreamMessage]
    pool: WorkerPool
    outcomes: queue.Queue[StreamMessage | BaseException]


def _start_pipeline(variant: str, loop: asyncio.AbstractEventLoop, workers: int) -> _Pipeline:
    bridge = VARIANTS[variant](loop)
    source: Subject[StreamMessage] = Subject()
    pool = WorkerPool(workers)
    outcomes: queue.Queue[StreamMessage | BaseException] = queue.Queue()
    bridge.create_pipeline(source, pool).subscribe(Observer(outcomes.put, outcomes.put))
    return _Pipeline(bridge, source, pool, outcomes)


def _finish(
    pipeline: _Pipeline, loop: asyncio.AbstractEventLoop, messages: int, received: int = 0
) -> None:
    """Drain the pool, let the loop settle, then check the end-of-stream invariants."""
    pipeline.pool.shutdown()
    _on_loop(loop, _settle())
    done = received + pipeline.outcomes.qsize()
    assert done == messages, f"{INVARIANT_ALL_COMPLETE}: {done} of {messages} messages completed"
    left = pipeline.bridge.active_task_count
    assert left == 0, f"{INVARIANT_NO_LEAK}: {left} task(s) still in _active_tasks"


def stream(variant: str, messages: int = 2, workers: int = 2, wait: float | None = None) -> None:
    """Messages flow through the bridge with no cleanup; nothing may leak.

    With ``wait`` (seconds), the main thread first waits for every outcome while
    leaving the loop alone, as a consumer of the stream would. Nothing else
    wakes the loop then, so a task created with a plain ``call_soon`` from a
    pool thread (``ensure_future`` off-loop) is never run: a lost wakeup. Under
    racecheck the wait is virtual time, so it costs nothing.
    """
    with _event_loop_thread() as loop:
        pipeline = _start_pipeline(variant, loop, workers)
        for i in range(messages):
            pipeline.source.on_next(StreamMessage(i, f"msg-{i}"))
        if wait is not None:
            for done in range(messages):
                try:
                    pipeline.outcomes.get(timeout=wait)
                except queue.Empty:
                    pipeline.pool.shutdown()
                    _on_loop(loop, _settle())  # wakes the loop, so teardown is clean
                    raise AssertionError(
                        f"{INVARIANT_ALL_COMPLETE}: only {done} of {messages} messages completed "
                        f"within {wait}s while the loop was left idle (lost wakeup)"
                    ) from None
        _finish(pipeline, loop, messages, received=messages if wait is not None else 0)


def sync_cleanup_shutdown(variant: str, messages: int = 4, workers: int = 2) -> None:
    """The sync ``cleanup_tasks`` runs on the main thread while messages are in flight.

    Shutdown comes once the stream is busy: right after the first answer (or
    after ``1 s`` without one, when the loop lost the wakeup), while the loop
    thread is finishing the other graph runs and discarding their tasks.
    """
    with _event_loop_thread() as loop:
        pipeline = _start_pipeline(variant, loop, workers)
        for i in range(messages):
            pipeline.source.on_next(StreamMessage(i, f"msg-{i}"))
        received = 0
        try:
            pipeline.outcomes.get(timeout=1.0)
            received = 1
        except queue.Empty:
            pass
        error: RuntimeError | None = None
        try:
            pipeline.bridge.cleanup_tasks()
        except RuntimeError as exc:
            error = exc
        _finish(pipeline, loop, messages, received)
    if error is not None:
        raise AssertionError(f"{INVARIANT_NO_SET_CHANGED}: {error}") from error


def async_cleanup_shutdown(variant: str, messages: int = 2, workers: int = 2) -> None:
    """``cleanup_tasks_async`` runs on the loop while pool threads still create tasks.

    When cleanup returns, every graph task created so far must be done or
    cancelling; a task created later is not cleanup's business (the fixed
    bridge refuses to create it).
    """

    async def cleanup_and_audit(bridge: _BridgeBase) -> list[str]:
        await bridge.cleanup_tasks_async()
        # Same loop step as cleanup's return: nothing else ran in between.
        return sorted(
            _graph_run_name(task)
            for task in asyncio.all_tasks()
            if _is_graph_run(task) and not task.done() and not task.cancelling()
        )

    with _event_loop_thread() as loop:
        pipeline = _start_pipeline(variant, loop, workers)
        for i in range(messages):
            pipeline.source.on_next(StreamMessage(i, f"msg-{i}"))
        missed = _on_loop(loop, cleanup_and_audit(pipeline.bridge))
        _finish(pipeline, loop, messages)
    assert not missed, (
        f"{INVARIANT_CLEANUP_ALL}: cleanup_tasks_async returned while {', '.join(missed)} "
        f"{'was' if len(missed) == 1 else 'were'} still running, neither cancelled nor awaited"
    )


def shutdown_scenario(variant: str) -> None:
    """The scenario target: a sync-cleanup shutdown, then an async-cleanup shutdown."""
    sync_cleanup_shutdown(variant)
    async_cleanup_shutdown(variant)
