"""The run's state (kept in ``config.stash``): settings, dataset, adapter and cassettes; measuring one
rendering; and, on the controller, the collected results, the analysis and the report at the end.

Heavy imports (vcrpy and the httpx it brings; numpy, via the analysis) happen here, and only once ``--sys1cal`` is given.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import importlib
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from vcr.request import Request as VcrRequest

from .cassettes import EXTENSION_KEY, CassetteMiss, CassetteStore, CassetteTransport, recorded_headers, replay
from .dataset import Dataset, DatasetError, Rendering, load_dataset
from .models import UnknownModel, make_adapter
from .models.base import AnswerError, ModelAdapter, ServerError, WireRequest, WireResponse
from .options import resolve
from .questions import ALL_QUESTIONS

RECORDING_REPEATS = 10
TIMEOUT_SECONDS = 60.0


class ItemFailure(Exception):
    """Fails one item with a message and no traceback."""

    def __init__(self, message: str, *, fatal: bool = False):
        super().__init__(message)
        self.fatal = fatal


class Sys1CalRun:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.model_name: str = resolve(config, "--sys1cal-model")
        self.record_mode: str = resolve(config, "--sys1cal-record-mode")
        self.seed: int = resolve(config, "--sys1cal-seed")
        self.report_path: Path | None = resolve(config, "--sys1cal-report")
        self.dataset: Dataset = _usage(load_dataset, resolve(config, "--sys1cal-dataset"))
        registered = config.hook.pytest_sys1cal_adapters()
        self.adapter: ModelAdapter = _usage(
            make_adapter,
            self.model_name,
            registered,
            version=resolve(config, "--sys1cal-model-version"),
            base_url=resolve(config, "--sys1cal-base-url"),
            environ=os.environ,
        )
        config.hook.pytest_sys1cal_configure_adapter(config=config, adapter=self.adapter)
        self.store = CassetteStore(
            resolve(config, "--sys1cal-cassettes"),
            self.model_name,
            self.adapter.version,
            self.record_mode,
            self.adapter.secrets,
        )
        self.manifest = _usage(self.store.read_manifest)
        self._check_manifest()
        rerecord = self.record_mode == "all" or self.manifest is None
        self.question_ids: tuple[str, ...] = ALL_QUESTIONS if rerecord else tuple(self.manifest["questions"])
        manifest_repeats = None if rerecord else self.manifest["repeats"]
        self.repeats: int = resolve(config, "--sys1cal-repeats") or manifest_repeats or RECORDING_REPEATS
        self.thresholds_path, self.thresholds = self._load_thresholds(registered)
        self.baseline_path: Path | None = resolve(config, "--sys1cal-baseline")
        self.baseline = self._load_baseline() if self.baseline_path else None
        self.results: list[dict[str, Any]] = []
        self.report: dict[str, Any] | None = None
        self.failed_gates: list[dict[str, Any]] = []
        self.finish_error: str | None = None
        self._client: httpx.Client | None = None
        # Concurrent recording (recorder.py): set when this process records; None when replaying.
        self.recorder: Any = None

    # ------------------------------------------------------------------ settings

    @property
    def recording(self) -> bool:
        return self.record_mode != "none"

    @property
    def source(self) -> str:
        return self.manifest["source"] if self.manifest else "recorded"

    def _check_manifest(self) -> None:
        if self.manifest is None:
            return
        recorded_for = self.manifest.get("dataset", {}).get("sha256")
        if recorded_for != self.dataset.sha256 and self.record_mode != "all":
            raise pytest.UsageError(
                f"{self.store.folder / 'manifest.json'}: these cassettes were recorded for dataset sha256 "
                f"{recorded_for}, but {self.dataset.path} has sha256 {self.dataset.sha256}; use the matching "
                f"dataset, another --sys1cal-cassettes folder, or re-record with --sys1cal-record-mode=all"
            )

    def _load_thresholds(self, registered: Any) -> tuple[Path | None, Any]:
        from .models import BUILTIN_ADAPTERS
        from .thresholds import ThresholdsError, load_thresholds

        path = resolve(self.config, "--sys1cal-thresholds")
        if path is None:
            default = self.config.rootpath / "thresholds.yaml"
            if not default.is_file():
                return None, None
            path = default
        elif not Path(path).is_file():
            raise pytest.UsageError(f"--sys1cal-thresholds: {path} does not exist")
        known = sorted({*BUILTIN_ADAPTERS, *(name for mapping in registered for name in (mapping or {}))})
        try:
            return path, load_thresholds(path, self.model_name, self.adapter.version, known_models=known)
        except ThresholdsError as exc:
            raise pytest.UsageError(str(exc)) from None

    def _load_baseline(self) -> dict[str, Any]:
        """The earlier report to compare with; it must come from the same dataset and repeat count."""
        from .thresholds import ThresholdsError, load_baseline

        try:
            baseline = load_baseline(self.baseline_path)
        except ThresholdsError as exc:
            raise pytest.UsageError(str(exc)) from None
        recorded_for = baseline.get("dataset", {}).get("sha256")
        if recorded_for != self.dataset.sha256:
            raise pytest.UsageError(
                f"--sys1cal-baseline {self.baseline_path}: it was computed on dataset sha256 {recorded_for}, this run "
                f"uses {self.dataset.name} sha256 {self.dataset.sha256}; compare runs of the same dataset"
            )
        if baseline.get("repeats") != self.repeats:
            # Per-item OVL of a repeat mean depends on the number of repeats: compare like with like.
            raise pytest.UsageError(
                f"--sys1cal-baseline {self.baseline_path}: it averaged {baseline.get('repeats')} repeat(s) per rendering, "
                f"this run {self.repeats}; record both with the same --sys1cal-repeats"
            )
        return baseline

    def header(self) -> str:
        cassettes = f"{self.source} cassettes, {self.repeats} repeat{'s' if self.repeats != 1 else ''}"
        return (
            f"sys1cal: model {self.model_name} {self.adapter.version} ({cassettes}); dataset {self.dataset.name} "
            f"sha256 {self.dataset.sha256[:12]}… ({len(self.dataset.renderings)} renderings, "
            f"{self.dataset.latent_problems} latent problems); record mode {self.record_mode}; "
            f"cassettes {self.store.folder}; seed {self.seed}; "
            f"thresholds {self.thresholds.describe() if self.thresholds else 'none (no thresholds.yaml)'}"
        )

    def record_command(self, rendering: Rendering, mode: str = "once") -> str:
        key = f"{self.adapter.key_env}=... " if self.adapter.key_required else ""
        return f"{key}pytest --sys1cal --sys1cal-model {self.model_name} --sys1cal-record-mode={mode} -k {rendering.short_id}"

    # ------------------------------------------------------------------ measuring one rendering

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            inner: httpx.BaseTransport | None = None
            if self.recording:
                missing = self.adapter.missing_key()
                inner = _RefusingTransport(missing) if missing else httpx.HTTPTransport()
            timeout = resolve(self.config, "--sys1cal-timeout") or TIMEOUT_SECONDS
            self._client = httpx.Client(transport=CassetteTransport(inner), timeout=timeout)
        return self._client

    def measure(self, rendering: Rendering) -> dict[str, Any]:
        """Ask (or replay) every question of `rendering` for every repeat; save the cassette only when
        all of them succeeded, so a failure never leaves a partial recording behind.

        A rendering being recorded concurrently (recorder.py) is waited for instead."""
        if self.recorder is not None and self.recorder.handles(rendering):
            from .recorder import RecordingError

            try:
                return self.recorder.result(rendering)
            except RecordingError as exc:
                raise ItemFailure(str(exc), fatal=exc.fatal) from None
        cassette = self.store.open(rendering)
        samples: list[dict[str, Any]] = []
        server_model = None
        try:
            for _ in range(self.repeats):
                requests = self.adapter.requests(rendering, self.question_ids)
                responses = [self._send(cassette, request) for request in requests]
                samples.append(self.adapter.parse(self.question_ids, responses))
                server_model = self.adapter.reported_model(responses) or server_model
        except CassetteMiss as exc:
            mode = "new_episodes" if Path(cassette.path).is_file() else "once"
            raise ItemFailure(f"{exc}; record it with: {self.record_command(rendering, mode)}") from None
        except ServerError as exc:
            raise ItemFailure(f"server error: {exc}", fatal=exc.fatal) from None
        except AnswerError as exc:
            raise ItemFailure(f"malformed answer: {exc}") from None
        recorded = bool(cassette.dirty)
        self.store.save(cassette)
        return {**self.identity(rendering), "samples": samples, "server_model": server_model, "recorded": recorded}

    def _send(self, cassette: Any, request: WireRequest) -> WireResponse:
        """Replay straight from the cassette (no HTTP client on the replay path: it is most of an item's
        cost); go through the client, its cassette transport and the network only when recording."""
        recorded = replay(
            cassette, VcrRequest(request.method, request.url, request.content(), dict(request.headers)), self.recording
        )
        if recorded is None:
            wire = self._send_live(cassette, request)
        else:
            wire = WireResponse(
                recorded["status"]["code"], dict(recorded_headers(recorded)), recorded["body"]["string"]
            )
        if not 200 <= wire.status < 300:
            raise self.adapter.error(wire)
        return wire

    def _send_live(self, cassette: Any, request: WireRequest) -> WireResponse:
        try:
            response = self.client.request(
                request.method,
                request.url,
                content=request.content(),
                headers=dict(request.headers),
                extensions={EXTENSION_KEY: cassette},
            )
        except _MissingKey as exc:
            raise ItemFailure(f"cannot record: {exc}", fatal=True) from None
        except httpx.ConnectError as exc:
            # Nothing answers at that address: every other item would fail the same way.
            raise ItemFailure(f"cannot connect to {request.url}: {exc}", fatal=True) from None
        except httpx.HTTPError as exc:
            raise ServerError(None, f"no response from {request.url}: {type(exc).__name__}: {exc}") from None
        return WireResponse(response.status_code, dict(response.headers), response.content)

    @staticmethod
    def identity(rendering: Rendering) -> dict[str, Any]:
        return {
            "instance_id": rendering.instance_id,
            "latent_instance_id": rendering.latent_instance_id,
            "family": rendering.family,
            "representation": rendering.representation,
            "p_star": rendering.p_star,
        }

    def close(self) -> None:
        self.stop_recorder()
        if self._client is not None:
            self._client.close()

    def stop_recorder(self) -> None:
        """End concurrent recording: cancel what is in flight (nothing partial is saved)."""
        if self.recorder is not None:
            self.recorder.close()

    # ------------------------------------------------------------------ controller: manifest, results, report

    def start_recording(self) -> None:
        """Write the manifest before the first request, so an interrupted recording is resumable."""
        if not self.recording:
            return
        if self.manifest is None or self.record_mode == "all":
            self.manifest = {
                "model": self.model_name,
                "version": self.adapter.version,
                "server_model": None,
                "dataset": {"name": self.dataset.name, "sha256": self.dataset.sha256},
                "repeats": self.repeats,
                "questions": list(self.question_ids),
                "source": "recorded",
                "recorded_at": None,
            }
            self.store.write_manifest(self.manifest)

    def finish_recording(self) -> None:
        self.stop_recorder()
        recorded = [row for row in self.results if row.get("recorded")]
        if not recorded:
            return
        if self.manifest is None:
            self.start_recording()
        if self.manifest is None:
            return
        server_models = sorted({row["server_model"] for row in recorded if row.get("server_model")})
        source = self.manifest["source"]
        self.manifest = {
            **self.manifest,
            "server_model": ", ".join(server_models) or self.manifest.get("server_model"),
            "recorded_at": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
            "source": source if source == "recorded" else "mixed",
        }
        if not any(row.get("error") for row in self.results):
            self.manifest["repeats"] = self.repeats
        self.store.write_manifest(self.manifest)

    def warm_up(self) -> None:
        """Import the analysis stack (numpy) on a background thread while the items run: the import waits
        on the disk for much of its time, and the analysis needs it only at the end."""
        import threading

        threading.Thread(target=_import_analysis, daemon=True).start()

    def add_result(self, row: dict[str, Any]) -> None:
        self.results.append(row)

    def finish(self) -> None:
        """Analyse what was measured, write the report and the manifest. Never raises: a summary hook
        that raises loses pytest's own summary, so a failure here becomes a red line instead."""
        try:
            self.finish_recording()
            if not self.results:
                return
            from .analysis import analyze
            from .report.json_report import build_report, write_report

            options = self.thresholds.analysis_options() if self.thresholds else {}
            analysis = analyze(
                self.results, seed=self.seed, bootstrap=resolve(self.config, "--sys1cal-bootstrap"), **options
            )
            self.report = build_report(
                model=self.model_info(),
                dataset={
                    "name": self.dataset.name,
                    "sha256": self.dataset.sha256,
                    "renderings": len(self.dataset.renderings),
                    "latent_problems": self.dataset.latent_problems,
                },
                repeats=self.repeats,
                seed=self.seed,
                analysis=analysis,
                gates=[],
            )
            self.report["gates"] = self._evaluate_gates(self.report)
            self.failed_gates = [gate for gate in self.report["gates"] if gate["verdict"] == "FAILED"]
            if self.report_path:
                write_report(self.report_path, self.report)
            self._append_github_summary()
        except Exception as exc:  # noqa: BLE001 - reported in the summary, with the traceback under -v
            import traceback

            self.finish_error = f"{type(exc).__name__}: {exc}"
            self.finish_traceback = traceback.format_exc()

    def _append_github_summary(self) -> None:
        """On GitHub Actions, the tables and gates also go to the job's summary page, as Markdown."""
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary and self.report is not None:
            from .report.markdown import summary_markdown

            with open(summary, "a", encoding="utf-8") as handle:
                handle.write(summary_markdown(self.report))

    def _evaluate_gates(self, report: dict[str, Any]) -> list[dict[str, Any]]:
        from .thresholds import evaluate, evaluate_regression

        gates: list[dict[str, Any]] = []
        if self.thresholds is not None:
            gates = evaluate(self.thresholds, report)
            selected, total = len(self.results), len(self.dataset.renderings)
            if selected < total:
                # The floors describe the whole benchmark; a -k subset would trip them by composition alone.
                why = f"only {selected} of {total} renderings were selected; threshold gates apply to the whole dataset"
                gates = [{**gate, "passed": None, "verdict": "not measured", "explanation": why} for gate in gates]
        if self.baseline is not None:
            regression = self.thresholds.regression if self.thresholds else None
            gates += evaluate_regression(
                regression, report, self.baseline, seed=self.seed, baseline_name=str(self.baseline_path)
            )
        return gates

    def summary_lines(self) -> list[tuple[str, dict[str, bool]]]:
        from .report.terminal import summary_lines

        lines: list[tuple[str, dict[str, bool]]] = []
        if self.report is not None:
            lines += summary_lines(self.report)
        elif not self.finish_error:
            lines.append(("no rendering was measured (all deselected or skipped)", {}))
        if self.report_path and self.report is not None:
            lines.append((f"JSON report written to {self.report_path}", {}))
        if self.finish_error:
            lines.append((f"sys1cal could not finish the analysis: {self.finish_error}", {"red": True, "bold": True}))
            if self.config.get_verbosity() > 0:
                lines += [(text, {}) for text in self.finish_traceback.splitlines()]
            else:
                lines.append(("(run with -v for the traceback)", {}))
        return lines

    def model_info(self) -> dict[str, Any]:
        return {
            "name": self.model_name,
            "version": self.adapter.version,
            "source": self.source,
            "server_model": (self.manifest or {}).get("server_model"),
        }


def _import_analysis() -> None:
    # A failure here is left for the analysis itself to report, from the main thread.
    with contextlib.suppress(Exception):
        importlib.import_module(f"{__package__}.analysis")


def _usage(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Call `function`; turn the user's mistakes it reports into a pytest usage error (no traceback)."""
    try:
        return function(*args, **kwargs)
    except (DatasetError, UnknownModel, ValueError) as exc:
        raise pytest.UsageError(str(exc)) from None


class _RefusingTransport(httpx.BaseTransport):
    """Stands in for the network when the adapter has no API key: one clear error, nothing sent."""

    def __init__(self, reason: str):
        self.reason = reason

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        raise _MissingKey(self.reason)


class _MissingKey(httpx.HTTPError):
    def __init__(self, reason: str):
        super().__init__(reason)
