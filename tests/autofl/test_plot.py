"""progress.png: pure plot data, the one matplotlib picture (progress and round curves), the text summary, CLI."""

import dataclasses
import json
import subprocess
import sys

import pytest
from autofl_core.campaign import ledger, plot
from PIL import Image, ImageStat

BEST_RGB = (0xFF, 0x7F, 0x0E)
# the default renderer (matplotlib); the suite elsewhere asks for the text summary (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("matplotlib_plot")


@pytest.fixture
def figures(monkeypatch):
    """The matplotlib figures the plot draws, captured at savefig (read as objects, not pixels)."""
    from matplotlib.figure import Figure

    drawn = []
    original = Figure.savefig

    def capture(self, *args, **kwargs):
        drawn.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    return drawn


def _best_pixel(figure):
    """Where the ringed best point sits in the saved image (pixels from the top-left corner)."""
    axes = figure.axes[0]
    (ring,) = [line for line in axes.get_lines() if line.get_label() == "best"]
    x, y = axes.transData.transform((ring.get_xdata()[0], ring.get_ydata()[0]))
    return [round(x), round(plot.SIZE[1] - y)]


def r(status, score=None, name=None, lit=""):
    values = dict.fromkeys(ledger.COLUMNS, "")
    values.update(status=status, score=score, runtime_seconds=None, name=name or status, literature_event_id=lit)
    values["metric_name"] = "accuracy" if score is not None else ""
    return ledger.LedgerRow(**values)


EVERY_STATUS = [
    r("baseline", 0.80, "baseline"),
    r("discard", 0.78, "lr-half"),
    r("keep", 0.84, "lr-x2"),
    r("crash", None, "broken"),
    r("infrastructure_retry", None, "sandbox"),
    r("literature", None, "fedprox", lit="lit-0001"),
    r("keep", 0.86, "fedprox-faithful"),
    r("discard", 0.85, "fedprox-tuned"),
    r("discard", 0.86, "fedprox-tie"),
]


def _block(monkeypatch, *packages):
    for name in list(sys.modules):
        if name.split(".")[0] in packages:
            monkeypatch.setitem(sys.modules, name, None)
    for package in packages:
        monkeypatch.setitem(sys.modules, package, None)


def _check_png(path):
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size == plot.SIZE
        rgb = image.convert("RGB")
    assert ImageStat.Stat(rgb.convert("L")).var[0] > 50, "the image must not be blank"
    return rgb


def _has_color(image, rgb, tolerance=12):
    return any(
        all(abs(channel - want) <= tolerance for channel, want in zip(pixel, rgb, strict=True))
        for _count, pixel in image.getcolors(image.width * image.height)
    )


# --- pure plot data -----------------------------------------------------------------------------


def test_plot_data_every_status():
    data = plot.plot_data(EVERY_STATUS, "max")
    assert [(p["x"], p["status"], p["score"]) for p in data["points"]] == [
        (1, "baseline", 0.80),
        (2, "discard", 0.78),
        (3, "keep", 0.84),
        (5, "keep", 0.86),
        (6, "discard", 0.85),
        (7, "discard", 0.86),
    ]
    assert data["failures"] == [{"x": 4, "row": 3, "name": "broken", "status": "crash", "pruned": False}]
    assert data["literature"] == [{"x": 4.5, "row": 5, "event_id": "lit-0001"}]
    assert data["running_best"] == [{"x": 1, "score": 0.8}, {"x": 3, "score": 0.84}, {"x": 5, "score": 0.86}]
    assert data["best"] == {"x": 5, "row": 6, "score": 0.86, "status": "keep", "name": "fedprox-faithful"}
    assert data["x_max"] == 7 and data["scored"] == 6
    assert data["counts"] == {
        "baseline": 1,
        "keep": 2,
        "discard": 3,
        "crash": 1,
        "literature": 1,
        "infrastructure_retry": 1,
        "replicate": 0,
    }


def test_plot_data_min_mode_and_ties_at_ledger_precision():
    rows = [r("baseline", 0.5), r("keep", 0.4, "down"), r("keep", 0.4000000000000001, "tie"), r("keep", 0.6, "up")]
    data = plot.plot_data(rows, "min")
    assert data["best"]["name"] == "down"
    assert [step["score"] for step in data["running_best"]] == [0.5, 0.4]


def test_plot_data_unscored_baseline_is_a_failure_mark():
    data = plot.plot_data([r("baseline", None), r("baseline", 0.7, "baseline_retry_1")], "max")
    assert data["failures"][0]["status"] == "baseline" and data["best"]["name"] == "baseline_retry_1"


def test_title_has_metric_direction_and_counts():
    title = plot.title_text(plot.plot_data(EVERY_STATUS, "min"), "loss", "min")
    assert (
        "loss" in title and "lower is better" in title and "6 attempt(s) (5 scored)" in title and "1 crashed" in title
    )


# --- renderers ----------------------------------------------------------------------------------


def test_matplotlib_render_every_status(tmp_path):
    output = tmp_path / "progress.png"
    output.write_bytes(b"stale")
    summary = plot.render(EVERY_STATUS, output, metric="accuracy", mode="max")
    assert summary["backend"] == "matplotlib" and summary["best"]["name"] == "fedprox-faithful"
    image = _check_png(output)
    assert _has_color(image, BEST_RGB), "running best line / best annotation drawn"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["progress.png"], "atomic write leaves no temp file"


def test_matplotlib_without_a_best_draws_no_best_line(tmp_path):
    rows = [r("discard", 0.5, "a"), r("discard", 0.6, "b"), r("crash")]
    summary = plot.render(rows, tmp_path / "p.png", metric="accuracy", mode="max")
    assert summary["best"] is None
    assert not _has_color(_check_png(tmp_path / "p.png"), BEST_RGB)


def test_matplotlib_empty_ledger_image(tmp_path):
    summary = plot.render([r("crash"), r("literature", lit="lit-0001")], tmp_path / "e.png", metric="acc", mode="max")
    assert summary["scored"] == 0
    empty = _check_png(tmp_path / "e.png")
    plot.render(EVERY_STATUS, tmp_path / "full.png", metric="acc", mode="max")
    assert empty.tobytes() != _check_png(tmp_path / "full.png").tobytes()


def _ring_above(image, pixel):
    """True when the best color appears just above `pixel`, where the best-point ring passes (no line does)."""
    x, y = pixel
    strip = image.crop((x - 2, y - 11, x + 3, y - 6))
    return _has_color(strip, BEST_RGB, tolerance=40)


def test_the_best_point_is_ringed_where_the_data_puts_it(tmp_path, figures):
    # Same scores and x positions in both modes, so the two images share their axes: only the best differs.
    high = plot.render(EVERY_STATUS, tmp_path / "max.png", metric="accuracy", mode="max")
    low = plot.render(EVERY_STATUS, tmp_path / "min.png", metric="accuracy", mode="min")
    assert high["backend"] == low["backend"] == "matplotlib"
    assert (high["best"]["name"], low["best"]["name"]) == ("fedprox-faithful", "baseline")
    high_pixel, low_pixel = _best_pixel(figures[0]), _best_pixel(figures[1])
    assert high_pixel[0] > low_pixel[0], "a later experiment sits further right"
    assert high_pixel[1] < low_pixel[1], "a higher score sits higher"
    max_image, min_image = _check_png(tmp_path / "max.png"), _check_png(tmp_path / "min.png")
    assert _ring_above(max_image, high_pixel) and _ring_above(min_image, low_pixel)
    assert not _ring_above(max_image, low_pixel), "the max-mode image rings only its own best"
    assert not _ring_above(min_image, high_pixel), "the min-mode image rings only its own best"


def test_text_summary_without_matplotlib_replaces_a_stale_picture(tmp_path, monkeypatch, capsys):
    plot.render(EVERY_STATUS, tmp_path / "progress.png", metric="accuracy", mode="max")
    assert (tmp_path / "progress.png").exists()
    with monkeypatch.context() as patch:
        _block(patch, "matplotlib")
        patch.setattr(plot.importlib.util, "find_spec", lambda name: None)
        summary = plot.render(EVERY_STATUS, tmp_path / "progress.png", metric="accuracy", mode="max")
    assert summary["backend"] == "text" and summary["output"] == str(tmp_path / "progress.txt")
    assert summary["reason"].startswith("matplotlib is not installed")
    note = (tmp_path / "progress.txt").read_text()
    assert "accuracy (max" in note and "fedprox-faithful  <- best" in note and "(no score)  broken" in note
    assert not (tmp_path / "progress.png").exists(), "a stale picture would show an older campaign"
    assert "no picture (matplotlib is not installed" in capsys.readouterr().err
    plot.render(EVERY_STATUS, tmp_path / "progress.png", metric="accuracy", mode="max")
    assert (tmp_path / "progress.png").exists() and not (tmp_path / "progress.txt").exists()


def test_module_import_does_not_load_plotting_libraries(python_exe, repo_root):
    scripts = repo_root / "skills" / "nvflare-autofl" / "scripts"
    code = (
        f"import sys; sys.path.insert(0, {str(scripts)!r}); import autofl_core.campaign.plot\n"
        "print([m for m in ('matplotlib', 'PIL') if m in sys.modules])"
    )
    done = subprocess.run([python_exe, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


# --- CLI ----------------------------------------------------------------------------------------


@pytest.fixture
def cli(repo_root, python_exe):
    script = str(repo_root / "skills" / "nvflare-autofl" / "scripts" / "plot_progress.py")

    def run(*args, cwd=None):
        return subprocess.run(
            [python_exe, script, *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd
        )

    return run


def _write_ledger(folder, rows):
    path = folder / "results.tsv"
    for row in rows:
        ledger.append_row(path, {key: value for key, value in row.to_row().items() if value not in ("", None)})
    return path


def test_cli_defaults_output_metric_and_stored_mode(tmp_path, cli):
    results = _write_ledger(tmp_path, EVERY_STATUS)
    (tmp_path / ".nvflare" / "autofl").mkdir(parents=True)
    (tmp_path / ".nvflare" / "autofl" / "campaign_state.json").write_text('{"mode": "min"}')
    done = cli(results, cwd="/")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["output"] == str(tmp_path / "progress.png") and summary["backend"] == "matplotlib"
    assert summary["best"] == {"name": "baseline", "row": 0, "score": 0.8, "status": "baseline", "x": 1}
    _check_png(tmp_path / "progress.png")


def test_cli_explicit_output_and_mode(tmp_path, cli):
    results = _write_ledger(tmp_path, EVERY_STATUS)
    out = tmp_path / "plots" / "p.png"
    done = cli(results, "--output", out, "--metric", "acc", "--mode", "max")
    assert done.returncode == 0 and json.loads(done.stdout)["best"]["score"] == 0.86
    _check_png(out)


def test_cli_corrupt_ledger_and_unwritable_output(tmp_path, cli):
    bad = tmp_path / "results.tsv"
    bad.write_text("garbage\n")
    done = cli(bad, "--mode", "max")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "header" in done.stderr
    assert not (tmp_path / "progress.png").exists()
    (tmp_path / "ok").mkdir()
    good = _write_ledger(tmp_path / "ok", EVERY_STATUS)
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = cli(good, "--output", blocker / "progress.png")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_the_text_renderer_is_chosen_by_the_environment_and_never_imports_matplotlib(python_exe, repo_root, tmp_path):
    scripts = repo_root / "skills" / "nvflare-autofl" / "scripts"
    code = (
        f"import sys; sys.path.insert(0, {str(scripts)!r}); from autofl_core.campaign import plot, ledger\n"
        "rows = [ledger.LedgerRow(status='baseline', score=0.5, name='b', metric_name='m')]\n"
        "print(plot.warm_up(), plot.render(rows, sys.argv[1], metric='m', mode='max')['backend'],\n"
        "      'matplotlib' in sys.modules, 'PIL' in sys.modules)"
    )
    output = tmp_path / "progress.png"
    env = {"PATH": "/usr/bin:/bin", "AUTOFL_PLOT_RENDERER": "text"}
    done = subprocess.run([python_exe, "-c", code, str(output)], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.split() == ["None", "text", "False", "False"], done.stderr
    assert done.stderr == "", "a text summary asked for is nothing to warn about"
    assert not output.exists() and (tmp_path / "progress.txt").exists()
    env["AUTOFL_PLOT_RENDERER"] = "matplotlib"
    done = subprocess.run([python_exe, "-c", code, str(output)], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.split()[:3] == ["matplotlib", "matplotlib", "True"], done.stderr
    assert Image.open(output).size == plot.SIZE and not (tmp_path / "progress.txt").exists()


def test_an_unknown_renderer_name_warns_and_means_matplotlib(monkeypatch, capsys):
    monkeypatch.setenv("AUTOFL_PLOT_RENDERER", "pillow")
    assert plot.renderer() == "matplotlib"
    assert "AUTOFL_PLOT_RENDERER='pillow' is not one of matplotlib, text; using matplotlib" in capsys.readouterr().err
    monkeypatch.setenv("AUTOFL_PLOT_RENDERER", " Text ")
    assert plot.renderer() == "text" and plot.unavailable_reason().startswith("AUTOFL_PLOT_RENDERER=text")


def test_warm_up_reports_the_backend(monkeypatch):
    assert plot.warm_up() == "matplotlib"
    _block(monkeypatch, "matplotlib")
    assert plot.warm_up() is None


def test_the_same_input_draws_the_same_picture(tmp_path):
    """One renderer, no state: two renders of the same data are byte-identical (the plot worker and the runner
    draw with this same function)."""
    curves = [{"name": "baseline", "role": "baseline", "rounds": [0, 1], "values": [0.5, 0.8]}]
    for name in ("a.png", "b.png"):
        plot.render(EVERY_STATUS, tmp_path / name, metric="accuracy", mode="max", band=0.01, curves=curves)
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_dollar_signs_are_shown_literally(tmp_path, capsys):
    rows = [r("baseline", 0.5, "base$"), r("keep", 0.6, "$\\frac{$"), r("literature", lit="lit$^")]
    summary = plot.render(rows, tmp_path / "p.png", metric="acc$", mode="max")
    assert summary["backend"] == "matplotlib", capsys.readouterr().err
    _check_png(tmp_path / "p.png")


def test_a_failing_renderer_writes_the_text_summary_with_the_reason(tmp_path, monkeypatch, capsys):
    def broken(*_args):
        raise RuntimeError("font cache corrupt")

    monkeypatch.setattr(plot, "draw", broken)
    summary = plot.render(EVERY_STATUS, tmp_path / "p.png", metric="accuracy", mode="max")
    assert summary["backend"] == "text" and summary["reason"] == "matplotlib failed (RuntimeError: font cache corrupt)"
    assert "matplotlib failed (RuntimeError: font cache corrupt)" in capsys.readouterr().err
    assert not (tmp_path / "p.png").exists() and (tmp_path / "p.txt").exists()


def test_text_summary_is_in_ledger_order():
    data = plot.plot_data(EVERY_STATUS, "max")
    lines = plot.text_summary(data, "t").splitlines()[1:]
    assert [line.split()[0] for line in lines] == ["1", "2", "3", "4", "5", "6", "7"]
    assert "(no score)  broken" in lines[3]


def test_cli_missing_ledger_plots_empty_but_a_missing_folder_is_refused(tmp_path, cli):
    done = cli(tmp_path / "results.tsv", "--mode", "max")
    assert done.returncode == 0 and "does not exist; plotting an empty ledger" in done.stderr
    assert json.loads(done.stdout)["scored"] == 0
    _check_png(tmp_path / "progress.png")
    done = cli(tmp_path / "typo" / "deeper" / "results.tsv", "--mode", "max")
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert "typo/deeper does not exist" in done.stderr
    assert not (tmp_path / "typo").exists()


# --- batches: the candidates that ran together (issue 24, point 8) --------------------------------------------

BATCHED = [
    r("baseline", 0.80, "baseline"),
    r("keep", 0.84, "lr-a"),
    r("keep", 0.86, "bonus"),
    r("crash", None, "broken"),
    r("literature", None, "fedprox", lit="lit-0001"),
    r("replicate", 0.85, "replicate_bonus_1"),
    r("discard", 0.83, "alone"),
    r("infrastructure_retry", None, "denied"),
    r("discard", 0.82, "p"),
    r("discard", 0.81, "q"),
]
BATCHES = [
    {"members": ["p", "q"], "parallel": 1},  # given after the first one in ledger order: numbered by the ledger
    {"members": ["lr-a", "bonus", "broken"], "parallel": 3},
    {"members": ["alone", "denied"], "parallel": 2},  # one member has no experiment: nothing to group
    {"members": ["gone", "missing"], "parallel": 2},  # no row at all (e.g. an edited ledger)
]


def test_batch_spans_group_the_candidates_that_ran_together():
    data = plot.plot_data(BATCHED, "max", BATCHES)
    assert data["batches"] == [
        {"x_min": 2, "x_max": 4, "members": ["lr-a", "bonus", "broken"], "parallel": 3, "label": "batch 1"},
        {"x_min": 7, "x_max": 8, "members": ["p", "q"], "parallel": 1, "label": "batch 2"},
    ]
    assert plot.batch_spans({"a": 1, "b": 2}, [{"members": ["a", "b"], "parallel": "3"}])[0]["parallel"] == 1
    assert plot.plot_data(BATCHED, "max")["batches"] == [] == plot.plot_data(BATCHED, "max", [])["batches"]
    without = {key: value for key, value in data.items() if key != "batches"}
    assert without == {k: v for k, v in plot.plot_data(BATCHED, "max").items() if k != "batches"}


def test_a_replicate_never_joins_a_batch_and_a_name_counts_once():
    rows = [r("baseline", 0.8, "baseline"), r("keep", 0.9, "a"), r("replicate", 0.9, "b"), r("discard", 0.7, "c")]
    (span,) = plot.plot_data(rows, "max", [{"members": ["a", "b", "c"], "parallel": 2}])["batches"]
    assert (span["x_min"], span["x_max"], span["members"]) == (2, 4, ["a", "c"])


def test_text_summary_lists_each_batch():
    lines = plot.text_summary(plot.plot_data(BATCHED, "max", BATCHES), "t").splitlines()
    assert lines[-2:] == [
        "batch 1 (experiments 2-4, 3 at a time): lr-a, bonus, broken",
        "batch 2 (experiments 7-8, one by one): p, q",
    ]
    assert not any(line.startswith("batch") for line in plot.text_summary(plot.plot_data(BATCHED, "max"), "t"))


def test_a_batch_is_shaded_and_a_campaign_without_one_is_drawn_as_before(tmp_path, figures):
    backend = "matplotlib"
    batch_rgb = tuple(int(plot.COLORS["batch"][i : i + 2], 16) for i in (1, 3, 5))
    plain = plot.render(BATCHED, tmp_path / "plain.png", metric="accuracy", mode="max")
    empty = plot.render(BATCHED, tmp_path / "empty.png", metric="accuracy", mode="max", batches=[])
    lone = [{"members": ["alone"], "parallel": 1}]
    single = plot.render(BATCHED, tmp_path / "single.png", metric="accuracy", mode="max", batches=lone)
    batched = plot.render(BATCHED, tmp_path / "batched.png", metric="accuracy", mode="max", batches=BATCHES)
    assert plain["backend"] == empty["backend"] == single["backend"] == batched["backend"] == backend
    picture = (tmp_path / "plain.png").read_bytes()
    assert (tmp_path / "empty.png").read_bytes() == picture == (tmp_path / "single.png").read_bytes()
    assert (tmp_path / "batched.png").read_bytes() != picture
    rings = [
        [line.get_xydata().tolist() for line in f.axes[0].get_lines() if line.get_label() == "best"] for f in figures
    ]
    assert rings[3] == rings[0] == [[[3.0, 0.86]]], "the shading moves no point"
    assert not _has_color(_check_png(tmp_path / "plain.png"), batch_rgb, tolerance=2)
    image = _check_png(tmp_path / "batched.png")
    assert _has_color(image, batch_rgb, tolerance=2)
    x, y = _best_pixel(figures[3])  # the best (bonus, x=3) sits inside batch 1, the discards p and q in batch 2
    assert _has_color(image.crop((x + 15, y + 35, x + 25, y + 45)), batch_rgb, tolerance=2)
    x, y = _best_pixel(figures[0])
    assert not _has_color(_check_png(tmp_path / "plain.png").crop((x + 15, y + 35, x + 25, y + 45)), batch_rgb, 2)


# --- round curves and the legends ---------------------------------------------------------------------------

CURVES = [
    {"name": "baseline", "role": "baseline", "rounds": [0, 1, 2, 3], "values": [0.30, 0.60, 0.72, 0.80]},
    {"name": "fedprox-faithful", "role": "best", "rounds": [0, 1, 2, 3], "values": [0.35, 0.70, 0.80, 0.86]},
    {"name": "fedprox-tuned", "role": "candidate", "rounds": [0, 1, 2, 3], "values": [0.40, 0.75, 0.50, 0.45]},
]


def test_the_lower_panel_draws_each_runs_metric_per_round(tmp_path, figures):
    plot.render(EVERY_STATUS, tmp_path / "p.png", metric="accuracy", mode="max", curves=CURVES)
    rounds = figures[-1].axes[1]
    drawn = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in rounds.get_lines()}
    assert drawn == {
        "baseline": ([0, 1, 2, 3], [0.30, 0.60, 0.72, 0.80]),
        "best: fedprox-faithful": ([0, 1, 2, 3], [0.35, 0.70, 0.80, 0.86]),
        "fedprox-tuned": ([0, 1, 2, 3], [0.40, 0.75, 0.50, 0.45]),
    }
    assert rounds.get_xlabel() == "round" and rounds.get_ylabel() == "accuracy"
    image = _check_png(tmp_path / "p.png")
    (best,) = [line for line in rounds.get_lines() if line.get_label().startswith("best")]
    x, y = rounds.transData.transform((3, 0.86))
    assert _has_color(
        image.crop((round(x) - 3, round(plot.SIZE[1] - y) - 3, round(x) + 4, round(plot.SIZE[1] - y) + 4)), BEST_RGB, 40
    )
    plot.render(EVERY_STATUS, tmp_path / "none.png", metric="accuracy", mode="max")
    assert [text.get_text() for text in figures[-1].axes[1].texts] == [plot.NO_CURVES_MESSAGE]


def test_every_legend_fits_inside_the_picture(tmp_path, figures):
    """A long noise-band label and long candidate names stay inside the image (the legend used to be cut off at
    the right edge)."""
    long_curves = CURVES + [
        {"name": "a-candidate-with-a-very-long-name-indeed", "role": "best", "rounds": [0, 1], "values": [0.1, 0.2]}
    ]
    rows = [dataclasses.replace(row, score=row.score * 1e6 if row.score else None) for row in EVERY_STATUS]  # wide
    plot.render(rows, tmp_path / "p.png", metric="accuracy", mode="max", band=123456.0232701, curves=long_curves)
    figure = figures[-1]
    renderer = figure.canvas.get_renderer()
    for axes in figure.axes:
        legend = axes.get_legend().get_window_extent(renderer)
        assert 0 <= legend.x0 and legend.x1 <= plot.SIZE[0] and 0 <= legend.y0 and legend.y1 <= plot.SIZE[1]
    labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert "noise band (best +- 123456...." in labels, "cut to 30 characters"
    plot.render(EVERY_STATUS, tmp_path / "q.png", metric="accuracy", mode="max", band=0.0232701, curves=CURVES)
    labels = [text.get_text() for text in figures[-1].axes[0].get_legend().get_texts()]
    assert "noise band (best +- 0.023270)" in labels


def test_text_summary_lists_the_round_curves():
    lines = plot.text_summary(plot.plot_data(EVERY_STATUS, "max", curves=CURVES), "t").splitlines()
    assert "metric per round:" in lines
    assert "  best: fedprox-faithful: r0 0.350000, r1 0.700000, r2 0.800000, r3 0.860000" in lines


def test_view_the_picture(tmp_path):
    """Writes the picture a reviewer looks at (AUTOFL_VIEW_DIR, when set, keeps a copy)."""
    import os
    import shutil

    out = tmp_path / "progress.png"
    plot.render(
        EVERY_STATUS,
        out,
        metric="accuracy",
        mode="max",
        band=0.0232701,
        batches=[{"members": ["fedprox-faithful", "fedprox-tuned"], "parallel": 2}],
        curves=CURVES,
    )
    _check_png(out)
    if os.environ.get("AUTOFL_VIEW_DIR"):
        shutil.copy(out, os.environ["AUTOFL_VIEW_DIR"])


def test_only_its_own_stale_outputs_are_removed(tmp_path, monkeypatch):
    """The picture removes a stale summary and the summary a stale picture, but never a file it did not write."""
    (tmp_path / "p.txt").write_text("my own notes\n")
    plot.render(EVERY_STATUS, tmp_path / "p.png", metric="accuracy", mode="max")
    assert (tmp_path / "p.txt").read_text() == "my own notes\n" and (tmp_path / "p.png").exists()
    monkeypatch.setenv("AUTOFL_PLOT_RENDERER", "text")
    (tmp_path / "q.png").write_text("not a picture\n")
    summary = plot.render(EVERY_STATUS, tmp_path / "q.png", metric="accuracy", mode="max")
    assert summary["backend"] == "text" and (tmp_path / "q.png").read_text() == "not a picture\n"
    summary = plot.render(EVERY_STATUS, tmp_path / "p.png", metric="accuracy", mode="max")
    assert not (tmp_path / "p.png").exists() and (tmp_path / "p.txt").read_text().startswith("Auto-FL progress:")
    summary = plot.render(EVERY_STATUS, tmp_path / "r.txt", metric="accuracy", mode="max")
    assert (tmp_path / "r.txt").read_text().startswith("Auto-FL progress:"), "an output named .txt is the summary"


def test_the_plot_worker_primes_and_draws_the_picture(tmp_path):
    """The worker draws a throwaway plot before it says it is ready, then the runner's picture; a worker that dies
    while priming leaves the runner to draw in its own critical path."""
    from autofl_core.campaign.plot_worker import PlotWorker

    plot.warm_up()  # draws with a ledger record, as plot_data reads rows
    results = _write_ledger(tmp_path, EVERY_STATUS)
    worker = PlotWorker.start()
    try:
        summary = worker.draw(
            {"results": str(results), "output": str(tmp_path / "progress.png"), "metric": "m", "mode": "max"}
        )
    finally:
        worker.stop()
    assert summary == {"backend": "matplotlib", "reason": None}
    assert Image.open(tmp_path / "progress.png").size == plot.SIZE
