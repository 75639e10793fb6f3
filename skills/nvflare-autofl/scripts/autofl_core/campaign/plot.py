"""progress.png from the ledger: pure plot data, then matplotlib (Agg), a Pillow fallback, or a text note.

Usage::

    data = plot_data(rows, "max")          # pure: points, failures, literature markers, running best, best
    summary = render(rows, "progress.png", metric="accuracy", mode="max")   # {"backend": ..., "output": ...}
    render(rows, "progress.png", metric="accuracy", mode="max", band=0.004)    # shade the best +- 0.004
    render(rows, "progress.png", metric="accuracy", mode="max", batches=[{"members": ["a", "b"], "parallel": 2}])

The best point is ringed in the best color; `render` reports where (`best_pixel`, image pixels from the
top-left corner) so the picture can be checked against the data.

The x axis counts experiments (baseline, keep, discard and crash rows) in ledger order, starting at 1;
a literature event sits half a step after the experiment it follows. Replicate rows (reruns of the best) are
experiments of their own color and never move the running best; `band` shades the best +- the noise margin.
A pruned candidate (a discard the pruning rule stopped early, without a score: `campaign/prune`) is a grey
triangle at the bottom, apart from the crashes, and the title counts it among the discards (`N pruned`).
`batches` (the runner's `{members, parallel}` records of the candidates that ran together, see
`runner/report/facts.batches`) shades each batch's span of experiments and labels it `batch N`; without batches
the picture is what it was before batches existed. Plotting libraries are imported only inside the renderers,
never when this module is imported.

`AUTOFL_PLOT_RENDERER=pillow` in the runner's environment draws with Pillow only (about 0.1 s of CPU instead of
the 1.5-2 s that importing matplotlib and rendering costs, after every action): for small or busy machines and
for test suites that run hundreds of actions. Unset or `auto`: matplotlib, then Pillow.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

from ..common import atomic
from . import prune
from . import vocabulary as v
from .compare import check_mode, format_score

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
SIZE = (1000, 560)  # pixels, both backends
EMPTY_MESSAGE = "no scored results yet"
MAX_EVENT_LABELS = 30  # more literature markers than this stay unlabelled (text artists are slow and overlap)
MAX_LABEL_CHARS = 24  # a longer event id is cut in its vertical label (the axes are about 40 characters high)
RENDERER_VARIABLE = "AUTOFL_PLOT_RENDERER"
RENDERER_CHOICES = {"auto": ("matplotlib", "pillow"), "pillow": ("pillow",)}


def renderers() -> tuple[str, ...]:
    """The backends to try, in order, as `AUTOFL_PLOT_RENDERER` asks (an unknown value warns and means auto)."""
    wanted = os.environ.get(RENDERER_VARIABLE, "").strip().lower() or "auto"
    if wanted not in RENDERER_CHOICES:
        print(
            f"plot: {RENDERER_VARIABLE}={wanted!r} is not one of {', '.join(RENDERER_CHOICES)}; using auto",
            file=sys.stderr,
        )
        wanted = "auto"
    return RENDERER_CHOICES[wanted]


BATCH_MARGIN = 0.4  # a batch's shading reaches this far beyond its first and last experiment (a literature
# marker half a step before the batch stays outside it)


def plot_data(rows: list[dict], mode: str, batches: list[dict] | None = None) -> dict:
    """Everything the plot shows, computed from ledger rows and the batches that ran (pure)."""
    check_mode(mode)
    points, failures, literature, running = [], [], [], []
    attempts: dict[str, int] = {}
    best = None
    tracker = v.RunningBest(mode)
    x = 0
    for index, row in enumerate(rows):
        status, score, name = row.get("status"), row.get("score"), row.get("name") or ""
        if status == v.LITERATURE:
            literature.append({"x": x + 0.5, "row": index, "event_id": row.get("literature_event_id") or ""})
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
        if row.get("status") in counts:
            counts[row["status"]] += 1
        scored_attempts += row.get("status") in v.ATTEMPTS and row.get("score") is not None
    return {
        "points": points,
        "failures": failures,
        "literature": literature,
        "running_best": running,
        "best": best,
        "batches": batch_spans(attempts, batches or []),
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
    """Import the plotting library ahead of time (e.g. in a thread while a trial runs, so the render after it
    is cheap). Returns the backend `render` will use, or None when only the text note is possible."""
    for backend in renderers():
        try:
            if backend == "matplotlib":
                import matplotlib.backends.backend_agg  # noqa: F401
                import matplotlib.figure  # noqa: F401
            else:
                import PIL.ImageDraw  # noqa: F401
            return backend
        except ImportError:
            continue
    return None


def prime() -> None:
    """Draw a throwaway plot in memory so fonts and glyph caches are loaded before the real render (used by
    the plot worker while a trial runs; nothing is written)."""
    data = plot_data([{"status": v.BASELINE, "name": "b", "score": 0.5}], "max")
    try:
        _draw_matplotlib(data, title_text(data, "metric", "max"), "metric")
    except ImportError:
        pass


def title_text(data: dict, metric: str, mode: str) -> str:
    """Plot title (two lines, so it fits): metric, direction and counts, as the report counts them: candidate attempts (keep, discard,
    crash rows; the baseline and replicates are never attempts) and how many of them scored."""
    direction = "higher is better" if mode == "max" else "lower is better"
    counts = data["counts"]
    attempts = sum(counts[status] for status in v.ATTEMPTS)
    replicates = f", {counts[v.REPLICATE]} replicate(s) (not attempts)" if counts[v.REPLICATE] else ""
    pruned = f" ({data['pruned']} pruned)" if data.get("pruned") else ""
    return (
        f"Auto-FL progress: {metric} ({mode}, {direction})\n{attempts} attempt(s) ({data['scored_attempts']} "
        f"scored): {counts[v.KEEP]} kept, {counts[v.DISCARD]} discarded{pruned}, {counts[v.CRASH]} crashed; "
        f"{counts[v.LITERATURE]} literature{replicates}"
    )


def render(
    rows: list[dict],
    output: str | os.PathLike,
    *,
    metric: str,
    mode: str,
    band: float | None = None,
    batches: list[dict] | None = None,
) -> dict:
    """Write the progress PNG to `output` atomically; returns which backend drew it.

    `band` (the noise margin) shades best +- band from the best point on; `batches` shades the candidates that ran
    together. Falls back from matplotlib to Pillow; with neither, writes a text note beside `output` (same name,
    `.txt`) and warns on stderr. `best_pixel` is the ringed best point in the image, or None.
    """
    data = plot_data(rows, mode, batches)
    data["band"] = band if band and data["best"] else None
    title = title_text(data, metric, mode)
    drawers = {"matplotlib": _draw_matplotlib, "pillow": _draw_pillow}
    for backend in renderers():
        draw = drawers[backend]
        try:
            png, best_pixel = draw(data, title, metric)
        except ImportError:
            continue
        except Exception as exc:  # a plotting library bug must not lose the campaign's progress output
            print(f"plot: {backend} failed ({type(exc).__name__}: {exc}); trying the next renderer", file=sys.stderr)
            continue
        atomic.write_bytes(output, png)
        return {
            "backend": backend,
            "output": str(output),
            "best": data["best"],
            "best_pixel": best_pixel,
            "scored": data["scored"],
        }
    note = Path(output).with_suffix(".txt")
    atomic.write_text(note, text_summary(data, title))
    print(f"plot: neither matplotlib nor Pillow is installed; wrote a text summary to {note}", file=sys.stderr)
    return {"backend": "text", "output": str(note), "best": data["best"], "best_pixel": None, "scored": data["scored"]}


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


def _draw_matplotlib(data: dict, title: str, metric: str) -> tuple[bytes, list[int] | None]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(SIZE[0] / 100, SIZE[1] / 100), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.set_title(_literal(title), fontsize=9)
    if not data["points"]:
        axes.text(0.5, 0.5, EMPTY_MESSAGE, ha="center", va="center", fontsize=16, transform=axes.transAxes)
        axes.set_axis_off()
    else:
        _matplotlib_series(axes, data, metric)
    buffer = io.BytesIO()
    # light PNG compression: a third of the render time saved, a slightly larger file (runs after every trial)
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    best = data["best"]
    if best is None:
        return buffer.getvalue(), None
    x, y = axes.transData.transform((best["x"], best["score"]))  # display pixels, origin bottom-left
    return buffer.getvalue(), [round(x), round(SIZE[1] - y)]


def _matplotlib_series(axes, data: dict, metric: str) -> None:
    """The data part of the matplotlib figure, layer by layer, then the axes and the legend."""
    _mpl_batches(axes, data["batches"])
    _mpl_band(axes, data)
    _mpl_points(axes, data)
    _mpl_failures(axes, data["failures"])
    _mpl_literature(axes, data["literature"])
    _mpl_best(axes, data["best"])
    _mpl_axes(axes, data, metric)


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
        label=f"noise band (best +- {format_score(band)})",
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
    pruned = [f for f in failures if f["pruned"]]
    failures = [f for f in failures if not f["pruned"]]
    if pruned:
        axes.plot(
            [f["x"] for f in pruned],
            [0.02] * len(pruned),
            linestyle="none",
            marker="v",
            markersize=7,
            color=COLORS[v.DISCARD],
            transform=axes.get_xaxis_transform(),
            label="pruned (stopped early)",
            zorder=3,
        )
    if failures:
        axes.plot(
            [f["x"] for f in failures],
            [0.02] * len(failures),
            linestyle="none",
            marker="x",
            markersize=7,
            color=COLORS[v.CRASH],
            transform=axes.get_xaxis_transform(),
            label="crash / no score",
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
    # outside the axes, so it never covers a point or an event label
    axes.figure.subplots_adjust(left=0.08, right=0.8)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)


def event_labels(events: list[dict]) -> list[tuple[float, str]]:
    """One label per literature-marker position (events recorded back to back share one), each id cut to
    MAX_LABEL_CHARS so the vertical label fits inside the axes."""
    grouped: dict[float, list[str]] = {}
    for event in events:
        grouped.setdefault(event["x"], []).append(event["event_id"] or "(unlabelled)")
    return [(x, _cut(", ".join(labels))) for x, labels in grouped.items()]


def _cut(label: str) -> str:
    return label if len(label) <= MAX_LABEL_CHARS else label[: MAX_LABEL_CHARS - 3] + "..."


def _literal(text: str) -> str:
    """Text matplotlib shows verbatim (a `$` would otherwise start math mode)."""
    return text.replace("$", r"\$")


def _draw_pillow(data: dict, title: str, metric: str) -> tuple[bytes, list[int] | None]:
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", SIZE, "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    draw.text((20, 12), title, fill="black", font=font)
    best_pixel = None
    if not data["points"]:
        draw.text((SIZE[0] // 2 - 80, SIZE[1] // 2), EMPTY_MESSAGE, fill="black", font=font)
    else:
        best_pixel = _pillow_series(draw, font, data, metric)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue(), best_pixel


def _pillow_series(draw, font, data: dict, metric: str) -> list[int] | None:
    """Draw the batches, noise band, axes box, literature markers, running best, points and crashes; return the
    best point's pixel."""
    left, top, right, bottom = 70, 40, SIZE[0] - 20, SIZE[1] - 50
    low, high = _y_range(data)
    span_x = max(data["x_max"], 1)

    def to_px(x: float, y: float) -> tuple[float, float]:
        return left + (x - 0.5) / span_x * (right - left), bottom - (y - low) / (high - low) * (bottom - top)

    for span in data["batches"]:
        x_left, _ = to_px(span["x_min"] - BATCH_MARGIN, low)
        x_right, _ = to_px(span["x_max"] + BATCH_MARGIN, low)
        draw.rectangle((x_left, top, x_right, bottom), fill=COLORS["batch"])
        draw.text((x_left + 3, top + 3), span["label"], fill=COLORS["batch_label"], font=font)
    if data.get("band"):
        best, band = data["best"], data["band"]
        _, upper = to_px(best["x"], best["score"] + band)
        _, lower = to_px(best["x"], best["score"] - band)
        draw.rectangle((left, upper, right, lower), fill=COLORS["band"])
    draw.rectangle((left, top, right, bottom), outline="black")
    draw.text((left - 60, top), f"{high:.4g}", fill="black", font=font)
    draw.text((left - 60, bottom - 10), f"{low:.4g}", fill="black", font=font)
    draw.text((left, bottom + 10), f"experiment (ledger order); y: {metric}", fill="black", font=font)
    for event in data["literature"]:
        x, _ = to_px(event["x"], low)
        for y in range(top, bottom, 8):
            draw.line((x, y, x, min(y + 4, bottom)), fill=COLORS[v.LITERATURE])
    xs, ys = _best_steps(data)
    vertices = []
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if i:
            vertices.append(to_px(x, ys[i - 1]))
        vertices.append(to_px(x, y))
    if len(vertices) > 1:
        draw.line(vertices, fill=COLORS["best"], width=2)
    for point in data["points"]:
        x, y = to_px(point["x"], point["score"])
        draw.ellipse((x - 4, y - 4, x + 4, y + 4), fill=COLORS[point["status"]])
    for failure in data["failures"]:
        x, _ = to_px(failure["x"], low)
        if failure["pruned"]:  # a grey downward triangle: stopped early by the pruning rule
            draw.polygon([(x - 5, bottom - 12), (x + 5, bottom - 12), (x, bottom - 4)], fill=COLORS[v.DISCARD])
            continue
        draw.line((x - 4, bottom - 12, x + 4, bottom - 4), fill=COLORS[v.CRASH], width=2)
        draw.line((x - 4, bottom - 4, x + 4, bottom - 12), fill=COLORS[v.CRASH], width=2)
    best = data["best"]
    if not best:
        return None
    x, y = to_px(best["x"], best["score"])
    draw.ellipse((x - 9, y - 9, x + 9, y + 9), outline=COLORS["best"], width=2)
    draw.text((x + 12, y - 20), f"best {best['name']}: {format_score(best['score'])}", fill="black", font=font)
    return [round(x), round(y)]
