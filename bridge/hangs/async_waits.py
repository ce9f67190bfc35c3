"""Ranks that wait for a collective they issued earlier, and where they block (sans-I/O).

An NCCL collective returns as soon as it is queued on the GPU: the rank goes on, and blocks
later, in C code, at the first thing that needs the result (``loss.item()``,
``torch.cuda.synchronize()``, ``Work.wait()``). Its stack then stands at its own line, a few
lines past the call, and says nothing of the collective. Its recorder does: the oldest op it
issued that is not done. Together: "rank 0 waits for all_reduce #9 (called at train.py:244),
blocked at train.py:253". A rank whose stack stands inside the collective's own call (gloo,
or a blocking NCCL wait) is said by the collective verdict already.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby

from raydap.bridge.cluster.pyspy import Frame
from raydap.bridge.hangs.desync import (
    Collective,
    RankDump,
    call_site,
    is_torch,
    ranks_text,
    short_path,
)
from raydap.bridge.hangs.frames import collective_of, is_plumbing, wait_of
from raydap.bridge.hangs.verdicts import RankSample, RankWait, own_frame
from raydap.protocol.collectives import Entry

#: Waits said in a verdict's summary at most (every one is in its ``waits``).
SUMMARY_WAITS = 3


def pending(dump: RankDump) -> Entry | None:
    """The oldest op of one rank's recorder that is not done: neither completed, retired,
    nor counted completed by its group (NCCL lags there, and marks some completed early)."""
    for entry in dump.recorder.entries:
        if entry.retired or entry.state == "completed":
            continue
        if not entry.is_p2p:
            status = dump.recorder.status(entry.group, entry.pg_id)
            if entry.seq <= status.last_completed_collective:
                continue
        return entry
    return None


def waits_at(dump: RankDump, collective: Collective) -> bool:
    """Whether the oldest op this rank waits for is the one a verdict speaks of."""
    entry = pending(dump)
    return entry is not None and (dump.backend, entry.group, entry.seq, entry.is_p2p) == (
        collective.backend,
        collective.group,
        collective.seq,
        collective.p2p,
    )


def async_waits(dumps: Sequence[RankDump], samples: Mapping[str, RankSample]) -> list[RankWait]:
    """Every rank (by its worker's latest stack sample) that waits for an op it issued
    while its stack stands outside the op's call; each backend of a rank apart."""
    # Where each op was called, from any rank whose call sites were read: ranks that called
    # one op at one number called it from one place, nearly always.
    sites = {
        (d.backend, e.group, e.is_p2p, e.seq): site
        for d in dumps
        for e in d.recorder.entries
        if e.frames and (site := call_site(e.frames)) is not None
    }
    found = []
    for dump in dumps:
        entry = pending(dump)
        sample = samples.get(dump.worker)
        if entry is None or sample is None or collective_of(sample.frames) is not None:
            continue
        frame = job_frame(sample.frames)
        if frame is None:
            continue
        site = call_site(entry.frames) or sites.get(
            (dump.backend, entry.group, entry.is_p2p, entry.seq)
        )
        wait = wait_of(sample.frames)
        found.append(RankWait(
            worker=dump.worker, rank=dump.identity.rank, backend=dump.backend,
            group=entry.group, seq=entry.seq, op=entry.op,
            called_path=site.filename if site else None, called_line=site.line if site else None,
            blocked_function=frame.function, blocked_path=frame.path, blocked_line=frame.line,
            blocked_in=wait.name if wait is not None else None,
        ))  # fmt: skip
    return sorted(found, key=lambda w: (w.rank is None, w.rank or 0, w.worker, w.backend))


def job_frame(frames: Sequence[Frame]) -> Frame | None:
    """The innermost frame of the job's own code: past torch's (``synchronize``) too."""
    return next(
        (f for f in frames if not is_plumbing(f) and not is_torch(f.path)), own_frame(frames)
    )


def said(waits: Sequence[RankWait]) -> str:
    """``ranks 0-2 wait for all_reduce #9 (called at train.py:244), blocked at
    train.py:253``: ranks alike said once, the first few kinds only."""

    def alike(wait: RankWait) -> tuple[object, ...]:
        return (wait.op, wait.seq, wait.called_path or "", wait.called_line or 0,
                wait.blocked_path, wait.blocked_line, wait.blocked_in or "")  # fmt: skip

    parts = []
    for _, members in groupby(sorted(waits, key=alike), key=alike):
        group = list(members)
        first, ranks = group[0], [w.rank for w in group]
        who = (
            ranks_text([r for r in ranks if r is not None])
            if all(r is not None for r in ranks)
            else f"{len(ranks)} workers"
        )
        verb = "waits" if len(ranks) == 1 else "wait"
        called = (
            f" (called at {short_path(first.called_path)}:{first.called_line})"
            if first.called_path
            else ""
        )
        blocked = f" in {first.blocked_in}" if first.blocked_in else ""
        at = f"{short_path(first.blocked_path)}:{first.blocked_line}"
        parts.append(f"{who} {verb} for {first.op} #{first.seq}{called}, blocked{blocked} at {at}")
    more = len(parts) - SUMMARY_WAITS
    return "; ".join(parts[:SUMMARY_WAITS]) + (f"; {more} more waits" if more > 0 else "")
