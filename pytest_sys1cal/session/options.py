"""Command-line options and ini keys, resolved once into the run's `Settings`: command line > ini > default.

Imports nothing heavy: this module is loaded in every pytest run, with or without ``--sys1cal``. Every option
is defined here, and only here is pytest asked for one; the rest of the package reads `Settings` fields (or asks
`flag(name)` for the text of one in a command it prints). Messages elsewhere name flags in words, and
tests/test_layout.py checks that each flag they name is one defined here.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from ..argtypes import non_negative_float, non_negative_int, positive_float, positive_int, repeat_count, shard_spec
from ..argtypes import switch as on_off
from ..dataset import BUNDLED
from ..defaults import BOOTSTRAP_RESAMPLES, RECALIBRATION_SPLITS
from ..names import NotAName, check_name
from ..vocabulary import RECORD_MODES
from .placement import Placement, placement

THRESHOLDS_FILE = "thresholds.yaml"


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
    path: bool = False  # a path: relative to the invocation directory (CLI) or to the ini file (ini)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def field(self) -> str:
        """The `Settings` field: the dest without its ``sys1cal_`` prefix."""
        return self.dest.removeprefix("sys1cal_")


OPTIONS = [
    Option(
        "--sys1cal-model", "model adapter: jev, systemone, semif, or one registered by a plugin", "jev", metavar="NAME"
    ),
    Option(
        "--sys1cal-model-version",
        "the version: names the cassette folder and the reports; the model id sent too, unless --sys1cal-model-id "
        "gives another (default: the adapter's pin, jev-1.13.0 for jev)",
        metavar="V",
    ),
    Option(
        "--sys1cal-model-id",
        "the model id sent to the server and pinned (the server-reported model is checked against it), when it is "
        "not the version, e.g. a server that answers as prod for every deployment (default: the id the version's "
        "manifest says it was recorded under, else the version)",
        metavar="ID",
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
        "samples per rendering, at most 100 (default: the cassette manifest's when replaying, 10 when recording)",
        type=repeat_count,
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
        f"gate file (default: {THRESHOLDS_FILE} under the rootdir, if present)",
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
        "--sys1cal-markdown",
        "write the run's verdict as one compact Markdown comment for a pull request here: with a baseline, the upgrade verdict, its Δ table, the absolute gates and the renderings that moved most",
        ini=False,
        metavar="PATH",
        path=True,
    ),
    # Kept as given (not a path): a saved report's path or another recorded version, told apart in versions/upgrade_baseline.py.
    Option(
        "--sys1cal-baseline",
        "upgrade gate: an earlier JSON report (a path that exists) or another recorded version of this model under the cassette root, replayed offline",
        ini=False,
        metavar="PATH|VERSION",
    ),
    Option(
        "--sys1cal-recalibration",
        "replay through this recalibration map (python -m pytest_sys1cal recalibrate writes one): every answer of a "
        "mapped primitive goes through it before the analysis and the gates, so what is gated is what a team ships",
        metavar="MAP.json",
        path=True,
    ),
    Option(
        "--sys1cal-shard",
        "record (or replay) shard I of N: whole latent problems, dealt out by their priced cost; the shard's report "
        "gates nothing, and `python -m pytest_sys1cal merge` joins the shards' folders into one version folder",
        type=shard_spec,
        metavar="I/N",
    ),
    Option(
        "--sys1cal-sequential",
        "upgrade gate in rounds of whole latent problems (seeded order), stopping once the comparison with --sys1cal-"
        "baseline is decided (thresholds.yaml's regression.sequential); with --sys1cal-shard, its part of the next round",
        False,
        type=on_off,
    ),
    Option("--sys1cal-seed", "seed of every resampling procedure", 0, type=non_negative_int, metavar="N"),
    Option(
        "--sys1cal-bootstrap",
        "latent-problem resamples for the intervals of Table 2 (U_max, λ) and of the Brier decomposition; 0 skips them",
        BOOTSTRAP_RESAMPLES,  # vocabulary.py says why
        type=non_negative_int,
        metavar="N",
    ),
    Option(
        "--sys1cal-recalibration-splits",
        "seeded cross-fitted splits of the held-out readout check (seeds: the run's seed, seed + 1, …); the report gives the mean and SD of its balanced accuracy over them",
        RECALIBRATION_SPLITS,
        type=positive_int,
        metavar="N",
    ),
    # Recording (ignored when replaying, record mode none).
    Option("--sys1cal-concurrency", "recording: requests in flight at once", 8, type=positive_int, metavar="N"),
    Option(
        "--sys1cal-rate",
        "recording: at most N requests per minute, evenly spaced; 0 = no limit (default: 1,000 for Jev, which allows "
        "1,200; a systemone or semif server on this machine or a private network: its own pace)",
        None,
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
        "--sys1cal-price",
        "recording: dollars per million input tokens your server charges, for the cost estimate and "
        "--sys1cal-max-cost (default: Jev's list price, 0.042; 0 for a server that charges nothing)",
        type=non_negative_float,
        metavar="DOLLARS",
    ),
    Option(
        "--sys1cal-timeout",
        "recording: seconds one request may take, whole: connect, send and every byte of the answer (a server that "
        "trickles its answer is cut there too)",
        60.0,
        type=positive_float,
        metavar="SECONDS",
    ),
    Option(
        "--sys1cal-stall-limit",
        "recording: stop the recording when the server has answered no request successfully for this many seconds while requests "
        "were out (default: twice --sys1cal-timeout, 120 s)",
        type=positive_float,
        metavar="SECONDS",
    ),
    Option(
        "--sys1cal-max-response-mb",
        "recording: refuse a response body larger than this many MB (10^6 bytes), counted as it arrives and after "
        "decompression",
        1.0,
        type=positive_float,
        metavar="MB",
    ),
    Option(
        "--sys1cal-retry-budget",
        "recording: seconds one request may spend being retried (408, 429, 5xx, timeouts, connection errors); 0 = no retries",
        120.0,
        type=non_negative_float,
        metavar="SECONDS",
    ),
]
BY_FIELD = {option.field: option for option in OPTIONS}
GROUP = ("sys1cal", "Sys1Cal calibration benchmark")
WORKERINPUT_KEY = "sys1cal_settings"


@dataclass(frozen=True)
class Settings:
    """Every option and ini key of one run, typed, resolved once on the controller at configure and handed
    to xdist workers through ``workerinput``. Paths are absolute; ``dataset`` is a bundled name or a path;
    ``thresholds`` is the file in force (given, or the rootdir's thresholds.yaml when there is one)."""

    model: str
    model_version: str | None
    base_url: str | None
    record_mode: str
    repeats: int | None
    dataset: str
    cassettes: Path
    thresholds: Path | None
    report: Path | None
    html: Path | None
    markdown: Path | None
    baseline: str | None  # as given: a saved report's path or a version name (versions/upgrade_baseline.py resolves it)
    seed: int
    bootstrap: int
    recalibration_splits: int
    concurrency: int
    rate: int | None  # None: not given (recording_hooks.rate_in_force decides by the server's origin)
    max_cost: float | None
    price: float | None  # dollars per million input tokens; None: Jev's list price
    timeout: float
    retry_budget: float
    stall_limit: float | None = None
    max_response_mb: float = 1.0
    shard: str | None = None  # --sys1cal-shard, "I/N" (shards.Shard.parse)
    sequential: bool = False  # --sys1cal-sequential: the upgrade gate recorded in rounds (session/sequential.py)
    dry_run: bool = False  # --sys1cal-dry-run: check and plan a recording, send nothing billable
    # Whether the cassette root is the default one (`cassettes` under the rootdir), not named by an option or
    # ini key: only there may the bundled reference set stand in for a folder the project lacks.
    default_cassettes: bool = False
    recalibration: Path | None = None  # --sys1cal-recalibration: the map the answers are replayed through
    model_id: str | None = (
        None  # as given (option or ini); the folder's manifest decides a replay's (store/manifest.py)
    )
    # Whether the model was named (option or ini key), not the default jev, and whether the thresholds file is the
    # rootdir's thresholds.yaml, not named: a project whose own thresholds.yaml holds another model's section and
    # no ini naming a model has not added init's snippet (session/gate_advice.py).
    model_given: bool = True
    default_thresholds: bool = False

    @property
    def recording(self) -> bool:
        return self.record_mode != "none"

    def to_json(self) -> dict[str, Any]:
        """For ``workerinput``, which must be JSON-able (paths as text)."""
        return {f.name: str(v) if isinstance(v := getattr(self, f.name), Path) else v for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Settings:
        paths = {o.field for o in OPTIONS if o.path and o.field != "dataset"}
        values: dict[str, Any] = {k: Path(v) if k in paths and v is not None else v for k, v in data.items()}
        return cls(**values)


def flag(field: str) -> str:
    """The command-line flag of a `Settings` field, for the commands and hints the plugin prints."""
    return BY_FIELD[field].flag


def argument(field: str, value: Any) -> str:
    """``--flag=value``: the form pytest cannot misread (docs/setup.md, "Option values and paths")."""
    return f"{flag(field)}={value}"


# ------------------------------------------------------------------------------------------ registering


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup(*GROUP)
    group.addoption(
        "--sys1cal", action="store_true", default=False, help="run the Sys1Cal benchmark: one test item per rendering"
    )
    group.addoption(
        "--sys1cal-dry-run",
        action="store_true",
        default=False,
        help="check a recording before paying for it: the key, the server, the model name (against the server's "
        "model list), the plan and its cost; sends nothing billable and records nothing (python -m pytest_sys1cal "
        "check runs this)",
    )
    for option in OPTIONS:
        kwargs: dict[str, Any] = {
            "dest": option.dest,
            "default": None,
            "help": _help(option),
            "metavar": option.metavar,
        }
        if option.type is on_off:  # given alone on the command line; its ini key reads true or false
            kwargs["action"] = "store_true"
            del kwargs["metavar"]
        elif option.choices:
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


# ------------------------------------------------------------------------------------------ resolving


def resolve_settings(config: pytest.Config) -> Settings:
    """Every option's effective value. Raises pytest.UsageError for a bad ini value or a thresholds file that
    does not exist."""
    where = placement(config, {option.flag for option in OPTIONS} | {"--model"}, THRESHOLDS_FILE)
    values = {option.field: _resolve(config, option, where) for option in OPTIONS}
    values["default_cassettes"] = values["cassettes"] == where.rootpath / BY_FIELD["cassettes"].default
    values["model_given"] = config.getoption("sys1cal_model") is not None or bool(
        _ini_value(config, where, "sys1cal_model")
    )
    _check_names(values)
    values["dry_run"] = bool(config.getoption("sys1cal_dry_run", False))
    if values["dry_run"] and values["record_mode"] == "none":
        raise pytest.UsageError(
            "--sys1cal-dry-run checks a recording, and record mode none only replays (it sends nothing): add "
            "--sys1cal-record-mode=once (or the mode you will record with)"
        )
    if values["dry_run"] and getattr(config.option, "numprocesses", None) not in (None, 0, "0"):
        raise pytest.UsageError("--sys1cal-dry-run checks in one process: drop -n (or give -n 0)")
    if values["shard"] and values["baseline"]:
        raise pytest.UsageError(
            f"{flag('shard')} with {flag('baseline')}: a shard gates nothing, the upgrade gate included; merge the "
            "shards, then compare the merged version with the baseline"
        )
    asked = bool(config.getoption(BY_FIELD["sequential"].dest))  # from the ini: in force with a baseline only
    if asked and not values["baseline"] and not values["shard"]:
        raise pytest.UsageError(
            f"{flag('sequential')} without {flag('baseline')}: the rounds stop when the comparison with a baseline "
            f"is decided; add {flag('baseline')}=VERSION (a recorded version) or a saved report's path, or drop it"
        )
    values["sequential"] = values["sequential"] and bool(values["baseline"] or asked)  # a shard: its next round
    given = values["thresholds"]
    if given is None:
        default = where.rootpath / THRESHOLDS_FILE
        values["thresholds"] = default if default.is_file() else None
        values["default_thresholds"] = default.is_file()
    elif not given.is_file():
        raise pytest.UsageError(f"{flag('thresholds')}: {given} does not exist")
    return Settings(**values)


# The options whose value becomes part of a path (names.py): why, as their refusal says it.
NAMED = {
    "model": "a model names its folder under the cassette root (<cassette root>/<model>)",
    "model_version": "a version names its cassette folder (<cassette root>/<model>/<version>)",
}


def _check_names(values: dict[str, Any]) -> None:
    """A model or version that is not a plain name is refused before anything is read or written; so is a model
    id that a server could not be sent as it is meant (it is sent as JSON text, shown in every notice)."""
    for field, why in NAMED.items():
        if values[field] is not None:
            try:
                check_name(values[field], flag(field), why)
            except NotAName as exc:
                raise pytest.UsageError(str(exc)) from None
    given = values["model_id"]
    if given is not None and (len(given) > 200 or not given.isprintable() or any(c.isspace() for c in given)):
        raise pytest.UsageError(
            f"{flag('model_id')}={given!r}: a model id is printable text of at most 200 characters without spaces "
            "(e.g. prod, org/model:tag), as the server names it"
        )


def _resolve(config: pytest.Config, option: Option, where: Placement) -> Any:
    """Command line, then ini, then the default. A command-line path is relative to where pytest was invoked,
    an ini path to the ini file, a default to the rootdir; bundled dataset names stay names."""
    value = config.getoption(option.dest)
    base = config.invocation_params.dir
    if value is None and option.ini:
        text = _ini_value(config, where, option.dest)
        if text:
            value = _parse_ini(option, text)
            base = where.inipath.parent if where.inipath else where.rootpath
    if value is None:
        if option.default is None:
            return None
        value, base = option.default, where.rootpath
    if option.path and isinstance(value, str):
        if option.field == "dataset" and value in BUNDLED:
            return value
        path = Path(value).expanduser()
        resolved = path if path.is_absolute() else base / path
        return str(resolved) if option.field == "dataset" else resolved
    return value


def _ini_value(config: pytest.Config, where: Placement, key: str) -> str:
    """An ini key's text: pytest's reading, or, where pytest chose its ini file from a misread value
    (session/placement.py), the file's values as pytest would have read them (``-o key=value`` wins)."""
    if where.inicfg is None:
        return str(config.getini(key) or "").strip()
    for override in reversed(config.known_args_namespace.override_ini or []):
        name, _, text = override.partition("=")
        if name.strip() == key:
            return text.strip()
    value = where.inicfg.get(key)
    value = getattr(value, "value", value)  # pytest 9 wraps values in ConfigValue
    return "" if value is None else str(value).strip()


def _parse_ini(option: Option, text: str) -> Any:
    if option.choices and text not in option.choices:
        raise pytest.UsageError(f"ini key {option.dest} = {text!r}: choose one of {', '.join(option.choices)}")
    if option.type is str:
        return text
    try:
        return option.type(text)
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini key {option.dest} = {text!r}: {exc}") from None


# The files pytest and its plugins write (by the option's dest: its flag, and what pytest writes there), which
# session/outputs.py refuses when they name one of the run's inputs. --basetemp is a folder pytest empties.
PYTEST_OUTPUTS = {
    "xmlpath": ("--junitxml", "its JUnit XML"),
    "log_file": ("--log-file", "its log"),
    "report_log": ("--report-log", "pytest-reportlog's report log"),
    "resultlog": ("--resultlog", "its result log"),
    "htmlpath": ("--html", "pytest-html's page"),
    "basetemp": ("--basetemp", "its temporary files, emptying the folder first"),
}


def pytest_outputs(config: pytest.Config) -> dict[str, tuple[Path, str]]:
    """{flag: (absolute path, what pytest writes there)} of each output of pytest's (or of an installed plugin's)
    this run names. --log-file also reads the ini key log_file, as pytest does."""
    found = {}
    for dest, (name, what) in PYTEST_OUTPUTS.items():
        value = config.getoption(dest, None)
        if not value and dest == "log_file":
            value = config.getini("log_file")
        if value:
            path = os.path.abspath(os.path.expanduser(os.path.expandvars(str(value))))
            found[name] = (Path(path), what)
    return found


def active(config: pytest.Config) -> bool:
    """Whether this run asked for the benchmark (``--sys1cal``)."""
    return bool(config.getoption("sys1cal", False))


def given_without_sys1cal(config: pytest.Config) -> None:
    """A benchmark option on the command line without ``--sys1cal`` would be ignored while pytest quietly
    runs something else (the project's own tests): refuse it instead. Ini keys are left alone."""
    given = [
        "--model" if option.dest == "sys1cal_model" and _typed("--model", config) else option.flag
        for option in OPTIONS
        if config.getoption(option.dest, None) is not None
    ]
    if config.getoption("sys1cal_dry_run", False):
        given.append("--sys1cal-dry-run")
    if given:
        raise pytest.UsageError(
            f"{', '.join(given)} given without --sys1cal, so the benchmark would not run; add --sys1cal "
            "(or drop the option to run only your tests)"
        )


def _typed(flag_text: str, config: pytest.Config) -> bool:
    return any(arg == flag_text or arg.startswith(f"{flag_text}=") for arg in config.invocation_params.args)
