"""A/A experiment for the thresholds rule (issue 24): gates written from one recording of a noisy model, checked
on independent re-recordings of the same model.

    python bench/aa_thresholds.py [--recordings N] [--repeats R] [--noise S] [--problems P] [--out FILE]

A loopback `/v1/systemone` server (tests/loopback.py) answers P(True) = σ(logit p* + ε) on every primitive,
ε ~ N(0, S²) drawn afresh for every repeat from a seed of its own per recording, and no position effect (Choice
asked in either order is answered alike, up to its own noise). Recording 0 is made by a real `pytest --sys1cal
--sys1cal-record-mode=once` run; `python -m pytest_sys1cal thresholds` prints its gates; recordings 1 … N are
made the same way with other seeds, and each one's report is checked against those gates by the plugin's own
gate code (the first one also by a real replay with the gates file, to show the two agree). Every recording is
of the same model on the same renderings: only repeat noise differs between them, so every gate is designed to
hold on all of them (a limit sits at least 3·√2 repeat-noise SEs from the measured value: P(fail) ≤ 0.13 % per
gate; the λ gate, a test at α = 0.01, fails a null model 1 % of the time by design).

Printed: per gate its limit, what set it, how many re-recordings passed, and the least distance of a re-recording
from the limit; the same for the old rule (2 problem-bootstrap SEs only, no repeat term, no minimum slack); and
the overall pass rate (every gate of a recording passed). --out writes the numbers as JSON.

--problems P records a fresh dataset of P latent problems (`python -m pytest_sys1cal generate`) instead of the
bundled 92, which makes a smaller experiment (tests/commands/test_aa_thresholds.py runs one).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # a script: the tests package is not installed

from pytest_sys1cal.dataset import load_dataset  # noqa: E402
from pytest_sys1cal.gates.config import parse_thresholds  # noqa: E402
from pytest_sys1cal.gates.evaluate import evaluate  # noqa: E402
from pytest_sys1cal.gates.thresholds_rule import threshold_rule  # noqa: E402
from pytest_sys1cal.report.thresholds_text import Shape, render_section  # noqa: E402
from tests.loopback import Behaviour, LoopbackServer  # noqa: E402

MODEL, VERSION = "systemone", "aa-model"
QUIET = ["-p", "no:cacheprovider", "-p", "no:randomly", "-q"]


def record(work: Path, dataset: Path, index: int, repeats: int, noise: float) -> dict[str, Any]:
    """Recording `index` of the noisy server (its own seed) by a real pytest run; its JSON report."""
    renderings = load_dataset(str(dataset)).renderings
    cassettes, report = work / f"cassettes-{index}", work / f"recording-{index}.json"
    behaviour = Behaviour(noise=noise, seed=1000 + index, position=0.0, model="aa-server")
    with LoopbackServer.for_renderings(renderings, behaviour) as server:
        server.server.socket.listen(128)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--sys1cal", *QUIET, f"--sys1cal-model={MODEL}",
             f"--sys1cal-model-version={VERSION}", f"--sys1cal-base-url={server.url}", f"--sys1cal-dataset={dataset}",
             f"--sys1cal-cassettes={cassettes}", "--sys1cal-record-mode=once", f"--sys1cal-repeats={repeats}",
             "--sys1cal-rate=0", "--sys1cal-concurrency=16", f"--sys1cal-report={report}"],
            cwd=work, capture_output=True, text=True,
        )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"recording {index} failed (exit {done.returncode}):\n{done.stdout[-3000:]}")
    return json.loads(report.read_text(encoding="utf-8"))


def printed_gates(work: Path, first: Path) -> str:
    """The gates `python -m pytest_sys1cal thresholds` prints from the first recording (the rule as shipped)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", "thresholds", str(first), "--paste"],
        cwd=work, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


def old_rule_gates(report: dict[str, Any]) -> str:
    """The rule before issue 24: 2 bootstrap SEs over latent problems, no repeat term, no minimum slack."""
    result = threshold_rule(report["items"], min_slack=0.0, repeat_resamples=0)
    return render_section(result, Shape(MODEL), ["the old rule"], {"error_cost": 100, "deferral_cost": 45})


def replayed_verdicts(work: Path, dataset: Path, index: int, gates: Path) -> dict[str, str]:
    """A real replay of recording `index` gated on `gates`: the verdicts its JSON report gives."""
    report = work / f"replay-{index}.json"
    subprocess.run(
        [sys.executable, "-m", "pytest", "--sys1cal", *QUIET, f"--sys1cal-model={MODEL}",
         f"--sys1cal-model-version={VERSION}", f"--sys1cal-dataset={dataset}",
         f"--sys1cal-cassettes={work / f'cassettes-{index}'}", f"--sys1cal-thresholds={gates}",
         f"--sys1cal-report={report}"],
        cwd=work, capture_output=True, text=True,
    )  # fmt: skip
    return {g["name"]: g["verdict"] for g in json.loads(report.read_text(encoding="utf-8"))["gates"]}


def check(gates_text: str, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Each gate's limit, its verdicts on the re-recordings and the least distance from the limit (negative:
    beyond it), with the overall pass rate."""
    thresholds = parse_thresholds(gates_text, "gates", MODEL, VERSION)
    rows: dict[str, dict[str, Any]] = {}
    all_passed = 0
    for report in reports:
        verdicts = evaluate(thresholds, report)
        all_passed += all(row.verdict == "passed" for row in verdicts)
        for gate, row in zip(thresholds.gates, verdicts, strict=True):
            entry = rows.setdefault(row.name, {"limit": gate.limit, "passed": 0, "closest": None})
            entry["passed"] += row.verdict == "passed"
            if isinstance(row.observed, float) and isinstance(gate.limit, float) and not row.name.startswith("uncert"):
                room = gate.limit - row.observed if gate.kind.bound == "max" else row.observed - gate.limit  # type: ignore[attr-defined]
                entry["closest"] = room if entry["closest"] is None else min(entry["closest"], room)
    return {"gates": rows, "all_passed": all_passed, "recordings": len(reports)}


def set_by(report: dict[str, Any]) -> dict[str, str]:
    """gate name → what set its margin, from the rule itself."""
    result = threshold_rule(report["items"])
    return {f"{lim.primitive}.{lim.key}": str(lim.set_by) for lim in result.limits if lim.limit is not None}


def table(title: str, outcome: dict[str, Any], margins: dict[str, str] | None = None) -> list[str]:
    n = outcome["recordings"]
    lines = [title, f"{'gate':<32} {'limit':>7} {'set by':>9} {'passed':>9} {'closest':>9}"]
    for name, row in outcome["gates"].items():
        closest = "" if row["closest"] is None else f"{row['closest']:+.4f}"
        by = (margins or {}).get(name, "")
        lines.append(f"{name:<32} {row['limit']:>7g} {by:>9} {row['passed']:>4}/{n:<4} {closest:>9}")
    lines.append(f"all gates passed on {outcome['all_passed']} of {n} re-recordings ({outcome['all_passed'] / n:.1%})")
    return lines


def dataset_for(work: Path, problems: int | None) -> Path:
    if problems is None:
        return REPO / "fixtures" / "sys1cal-v1" / "v0.1.0_tiny_cleanvars_parallel_primitives.jsonl"
    out = work / "fresh.jsonl"
    subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", "generate", "--seed", "7", "--problems", str(problems),
         "--out", str(out)], check=True, capture_output=True,
    )  # fmt: skip
    return out


def experiment(recordings: int, repeats: int, noise: float, problems: int | None, work: Path) -> dict[str, Any]:
    """Record, print the gates, check them; the outcome of both rules and the replay cross-check."""
    dataset = dataset_for(work, problems)
    started = time.monotonic()
    first = record(work, dataset, 0, repeats, noise)
    text = printed_gates(work, work / "recording-0.json")
    (work / "gates.yaml").write_text(text, encoding="utf-8")
    others = [record(work, dataset, i, repeats, noise) for i in range(1, recordings + 1)]
    new, old = check(text, others), check(old_rule_gates(first), others)
    in_process = {g.name: g.verdict for g in evaluate(parse_thresholds(text, "gates", MODEL, VERSION), others[0])}
    replay = replayed_verdicts(work, dataset, 1, work / "gates.yaml")
    return {
        "recordings": recordings, "repeats": repeats, "noise": noise,
        "renderings": len(first["items"]), "latent_problems": first["counts"]["latent_problems"],
        "new_rule": new, "old_rule": old, "set_by": set_by(first), "gates_text": text,
        "replay_agrees": replay == in_process, "seconds": round(time.monotonic() - started, 1),
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recordings", type=int, default=20, help="re-recordings to check (default 20)")
    parser.add_argument("--repeats", type=int, default=10, help="repeats per rendering (default 10)")
    parser.add_argument("--noise", type=float, default=0.5, help="SD of ε on the logit scale (default 0.5)")
    parser.add_argument("--problems", type=int, help="a fresh dataset of this many latent problems")
    parser.add_argument("--out", type=Path, help="write the numbers as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        outcome = experiment(args.recordings, args.repeats, args.noise, args.problems, Path(tmp))
    print(
        f"A/A: {outcome['renderings']} renderings ({outcome['latent_problems']} latent problems), "
        f"{args.repeats} repeats, noise σ = {args.noise} on the logit scale, no position effect; gates from "
        f"recording 0, checked on {args.recordings} re-recordings ({outcome['seconds']} s)"
    )
    print("\n".join(table("\nThe rule (python -m pytest_sys1cal thresholds):", outcome["new_rule"], outcome["set_by"])))
    print("\n".join(table("\nThe old rule (2 problem SEs only):", outcome["old_rule"])))
    print(
        f"\nreplay of re-recording 1 with the printed gates agrees with the in-process check: {outcome['replay_agrees']}"
    )
    if args.out:
        args.out.write_text(json.dumps(outcome, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
