"""`python -m pytest_sys1cal recalibrate REPORT.json --out map.json`: the monotone recalibration map of each
primitive, fitted on every latent problem of a saved report, as a file a team applies to its model's outputs and
replays through (`--sys1cal-recalibration=map.json`). What is in the file and how to apply it:
docs/recalibration.md."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from ..document import ReportDocument, ReportError, read_report
from ..document_why import HeldOutMap
from ..errors import EXIT_INPUT, InputError
from ..files import write_atomic
from ..vocabulary import LABELS, PRIMITIVES


class RecalibrateError(InputError):
    """The map cannot be fitted on this report; the message names the file and the fix."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT.json", help="a JSON report of a full run (--sys1cal-report)")
    parser.add_argument("--out", type=Path, required=True, metavar="MAP.json", help="where to write the map")
    parser.add_argument(
        "--primitive",
        action="append",
        choices=PRIMITIVES,
        help="map only this primitive (repeat it for more; default: every primitive the report answered)",
    )


def main(args: argparse.Namespace) -> int:
    try:
        report = read_report(args.report)
        _check(report, str(args.report))
        text, said = fitted(report, str(args.report), args.primitive or list(PRIMITIVES))
        if args.out.is_dir():
            raise RecalibrateError(
                f"--out {args.out}: a folder, not a file; name the file, e.g. {args.out / 'map.json'}"
            )
        write_atomic(args.out, text)
    except (ReportError, RecalibrateError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:
        print(f"error: --out {args.out}: cannot write it ({exc.strerror or exc})", file=sys.stderr)
        return EXIT_INPUT
    print(f"recalibration map written to {args.out}: {said}")
    print(
        "Apply it to your model's outputs (python -m pytest_sys1cal docs recalibration), and gate what you ship by "
        f"replaying through it: {_replay_command(report, args.out)}"
    )
    return 0


def _replay_command(report: ReportDocument, out: Path) -> str:
    """The run that replays the report's model and version through the map, as it can be typed."""
    model = report.get("model") or {}
    parts = ["pytest", "--sys1cal", f"--model={model.get('name')}", f"--sys1cal-model-version={model.get('version')}"]
    return shlex.join([*parts, f"--sys1cal-recalibration={out}"])


def _check(report: ReportDocument, where: str) -> None:
    """A map is fitted on the raw answers of a complete run."""
    if report.get("interrupted"):
        raise RecalibrateError(
            f"{where}: the report of an interrupted run; fit the map on the report of a complete run "
            "(pytest --sys1cal --sys1cal-report=report.json)"
        )
    through = report.get("recalibration")
    if through:
        raise RecalibrateError(
            f"{where}: its answers already went through the map {through['file']}; fit a map on the report of the raw "
            "answers (a run without --sys1cal-recalibration)"
        )


def fitted(report: ReportDocument, source: str, primitives: list[str]) -> tuple[str, str]:
    """(the map file's text, what it holds in words)."""
    import numpy as np

    from ..analysis.held_out_maps import held_out_block
    from ..analysis.isotonic import fit_map
    from ..analysis.items import aggregate_items, remeasured
    from ..analysis.primitives import primitive_probabilities
    from ..analysis.recalibration import split_halves, split_seeds
    from ..defaults import RECALIBRATION_SPLITS
    from ..recalibration_map import dumps_map, map_document

    table = aggregate_items(remeasured(report["items"]))
    probs = primitive_probabilities(table)
    blocks = report.get("recalibrated") or {}
    splits = int(next((b.get("splits") or RECALIBRATION_SPLITS for b in blocks.values()), RECALIBRATION_SPLITS))
    seeds = split_seeds(int(report.get("seed") or 0), splits)
    firsts = split_halves(table.latent_ids, table.p_star, seeds)
    maps = {}
    for prim in primitives:
        asked = ~np.isnan(probs[prim])
        if asked.sum() < 2:
            continue
        p, p_star = probs[prim][asked], table.p_star[asked]
        maps[prim] = (fit_map(p, p_star), held_out_block(p, p_star, [f[asked] for f in firsts], seeds))
    if not maps:
        asked_for = ", ".join(LABELS[p] for p in primitives)
        raise RecalibrateError(f"{source}: no answers of {asked_for} to fit a map on")
    said = "; ".join(
        f"{LABELS[prim]} ({len(fit.x)} knots): mean OVL {block['raw']:.3f} raw, {_held(block)} held out"
        for prim, (fit, block) in maps.items()
    )
    return dumps_map(map_document(report, maps, Path(source).name)), said


def _held(block: HeldOutMap) -> str:
    held = block.get("held_out")
    return "—" if held is None else f"{held['mean']:.3f}"
