"""The state of one ``pytest --sys1cal`` run (kept in ``config.stash``), composed of its pieces: the `Settings`
(options.py, resolved once), the adapter, the `CassetteFolder` (store/folder.py), the thresholds and the
baseline, and the report built at the end (run_report.py). Here they are put together at configure and the
measured rows collected on the controller; the end of the run is session/ending.py's."""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..bundled import shipped_thresholds_path
from ..codec import Codec
from ..dataset import Dataset, load_dataset
from ..errors import InputError, usage_errors
from ..escape import one_line
from ..files import written_for
from ..gates.schema import Thresholds
from ..measure import Measurer
from ..models import BUILTIN_ADAPTERS, make_adapter
from ..models.base import ModelAdapter
from ..recalibration_map import MapError, RecalibrationMap, load_map
from ..recording.proxies import proxy_urls
from ..redact import Redactor
from ..report.terminal import Line
from ..results import ResultRow
from ..run_report import Baseline, Report
from ..store.folder import CassetteFolder, model_id_of, reference_root
from ..store.replay_cache import CACHE_NAME
from ..versions.upgrade_baseline import BaselineRequest, averaged_repeats, check_repeats, resolve_baseline
from .advice import Advice, selection_of
from .gate_advice import missing_snippet
from .interruption import Interruption
from .options import Settings, pytest_outputs
from .outputs import Outputs
from .sequential import WORKERINPUT_KEY as ROUNDS_KEY
from .sequential import requests_by_problem, rounds_of_run
from .sequential_looks import Looker
from .sharding import SHARD_KEY, check_folder, leave_manifest, shard_run
from .signals import SignalStop

if TYPE_CHECKING:  # a replay imports none of recording's hooks (hooks.py)
    from .recording_hooks import Recording


class Rows(list[ResultRow]):
    """The run's rows, one per rendering: a rendering whose item ran again (pytest-rerunfailures, flaky) is
    counted once, its later outcome replacing the earlier one in the rendering's first place."""

    def __init__(self) -> None:
        super().__init__()
        self._index: dict[str, int] = {}

    def add(self, row: ResultRow) -> None:
        index = self._index.setdefault(row.instance_id, len(self))
        if index == len(self):
            self.append(row)
        else:
            self[index] = row


class Sys1CalRun:
    """`controller`: this process aggregates, gates and reports (no xdist, or xdist's controller). A worker
    builds only what measuring needs, with the repeats the controller decided (`workerinput`)."""

    def __init__(self, config: pytest.Config, settings: Settings, *, controller: bool, repeats: int | None = None):
        self.config = config
        self.settings = settings
        self.controller = controller
        registered = config.hook.pytest_sys1cal_adapters()
        # Every message leaves through the one redactor; it learns the key once the adapter has read it. A
        # proxy's credentials are secrets too (recording/proxies.py).
        self.redactor = Redactor(urls=[settings.base_url, *proxy_urls(os.environ)])
        with usage_errors(self.redactor.text):
            self._inputs(registered)
            self._store(registered)
            self._baseline(registered, repeats)
            # the upgrade gate in rounds, when in force (session/sequential.py)
            self.rounds = rounds_of_run(config, settings, self.dataset, self.folder, self.thresholds, self.selection)
        # This process's recording (None: a replay), its end settled once (session/ending.py).
        self.recording: Recording | None = (
            recording_of(config, settings, self.adapter, controller, self.redactor) if settings.recording else None
        )
        self.measurer = Measurer(
            Codec(self.adapter, self.folder.questions, self.repeats),
            self.folder,
            advice=self.advice,
            sender=self.recording.make_engine if self.recording else None,
        )
        self.rows = Rows()
        self.looker = looker_of(self, controller)  # a recording in rounds: the looks between them
        self.report: Report | None = None
        self.summary: list[Line] = []
        self.finish_error: str | None = None
        self.interruption = Interruption()  # the collection's selection, and why the run stopped early
        self.signals = SignalStop(worker=not controller)  # SIGTERM like Ctrl-C; installed by the plugin

    # ------------------------------------------------------------------ configure

    def _inputs(self, registered: Any) -> None:
        """The output paths checked (on the controller), the dataset loaded, the adapter made and configured."""
        config, settings = self.config, self.settings
        self.outputs = Outputs(settings, pytest_outputs(config) if self.controller else None)
        if self.controller:
            self.outputs.check()
        self.dataset: Dataset = load_dataset(settings.dataset)
        self.adapter: ModelAdapter = make_adapter(
            settings.model, registered, version=settings.model_version, base_url=settings.base_url, environ=os.environ
        )
        config.hook.pytest_sys1cal_configure_adapter(config=config, adapter=self.adapter)
        self.redactor.learn(self.adapter.secrets, [self.adapter.base_url])
        self.recalibration = recalibration_of(settings) if self.controller else None

    def _store(self, registered: Any) -> None:
        """The thresholds in force and the cassette folder (the bundled reference set stands in for a project's
        own jev-1.13.0 folder when it has none), checked; the adapter asks what the folder recorded."""
        settings, adapter = self.settings, self.adapter
        self.reference = reference_root(
            settings.cassettes,
            settings.model,
            adapter.version,
            settings.record_mode,
            default_root=settings.default_cassettes,
        )
        known = sorted({*BUILTIN_ADAPTERS, *(name for mapping in registered for name in (mapping or {}))})
        if self.controller and (snippet := missing_snippet(settings, known)):
            raise InputError(snippet)
        self.thresholds = (
            thresholds_in_force(settings, adapter, registered, self.reference) if self.controller else None
        )
        self.folder = folder_of(settings, adapter, self.redactor, self.reference)
        adapter.model_id = model_id_of(self.folder, settings.model_id)  # what a replay sends is what was recorded
        option = self.config.option
        selection = selection_of(getattr(option, "keyword", ""), getattr(option, "markexpr", ""), self.config.args)
        self.selection = selection
        self.advice = Advice(settings, adapter, self.dataset, self.folder, selection)
        if self.controller:
            self.folder.check(self.dataset, self.advice, collect_only=self.config.option.collectonly)
            refused = self.thresholds and self.thresholds.reading.refusal(
                str(self.folder.path), self.folder.repeats_per_answer
            )
            if refused:
                raise InputError(refused)
        try:
            adapter.use_recorded_settings(self.folder.recorded_settings)
        except InputError as exc:  # a setting the environment sets otherwise than the folder was recorded with
            raise InputError(f"{self.folder.path}: {exc}") from None
        # --sys1cal-shard: this run's share of the latent problems, priced with the settings it will ask
        self.shard = shard_run(self.config, settings, self.dataset, adapter, self.folder, self.thresholds)
        if self.controller:
            check_folder(self.folder, self.shard, self.advice.merge_hint())

    def _baseline(self, registered: Any, repeats: int | None) -> None:
        """The upgrade gate's baseline (on the controller) and the repeats: a worker's from the controller, else
        the folder's (or as many as the baseline averages, when recording)."""
        settings = self.settings
        self.baseline = (
            baseline_of(self.config, settings, self, registered) if self.controller and settings.baseline else None
        )
        baseline_repeats = averaged_repeats(self.baseline.report) if self.baseline else None
        self.repeats = repeats or self.folder.repeats(settings.repeats, baseline_repeats)
        if self.baseline is not None:
            reading = self.thresholds.reading if self.thresholds else None
            check_repeats(self.baseline, self.repeats, self.folder.repeats_per_answer, reading)

    def workerinput(self) -> dict[str, Any]:
        """What an xdist worker needs from the controller's configure: the repeats it decided, the rounds."""
        shard = self.shard.rounds.to_json() if self.shard and self.shard.rounds else None
        return {
            "sys1cal_repeats": self.repeats,
            ROUNDS_KEY: self.rounds.to_json() if self.rounds else None,
            SHARD_KEY: shard,
        }

    def header(self) -> list[str]:
        """The run in three short lines (model and how it is measured; where its answers and questions come from;
        its gates), every path as the user would type it from where pytest ran, never the machine's absolute one."""
        from ..report.terminal import repeats_phrase

        source = (
            f"bundled reference cassettes, {self.folder.source}"
            if self.reference
            else f"{self.folder.source} cassettes"
        )
        cassettes = f"{source}, {repeats_phrase(self.repeats, self.folder.repeats_per_answer)}"
        if self.recalibration is not None:
            cassettes += f", answers through the recalibration map {self.recalibration.path}"
        where = "pytest-sys1cal's bundled reference set" if self.reference else self._shown(self.folder.path)
        thresholds = self.thresholds.describe() if self.thresholds else "none (no thresholds.yaml)"
        lines = [
            f"sys1cal: model {self.settings.model} {self.adapter.version} ({cassettes}); record mode "
            f"{self.settings.record_mode}; seed {self.settings.seed}",
            f"sys1cal: cassettes {where}; dataset {self.dataset.name} sha256 {self.dataset.sha256[:12]}… "
            f"({len(self.dataset.renderings)} renderings, {self.dataset.latent_problems} latent problems)",
            f"sys1cal: thresholds {thresholds}",
        ]
        return [one_line(self.redactor.text(line)) for line in lines]

    def _shown(self, path: Path) -> str:
        """`path` relative to where pytest ran (with ../ when above it)."""
        try:
            return Path(os.path.relpath(path, self.config.invocation_params.dir)).as_posix()
        except ValueError:  # another drive
            return path.as_posix()

    def start_recording(self) -> str | None:
        """Lock the folder and write the manifest before the first request; a notice when a killed
        recording's lock was taken over."""
        folder, adapter = self.folder, self.adapter
        try:
            notice = folder.start_recording(
                self.dataset, self.repeats, folder.questions, adapter.settings(), adapter.base_url, adapter.model_id
            )
            if self.shard is not None:  # a shard says what it holds from the start: a killed one is unfinished
                whole, fresh = self.advice.whole_shard(), folder.record_mode == "all"
                leave_manifest(folder, self.shard, None, self.settings.seed, whole, fresh=fresh)
        except OSError as exc:  # a full or read-only disk: refused in one line before any request is sent
            folder.release()
            raise _cannot_start(exc, self._shown(written_for(exc, folder.path) or folder.path)) from None
        return notice

    # ------------------------------------------------------------------ controller: rows, report

    def warm_up(self) -> None:
        """Import the analysis stack (numpy) on a background thread while the items run: the import waits
        on the disk for much of its time, and the analysis needs it only at the end."""
        threading.Thread(target=_import_analysis, daemon=True).start()

    @functools.cached_property
    def replay_cache(self) -> tuple[Path | None, str | None]:
        """The replay cache's folder (None: none) and the header's notice when there is none where one is meant
        to be; asked once pytest's cacheprovider has made its cache, after every plugin's configure."""
        return replay_cache_folder(self.config, self.folder.root)

    def use_replay_cache(self) -> None:
        """Replays take rows from pytest's cache where they may."""
        self.measurer.use_cache(self.replay_cache[0])

    def add_result(self, row: ResultRow) -> None:
        self.rows.add(row)
        if self.looker is not None:
            self.looker.row_added(row)

    def gate_location(self, name: str) -> tuple[str, int]:
        """The file and line that configure the gate `name` (for JUnit XML)."""
        thresholds = self.thresholds
        if thresholds is not None:
            for gate in thresholds.gates:
                if gate.name == name:
                    return str(thresholds.path), gate.line
        return str(self.settings.baseline or self.settings.thresholds or self.dataset.path), 1

    def close(self) -> None:
        if self.rounds is not None and self.rounds.decisions is not None and self.controller:
            shutil.rmtree(self.rounds.decisions, ignore_errors=True)
        self.signals.uninstall()
        if self.recording is not None:
            self.recording.close()
            self.folder.release()  # a recording that never reached finish() must not leave its lock
        self.measurer.close()


def recalibration_of(settings: Settings) -> RecalibrationMap | None:
    """The map the answers are replayed through (--sys1cal-recalibration), checked: a map of another model's
    answers is refused."""
    if settings.recalibration is None:
        return None
    mapping = load_map(settings.recalibration)
    if mapping.model != settings.model:
        raise MapError(
            f"--sys1cal-recalibration {settings.recalibration}: a map fitted on model {mapping.model}'s answers, and "
            f"this run measures {settings.model}; fit one on a report of {settings.model} "
            "(python -m pytest_sys1cal recalibrate REPORT.json --out map.json)"
        )
    return mapping


def folder_of(settings: Settings, adapter: ModelAdapter, redactor: Redactor, reference: Path | None) -> CassetteFolder:
    """The run's cassette folder: the project's, or the bundled reference set read-only (`reference`)."""
    root = reference or settings.cassettes
    mode = settings.record_mode
    return CassetteFolder(root, settings.model, adapter.version, mode, redactor, read_only=reference is not None)


def thresholds_in_force(
    settings: Settings, adapter: ModelAdapter, registered: Any, reference: Path | None
) -> Thresholds | None:
    """The thresholds file in force: the given one, the rootdir's thresholds.yaml, or, for the bundled
    reference set in a project without a thresholds file, the shipped one."""
    path = settings.thresholds
    shown = None if path is None else shown_path(path)
    if path is None and reference is not None:
        path, shown = shipped_thresholds_path(), SHIPPED_THRESHOLDS
    if path is None:
        return None
    from ..gates.config import load_thresholds

    known = sorted({*BUILTIN_ADAPTERS, *(name for mapping in registered for name in (mapping or {}))})
    return load_thresholds(path, settings.model, adapter.version, known_models=known, shown=shown)


SHIPPED_THRESHOLDS = "pytest-sys1cal's shipped thresholds.yaml"  # the bundled set's gates, inside the package


def shown_path(path: Path) -> str:
    """`path` as the user would type it: relative to where pytest runs when inside it, else as given (never the
    machine's absolute path for a project file: the header, the margins' words and the HTML name it so)."""
    relative = os.path.relpath(path)
    return path.as_posix() if relative.startswith("..") else Path(relative).as_posix()


def baseline_of(config: pytest.Config, settings: Settings, run: Sys1CalRun, registered: Any) -> Baseline:
    """A saved report, or another version of this model replayed now (versions/upgrade_baseline.py tells them apart)."""

    def adapter_for(version: str) -> ModelAdapter:  # the baseline version's, configured like the run's
        adapter = make_adapter(
            settings.model, registered, version=version, base_url=settings.base_url, environ=os.environ
        )
        config.hook.pytest_sys1cal_configure_adapter(config=config, adapter=adapter)
        return adapter

    assert settings.baseline is not None
    request = BaselineRequest(
        value=settings.baseline,
        model=settings.model,
        cassettes=settings.cassettes,
        default_cassettes=settings.default_cassettes,
        seed=settings.seed,
        bootstrap=settings.bootstrap,
        recalibration_splits=settings.recalibration_splits,
    )
    return resolve_baseline(
        request,
        version=run.adapter.version,
        dataset=run.dataset,
        adapter_for=adapter_for,
        invocation_dir=config.invocation_params.dir,
    )


def replay_cache_folder(config: pytest.Config, cassette_root: Path) -> tuple[Path | None, str | None]:
    """Where replays keep what each cassette gave (store/replay_cache.py): a folder under pytest's cache dir,
    never inside the cassette root, where a commit could put rows. None under ``-p no:cacheprovider`` or when
    the cache dir cannot be made (each cassette is then read in full), and with a notice when it lies inside
    the cassette root."""
    cache = getattr(config, "cache", None)
    if cache is None:
        return None, None
    try:
        folder = Path(cache.mkdir(CACHE_NAME))
    except OSError:
        return None, None
    if folder.resolve().is_relative_to(cassette_root.resolve()):
        return None, (
            f"sys1cal: pytest's cache dir lies inside the cassette root {cassette_root}, where a commit could put "
            f"cached rows, so the replay cache is not used (each cassette is read in full); set pytest's cache_dir "
            "outside it"
        )
    return folder, None


def recording_of(
    config: pytest.Config, settings: Settings, adapter: ModelAdapter, controller: bool, redactor: Redactor
) -> Recording:
    """This process's recording (its lines through the run's redactor); an xdist worker's limits are its share
    of the run's."""
    from .recording_hooks import Recording, limits_for, workercount

    workerinput: Mapping[str, Any] = getattr(config, "workerinput", {})
    share = workercount(workerinput) if not controller else 1
    return Recording(config, limits_for(settings, adapter, share), redactor, quiet=not controller)


def _import_analysis() -> None:
    # A failure here is left for the analysis itself to report, from the main thread.
    with contextlib.suppress(Exception):
        importlib.import_module(f"{__package__}.analysis")


def rounds_header(run: Sys1CalRun) -> str | None:
    """The header's line on the upgrade gate in rounds, when it is in force."""
    if run.rounds is None:
        return None
    resume = run.advice.command("once")
    return run.redactor.text(run.rounds.header(run.folder, run.baseline is not None, resume))


def looker_of(run: Sys1CalRun, controller: bool) -> Looker | None:
    """A recording in rounds, on the controller: the looks between its rounds (session/sequential_looks.py)."""
    if run.rounds is None or not run.rounds.recording or not controller or run.recording is None:
        return None
    return Looker(run.rounds, run, run.recording.say, requests_by_problem(run.dataset, run.measurer.codec))


def _cannot_start(exc: OSError, failed: str) -> InputError:
    return InputError(
        f"cannot start recording: {failed} could not be written ({exc.strerror or type(exc).__name__}); nothing "
        "was sent. Free space there, or record into another folder with --sys1cal-cassettes=DIR"
    )
