"""The state of one ``pytest --sys1cal`` run (kept in ``config.stash``): its settings, dataset, adapter,
cassettes and gates, resolved and checked once at configure; on the controller, the results that arrive
from the items, and at the end the analysis, the gates and the report."""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from .advice import Advice
from .cassettes import CassetteStore
from .dataset import Dataset, load_dataset
from .errors import usage_errors
from .manifest import MANIFEST, after_recording, new_manifest
from .measure import Measurer, expand_rows
from .models import BUILTIN_ADAPTERS, make_adapter
from .models.base import ModelAdapter
from .options import resolve
from .questions import ALL_QUESTIONS
from .vocabulary import FAILED, INCONCLUSIVE

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
        self.advice = Advice(self, explicit_base_url=resolve(config, "--sys1cal-base-url") is not None)
        self.thresholds_path, self.thresholds = self._load_thresholds(registered)
        with usage_errors():
            self.manifest = self.store.read_manifest()
        self._check_cassettes()
        if self.manifest is not None and self.record_mode != "all":
            self.adapter.use_recorded_settings(self.manifest.get("settings") or {})
        self.baseline_path: Path | None = resolve(config, "--sys1cal-baseline")
        self.baseline = self._load_baseline() if self.baseline_path else None
        fresh = self._rerecording
        question_ids: tuple[str, ...] = ALL_QUESTIONS if fresh else tuple(self.manifest["questions"])  # type: ignore[index]
        self.repeats: int = self._repeats()
        self._check_baseline_repeats()
        self.measurer = Measurer(
            self.adapter,
            self.store,
            question_ids,
            self.repeats,
            timeout=resolve(config, "--sys1cal-timeout"),
            advice=self.advice,
        )
        self.results: list[dict[str, Any]] = []
        self.report: dict[str, Any] | None = None
        self.unpassed_gates: list[dict[str, Any]] = []
        self.finish_error: str | None = None
        self.finish_seconds: float | None = None
        self._created_manifest = False
        self._replaced_manifest: dict[str, Any] | None = None

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

    @property
    def repeats_per_answer(self) -> int:
        """Model repeats averaged into each recorded answer: 10 for the bundled reconstructed cassettes."""
        return int((self.manifest or {}).get("repeats_per_answer", 1)) if not self._rerecording else 1

    @property
    def _rerecording(self) -> bool:
        """Whether this run asks afresh (no manifest, or record mode all) rather than what the cassettes hold."""
        return self.record_mode == "all" or self.manifest is None

    def _repeats(self) -> int:
        """--sys1cal-repeats; else the manifest's when replaying; else, when recording against a baseline,
        as many repeats as the baseline averaged (like with like); else 10."""
        given = resolve(self.config, "--sys1cal-repeats")
        if given:
            return int(given)
        if not self._rerecording:
            return int(self.manifest["repeats"])  # type: ignore[index]
        if self.baseline is not None:
            return _averaged_repeats(self.baseline)
        return RECORDING_REPEATS

    def _check_cassettes(self) -> None:
        """Refuse, before any item runs: cassettes of another dataset; a replay with no cassettes for this
        model and version; cassettes without a manifest; recording into a reconstructed set."""
        folder, manifest_path = self.store.folder, self.store.folder / MANIFEST
        if self.manifest is None and self.record_mode != "all":
            cassettes = sum(1 for _ in folder.glob("*/*.json")) if folder.is_dir() else 0
            if cassettes:
                raise pytest.UsageError(
                    f"{manifest_path}: missing; the folder holds {cassettes} cassettes but no manifest saying what "
                    f"they are. Restore it from version control, or {self.advice.key}re-record with: {self.advice.command('all')}"
                )
            if not self.recording and not self.config.option.collectonly:
                raise pytest.UsageError(self.advice.no_cassettes())
        if self.manifest is None:
            return
        recorded_for = self.manifest["dataset"]["sha256"]
        if recorded_for != self.dataset.sha256 and self.record_mode != "all":
            raise pytest.UsageError(
                f"{manifest_path}: these cassettes were recorded for dataset sha256 {recorded_for}, but "
                f"{self.dataset.path} has sha256 {self.dataset.sha256}; use the matching dataset, or another "
                f"--sys1cal-cassettes folder"
            )
        if self.recording and self.manifest["source"] == "reconstructed":
            instead = f"{self.advice.key}record into another cassette folder: {self.advice.record_elsewhere()}"
            raise pytest.UsageError(
                f"{folder} holds cassettes reconstructed from published outputs, which live answers must not be "
                f"mixed into or overwrite. {instead[:1].upper()}{instead[1:]}"
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
        """The earlier report to compare with; it must come from the same dataset."""
        from .gates.regression import check_baseline, load_baseline

        assert self.baseline_path is not None
        with usage_errors():
            baseline = load_baseline(self.baseline_path)
            check_baseline(baseline, self.dataset.sha256, f"--sys1cal-baseline {self.baseline_path}")
        return baseline

    def _check_baseline_repeats(self) -> None:
        # Per-item OVL of a repeat mean depends on the number of repeats averaged: compare like with like.
        if self.baseline is None:
            return
        theirs, ours = _averaged_repeats(self.baseline), self.repeats * self.repeats_per_answer
        if theirs != ours:
            raise pytest.UsageError(
                f"--sys1cal-baseline {self.baseline_path}: each of its answers averages {theirs} model repeat(s), "
                f"this run's {ours}; the OVL of a mean depends on how many repeats it averages, so record both with "
                f"as many repeats (--sys1cal-repeats={theirs // self.repeats_per_answer or 1})"
            )

    def header(self) -> str:
        from .report.terminal import repeats_phrase

        cassettes = f"{self.source} cassettes, {repeats_phrase(self.repeats, self.repeats_per_answer)}"
        return (
            f"sys1cal: model {self.model_name} {self.adapter.version} ({cassettes}); dataset {self.dataset.name} "
            f"sha256 {self.dataset.sha256[:12]}… ({len(self.dataset.renderings)} renderings, "
            f"{self.dataset.latent_problems} latent problems); record mode {self.record_mode}; "
            f"cassettes {self.store.folder}; seed {self.seed}; "
            f"thresholds {self.thresholds.describe() if self.thresholds else 'none (no thresholds.yaml)'}"
        )

    # ------------------------------------------------------------------ manifest

    def start_recording(self) -> None:
        """Write the manifest before the first request, so an interrupted recording is resumable."""
        if not self.recording:
            return
        if self.manifest is None or self.record_mode == "all":
            self._replaced_manifest = self.manifest
            self.manifest = new_manifest(
                self.model_name,
                self.adapter.version,
                self.dataset,
                self.repeats,
                self.question_ids,
                self.adapter.settings(),
            )
            self.store.write_manifest(self.manifest)
            self._created_manifest = True

    def finish_recording(self) -> None:
        self.stop_recorder()
        if not any(row.get("recorded") for row in self.results):
            if self._created_manifest:  # a recording that saved nothing leaves nothing behind
                self.manifest = self._replaced_manifest
                if self.manifest is None:
                    self.store.remove_empty_folder()
                else:
                    self.store.write_manifest(self.manifest)
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
            started = time.perf_counter()
            self.report = self._build_report()
            self.unpassed_gates = [g for g in self.report["gates"] if g["verdict"] in (FAILED, INCONCLUSIVE)]
            if self.report_path:
                from .report.json_report import write_report

                write_report(self.report_path, self.report)
            if self.html_path:
                from .report.html import write_html

                write_html(self.html_path, self.report, self.baseline)
            self._append_github_summary()
            self.finish_seconds = time.perf_counter() - started
        except Exception as exc:  # noqa: BLE001 - reported in the summary, with the traceback under -v
            import traceback

            self.finish_error = f"{type(exc).__name__}: {exc}"
            self.finish_traceback = traceback.format_exc()

    def _build_report(self) -> dict[str, Any]:
        from .analysis import analyze
        from .report.json_report import build_report

        options = self.thresholds.analysis_options() if self.thresholds else {}
        analysis = analyze(
            expand_rows(self.results, self.dataset),
            seed=self.seed,
            bootstrap=resolve(self.config, "--sys1cal-bootstrap"),
            recalibration_splits=resolve(self.config, "--sys1cal-recalibration-splits"),
            **options,
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
            repeats_per_answer=self.repeats_per_answer,
            seed=self.seed,
            analysis=analysis,
            gates=[],
        )
        report["gates"] = self._evaluate_gates(report)
        report["notices"] = self._notices(report)
        return report

    def _evaluate_gates(self, report: dict[str, Any]) -> list[dict[str, Any]]:
        """Every configured gate. On a run of the whole dataset a gate that could not be measured fails;
        on part of it (-k, a stop, failed renderings) the threshold gates are not applicable."""
        from .gates.evaluate import evaluate, not_applicable, unmeasured_fails
        from .gates.regression import evaluate_regression

        gates: list[dict[str, Any]] = []
        partial = self._partial(report["counts"])
        if self.thresholds is not None:
            gates = evaluate(self.thresholds, report)
            gates = not_applicable(gates, partial) if partial else unmeasured_fails(gates)
        if self.baseline is not None:
            regression = self.thresholds.regression if self.thresholds else None
            rows = evaluate_regression(
                regression, report, self.baseline, seed=self.seed, baseline_name=str(self.baseline_path)
            )
            gates += rows if partial else unmeasured_fails(rows)
        return gates

    def _partial(self, counts: dict[str, int]) -> str | None:
        """Why this run measured less than the whole dataset, or None."""
        total = len(self.dataset.renderings)
        if counts["renderings"] < total:
            return (
                f"only {counts['renderings']} of {total} renderings were selected; threshold gates describe the "
                "whole dataset, so they are not applied to part of it"
            )
        if counts["failed"]:
            return (
                f"{counts['failed']} of {total} renderings could not be measured; threshold gates describe the "
                "whole dataset, so they are not applied to the rest"
            )
        return None

    def _notices(self, report: dict[str, Any]) -> list[str]:
        """What the user must know about this run's inputs, said in the terminal, the summary and the report."""
        notices = []
        server = (self.manifest or {}).get("server_model")
        if server and server != self.adapter.version:
            notices.append(
                f"the server reported model {server}, not the pinned {self.adapter.version}: these answers are "
                f"filed under {self.adapter.version}"
            )
        if self.thresholds is not None and not self.thresholds.layers:
            notices.append(f"{self.thresholds.path}: {self.thresholds.notice}: this run gates nothing")
        elif self.thresholds is None and self.baseline is None:
            notices.append("no thresholds.yaml and no baseline: this run gates nothing")
        for gate in report["gates"]:
            extra = (gate.get("details") or {}).get("only_in_new")
            if extra:
                notices.append(
                    f"the baseline {self.baseline_path} lacks {extra} of the renderings this run measured; "
                    "the comparison uses only the renderings in both"
                )
                break
        return notices

    def _append_github_summary(self) -> None:
        """On GitHub Actions, the tables and gates also go to the job's summary page, as Markdown."""
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary and self.report is not None:
            from .report.markdown import summary_markdown

            with open(summary, "a", encoding="utf-8") as handle:
                handle.write(summary_markdown(self.report, html=self.html_path, environ=os.environ))

    def summary_lines(self) -> list[tuple[str, dict[str, bool]]]:
        from .report.terminal import summary_lines

        lines: list[tuple[str, dict[str, bool]]] = []
        if self.report is not None:
            lines += summary_lines(self.report, rerecord=self.advice.after_failed_gates())
        elif not self.finish_error:
            lines.append(("no rendering was measured (all deselected or skipped)", {}))
        if self.report_path and self.report is not None:
            lines.append((f"JSON report written to {self.report_path}", {}))
        if self.finish_seconds is not None:
            lines.append(
                (f"analysis and reports of {len(self.report['items'])} renderings: {self.finish_seconds:.2f} s", {})
            )
        if self.html_path and self.report is not None and not self.finish_error:
            lines.append((f"HTML report written to {self.html_path}", {}))
        if self.finish_error:
            lines.append((f"sys1cal could not finish the analysis: {self.finish_error}", {"red": True, "bold": True}))
            if self.config.get_verbosity() > 0:
                lines += [(text, {}) for text in self.finish_traceback.splitlines()]
            else:
                lines.append(("(run with -v for the traceback)", {}))
        return lines

    def gate_location(self, name: str) -> tuple[str, int]:
        """The file and line that configure the gate `name` (for JUnit XML)."""
        for gate in self.thresholds.gates if self.thresholds else ():
            if gate.name == name:
                return str(self.thresholds_path), gate.line
        return str(self.baseline_path or self.thresholds_path or self.dataset.path), 1

    def model_info(self) -> dict[str, Any]:
        return {
            "name": self.model_name,
            "version": self.adapter.version,
            "source": self.source,
            "server_model": (self.manifest or {}).get("server_model"),
        }


def _averaged_repeats(report: dict[str, Any]) -> int:
    """How many model repeats each rendering's value in a report averages."""
    return int(report.get("repeats") or 1) * int(report.get("repeats_per_answer") or 1)


def _import_analysis() -> None:
    # A failure here is left for the analysis itself to report, from the main thread.
    with contextlib.suppress(Exception):
        importlib.import_module(f"{__package__}.analysis")
