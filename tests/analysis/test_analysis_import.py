"""The analysis import stays light: a run pays it once before its summary (issue 2 counts every 100 ms)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_analysis_loads_no_scipy():
    # scipy.optimize alone cost ~0.4 s of import, scipy.special ~0.18 s; a fresh process sees what a run pays.
    code = "import sys, pytest_sys1cal.analysis; print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy'}))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
