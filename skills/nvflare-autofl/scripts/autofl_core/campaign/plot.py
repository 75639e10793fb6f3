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
import io
import os
import sys
from pathlib import Path

from ..common import atomic
from . import prune
from . import vocabulary as v
from .compare import check_mode, format_score
from .ledger import LedgerRow

SCORED_SERIES = (v.BASELINE, v.KEEP, v.DISCARD, v.REPLICATE)
COLORS = {
    v.BASELINE: "#1f77b4",
    v.KEEP: "#2ca02c",
    v.DISCARD: "#9a9a9a",
    v.CRASH: "#d62728",
    v.LITERATURE: "#9467bd",
    "best": "#ff7f0e",
    v.REPLICATE: "#17becf",
    "band": "#ffd8a8",
    "batch": "#dde6f0",
    "batch_label": "#4a5a70",
}
SIZE = (1100, 900)  # pixels: the progress panel above the round curves
EMPTY_MESSAGE = "no scored results yet"
TITLE_START = "Auto-FL progress:"  # the first words of the title and of the text summary
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NO_CURVES_MESSAGE = "no round records yet (NVFLARE writes round_metrics.jsonl per run)"
MAX_EVENT_LABELS = 30  # more literature markers than this stay unlabelled (text artists are slow and overlap)
MAX_LABEL_CHARS = 24  # a longer event id is cut in its vertical label (the axes are about 40 characters high)
LEGEND_LEFT = 0.79  # the legends start here (share of the width); the 230 pixels right of it hold 30 characters
LEGEND_CHARS = 30  # a longer legend label is cut
RENDERER_VARIABLE = "AUTOFL_PLOT_RENDERER"
RENDERER_CHOICES = ("matplotlib", "text")
CURVE_COLORS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")  # candidates, in order


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


BATCH_MARGIN = 0.4  # a batch's shading reaches this far beyond its first and last experiment (a literature
# marker half a step before the batch stays outside it)


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
        _draw_matplotlib(data, title_text(data, "metric", "max"), "metric")
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
            png = _draw_matplotlib(data, title, metric)
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


def _y_range(data: dict) -> tuple[float, float]:
    scores = [point["score"] for point in data["points"]]
    if data.get("band"):
        scores += [data["best"]["score"] - data["band"], data["best"]["score"] + data["band"]]
    low, high = min(scores), max(scores)
    pad = (high - low) * 0.08 or max(abs(high) * 0.05, 0.05)
    return low - pad, high + pad


def _best_steps(data: dict) -> tuple[list, list]:
    """Step-line vertices of the running best, extended to the last experiment."""
    xs = [step["x"] for step in data["running_best"]]
    ys = [step["score"] for step in data["running_best"]]
    if xs and xs[-1] < data["x_max"]:
        xs.append(data["x_max"])
        ys.append(ys[-1])
    return xs, ys


def _draw_matplotlib(data: dict, title: str, metric: str) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(SIZE[0] / 100, SIZE[1] / 100), dpi=100)
    FigureCanvasAgg(figure)
    axes, rounds = figure.subplots(2, 1, height_ratios=(3, 2))
    # fixed margins (a layout engine would cost more than the whole render): the right one holds the legends,
    # whose labels are at most LEGEND_CHARS long
    figure.subplots_adjust(left=0.07, right=LEGEND_LEFT - 0.01, top=0.93, bottom=0.06, hspace=0.28)
    axes.set_title(_literal(title), fontsize=9)
    if not data["points"]:
        axes.text(0.5, 0.5, EMPTY_MESSAGE, ha="center", va="center", fontsize=16, transform=axes.transAxes)
        axes.set_axis_off()
    else:  # layer by layer, then the axes and the legend
        _mpl_batches(axes, data["batches"])
        _mpl_band(axes, data)
        _mpl_points(axes, data)
        _mpl_failures(axes, data["failures"])
        _mpl_literature(axes, data["literature"])
        _mpl_best(axes, data["best"])
        _mpl_axes(axes, data, metric)
    _mpl_curves(rounds, data["curves"], metric)
    buffer = io.BytesIO()
    # light PNG compression: a third of the render time saved, a slightly larger file (runs after every trial)
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    return buffer.getvalue()


def _mpl_curves(axes, curves: list[dict], metric: str) -> None:
    """The lower panel: each run's metric per round (baseline, best, then the candidates in the order given)."""
    if not curves:
        axes.text(0.5, 0.5, NO_CURVES_MESSAGE, ha="center", va="center", fontsize=11, transform=axes.transAxes)
        axes.set_axis_off()
        return
    from matplotlib.ticker import MaxNLocator

    others = iter(CURVE_COLORS * (len(curves) // len(CURVE_COLORS) + 1))
    for curve in curves:
        role = curve.get("role")
        color = COLORS[v.BASELINE] if role == v.BASELINE else COLORS["best"] if role == "best" else next(others)
        axes.plot(
            curve["rounds"],
            curve["values"],
            marker="o",
            markersize=3,
            linewidth=2.2 if role in (v.BASELINE, "best") else 1.2,
            linestyle="-" if role in (v.BASELINE, "best") else "--",
            color=color,
            label=_literal(_cut(curve_label(curve), LEGEND_CHARS)),
            zorder=3 if role == "best" else 2,
        )
    axes.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    axes.set_xlabel("round")
    axes.set_ylabel(_literal(metric))
    axes.set_title("metric per round (each run's round records)", fontsize=9)
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)


def curve_label(curve: dict) -> str:
    """The legend text of one curve: its run name, with its role when that is not the name."""
    name, role = str(curve.get("name") or ""), str(curve.get("role") or "")
    return name if role in ("", "candidate", name) else f"{role}: {name}"


def _mpl_batches(axes, spans: list[dict]) -> None:
    """A shaded column behind each batch's experiments, labelled at the top (one legend entry for all)."""
    for index, span in enumerate(spans):
        axes.axvspan(
            span["x_min"] - BATCH_MARGIN,
            span["x_max"] + BATCH_MARGIN,
            color=COLORS["batch"],
            zorder=0.5,
            label="ran together (batch)" if index == 0 else None,
        )
    for span in spans if len(spans) <= MAX_EVENT_LABELS else []:
        axes.text(
            (span["x_min"] + span["x_max"]) / 2,
            0.99,
            span["label"],
            transform=axes.get_xaxis_transform(),
            fontsize=7,
            color=COLORS["batch_label"],
            ha="center",
            va="top",
        )


def _mpl_band(axes, data: dict) -> None:
    if not data.get("band"):
        return
    best, band = data["best"], data["band"]
    axes.axhspan(
        best["score"] - band,
        best["score"] + band,
        xmin=0,
        xmax=1,
        color=COLORS["band"],
        alpha=0.5,
        zorder=1,
        label=_cut(f"noise band (best +- {format_score(band)})", LEGEND_CHARS),
    )


def _mpl_points(axes, data: dict) -> None:
    """The scored points by status, and the running best as a step line."""
    for status in SCORED_SERIES:
        chosen = [point for point in data["points"] if point["status"] == status]
        if chosen:
            axes.plot(
                [p["x"] for p in chosen],
                [p["score"] for p in chosen],
                linestyle="none",
                marker="o",
                markersize=6,
                color=COLORS[status],
                label=status,
                zorder=3,
            )
    xs, ys = _best_steps(data)
    if xs:
        axes.step(xs, ys, where="post", color=COLORS["best"], linewidth=1.5, label="running best", zorder=2)


def _mpl_failures(axes, failures: list[dict]) -> None:
    """Failed experiments as markers along the x axis: pruned ones (stopped early) apart from crashes."""
    for pruned, marker, color, label in (
        (True, "v", COLORS[v.DISCARD], "pruned (stopped early)"),
        (False, "x", COLORS[v.CRASH], "crash / no score"),
    ):
        xs = [f["x"] for f in failures if f["pruned"] == pruned]
        if xs:
            axes.plot(
                xs,
                [0.02] * len(xs),
                linestyle="none",
                marker=marker,
                markersize=7,
                color=color,
                transform=axes.get_xaxis_transform(),
                label=label,
                zorder=3,
            )


def _mpl_literature(axes, events: list[dict]) -> None:
    if not events:
        return
    axes.vlines(
        [event["x"] for event in events],
        0,
        1,
        transform=axes.get_xaxis_transform(),
        linewidth=1,
        colors=COLORS[v.LITERATURE],
        linestyles="--",
        alpha=0.7,
        label="literature event",
    )
    for x, label in event_labels(events) if len(events) <= MAX_EVENT_LABELS else []:
        axes.text(
            x,
            0.98,
            _literal(label),
            transform=axes.get_xaxis_transform(),
            fontsize=7,
            color=COLORS[v.LITERATURE],
            ha="right",
            va="top",
            rotation=90,
        )


def _mpl_best(axes, best: dict | None) -> None:
    """The best point ringed and annotated."""
    if not best:
        return
    axes.plot(
        [best["x"]],
        [best["score"]],
        linestyle="none",
        marker="o",
        markersize=14,
        markerfacecolor="none",
        markeredgecolor=COLORS["best"],
        markeredgewidth=2,
        label="best",
        zorder=4,
    )
    axes.annotate(
        _literal(f"best {best['name']}: {format_score(best['score'])}"),
        xy=(best["x"], best["score"]),
        xytext=(12, 12),
        textcoords="offset points",
        fontsize=8,
        arrowprops={"arrowstyle": "->", "color": COLORS["best"]},
    )


def _mpl_axes(axes, data: dict, metric: str) -> None:
    from matplotlib.ticker import MaxNLocator

    axes.set_ylim(*_y_range(data))
    axes.set_xlim(0.5, max(data["x_max"], 1) + 0.5)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    axes.set_xlabel("experiment (ledger order)")
    axes.set_ylabel(_literal(metric))
    axes.grid(alpha=0.3)
    # outside the axes, so it never covers a point or an event label (the right margin is kept for it)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)


def event_labels(events: list[dict]) -> list[tuple[float, str]]:
    """One label per literature-marker position (events recorded back to back share one), each id cut to
    MAX_LABEL_CHARS so the vertical label fits inside the axes."""
    grouped: dict[float, list[str]] = {}
    for event in events:
        grouped.setdefault(event["x"], []).append(event["event_id"] or "(unlabelled)")
    return [(x, _cut(", ".join(labels))) for x, labels in grouped.items()]


def _cut(label: str, limit: int = MAX_LABEL_CHARS) -> str:
    return label if len(label) <= limit else label[: limit - 3] + "..."


def _literal(text: str) -> str:
    """Text matplotlib shows verbatim (a `$` would otherwise start math mode)."""
    return text.replace("$", r"\$")
