"""progress.png from the ledger and the runs' round records: pure plot data, one matplotlib picture, or a text note.

Usage::

    data = plot_data(rows, "max")          # pure: points, failures, literature markers, running best, best
    summary = render(rows, "progress.png", metric="accuracy", mode="max")   # {"backend", "output", "reason", ...}
    render(rows, "progress.png", metric="accuracy", mode="max", band=0.004)    # shade the best +- 0.004
    render(rows, "progress.png", metric="accuracy", mode="max", curves=[{"name": "baseline", "role": "baseline",
           "rounds": [0, 1, 2], "values": [0.5, 0.7, 0.8]}])

The picture has two panels. The top one: the x axis counts experiments (baseline, keep, discard and crash rows)
in ledger order, starting at 1; a literature event sits half a step after the experiment it follows; replicate
rows (reruns of the best) are experiments of their own color and never move the running best; `band` shades the
best +- the noise margin; `batches` (the runner's `{members, parallel}` records, see
`runner/report/facts.batches`) shades each batch's span and labels it `batch N`. The bottom one: the metric per
round of the `curves` given (baseline, best, the latest candidates; see `runner/report/curves`).

A pruned candidate (a discard the pruning rule stopped early, without a score: `campaign/prune`) is a grey
triangle at the bottom of the top panel, apart from the crashes, and the title counts it among the discards
(`N pruned`).

One renderer: matplotlib (Agg), the same picture whichever process draws it. Without matplotlib, or with
`AUTOFL_PLOT_RENDERER=text` (test suites, very small machines), or when matplotlib fails, `render` writes no
picture: a text summary beside `output` (same name, `.txt`), removes a stale picture, and says why in `reason`.
Plotting libraries are imported only inside the renderer, never when this module is imported.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from ..common import atomic
from . import prune
from . import vocabulary as v
from .compare import check_mode, format_score
from .ledger import LedgerRow
from .plot_picture import (  # noqa: F401  (COLORS, SIZE, NO_CURVES_MESSAGE: the picture's, named here too)
    COLORS,
    EMPTY_MESSAGE,
    NO_CURVES_MESSAGE,
    SIZE,
    curve_label,
    draw,
)

TITLE_START = "Auto-FL progress:"  # the first words of the title and of the text summary
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
RENDERER_VARIABLE = "AUTOFL_PLOT_RENDERER"
RENDERER_CHOICES = ("matplotlib", "text")


def renderer() -> str:
    """`matplotlib` (the default) or `text`, as `AUTOFL_PLOT_RENDERER` asks (an unknown value warns and means the
    default)."""
    wanted = os.environ.get(RENDERER_VARIABLE, "").strip().lower() or "matplotlib"
    if wanted not in RENDERER_CHOICES:
        print(
            f"plot: {RENDERER_VARIABLE}={wanted!r} is not one of {', '.join(RENDERER_CHOICES)}; using matplotlib",
            file=sys.stderr,
        )
        wanted = "matplotlib"
    return wanted


def unavailable_reason() -> str | None:
    """Why no picture can be drawn here (the renderer asked for, or matplotlib missing), or None."""
    if renderer() == "text":
        return f"{RENDERER_VARIABLE}=text asks for a text summary instead of a picture"
    if importlib.util.find_spec("matplotlib") is None:
        return "matplotlib is not installed (pip install matplotlib draws the picture)"
    return None


def plot_data(
    rows: list[LedgerRow], mode: str, batches: list[dict] | None = None, curves: list[dict] | None = None
) -> dict:
    """Everything the plot shows, computed from ledger rows and the batches that ran (pure)."""
    check_mode(mode)
    points, failures, literature, running = [], [], [], []
    attempts: dict[str, int] = {}
    best = None
    tracker = v.RunningBest(mode)
    x = 0
    for index, row in enumerate(rows):
        status, score, name = row.status, row.score, row.name or ""
        if status == v.LITERATURE:
            literature.append({"x": x + 0.5, "row": index, "event_id": row.literature_event_id or ""})
            continue
        if status not in v.EXPERIMENTS:
            continue
        x += 1
        if status in v.ATTEMPTS:
            attempts.setdefault(name, x)
        if score is None or status == v.CRASH:  # an unscored replicate is drawn like a crash
            pruned = score is None and prune.is_pruned(row)  # stopped early: drawn as pruned, not as a crash
            failures.append({"x": x, "row": index, "name": name, "status": status, "pruned": pruned})
            continue
        points.append({"x": x, "row": index, "score": score, "status": status, "name": name})
        if tracker.offer(index, row):
            best = {"x": x, "row": index, "score": score, "status": status, "name": name}
            running.append({"x": x, "score": score})
    counts = {status: 0 for status in v.LEDGER_STATUSES}
    scored_attempts = 0
    for row in rows:
        if row.status in counts:
            counts[row.status] += 1
        scored_attempts += row.status in v.ATTEMPTS and row.score is not None
    return {
        "points": points,
        "failures": failures,
        "literature": literature,
        "running_best": running,
        "best": best,
        "batches": batch_spans(attempts, batches or []),
        "curves": [curve for curve in curves or [] if curve.get("values")],
        "x_max": x,
        "counts": counts,
        "scored": len(points),
        "scored_attempts": scored_attempts,
        "pruned": sum(1 for failure in failures if failure["pruned"]),
    }


def batch_spans(attempts: dict[str, int], batches: list[dict]) -> list[dict]:
    """Where each batch sits on the x axis (pure): `attempts` maps a candidate attempt's name to its experiment
    number, `batches` are `{members, parallel}` records. A batch spans its members found in the ledger (fewer than
    two found: not drawn); batches are numbered from 1 in ledger order and labelled `batch N`."""
    spans = []
    for batch in batches:
        members = [str(name) for name in batch.get("members") or [] if str(name) in attempts]
        if len(members) < 2:
            continue
        xs = [attempts[name] for name in members]
        parallel = batch.get("parallel") if type(batch.get("parallel")) is int else 1
        spans.append({"x_min": min(xs), "x_max": max(xs), "members": members, "parallel": parallel})
    spans.sort(key=lambda span: span["x_min"])
    return [dict(span, label=f"batch {number}") for number, span in enumerate(spans, start=1)]


def warm_up() -> str | None:
    """Import the plotting library and draw a throwaway picture in memory, so fonts and glyph caches are loaded
    before the real render (the plot worker, while a trial runs; nothing is written). Returns `matplotlib`, or None
    when only the text summary is possible."""
    if unavailable_reason() is not None:
        return None
    data = plot_data([LedgerRow(status=v.BASELINE, name="b", score=0.5)], "max")
    try:
        draw(data, title_text(data, "metric", "max"), "metric")
    except ImportError:
        return None
    return "matplotlib"


def title_text(data: dict, metric: str, mode: str) -> str:
    """Plot title (two lines, so it fits): metric, direction and counts, as the report counts them: candidate attempts (keep, discard,
    crash rows; the baseline and replicates are never attempts) and how many of them scored."""
    direction = "higher is better" if mode == "max" else "lower is better"
    counts = data["counts"]
    attempts = sum(counts[status] for status in v.ATTEMPTS)
    replicates = f", {counts[v.REPLICATE]} replicate(s) (not attempts)" if counts[v.REPLICATE] else ""
    pruned = f" ({data['pruned']} pruned)" if data.get("pruned") else ""
    return (
        f"{TITLE_START} {metric} ({mode}, {direction})\n{attempts} attempt(s) ({data['scored_attempts']} "
        f"scored): {counts[v.KEEP]} kept, {counts[v.DISCARD]} discarded{pruned}, {counts[v.CRASH]} crashed; "
        f"{counts[v.LITERATURE]} literature{replicates}"
    )


def render(
    rows: list[LedgerRow],
    output: str | os.PathLike,
    *,
    metric: str,
    mode: str,
    band: float | None = None,
    batches: list[dict] | None = None,
    curves: list[dict] | None = None,
) -> dict:
    """Write the progress PNG to `output` atomically (and remove a stale text summary beside it); returns
    `{"backend": "matplotlib", "output", "reason": None, "best", "scored"}`.

    `band` (the noise margin) shades best +- band from the best point on; `batches` shades the candidates that ran
    together; `curves` are the runs whose per-round metric the lower panel shows. When no picture can be drawn
    (see `unavailable_reason`, or matplotlib failed) it writes the text summary beside `output` (same name, `.txt`),
    removes a stale `output`, warns on stderr and returns `backend` `text`, `output` the summary and the `reason`.
    """
    data = plot_data(rows, mode, batches, curves)
    data["band"] = band if band and data["best"] else None
    counted = {"best": data["best"], "scored": data["scored"]}
    title = title_text(data, metric, mode)
    note = Path(output).with_suffix(".txt")
    reason = unavailable_reason()
    if reason is None:
        try:
            png = draw(data, title, metric)
        except ImportError:
            reason = "matplotlib is not installed (pip install matplotlib draws the picture)"
        except Exception as exc:  # a plotting library bug must not lose the campaign's progress output
            reason = f"matplotlib failed ({type(exc).__name__}: {exc})"
        else:
            atomic.write_bytes(output, png)
            if note != Path(output) and _starts_with(note, TITLE_START.encode()):  # our own stale summary only
                _remove(note)
            return {"backend": "matplotlib", "output": str(output), "reason": None, **counted}
    atomic.write_text(note, text_summary(data, title))
    if note != Path(output) and _starts_with(Path(output), PNG_SIGNATURE):  # a stale picture, never another file
        _remove(Path(output))
    if renderer() != "text":  # asked for: nothing to warn about
        print(f"plot: no picture ({reason}); wrote a text summary to {note}", file=sys.stderr)
    return {"backend": "text", "output": str(note), "reason": reason, **counted}


def _starts_with(path: Path, prefix: bytes) -> bool:
    """True when `path` is a regular file (not a link) that starts with `prefix`."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        with open(path, "rb") as handle:
            return handle.read(len(prefix)) == prefix
    except OSError:
        return False


def _remove(path: Path) -> None:
    """Remove a stale output of the other kind (a regular file only; never a folder or a symlink's target)."""
    try:
        if path.is_file() and not path.is_symlink():
            path.unlink()
    except OSError:
        pass


def text_summary(data: dict, title: str) -> str:
    """The plain-text stand-in for the plot."""
    lines = [title]
    if not data["points"]:
        lines.append(EMPTY_MESSAGE)
    if data.get("band"):
        lines.append(f"noise band: best +- {format_score(data['band'])}")
    best_row = data["best"]["row"] if data["best"] else None
    for entry in sorted(data["points"] + data["failures"], key=lambda item: item["x"]):
        score = format_score(entry["score"]) if "score" in entry else "(pruned)" if entry["pruned"] else "(no score)"
        marker = "  <- best" if entry["row"] == best_row else ""
        lines.append(f"{entry['x']:>5}  {entry['status']:<8}  {score}  {entry['name']}{marker}")
    for span in data.get("batches") or []:
        how = f"{span['parallel']} at a time" if span["parallel"] > 1 else "one by one"
        lines.append(
            f"{span['label']} (experiments {span['x_min']}-{span['x_max']}, {how}): {', '.join(span['members'])}"
        )
    if data.get("curves"):
        lines.append("metric per round:")
    for curve in data.get("curves") or []:
        values = ", ".join(
            f"r{rnd} {format_score(value)}" for rnd, value in zip(curve["rounds"], curve["values"], strict=True)
        )
        lines.append(f"  {curve_label(curve)}: {values}")
    return "\n".join(lines) + "\n"
