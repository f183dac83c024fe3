"""Where the plugin reads its defaults and ini keys from, when pytest misread an option's value: pytest picks its
rootdir and ini file before plugins declare their options, so in ``--sys1cal-cassettes /ci/cas`` (a space, not
``=``) it takes ``/ci/cas`` for a test path too. options.py reads the ini keys from the `Placement` found here."""

from __future__ import annotations

import inspect
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class Placement:
    """The rootdir and ini file the plugin reads its defaults and ini keys from: pytest's, unless pytest took
    the value of a plugin option for a test path when it chose them (then `inicfg` holds the right file's
    values)."""

    rootpath: Path
    inipath: Path | None
    inicfg: dict[str, Any] | None = None  # None: read ini keys through pytest (its choice stands)

    def addopts(self) -> str:
        """The ini file's ``addopts``, as one command-line string ('' when it has none)."""
        value = (self.inicfg or {}).get("addopts")
        value = getattr(value, "value", value)
        if isinstance(value, list | tuple):
            return shlex.join(str(v) for v in value)
        return "" if value is None else " ".join(str(value).split())


def placement(config: pytest.Config, flags: set[str], thresholds_file: str) -> Placement:
    """pytest picks its rootdir and ini file before plugins declare their options, so in
    ``--sys1cal-cassettes /ci/cas`` (a space, not ``=``) it takes ``/ci/cas`` for a test path too. Where that
    moved the rootdir or the ini file, the plugin reads its defaults (cassettes, thresholds.yaml) and its
    ``sys1cal_*`` ini keys from where pytest would have looked without that value, so the space and ``=`` forms
    gate alike, and says so in a warning. Where that ini file holds ``addopts`` (which pytest then never applied:
    a gate file, a marker, a plugin), where pytest took an ini file from the value's folder (whose addopts and
    settings it applied: no ini but the project's decides a run) or the place cannot be worked out, the run
    stops instead."""
    args = [*shlex.split(os.environ.get("PYTEST_ADDOPTS", "")), *config.invocation_params.args]
    spaced = [(arg, args[i + 1]) for i, arg in enumerate(args[:-1]) if arg in flags]
    invocation = config.invocation_params.dir
    read_as_paths = [(name, value) for name, value in spaced if (invocation / value).exists()]
    ours = Placement(config.rootpath, config.inipath)
    if not read_as_paths:
        return ours
    chosen = _setup_without(config)
    given = ", ".join(f"{name} {shlex.quote(value)}" for name, value in read_as_paths)
    written = ", ".join(f"{name}={shlex.quote(value)}" for name, value in read_as_paths)
    if chosen is None:
        raise pytest.UsageError(
            f"{given}: pytest also read the value as a test path when it chose its rootdir {config.rootpath}, so "
            f"the plugin cannot tell where its defaults ({thresholds_file}, cassettes, sys1cal_* ini keys) are; "
            f"write it with '=': {written}"
        )
    if (chosen.rootpath, chosen.inipath) == (ours.rootpath, ours.inipath):
        return ours  # nothing moved: pytest's own reading of its ini file (overrides included) stands
    if ours.inipath is not None and ours.inipath != chosen.inipath:
        # pytest read that foreign file's addopts and settings (a -k, a gate file, a plugin) before any plugin
        # could see them: only the project's ini file may decide a run, so it stops.
        raise pytest.UsageError(
            f"{given}: pytest also read the value as a test path and took its ini file {ours.inipath} from there "
            f"(its addopts and settings already applied) instead of {chosen.inipath or 'none'}, so that file would "
            f"decide this run; write it with '=': {written}"
        )
    skipped = chosen.addopts()
    if skipped:  # options pytest never applied (a gate file, a marker, -p …): the run cannot be what was meant
        raise pytest.UsageError(
            f"{given}: pytest also read the value as a test path and chose rootdir {ours.rootpath} (ini file "
            f"{ours.inipath or 'none'}), so it never applied the addopts of {chosen.inipath} ({skipped}) and this run "
            f"would not be the one configured there; write it with '=': {written}"
        )
    config.issue_config_time_warning(
        pytest.PytestConfigWarning(
            f"{given}: pytest also read the value as a test path and chose rootdir {ours.rootpath} (ini file "
            f"{ours.inipath or 'none'}); pytest-sys1cal reads its defaults and sys1cal_* ini keys from rootdir "
            f"{chosen.rootpath} (ini file {chosen.inipath or 'none'}), as with {written}. Write it with '=' so "
            "that pytest's own settings come from there too."
        ),
        stacklevel=2,
    )
    return chosen


def _setup_without(config: pytest.Config) -> Placement | None:
    """The rootdir, ini file and ini values pytest would have chosen from the run's real test paths alone, or
    None where this pytest's private `determine_setup` cannot be called as expected."""
    try:
        from _pytest.config.findpaths import determine_setup

        namespace = config.known_args_namespace
        kwargs: dict[str, Any] = {
            "inifile": namespace.inifilename,
            "args": [*namespace.file_or_dir],
            "rootdir_cmd_arg": namespace.rootdir or None,
            "invocation_dir": config.invocation_params.dir,
        }
        if "override_ini" in inspect.signature(determine_setup).parameters:
            kwargs["override_ini"] = namespace.override_ini
        found = determine_setup(**kwargs)
        return Placement(Path(found[0]), None if found[1] is None else Path(found[1]), dict(found[2] or {}))
    except Exception:  # noqa: BLE001 - a private API of pytest's: refuse conservatively instead
        return None
