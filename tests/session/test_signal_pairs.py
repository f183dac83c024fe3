"""Ctrl-C and then SIGTERM within 0.3 s (issue 36): a CI runner cancelling a job that a person just interrupted.
The SIGTERM used to land inside pytest's own interrupt hook while it formatted the Ctrl-C, and printed a
``Terminated`` traceback with exit 1. Now the Ctrl-C counts as the first signal, the SIGTERM as the second:
the run ends as interrupted (exit 2), skipping the analysis, with no traceback."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.session.test_sigterm import assert_clean, interrupted_case, replay, wait_for, with_group_killed

pytestmark = pytest.mark.e2e  # a pytest process per case, signalled


@pytest.mark.parametrize("gap", [0.0, 0.05, 0.1, 0.2, 0.3])
def test_sigterm_right_after_ctrl_c_ends_the_run_cleanly(tmp_path: Path, gap: float) -> None:
    process = replay(tmp_path)
    try:
        wait_for(lambda: any(tmp_path.glob("thirty-*")))
        process.send_signal(signal.SIGINT)
        time.sleep(gap)
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    finally:
        with_group_killed(process)
    output = process.stdout.read().decode() if process.stdout else ""
    if code == -signal.SIGTERM:
        # The SIGTERM came after pytest's last line, while the interpreter shut down: the plugin's handler is gone
        # (removed at unconfigure, so an in-process host keeps its own), Python's default ends the process. By
        # then the run had ended as interrupted and written everything, which is what must hold.
        last = output.strip().splitlines()[-1]
        assert last.startswith("=") and " passed in " in last and "KeyboardInterrupt" in output, output[-3000:]
        assert interrupted_case(tmp_path / "junit.xml").startswith("sys1cal: interrupted (Ctrl-C): ")
    else:
        assert code == pytest.ExitCode.INTERRUPTED, output[-3000:]
    assert_clean(output)
    if gap == 0 and "interrupted (SIGTERM)" in output:
        return  # sent together, the kernel may deliver SIGTERM first: then it is the first signal, taken as such
    assert "Terminated" not in output
    assert "interrupted (Ctrl-C)" in output
    assert "signals.py" not in output  # the traceback's last line is where the Ctrl-C landed, not the handler
