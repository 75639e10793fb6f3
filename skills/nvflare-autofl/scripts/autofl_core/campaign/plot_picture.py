"""The progress picture drawn with matplotlib (Agg): the progress panel above the round curves (see `plot`).

Plotting libraries are imported only inside `draw`, never when this module is imported.
"""

from __future__ import annotations

import io

from . import vocabulary as v
from .compare import format_score

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
NO_CURVES_MESSAGE = "no round records yet (NVFLARE writes round_metrics.jsonl per run)"
MAX_EVENT_LABELS = 30  # more literature markers than this stay unlabelled (text artists are slow and overlap)
MAX_LABEL_CHARS = 24  # a longer event id is cut in its vertical label (the axes are about 40 characters high)
LEGEND_LEFT = 0.79  # the legends start here (share of the width); the 230 pixels right of it hold 30 characters
LEGEND_CHARS = 30  # a longer legend label is cut
CURVE_COLORS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")  # candidates, in order
SCORED_SERIES = (v.BASELINE, v.KEEP, v.DISCARD, v.REPLICATE)
BATCH_MARGIN = 0.4  # a batch's shading reaches this far beyond its first and last experiment (a literature
# marker half a step before the batch stays outside it)
EMPTY_MESSAGE = "no scored results yet"


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


def draw(data: dict, title: str, metric: str) -> bytes:
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
