"""Where eval trials and replay samples run: in this process (asyncio), or on a Ray cluster.

The runner and replay hand an executor a :class:`Work` (a context shared by every item, and
an async function of one item) and the items; the executor streams ``(index, result)`` pairs
back as items finish, in any order. Reports and stores never know which executor ran.

- :class:`LocalExecutor` (the default): asyncio tasks in this process, at most
  ``concurrency`` at once.
- :class:`RayExecutor` (``--executor ray[:ADDRESS]``, ``pip install 'toolproof[ray]'``): the
  items go in batches to Ray tasks; each task runs its batch with the same asyncio code on a
  worker. The context is sent once per run. A worker that dies is retried by Ray
  (``retries`` times); a batch that keeps dying becomes ``work.lost(item, error)`` for each of
  its items (an error result of those cases, not a crash of the run). An exception that
  escapes ``work.run`` stops the stream with that exception, as in this process. Cancelling
  the stream (Ctrl-C) cancels the remote tasks.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sized
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from toolproof.errors import UserError

__all__ = ["Executor", "LocalExecutor", "RayExecutor", "Work", "executor_from_string"]

C = TypeVar("C")
T = TypeVar("T")
R = TypeVar("R")


@dataclass(slots=True)
class Work(Generic[C, T, R]):
    """What to do with each item.

    Attributes:
        context: Shared by every item (tools, rules, the agent); sent once to each worker.
        run: ``await run(context, item)`` gives the item's result.
        lost: The result of an item whose worker kept dying (``lost(item, error)``).
        concurrency: Items running at once per process.
        run_sync: The same as ``run`` without an event loop, for CPU-bound items (grading):
            workers then run their batch as a plain loop.
    """

    context: C
    run: Callable[[C, T], Awaitable[R]]
    lost: Callable[[T, BaseException], R]
    concurrency: int = 4
    run_sync: Callable[[C, T], R] | None = None


class Executor(Protocol):
    """Runs a :class:`Work` over items and streams ``(index, result)`` back as they finish."""

    name: str

    def stream(
        self, work: Work[C, T, R], items: Iterable[T]
    ) -> AsyncGenerator[tuple[int, R], None]:
        """Results of ``items`` as they finish (each index once, in any order)."""
        ...


async def _run_all(work: Work[C, T, R], items: Iterable[T]) -> AsyncGenerator[tuple[int, R], None]:
    semaphore = asyncio.Semaphore(max(1, work.concurrency))

    async def one(index: int, item: T) -> tuple[int, R]:
        async with semaphore:
            return index, await work.run(work.context, item)

    tasks = [asyncio.ensure_future(one(n, item)) for n, item in enumerate(items)]
    try:
        for done in asyncio.as_completed(tasks):
            yield await done
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class LocalExecutor:
    """Every item in this process, as asyncio tasks (the default)."""

    name = "local"

    def stream(
        self, work: Work[C, T, R], items: Iterable[T]
    ) -> AsyncGenerator[tuple[int, R], None]:
        """Run the items here, ``work.concurrency`` at once."""
        return _run_all(work, items)


def _run_batch(work: Work[Any, Any, Any], items: list[Any]) -> list[Any]:
    """On a Ray worker: one batch, with the local asyncio code; results in item order."""
    if work.run_sync is not None:
        return [work.run_sync(work.context, item) for item in items]

    async def main() -> list[Any]:
        out: list[Any] = [None] * len(items)
        async for index, result in _run_all(work, items):
            out[index] = result
        return out

    return asyncio.run(main())


class RayExecutor:
    """Items in batches on a Ray cluster.

    Args:
        address: The cluster (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``); ``None``
            starts a local one for this process (``num_cpus`` workers).
        batch_size: Items per Ray task (default: enough batches to keep every CPU busy, at
            most 2,000 items each).
        retries: Times a batch is run again after its worker died.
        num_cpus: CPUs of a local cluster (default: this machine's).
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        batch_size: int | None = None,
        retries: int = 2,
        num_cpus: int | None = None,
    ) -> None:
        self.address = address
        self.batch_size = batch_size
        self.retries = retries
        self.num_cpus = num_cpus

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError as exc:
            raise UserError("--executor ray needs Ray: pip install 'toolproof[ray]'") from exc
        if not ray.is_initialized():
            # Workers import the same modules as this process (tools, factories, checks).
            env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
            options: dict[str, Any] = {
                "runtime_env": {"env_vars": env},
                "include_dashboard": False,
                "log_to_driver": False,
                "configure_logging": False,
            }
            if self.address:
                options["address"] = self.address
            else:
                options["num_cpus"] = self.num_cpus or os.cpu_count() or 1
                options["object_store_memory"] = 200 * 1024 * 1024
            try:
                ray.init(**options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.address or "a local cluster"
                raise UserError(f"cannot start Ray on {where}: {exc}") from exc
        return ray

    def stream(
        self, work: Work[C, T, R], items: Iterable[T]
    ) -> AsyncGenerator[tuple[int, R], None]:
        """Send the items in batches to Ray tasks; stream results back as batches finish."""
        return self._stream(work, items)

    async def _stream(
        self, work: Work[C, T, R], items: Iterable[T]
    ) -> AsyncGenerator[tuple[int, R], None]:
        ray = self._ray()
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        size = self.batch_size or (
            max(1, min(2000, -(-len(items) // (cpus * 4)))) if isinstance(items, Sized) else 1000
        )
        remote = ray.remote(_run_batch).options(max_retries=self.retries)
        try:
            shared = ray.put(work)
        except Exception as exc:  # something of the run cannot be sent to another process
            raise UserError(
                f"cannot send the run to Ray workers: {type(exc).__name__}: {exc}; the agent, "
                "tools, mocks and checks must be picklable (defined at module level, not "
                "holding open connections or locks)"
            ) from exc
        # Batches are read and sent as workers free up (two per CPU in flight): the items
        # never sit all at once in this process or in the object store.
        source = iter(items)
        batches: dict[Any, tuple[int, list[T], Any]] = {}
        pending: set[Any] = set()
        sent = 0

        def submit() -> bool:
            nonlocal sent
            batch = list(itertools.islice(source, size))
            if not batch:
                return False
            ref = remote.remote(shared, batch)
            future = asyncio.wrap_future(ref.future())
            batches[future] = (sent, batch, ref)
            pending.add(future)
            sent += len(batch)
            return True

        try:
            while len(pending) < cpus * 2 and submit():
                pass
            while pending:
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    pending.discard(future)
                    start, batch, _ = batches.pop(future)
                    try:
                        results = future.result()
                    except ray.exceptions.RayTaskError as exc:
                        # An error that escaped the work: it stops the run, as it would here.
                        raise _cause(exc) from None
                    except Exception as exc:  # the worker kept dying (or its node did)
                        results = [work.lost(item, exc) for item in batch]
                    submit()
                    for n, result in enumerate(results):
                        yield start + n, result
        finally:
            for future in pending:
                future.cancel()
                ray.cancel(batches[future][2], force=True)


def _cause(exc: BaseException) -> BaseException:
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


def executor_from_string(spec: str | Executor | None) -> Executor:
    """``"local"`` (default), ``"ray"`` (a local Ray cluster) or ``"ray:ADDRESS"``.

    Raises:
        UserError: Another name.
    """
    if spec is None or spec in ("local", "asyncio"):
        return LocalExecutor()
    if not isinstance(spec, str):
        return spec
    name, _, address = spec.partition(":")
    if name == "ray":
        return RayExecutor(address or None)
    raise UserError(
        f"unknown executor {spec!r}; use 'local' (the default), 'ray' (a local Ray cluster) "
        "or 'ray:ADDRESS' (e.g. ray:auto, ray:ray://head:10001)"
    )
