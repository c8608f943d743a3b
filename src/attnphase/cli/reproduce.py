"""`attnphase reproduce`: regenerate the papers' headline results as report directories."""

from __future__ import annotations

import errno
import math
import sys
import time
from pathlib import Path

import click

from attnphase.cli.common import emit, json_option
from attnphase.cli.groups import keep_when_interrupted
from attnphase.cli.output_paths import OutputPath
from attnphase.reproduce import reproducible_models, run_model
from attnphase.validate.device import DEVICE_CHOICES

__all__ = ["reproduce", "print_summary", "reuse_text"]


MODELS_WITH_REPORTS = reproducible_models()
_COUNT = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
MODEL_COUNT = _COUNT.get(len(MODELS_WITH_REPORTS), str(len(MODELS_WITH_REPORTS)))


def _help(text: str) -> str:
    """The command's help with the number and names of the models that have a report (from the registry)."""
    return text.replace("{count}", MODEL_COUNT).replace("{models}", ", ".join(MODELS_WITH_REPORTS))


REPRODUCE_HELP = _help("""Write a report directory per model: report.md, PNG figures and the CSV behind each figure.

    MODEL is one of {models}, or all ({count} models). By default (--quick) the models run at reduced sizes: all
    {count} in about 5 minutes on 2 idle cores, every number with its error. --full runs the papers' sizes and takes
    several hours on 2 cores: signal-recovery about 45-60 minutes; positional-semantic computes alpha_c and alpha_l
    at 20 values of omega (alpha_c alone over the 20 took 211 s on 2 idle cores, the curve of
    benchmarks/bench_positional_semantic.py; alpha_l adds about 15 s per omega), both branches at 11 values of
    alpha, and runs the d = 1000 gradient-descent validation (1-2 CPU-hours); copy-heads adds long Langevin chains for the hysteresis and
    bimodality figures. Each model's report is written as soon as that model finishes, so an interrupted run keeps
    the reports already written; a model's report.md is the complete report of one run (written last, its previous
    one removed when the model starts: an interrupted model has none), and each file is replaced whole, never left
    half written. The run ends with a table of each model's headline numbers, time and report (--json: every
    headline number). The simulations run on CUDA when a GPU is present (--device auto).

    \b
    Examples:
      attnphase reproduce --out reports
      attnphase reproduce copy-heads --full --out reports
    """)


@click.command(help=REPRODUCE_HELP)
@click.argument("model", type=click.Choice(MODELS_WITH_REPORTS + ["all"]), default="all", metavar="[MODEL|all]")
@click.option("--quick", "quick_asked", is_flag=True,
              help=_help("Reduced sizes, all {count} models in about 5 minutes on 2 idle cores (the default)."))
@click.option("--full", is_flag=True, help="The papers' sizes, several hours.")
@click.option(
    "--out", "out_dir", type=OutputPath(directory=True), default=Path("reports"),
    show_default=True, help="Directory that receives one report directory per model.",
)
@click.option("--device", type=click.Choice(DEVICE_CHOICES), default="auto", show_default=True,
              help="Torch device for the simulations (auto: CUDA when present).")
@json_option
def reproduce(model: str, quick_asked: bool, full: bool, out_dir: Path, device: str, as_json: bool) -> None:
    """Write a report directory per model (the help text is `REPRODUCE_HELP`, which names the registered models)."""
    if quick_asked and full:  # one would silently win; with `all`, a stray --full starts hours of work
        raise click.UsageError("--quick and --full exclude each other: give one of them (the default is --quick)")
    quick = not full
    from attnphase import progress
    from attnphase.models.registry import get
    from attnphase.reproduce.read_back import counting

    names = reproducible_models() if model == "all" else [model]
    for name in names:  # before the first model's work: `reproduce all` would stop at a later model otherwise
        report_dir = out_dir / get(name).derivation_stem
        if report_dir.exists() and not report_dir.is_dir():
            raise click.BadParameter(f"{str(report_dir)!r} is a file, not a directory: the {name} report is written "
                                     "there. Move the file or choose another --out.", param_hint="'--out'")
        problem = _why_report_directory_not_writable(report_dir)
        if problem is not None:
            raise click.BadParameter(f"{problem} The {name} report is written there: make it writable or choose "
                                     "another --out.", param_hint="'--out'")
    if device == "cuda":  # before the first model's minutes of work, not when its simulation starts
        from attnphase.errors import ParameterError
        from attnphase.validate.device import select_device

        try:
            select_device(device)
        except ParameterError as exc:  # in the common form, with the value, as simulate's --device says it
            raise ParameterError("--device", exc.value, exc.allowed) from None
    headlines: dict[str, dict] = {}
    timings: dict[str, float] = {}
    reports: dict[str, str] = {}
    from attnphase.resume import kept_by_this_process

    kept_before = {"pieces": 0}  # what this process had kept when the running model started
    keep_when_interrupted(lambda: _interrupted_text(names, reports, out_dir, kept_before["pieces"]), model)
    reused: dict[str, dict[str, int]] = {}  # per model: kept pieces read back, and those of other code not used
    with progress.task("reproduce", total=len(names)) as bar:
        for name in names:
            bar.advance(f"{name} ({'quick' if quick else 'full'})", amount=0)
            start = time.perf_counter()
            kept_before["pieces"] = kept_by_this_process()
            logged = not as_json and not progress.is_shown()  # log lines when no bar is drawn
            try:  # logged: when the model starts computing, and each time it computes after reading kept pieces
                with counting(_say_read_back(f"{name} ({'quick' if quick else 'full'})") if logged else None) as counts:
                    headlines[name] = run_model(name, out_dir, quick=quick, device=device)
            except OSError as exc:  # e.g. the disk filled up, or a file below --out turned unwritable mid-run
                message = _file_system_failure(exc, name, out_dir / get(name).derivation_stem, out_dir)
                if as_json:  # --json promises one object on stdout, a failed run included
                    emit("reproduce", model, {"quick": quick, "out": str(out_dir), "device": device},
                         {"headlines": headlines, "seconds": timings, "reports": reports, "status": "failed",
                          "message": message, "success": False}, as_json)
                click.echo(f"error: {message}", err=True)
                sys.exit(1)
            timings[name] = time.perf_counter() - start
            reports[name] = str(out_dir / get(name).derivation_stem / "report.md")
            reused[name] = counts
            if logged:
                click.echo(f"[reproduce] {name} done in {timings[name]:.1f} s", err=True)
            if not as_json and any(reused[name].values()):
                click.echo(f"[reproduce] {name}: {reuse_text(reused[name])}", err=True)
            bar.advance()
    if as_json:
        emit("reproduce", model, {"quick": quick, "out": str(out_dir), "device": device},
             {"headlines": headlines, "seconds": timings, "reports": reports, "read_back": reused}, as_json)
        return
    print_summary(headlines, timings, reports)


def _interrupted_text(names: list[str], reports: dict[str, str], out_dir: Path, kept_before: int) -> str:
    """What an interrupted `reproduce` kept, counted when it is stopped: the reports of the models it finished, and
    the pieces the model it was running kept in this run (`resume.kept_by_this_process`, less the `kept_before` it
    started), and how to go on."""
    from attnphase.models.registry import get
    from attnphase.resume import kept_by_this_process

    finished = [name for name in names if name in reports]
    running = next((name for name in names if name not in reports), None)
    text = (f"the reports of {', '.join(finished)} are in {out_dir}" if finished
            else "no model's report was finished")
    if running is not None:
        pieces = kept_by_this_process() - kept_before
        where = out_dir / get(running).derivation_stem
        text += (f"; {running} kept {pieces} piece{'' if pieces == 1 else 's'} of its report in this run, in {where}"
                 if pieces else f"; {running} kept no piece of its report in this run")
    return text + "; the same command reads back what was kept and computes the rest"


def _say_read_back(model: str):
    """The log line of a running model that goes on to compute a piece (`read_back.counting`): what it read back of
    an earlier run's kept pieces so far. The first says that it started computing (a sign of life in a pipe, where
    no bar is drawn); the next ones come after new pieces were read back."""
    def say(counts: dict[str, int]) -> None:
        reused = f"{reuse_text(counts)} so far" if any(counts.values()) else "nothing kept by an earlier run read back"
        click.echo(f"[reproduce] {model}: computing; {reused}", err=True)

    return say


def reuse_text(counts: dict[str, int]) -> str:
    """What a model's run reused of an earlier run's kept pieces, in words: counts is `resume.take_tally()`'s
    ({"read_back": pieces read back, "other_version": pieces kept by other code and computed again})."""
    said = [f"read back {counts['read_back']} piece{'s' if counts['read_back'] != 1 else ''} kept by an earlier run"]
    if counts["other_version"]:
        said.append(f"{counts['other_version']} kept by other code not used (computed again)")
    return "; ".join(said)


def _why_report_directory_not_writable(report_dir: Path) -> str | None:
    """Why a model's report directory (or a directory of kept pieces right below it) takes no new file, as a
    sentence naming it, or None when it and they do: tried with a trial file (`why_not_writable`), since the
    permission bits say yes to root everywhere. A directory not made yet is judged by its nearest existing parent."""
    from attnphase.cli.output_paths import why_not_writable

    problem = why_not_writable(report_dir, directory=True)
    if problem is not None or not report_dir.is_dir():
        return problem
    for child in sorted(report_dir.iterdir()):
        if child.is_dir():
            problem = why_not_writable(child, directory=True)
            if problem is not None:
                return problem
    return None


def _file_system_failure(exc: OSError, name: str, report_dir: Path, out_dir: Path) -> str:
    """The one-line message of a run stopped by a file-system error (a full disk, a file made unwritable while it
    ran): the model, its report directory, the file when the error names one, the reason, and what is kept."""
    where = f"{exc.filename}: " if exc.filename else ""
    reason = exc.strerror or str(exc) or type(exc).__name__
    code = f" ({errno.errorcode[exc.errno]})" if exc.errno in errno.errorcode else ""
    return (f"the {name} report stopped at a file-system error while writing below {report_dir}: "
            f"{where}{reason}{code}; the reports of the models finished before it, and the pieces this one kept, "
            f"are in {out_dir} (--out): once it can be written, the same command reads them back and computes the rest")


HEADLINE_NUMBERS = 3  # per model in the summary table; every number is in the report and in --json


def _value_and_error(value, error) -> str:
    """"value ± error": the error to two digits, rounded up, the value to the same decimal place
    (`report.value_with_error`: 1.4967 ± 0.0092, not 1.49669 ± 0.0092); either as it is where it is not a finite
    number (the error ≥ 0)."""
    from attnphase.cli.display import format_value

    def finite(x) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

    if finite(value) and finite(error) and error > 0:
        from attnphase.report import value_with_error

        return value_with_error(value, error, min_decimals=0)
    return f"{format_value(value)} ± {_two_digits_up(error)}"


def _two_digits_up(error) -> str:
    """An error to two significant digits, rounded up (`numeric.digits.error_significant_up`); "n/a" where it is not
    a finite number ≥ 0."""
    from attnphase.cli.display import format_value
    from attnphase.numeric.digits import error_significant_up

    if not isinstance(error, (int, float)) or isinstance(error, bool) or not math.isfinite(error) or error < 0:
        return format_value(error)
    return error_significant_up(error, 2)


def _error_key(key: str, scalars: dict) -> str | None:
    """The headline key that holds `key`'s error, shown beside it ("alpha_c(omega=0.30)" -> "alpha_c_error",
    "headline_alignment_mean" -> "headline_alignment_error", "x" -> "x_error"), or None."""
    stem = key.split("(")[0]
    for candidate in (f"{key}_error", f"{stem}_error", f"{stem.removesuffix('_mean')}_error"):
        if candidate != key and candidate in scalars:
            return candidate
    return None


def print_summary(headlines: dict[str, dict], timings: dict[str, float], reports: dict[str, str]) -> None:
    """One row per model: its first headline numbers, each with its error where the headline has one (a value and
    its error were shown as two numbers, and a value whose error came fourth without it), the seconds it took and
    where its report is."""
    from rich.markup import escape
    from rich.table import Table

    from attnphase.cli.display import print_renderables

    table = Table(title="attnphase reproduce", title_justify="left", header_style="bold")
    for column in ("model", "headline numbers", "seconds", "report"):
        table.add_column(column, overflow="fold")
    for name, headline in headlines.items():
        table.add_row(name, escape(headline_cell(headline)) or "(see the report)", f"{timings[name]:.1f}",
                      escape(reports[name]))
    print_renderables([table])


def headline_cell(headline: dict) -> str:
    """A model's cell of the summary table: its first HEADLINE_NUMBERS scalar headline numbers, one per line, each
    with its error (two digits, rounded up; the value to the same decimal place) where the headline has one, and how
    many more the report has."""
    from attnphase.cli.display import format_value
    from attnphase.jsonio import to_jsonable

    # the run time has its own column
    scalars = {k: v for k, v in to_jsonable(headline).items()
               if k != "seconds" and (v is None or isinstance(v, (int, float)))}
    errors = {k: error_key for k in scalars if (error_key := _error_key(k, scalars)) is not None}
    numbers = [k for k in scalars if k not in errors.values()]
    lines = [f"{k} = {_value_and_error(scalars[k], scalars[errors[k]]) if k in errors else format_value(scalars[k])}"
             for k in numbers[:HEADLINE_NUMBERS]]
    more = sum(scalars[k] is not None for k in numbers[HEADLINE_NUMBERS:])  # a number not computed is not in it
    if more:
        lines.append(f"(+{more} more in the report)")
    return "\n".join(lines)
