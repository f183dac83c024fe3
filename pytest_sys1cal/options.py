"""Command-line options and ini keys, and the one resolver: command line > ini > default.

Imports nothing heavy: this module is loaded in every pytest run, with or without ``--sys1cal``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .argtypes import non_negative_float, non_negative_int, positive_float, positive_int
from .dataset import BUNDLED
from .vocabulary import RECORD_MODES


@dataclass(frozen=True)
class Option:
    """One setting: its flag, its ini key (if it has one), how to parse it, and its help."""

    flag: str
    help: str
    default: Any = None
    ini: bool = True
    type: Any = str
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    path: bool = False  # a path: relative to the rootdir (CLI) or to the ini file (ini)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


OPTIONS = [
    Option(
        "--sys1cal-model", "model adapter: jev, systemone, semif, or one registered by a plugin", "jev", metavar="NAME"
    ),
    Option(
        "--sys1cal-model-version",
        "model id sent and pinned; names the cassette folder (default: the adapter's pin, jev-1.13.0 for jev)",
        metavar="V",
    ),
    Option(
        "--sys1cal-base-url",
        "server origin without /v1 (default: the adapter's; TYPESAFE_BASE_URL for jev)",
        metavar="URL",
    ),
    Option(
        "--sys1cal-record-mode",
        "none = replay only, network blocked; once = record renderings without a cassette; new_episodes = also record requests a cassette lacks; all = re-record everything",
        "none",
        choices=RECORD_MODES,
    ),
    Option(
        "--sys1cal-repeats",
        "samples per rendering (default: the cassette manifest's when replaying, 10 when recording)",
        type=positive_int,
        metavar="N",
    ),
    Option(
        "--sys1cal-dataset", "a Sys1Cal JSONL file or a bundled dataset name", "sys1cal-v1", metavar="PATH", path=True
    ),
    Option(
        "--sys1cal-cassettes",
        "cassette root (default: cassettes under the rootdir)",
        "cassettes",
        metavar="DIR",
        path=True,
    ),
    Option(
        "--sys1cal-thresholds",
        "gate file (default: thresholds.yaml under the rootdir, if present)",
        metavar="PATH",
        path=True,
    ),
    Option("--sys1cal-report", "write the JSON report here", ini=False, metavar="PATH", path=True),
    Option(
        "--sys1cal-html",
        "write a self-contained HTML report (gates, tables, figures) here; needs pip install 'pytest-sys1cal[html]'",
        ini=False,
        metavar="PATH",
        path=True,
    ),
    Option(
        "--sys1cal-baseline",
        "an earlier JSON report to compare against (upgrade gate)",
        ini=False,
        metavar="PATH",
        path=True,
    ),
    Option("--sys1cal-seed", "seed of every resampling procedure", 0, type=non_negative_int, metavar="N"),
    # 500 is the statistics notes' figure for CI runs (2,000 for a report); the intervals it gives are
    # informational (gates use the λ test, not them), and the refit per resample is the analysis's main cost.
    Option(
        "--sys1cal-bootstrap",
        "latent-problem resamples for the U_max and λ intervals of Table 2; 0 skips them",
        500,
        type=non_negative_int,
        metavar="N",
    ),
    Option(
        "--sys1cal-recalibration-splits",
        "seeded cross-fitted splits of the held-out readout check (seeds: the run's seed, seed + 1, …); the report gives the mean and SD of its balanced accuracy over them",
        20,
        type=positive_int,
        metavar="N",
    ),
    # Recording (ignored when replaying, record mode none).
    Option("--sys1cal-concurrency", "recording: requests in flight at once", 8, type=positive_int, metavar="N"),
    Option(
        "--sys1cal-rate",
        "recording: at most N requests per minute, evenly spaced; 0 = no limit (Jev allows 1,200)",
        1000,
        type=non_negative_int,
        metavar="N",
    ),
    Option(
        "--sys1cal-max-cost",
        "recording: refuse to start when the estimated cost of the requests exceeds DOLLARS, and stop before the server-reported spend would exceed it",
        type=non_negative_float,
        metavar="DOLLARS",
    ),
    Option(
        "--sys1cal-timeout",
        "recording: seconds to wait for each HTTP operation (connect, send, read)",
        60.0,
        type=positive_float,
        metavar="SECONDS",
    ),
    Option(
        "--sys1cal-retry-budget",
        "recording: seconds one request may spend being retried (408, 429, 5xx, timeouts, connection errors); 0 = no retries",
        120.0,
        type=non_negative_float,
        metavar="SECONDS",
    ),
]


GROUP = ("sys1cal", "Sys1Cal calibration benchmark")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup(*GROUP)
    group.addoption(
        "--sys1cal", action="store_true", default=False, help="run the Sys1Cal benchmark: one test item per rendering"
    )
    for option in OPTIONS:
        kwargs: dict[str, Any] = {
            "dest": option.dest,
            "default": None,
            "help": _help(option),
            "metavar": option.metavar,
        }
        if option.choices:
            kwargs["choices"] = option.choices
        elif option.type is not str:
            kwargs["type"] = option.type
        group.addoption(option.flag, **kwargs)
        if option.ini:
            parser.addini(option.dest, _help(option), type="string", default="")


def add_model_alias(parser: pytest.Parser) -> None:
    parser.getgroup(*GROUP).addoption(
        "--model", dest="sys1cal_model", default=None, metavar="NAME", help="short for --sys1cal-model"
    )


def _help(option: Option) -> str:
    shown = "" if option.default is None or "default" in option.help else f" [default: {option.default}]"
    return option.help.replace("%", "%%") + shown


def resolve(config: pytest.Config, flag: str) -> Any:
    """The effective value of an option: command line, then ini, then the default.

    Paths come back absolute: a command-line path is relative to where pytest was invoked, an ini
    path to the ini file, a default to the rootdir (bundled dataset names stay names). Ini values are
    validated like command-line values, raising pytest.UsageError.
    """
    option = next(o for o in OPTIONS if o.flag == flag)
    value = config.getoption(option.dest)
    base = config.invocation_params.dir
    if value is None and option.ini:
        text = str(config.getini(option.dest) or "").strip()
        if text:
            value = _parse_ini(option, text)
            base = config.inipath.parent if config.inipath else config.rootpath
    if value is None:
        if option.default is None:
            return None
        value, base = option.default, config.rootpath
    if option.path and isinstance(value, str) and value not in BUNDLED:
        path = Path(value).expanduser()
        return path if path.is_absolute() else base / path
    return value


def _parse_ini(option: Option, text: str) -> Any:
    if option.choices and text not in option.choices:
        raise pytest.UsageError(f"ini key {option.dest} = {text!r}: choose one of {', '.join(option.choices)}")
    if option.type is str:
        return text
    try:
        return option.type(text)
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini key {option.dest} = {text!r}: {exc}") from None


def given_without_sys1cal(config: pytest.Config) -> None:
    """A benchmark option on the command line without ``--sys1cal`` would be ignored while pytest quietly
    runs something else (the project's own tests): refuse it instead. Ini keys are left alone."""
    given = [
        "--model" if option.dest == "sys1cal_model" and _typed("--model", config) else option.flag
        for option in OPTIONS
        if config.getoption(option.dest, None) is not None
    ]
    if given:
        raise pytest.UsageError(
            f"{', '.join(given)} given without --sys1cal, so the benchmark would not run; add --sys1cal "
            "(or drop the option to run only your tests)"
        )


def _typed(flag: str, config: pytest.Config) -> bool:
    return any(arg == flag or arg.startswith(f"{flag}=") for arg in config.invocation_params.args)
