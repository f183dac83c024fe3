"""The commands the plugin prints. Each carries what shapes what this run asks (model, version, dataset,
cassette folder, the server it was recorded from, repeats, the cost cap), so that followed literally it acts
on the same cassettes the same way; none writes into a reconstructed set, and none carries URL credentials."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from ..dataset import BUNDLED, Dataset, Rendering
from ..models.base import ModelAdapter
from ..redact import strip_userinfo
from ..store.folder import CassetteFolder, folders_under, restore_from_git
from ..store.lfs import ADVICE, is_pointer
from ..store.manifest import MANIFEST
from .node_ids import node_id
from .options import Settings, argument, flag


class Advice:
    def __init__(
        self,
        settings: Settings,
        adapter: ModelAdapter,
        dataset: Dataset,
        folder: CassetteFolder,
        selection: Sequence[str] = (),
    ):
        self.settings = settings
        self.adapter = adapter
        self.dataset = dataset
        self.folder = folder
        # The run's -k and -m and the node ids it named: a command acting on this run's renderings keeps them
        # (recording into another folder without them asked all 365 where 6 were selected).
        self.selection = tuple(selection)

    @property
    def base_url(self) -> str:
        """The server the printed commands record from: this run's --sys1cal-base-url (or ini key) when given,
        else the one the folder was recorded from (its manifest's ``base_url``), else the adapter's (its
        environment variable or public default); never with credentials."""
        url = self.settings.base_url or self.folder.base_url or self.adapter.base_url
        return strip_userinfo(url.rstrip("/"))

    def run_parts(self, cassettes: Path | None = None) -> list[str]:
        """``pytest --sys1cal`` and the options naming this run's model, version, dataset and cassette root."""
        dataset = self.dataset.name if self.dataset.name in BUNDLED else str(self.dataset.path)
        shard = [argument("shard", self.settings.shard)] if self.settings.shard else []  # the same share
        if shard and self.settings.sequential:  # its next round, in the order of the same seed
            shard += [flag("sequential"), argument("seed", self.settings.seed)]
        return [
            "pytest",
            "--sys1cal",
            argument("model", self.settings.model),
            argument("model_version", self.adapter.version),
            argument("dataset", dataset),
            argument("cassettes", cassettes or self.settings.cassettes),
            *shard,
        ]

    def merge_hint(self) -> str:
        """How shards' folders become a version's: the merge, then the replay that gates it."""
        into = self.settings.cassettes / self.settings.model / self.adapter.version
        return (
            f"merge the shards' folders into one version folder, {into}, with python -m pytest_sys1cal merge "
            "(python -m pytest_sys1cal docs recording), and replay that one to gate the version"
        )

    def command(self, mode: str, rendering: Rendering | None = None, cassettes: Path | None = None) -> str:
        """`pytest --sys1cal …` for this run's model and cassettes in record mode `mode` (optionally one
        rendering, by its node id; optionally another cassette root). Repeats are kept when this run was given
        them, and re-recording this folder (mode ``all``) asks as many as it holds; the cost cap is kept, and so
        is the run's selection (-k, -m, node ids) except where one rendering or the whole folder is meant."""
        parts = self.run_parts(cassettes)
        if self.adapter.model_id:  # the id this run sends (a recording into another folder must send it too)
            parts.append(argument("model_id", self.adapter.model_id))
        if self.settings.base_url is not None or mode != "none":
            parts.append(argument("base_url", self.base_url))
        repeats = self.settings.repeats
        if repeats is None and mode == "all" and cassettes is None and self.folder.manifest is not None:
            repeats = int(self.folder.manifest["repeats"])  # else `all` would ask the recording default
        if repeats is not None:
            parts.append(argument("repeats", repeats))
        if self.settings.max_cost is not None and mode != "none":
            parts.append(argument("max_cost", self.settings.max_cost))
        parts.append(argument("record_mode", mode))
        if rendering is not None:
            parts.append(node_id(self.settings.model, rendering))
        elif mode != "all":  # `all` re-records a folder whole: a selection would leave the rest as it was
            parts += self.selection
        return shlex.join(parts)

    def whole_shard(self) -> str:
        """The command that records what this run's shard still lacks, the whole share (not this run's -k)."""
        parts = shlex.split(self.command("once"))
        return shlex.join(parts[: len(parts) - len(self.selection)])

    def list_ids(self) -> str:
        """The command that lists this run's node ids (collection only: it sends and writes nothing)."""
        return shlex.join([*self.run_parts(), "--co", "-q"])

    @property
    def key(self) -> str:
        """How to say that recording needs the API key, when it is not set (never a placeholder inside a
        command); nothing when this process has it."""
        missing = self.adapter.missing_key()
        if not missing:
            return ""
        return f"export {self.adapter.key_env}, then " if self.adapter.key_env else f"({missing}) then "

    @property
    def thresholds_file(self) -> str | None:
        """The thresholds file in force, as the user would type it (relative to the working directory when
        inside it), or None when this run reads none."""
        path = self.settings.thresholds
        if path is None:
            return None
        relative = os.path.relpath(path)
        return path.as_posix() if relative.startswith("..") else Path(relative).as_posix()

    def record_elsewhere(self, rendering: Rendering | None = None) -> str:
        """Record this model into a cassette root of its own: beside the current one, or (for the bundled
        reference set, which lives inside the installation) the project's own."""
        if self.folder.read_only:
            return self.command("once", rendering)
        root = self.settings.cassettes
        return self.command("once", rendering, cassettes=root.with_name(f"{root.name}-recorded"))

    def restore(self, path: Path, what: str = "it") -> str:
        """How to get a damaged or missing reference cassette back."""
        if self.folder.read_only:
            return "reinstall pytest-sys1cal (pip install --force-reinstall --no-deps pytest-sys1cal)"
        return restore_from_git(path, what)

    def missing(self, rendering: Rendering, path: Path) -> str:
        """What to do about a rendering that replay cannot answer."""
        if self.folder.reconstructed:
            return (
                f"this folder is reconstructed from published outputs: {self.restore(path, 'the file')}, or {self.key}record "
                f"the model elsewhere with: {self.record_elsewhere(rendering)}"
            )
        mode = "new_episodes" if path.is_file() else "once"
        return f"{self.key}record it with: {self.command(mode, rendering)}"

    def damaged(self, rendering: Rendering, path: Path) -> str:
        if is_pointer(path):  # neither restoring from git nor re-recording helps: the LFS objects do
            return ADVICE
        if self.folder.reconstructed:
            return self.restore(path)
        return f"{self.restore(path)}, or {self.key}record it again with: {self.command('all', rendering)}"

    def no_cassettes(self) -> str:
        """The usage error of a replay with no cassettes for this model and version: what does exist. When a folder
        of this very model and version lies above or below the project (pytest run from tests/, say), the fix is
        to replay that one, which sends nothing: a recording, which costs money, is not offered then."""
        folder = self.folder
        missing = (
            f"no cassettes for {self.settings.model} {self.adapter.version}: {folder.path} does not exist or is empty"
        )
        nearby = nearby_folders(folder.root, self.settings.model, self.adapter.version)
        if nearby:
            found = shown(nearby[0])
            root = nearby[0].parent.parent
            others = f" (also: {', '.join(shown(p) for p in nearby[1:3])})" if len(nearby) > 1 else ""
            return (
                f"{missing}. The same model and version is recorded in {found}{others}, "
                f"{'above' if root.parent.resolve() in folder.root.resolve().parent.parents else 'below'} this run's "
                f"cassette root: replay it (nothing "
                f"is sent) with: {self.command('none', cassettes=Path(shown(root)))}, or run pytest from the folder "
                "whose ini names it"
            )
        listed = ", ".join(folders_under(folder.root)) or "none"
        return (
            f"{missing}. Cassette folders under {folder.root}: {listed}. Check --sys1cal-cassettes, --sys1cal-model and "
            f"--sys1cal-model-version, or {self.key}record this model first: {self.command('once')}"
        )


NEARBY_UP, NEARBY_DOWN = 3, 3  # folders searched above the cassette root's folder, and below it
SKIPPED = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox", "site-packages"})


def nearby_folders(root: Path, model: str, version: str) -> list[Path]:
    """Version folders of `model`/`version` (with a manifest) in a cassette root of the same name as `root`, in
    the folders above `root`'s own (nearest first), then below it: where a run from the wrong directory, or one
    without the project's ini, should have looked."""
    name, home = root.name, root.resolve().parent
    wanted = Path(name) / model / version / MANIFEST
    found = [up / wanted for up in list(home.parents)[:NEARBY_UP] if (up / wanted).is_file()]
    level = [home]
    for _ in range(NEARBY_DOWN):
        level = [d for parent in level for d in _subfolders(parent)]
        found += [d / wanted for d in level if (d / wanted).is_file()]
    return [path.parent for path in found if path.parent.parent.parent.resolve() != root.resolve()]


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(d for d in folder.iterdir() if d.is_dir() and not d.is_symlink() and d.name not in SKIPPED)
    except OSError:
        return []


def shown(path: Path) -> str:
    """A path as the user would type it: relative to the working directory (with ../ when above it)."""
    try:
        return Path(os.path.relpath(path)).as_posix()
    except ValueError:  # another drive
        return path.as_posix()


def selection_of(keyword: str | None, markexpr: str | None, args: Sequence[str]) -> tuple[str, ...]:
    """The options and node ids that select this run's renderings, as a command line carries them."""
    parts: list[str] = []
    if keyword:
        parts += ["-k", keyword]
    if markexpr:
        parts += ["-m", markexpr]
    return (*parts, *(arg for arg in args if arg.startswith("sys1cal::")))
