"""Several trials of this campaign at once (a batch evaluate): slots, one marker for all, every tree ended on a stop.

Only sealed trials run concurrently (each sees its own view of the job; none touches the live workspace), so the
caller passes `parallel` > 1 only for those. One orphan marker lists every trial of the batch (token and temp
folder) before the first starts, so a killed runner's next action ends them all (`recovery`). Each trial runs
`campaign_trial.run_marked` in a thread of its own (the trial itself is a child process); the main thread waits
on them (a signal, turned into `Interrupted`, interrupts that wait), then ends every trial tree by its token, lets
the threads finish and re-raises. Results come back in request order, whatever order the trials finished in.

Slots: one per visible GPU (its own CUDA_VISIBLE_DEVICES) when the runner sees GPUs, else `CPU_SLOTS_PER_CORE`
per CPU core (see docs/decisions.md, "Batches"); never more than the batch. Usage::

    results, width = run_all(campaign, [Request("lr-a", ["--lr", "0.2"], files_a), ...], parallel=None)
    done = run_in_turn(campaign, requests, before=apply, after=check_and_restore)    # where trials cannot be sealed
"""

from __future__ import annotations

import os
import re
import secrets
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ..common import atomic, faults, trees
from . import campaign_trial
from .store.paths import TRIAL_TEMP_PREFIX

CPU_SLOTS_PER_CORE = 2  # a simulated NVFLARE trial mostly waits: ~6 s of CPU in 21 s of wall time
# A signal sent to the runner interrupts the main thread's join at once (measured: 0.3 ms); the slice only bounds
# the wait if a signal ever landed on another thread. Each wake-up costs CPU (~0.1 ms here), hence not 0.2 s.
WAIT_SLICE = 2.0
GPU_DEVICE_RE = re.compile(r"nvidia\d+")


@dataclass
class Request:
    """One trial of a batch: its name (the candidate id), run args and the files its sealed view sees."""

    name: str
    run_args: list[str]
    stage_files: dict[str, bytes] | None
    kind: str = "candidate"


def visible_gpus(environ=os.environ, dev: str = "/dev") -> list[str]:
    """GPU ids the runner sees: CUDA_VISIBLE_DEVICES when set (empty or -1: none), else the /dev/nvidiaN devices."""
    given = environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        ids = [part.strip() for part in given.split(",") if part.strip()]
        return [] if not ids or ids[0] == "-1" else ids
    try:
        names = os.listdir(dev)
    except OSError:
        return []
    return sorted((name[len("nvidia") :] for name in names if GPU_DEVICE_RE.fullmatch(name)), key=int)


def slots(parallel: int | None, size: int, *, gpus: list[str], cpus: int | None) -> list[str | None]:
    """The CUDA_VISIBLE_DEVICES of each slot (None: the parent's), at most `size` slots, at least one."""
    if parallel is None:
        parallel = len(gpus) if gpus else CPU_SLOTS_PER_CORE * max(1, cpus or 1)
    count = max(1, min(parallel, size))
    return [gpus[index % len(gpus)] if gpus else None for index in range(count)]


def run_all(campaign, requests: list[Request], *, parallel: int | None) -> tuple[list, int]:
    """Run `requests`, at most `parallel` at a time; returns (TrialResults in request order, slots used).

    Raises the first trial's CampaignError (after every trial ended) or the interruption that stopped the batch.
    A single trial runs in this thread with the devices the runner sees (`campaign_trial.run`).
    """
    if len(requests) == 1:
        [r] = requests
        return [
            campaign_trial.run(
                campaign, name=r.name, run_args=r.run_args, kind=r.kind, candidate=r.name, stage_files=r.stage_files
            )
        ], 1
    width = slots(parallel, len(requests), gpus=visible_gpus(), cpus=os.cpu_count())
    tokens = [secrets.token_hex(16) for _ in requests]
    temps = [Path(tempfile.mkdtemp(prefix=TRIAL_TEMP_PREFIX)) for _ in requests]
    entries = [
        campaign_trial.marker_entry(token, r.name, r.kind, r.name, temp, sealed=r.stage_files is not None)
        for r, token, temp in zip(requests, tokens, temps, strict=True)
    ]
    atomic.write_json(campaign.paths.trial_marker, {"runner_pid": os.getpid(), "trials": entries})
    faults.checkpoint("trial:marker_written")
    campaign_trial.start_plot_worker(campaign)
    stream = _Lines(sys.stderr) if len(width) > 1 else None
    pool = _Pool(campaign, requests, tokens, temps, width, stream)
    try:
        pool.start()
        pool.wait()
    except BaseException:
        pool.stop()
        raise
    finally:
        for temp in temps:
            trees.remove_tree(temp)
    if pool.errors:
        raise pool.errors[min(pool.errors)]
    return [pool.results[index] for index in range(len(requests))], len(width)


def run_in_turn(campaign, requests: list[Request], *, before, after) -> list:
    """Run `requests` one at a time (trials that cannot be sealed), `before(i)` ahead of trial i and `after(i,
    result)` once it ended (e.g. apply a candidate to the workspace, then restore the best); returns what each
    `after` returned, in order."""
    done = []
    for index, request in enumerate(requests):
        before(index)
        result = campaign_trial.run(
            campaign, name=request.name, run_args=request.run_args, kind=request.kind, candidate=request.name
        )
        done.append(after(index, result))
    return done


class _Pool:
    """One thread per slot; each takes the next request in order until none is left or the batch stops."""

    def __init__(self, campaign, requests, tokens, temps, width, stream):
        self.campaign, self.requests, self.tokens, self.temps = campaign, requests, tokens, temps
        self.width, self.stream = width, stream
        self.results: dict[int, object] = {}
        self.errors: dict[int, BaseException] = {}
        self.next_index = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._slot, args=(gpu,), daemon=True) for gpu in width]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def wait(self) -> None:
        for thread in self.threads:
            while thread.is_alive():
                thread.join(WAIT_SLICE)

    def stop(self) -> None:
        """End every trial of the batch (started or not) by its token, then let the slot threads finish."""
        from ..trial import childenv, processes

        self.stopping.set()
        for token in self.tokens:
            processes.terminate_tree(None, (childenv.TOKEN_VAR, token))
        for thread in self.threads:
            thread.join()

    def _take(self) -> int | None:
        with self.lock:
            if self.stopping.is_set() or self.next_index >= len(self.requests) or self.errors:
                return None
            index, self.next_index = self.next_index, self.next_index + 1
            return index

    def _slot(self, gpu: str | None) -> None:
        while (index := self._take()) is not None:
            request = self.requests[index]
            try:
                self.results[index] = campaign_trial.run_marked(
                    self.campaign,
                    name=request.name,
                    run_args=request.run_args,
                    token=self.tokens[index],
                    temp_parent=self.temps[index],
                    stage_files=request.stage_files,
                    gpu=gpu,
                    progress_stream=self.stream,
                    slots=len(self.width),
                    kind=request.kind,  # a candidate may be pruned on its own: its slot takes the next at once
                )
            except BaseException as error:  # reported by run_all after every trial ended
                with self.lock:
                    self.errors[index] = error


class _Lines:
    """stderr for concurrent progress printers: one line per change (no in-place TTY redraws that would clash)."""

    def __init__(self, stream):
        self._stream = stream

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()
