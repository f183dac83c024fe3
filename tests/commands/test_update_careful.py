"""`thresholds --update` as careful as an editor (issue 36): hand comments stay with their keys, a symlink's
target is updated in place, the file's mode is kept, a file changed since it was read is refused, another
model's or version's statistics need a flag that says so, and every write that cannot happen (a read-only file
or folder, a full disk) ends in one line and exit status 4 with the file as it was. The read-only and full-disk
cases use a real immutable file (chattr +i), a read-only bind mount and a small tmpfs, as root; elsewhere they
skip, saying why."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pytest_sys1cal.__main__ import main
from tests.runs import GOLDEN, REPO

JEV = str(GOLDEN / "jev-report.json")
HAND = """\
# top comment by hand
jev:
  # hand: noul note
  noul:  # key remark
    # inside noul by hand
    min_mean_ovl: 0.9  # trailing by hand
    max_ece: 0.08                 # 0.0588 + 2·0.0101 = 0.0791   (15 bins)
    # last in noul
  # hand: regression note
  regression:
    alpha: 0.05
  jev-1.12:
    # old version note
    noul:
      # inside the version's noul
      min_mean_ovl: 0.8
    # above the version's regression
    regression:
      alpha: 0.05
# trailing file comment
"""
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


def update(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_sys1cal", "thresholds", JEV, "--update", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 4, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    (line,) = done.stderr.splitlines()
    return line


def test_hand_comments_stay_with_their_keys(tmp_path: Path) -> None:
    (tmp_path / "thresholds.yaml").write_text(HAND, encoding="utf-8")
    assert update(cwd=tmp_path).returncode == 0
    after = (tmp_path / "thresholds.yaml").read_text(encoding="utf-8")
    assert "  # hand: noul note\n  noul:  # key remark\n    # inside noul by hand\n    min_mean_ovl: 0.9  " in after
    assert "= 0.9004   trailing by hand\n" in after
    assert "= 0.0791   (15 bins)\n" in after
    assert "    max_brier: 0.025              # 0.0170 + 2·0.0039 = 0.0249\n" in after
    # The optional decomposition gates the rule writes (docs/thresholds.md) are the section's last keys now.
    assert "    min_dsc: 0.06                 # 0.0802 − 2·0.0086 = 0.0630\n    # last in noul\n  choice:\n" in after
    assert "  # hand: regression note\n  regression:\n" in after
    assert after.startswith("# top comment by hand\n") and after.endswith("# trailing file comment\n")
    assert "      # inside the version's noul\n" in after and "    # above the version's regression\n" in after
    # The version's block too, when it is the one replaced.
    assert update("--version", "jev-1.12", "--from-other-version", cwd=tmp_path).returncode == 0
    again = (tmp_path / "thresholds.yaml").read_text(encoding="utf-8")
    assert "      # inside the version's noul\n      min_mean_ovl: 0.9 " in again
    assert "    # above the version's regression\n    regression:\n      alpha: 0.05\n" in again
    assert "  # old version note" not in again or "    # old version note" in again


def test_the_shipped_files_hand_comments_all_stay(tmp_path: Path) -> None:
    shipped = (REPO / "thresholds.yaml").read_text(encoding="utf-8")
    (tmp_path / "thresholds.yaml").write_text(shipped, encoding="utf-8")
    assert update(cwd=tmp_path).returncode == 0
    after = (tmp_path / "thresholds.yaml").read_text(encoding="utf-8")
    for hand in (
        "(Table 6)",
        "(15 equal-width bins, target p*)",
        "(Choice is overconfident: the paper's point)",
        "Option-order gates, fixed in advance",
        "|choose-first rate − 0.5|",
        "Jev's Choice sits above its",
    ):
        assert hand in after, hand  # fmt: skip


def test_a_symlinks_target_is_updated_and_the_link_stays(tmp_path: Path) -> None:
    real = tmp_path / "shared" / "gates.yaml"
    real.parent.mkdir()
    real.write_text(HAND, encoding="utf-8")
    real.chmod(0o600)
    (tmp_path / "thresholds.yaml").symlink_to(real)
    assert update(cwd=tmp_path).returncode == 0
    assert (tmp_path / "thresholds.yaml").is_symlink()
    assert "= 0.9004" in real.read_text(encoding="utf-8")
    assert stat.S_IMODE(real.stat().st_mode) == 0o600  # 0600 stays 0600
    assert not list(real.parent.glob(".*.tmp"))


def test_a_file_changed_while_it_runs_is_refused_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pytest_sys1cal.commands.thresholds as command

    path = tmp_path / "thresholds.yaml"
    path.write_text(HAND, encoding="utf-8")
    checked = command._verify_update
    edit = HAND.replace("# trailing file comment", "# a colleague's edit, saved while --update ran")

    def a_colleague_saves(*args: object, **kwargs: object) -> None:
        checked(*args, **kwargs)  # type: ignore[arg-type]
        path.write_text(edit, encoding="utf-8")  # between the read and the write

    monkeypatch.setattr(command, "_verify_update", a_colleague_saves)
    monkeypatch.chdir(tmp_path)
    assert main(["thresholds", JEV, "--update"]) == 4
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"error: {path.name}: changed since this command read it (an editor, another run?); nothing was written: "
        "run this again on the file as it is now"
    )
    assert path.read_text(encoding="utf-8") == edit
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--model", "systemone"], "measured model jev jev-1.13.0, and --update would write its statistics as the "
         "gates of systemone's section; if that is meant, add --from-other-model"),
        (["--version", "jev-1.14.0"], "measured jev jev-1.13.0, and --update would write its statistics as the gates "
         "of jev jev-1.14.0's block; if that is meant, add --from-other-version"),
    ],
)  # fmt: skip
def test_another_models_or_versions_statistics_need_a_flag(tmp_path: Path, args: list[str], said: str) -> None:
    (tmp_path / "thresholds.yaml").write_text(HAND, encoding="utf-8")
    assert said in one_error(update(*args, cwd=tmp_path))
    assert (tmp_path / "thresholds.yaml").read_text(encoding="utf-8") == HAND
    flag = "--from-other-model" if "--model" in args else "--from-other-version"
    assert update(*args, flag, cwd=tmp_path).returncode == 0
    assert yaml.safe_load((tmp_path / "thresholds.yaml").read_text(encoding="utf-8"))


def needs(tool: str) -> None:
    if not ROOT:
        pytest.skip(f"needs root for {tool} (a read-only or full file system made for the test)")
    if shutil.which(tool.split()[0]) is None:
        pytest.skip(f"{tool} is not installed here")


@contextlib.contextmanager
def mounted(*command: str) -> Iterator[None]:
    made = subprocess.run(command, capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot {' '.join(command)} here: {made.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", command[-1]], check=True)


def test_an_immutable_file_fails_in_one_line(tmp_path: Path) -> None:
    needs("chattr")
    path = tmp_path / "thresholds.yaml"
    path.write_text(HAND, encoding="utf-8")
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("this file system has no immutable attribute (chattr +i)")
    try:
        line = one_error(update(cwd=tmp_path))
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    assert line == "error: thresholds.yaml: the file is read-only; nothing was written (make it writable, or --paste)"
    assert path.read_text(encoding="utf-8") == HAND


def test_a_read_only_folder_fails_in_one_line(tmp_path: Path) -> None:
    needs("mount")
    source, folder = tmp_path / "source", tmp_path / "ro"
    source.mkdir()
    folder.mkdir()
    (source / "thresholds.yaml").write_text(HAND, encoding="utf-8")
    subprocess.run(["mount", "--bind", str(source), str(folder)], capture_output=True)
    with mounted("mount", "-o", "remount,ro,bind", str(folder)):
        line = one_error(update(cwd=folder))
    subprocess.run(["umount", str(folder)], capture_output=True)
    assert line.startswith("error: thresholds.yaml: ") and "nothing was written" in line
    assert (source / "thresholds.yaml").read_text(encoding="utf-8") == HAND


def test_a_full_disk_fails_in_one_line_and_keeps_the_file(tmp_path: Path) -> None:
    needs("mount")
    folder = tmp_path / "small"
    folder.mkdir()
    with mounted("mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(folder)):
        (folder / "thresholds.yaml").write_text(HAND, encoding="utf-8")
        with contextlib.suppress(OSError):
            (folder / "fill").write_bytes(b"\0" * 65536)  # the rest of the disk
        line = one_error(update(cwd=folder))
        assert (folder / "thresholds.yaml").read_text(encoding="utf-8") == HAND
        assert [p.name for p in folder.iterdir()] == ["thresholds.yaml", "fill"] or sorted(
            p.name for p in folder.iterdir()
        ) == ["fill", "thresholds.yaml"]
    assert line == (
        "error: thresholds.yaml: cannot write it (No space left on device); nothing was written, the file is as it "
        "was (make it or its folder writable, or free space; or print the block with --paste)"
    )
