"""The state of one ``pytest --sys1cal`` run (kept in ``config.stash``): its settings, dataset, adapter,
cassettes and gates, resolved once at configure; on the controller, the results that arrive from the
items, and at the end the analysis, the gates and the report."""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from .cassettes import CassetteStore
from .dataset import Dataset, Rendering, load_dataset
from .errors import InputError, usage_errors
from .manifest import after_recording, new_manifest
from .measure import Measurer
from .models import BUILTIN_ADAPTERS, make_adapter
from .models.base import ModelAdapter
from .options import resolve
from .questions import ALL_QUESTIONS
from .vocabulary import FAILED

RECORDING_REPEATS = 10


class Sys1CalRun:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.model_name: str = resolve(config, "--sys1cal-model")
        self.record_mode: str = resolve(config, "--sys1cal-record-mode")
        self.seed: int = resolve(config, "--sys1cal-seed")
        self.report_path: Path | None = resolve(config, "--sys1cal-report")
        self.html_path: Path | None = resolve(config, "--sys1cal-html")
        if self.html_path:
            from .report.html import check_available

            with usage_errors():
                check_available()  # before any item runs, not a traceback at the end
        registered = config.hook.pytest_sys1cal_adapters()
        with usage_errors():
            self.dataset: Dataset = load_dataset(resolve(config, "--sys1cal-dataset"))
        with usage_errors(ValueError):  # an adapter refuses a bad configuration with ValueError
            self.adapter: ModelAdapter = make_adapter(
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
        with usage_errors():
            self.manifest = self.store.read_manifest()
        self._check_manifest()
        rerecord = self.record_mode == "all" or self.manifest is None
        question_ids: tuple[str, ...] = ALL_QUESTIONS if rerecord else tuple(self.manifest["questions"])
        manifest_repeats = None if rerecord else self.manifest["repeats"]
        self.repeats: int = resolve(config, "--sys1cal-repeats") or manifest_repeats or RECORDING_REPEATS
        self.measurer = Measurer(
            self.adapter,
            self.store,
            question_ids,
            self.repeats,
            timeout=resolve(config, "--sys1cal-timeout"),
            record_command=self.record_command,
        )
        self.thresholds_path, self.thresholds = self._load_thresholds(registered)
        self.baseline_path: Path | None = resolve(config, "--sys1cal-baseline")
        self.baseline = self._load_baseline() if self.baseline_path else None
        self.results: list[dict[str, Any]] = []
        self.report: dict[str, Any] | None = None
        self.failed_gates: list[dict[str, Any]] = []
        self.finish_error: str | None = None

    # ------------------------------------------------------------------ settings

    @property
    def recording(self) -> bool:
        return self.record_mode != "none"

    @property
    def question_ids(self) -> tuple[str, ...]:
        return self.measurer.question_ids

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
        from .gates.config import load_thresholds

        path = resolve(self.config, "--sys1cal-thresholds")
        if path is None:
            default = self.config.rootpath / "thresholds.yaml"
            if not default.is_file():
                return None, None
            path = default
        elif not Path(path).is_file():
            raise pytest.UsageError(f"--sys1cal-thresholds: {path} does not exist")
        known = sorted({*BUILTIN_ADAPTERS, *(name for mapping in registered for name in (mapping or {}))})
        with usage_errors():
            return path, load_thresholds(path, self.model_name, self.adapter.version, known_models=known)

    def _load_baseline(self) -> dict[str, Any]:
        """The earlier report to compare with; it must come from the same dataset and repeat count."""
        from .gates.regression import check_baseline, load_baseline

        assert self.baseline_path is not None
        with usage_errors():
            baseline = load_baseline(self.baseline_path)
            check_baseline(baseline, self.dataset.sha256, f"--sys1cal-baseline {self.baseline_path}")
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

    # ------------------------------------------------------------------ manifest

    def start_recording(self) -> None:
        """Write the manifest before the first request, so an interrupted recording is resumable."""
        if not self.recording:
            return
        if self.manifest is None or self.record_mode == "all":
            self.manifest = new_manifest(
                self.model_name, self.adapter.version, self.dataset, self.repeats, self.question_ids
            )
            self.store.write_manifest(self.manifest)

    def finish_recording(self) -> None:
        self.stop_recorder()
        if not any(row.get("recorded") for row in self.results):
            return
        if self.manifest is None:
            self.start_recording()
        if self.manifest is None:
            return
        updated = after_recording(self.manifest, self.results, self.repeats)
        if updated is not None:
            self.manifest = updated
            self.store.write_manifest(self.manifest)

    def stop_recorder(self) -> None:
        """End concurrent recording: cancel what is in flight (nothing partial is saved)."""
        if self.measurer.recorder is not None:
            self.measurer.recorder.close()

    def close(self) -> None:
        self.stop_recorder()
        self.measurer.close()

    # ------------------------------------------------------------------ controller: results, analysis, report

    def warm_up(self) -> None:
        """Import the analysis stack (numpy) on a background thread while the items run: the import waits
        on the disk for much of its time, and the analysis needs it only at the end."""
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
            self.report = self._build_report()
            self.failed_gates = [gate for gate in self.report["gates"] if gate["verdict"] == FAILED]
            if self.report_path:
                from .report.json_report import write_report

                write_report(self.report_path, self.report)
            if self.html_path:
                from .report.html import write_html

                write_html(self.html_path, self.report, self.baseline)
            self._append_github_summary()
        except Exception as exc:  # noqa: BLE001 - reported in the summary, with the traceback under -v
            import traceback

            self.finish_error = f"{type(exc).__name__}: {exc}"
            self.finish_traceback = traceback.format_exc()

    def _build_report(self) -> dict[str, Any]:
        from .analysis import analyze
        from .report.json_report import build_report

        options = self.thresholds.analysis_options() if self.thresholds else {}
        analysis = analyze(
            self.results, seed=self.seed, bootstrap=resolve(self.config, "--sys1cal-bootstrap"), **options
        )
        report = build_report(
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
        report["gates"] = self._evaluate_gates(report)
        return report

    def _append_github_summary(self) -> None:
        """On GitHub Actions, the tables and gates also go to the job's summary page, as Markdown."""
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary and self.report is not None:
            from .report.markdown import summary_markdown

            with open(summary, "a", encoding="utf-8") as handle:
                handle.write(summary_markdown(self.report, html=self.html_path, environ=os.environ))

    def _evaluate_gates(self, report: dict[str, Any]) -> list[dict[str, Any]]:
        from .gates.evaluate import evaluate, not_applicable
        from .gates.regression import evaluate_regression

        gates: list[dict[str, Any]] = []
        if self.thresholds is not None:
            gates = evaluate(self.thresholds, report)
            selected, total = len(self.results), len(self.dataset.renderings)
            if selected < total:
                # The floors describe the whole benchmark; a -k subset would trip them by composition alone.
                why = f"only {selected} of {total} renderings were selected; threshold gates apply to the whole dataset"
                gates = not_applicable(gates, why)
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
        if self.html_path and self.report is not None and not self.finish_error:
            lines.append((f"HTML report written to {self.html_path}", {}))
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


__all__ = ["InputError", "Sys1CalRun"]
