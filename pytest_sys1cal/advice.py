"""The commands the plugin prints. Each carries the run's own model, version, dataset, cassette folder and
base URL, so that followed literally it acts on the same cassettes; none writes into a reconstructed set."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Protocol

from .cassettes import CassetteStore
from .dataset import BUNDLED, Dataset, Rendering
from .models.base import ModelAdapter


class _Run(Protocol):
    """What advice reads of the run (run.py's Sys1CalRun)."""

    model_name: str
    adapter: ModelAdapter
    dataset: Dataset
    store: CassetteStore
    manifest: dict[str, Any] | None


class Advice:
    def __init__(self, run: _Run, *, explicit_base_url: bool):
        self.run = run
        self.explicit_base_url = explicit_base_url

    @property
    def reconstructed(self) -> bool:
        return bool(self.run.manifest) and self.run.manifest["source"] == "reconstructed"  # type: ignore[index]

    def command(self, mode: str, rendering: Rendering | None = None, cassettes: Path | None = None) -> str:
        """`pytest --sys1cal …` for this run's model and cassettes in record mode `mode` (optionally one
        rendering, optionally another cassette root)."""
        run = self.run
        dataset = run.dataset.name if run.dataset.name in BUNDLED else str(run.dataset.path)
        parts = [
            "pytest",
            "--sys1cal",
            f"--sys1cal-model={run.model_name}",
            f"--sys1cal-model-version={run.adapter.version}",
            f"--sys1cal-dataset={dataset}",
            f"--sys1cal-cassettes={cassettes or run.store.root}",
        ]
        if self.explicit_base_url or mode != "none":
            parts.append(f"--sys1cal-base-url={run.adapter.base_url}")
        parts.append(f"--sys1cal-record-mode={mode}")
        if rendering is not None:
            parts += ["-k", rendering.short_id]
        return shlex.join(parts)

    @property
    def key(self) -> str:
        """How to say that recording needs the API key (never a placeholder inside a command)."""
        adapter = self.run.adapter
        return f"export {adapter.key_env}, then " if adapter.key_required else ""

    def record_elsewhere(self, rendering: Rendering | None = None) -> str:
        """Record this model into a cassette root of its own, beside the current one."""
        root = self.run.store.root
        return self.command("once", rendering, cassettes=root.with_name(f"{root.name}-recorded"))

    def missing(self, rendering: Rendering, path: Path) -> str:
        """What to do about a rendering that replay cannot answer."""
        if self.reconstructed:
            return (
                f"this folder is reconstructed from published outputs: restore the file from version control "
                f"(git checkout -- {shlex.quote(str(path))}), or {self.key}record the model elsewhere with: "
                f"{self.record_elsewhere(rendering)}"
            )
        mode = "new_episodes" if path.is_file() else "once"
        return f"{self.key}record it with: {self.command(mode, rendering)}"

    def damaged(self, rendering: Rendering, path: Path) -> str:
        if self.reconstructed:
            return f"restore it from version control (git checkout -- {shlex.quote(str(path))})"
        return (
            f"restore it from version control (git checkout -- {shlex.quote(str(path))}), or {self.key}record it "
            f"again with: {self.command('all', rendering)}"
        )

    def after_failed_gates(self) -> tuple[str, str]:
        """The closing advice of the gate block: what to do if the model changed on purpose, and the command."""
        if self.reconstructed:
            return f"{self.key}record the model into a cassette folder of its own", self.record_elsewhere()
        return f"{self.key}re-record it", self.command("all")

    def no_cassettes(self) -> str:
        """The usage error of a replay with no cassettes for this model and version: what does exist."""
        run = self.run
        root = run.store.root
        found = sorted(f"{path.parent.parent.name}/{path.parent.name}" for path in root.glob("*/*/manifest.json"))
        listed = ", ".join(found) if found else "none"
        return (
            f"no cassettes for {run.model_name} {run.adapter.version}: {run.store.folder} does not exist or is "
            f"empty. Cassette folders under {root}: {listed}. Check --sys1cal-cassettes, --sys1cal-model and "
            f"--sys1cal-model-version, or {self.key}record this model first: {self.command('once')}"
        )
