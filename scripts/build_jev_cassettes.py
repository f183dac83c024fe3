"""Rebuild cassettes/jev/jev-1.13.0/ from the per-item Jev outputs published with the Sys1Cal-v1 paper.

    python scripts/build_jev_cassettes.py [--out CASSETTE_ROOT]

Each rendering gets one interaction: the request the jev adapter sends today (Noul, Choice [False, True]
and Score; the paper asked no swapped Choice) and a response carrying the published repeat-mean
answers. The manifest says `reconstructed`, repeats 1. Rerunning the script writes identical files.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import shutil
import sys
from pathlib import Path

from vcr.request import Request as VcrRequest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_sys1cal.dataset import load_dataset  # noqa: E402
from pytest_sys1cal.models.systemone import JevAdapter  # noqa: E402
from pytest_sys1cal.questions import CHOICE, NOUL, SCORE  # noqa: E402
from pytest_sys1cal.redact import Redactor  # noqa: E402
from pytest_sys1cal.store import answers  # noqa: E402
from pytest_sys1cal.store.folder import CassetteFolder  # noqa: E402
from pytest_sys1cal.store.vcrpy_side import load_cassette, save_cassette  # noqa: E402

PUBLISHED = ROOT / "fixtures" / "published-jev" / "noul_choice_score_instance_metrics.csv"
QUESTIONS = (NOUL, CHOICE, SCORE)
PUBLISHED_REPEATS = 10  # results/jev_parallel_tiny_10x_parallel_002: ten repeats per item, averaged


def response_body(row: dict[str, str], levels: tuple[str, ...]) -> dict:
    p_choice = float(row["p_choice"])
    q = [float(row[f"q_{j}"]) for j in range(len(levels))]
    return {
        "model": "jev-1.13.0",
        "answers": {
            NOUL: {"type": "noul", "noul": float(row["p_noul"])},
            CHOICE: {
                "type": "choice",
                "choice": "True" if p_choice > 0.5 else "False",
                "probabilities": {"False": 1.0 - p_choice, "True": p_choice},
            },
            SCORE: {
                "type": "score",
                "score": sum(j * qj for j, qj in enumerate(q)),
                "legend": {str(j): level for j, level in enumerate(levels)},
                "probabilities": {str(j): qj for j, qj in enumerate(q)},
            },
        },
        # An x_ extension field (allowed by the wire contract): where these numbers come from.
        "x_sys1cal_reconstructed_from": f"{PUBLISHED.relative_to(ROOT)} (mean of 10 repeats)",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "cassettes", help="cassette root (default: %(default)s)")
    out = parser.parse_args(argv).out.resolve()
    dataset = load_dataset("sys1cal-v1")
    rows = {row["instance_id"]: row for row in csv.DictReader(PUBLISHED.open(newline=""))}
    adapter = JevAdapter(version=None, base_url=None, environ={})
    folder = out / "jev" / adapter.version
    if folder.exists():
        shutil.rmtree(folder)
    store = CassetteFolder(out, "jev", adapter.version, "once", Redactor())
    for rendering in dataset.renderings:
        (request,) = adapter.requests(rendering, QUESTIONS)
        cassette = load_cassette(store, rendering)
        body = json.dumps(response_body(rows[rendering.instance_id], rendering.score_levels), separators=(",", ":"))
        cassette.append(
            VcrRequest(request.method, request.url, request.content(), dict(request.headers)),
            {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": ["application/json"]},
                "body": {"string": body.encode()},
            },
        )
        save_cassette(cassette)
    store.write_manifest(
        {
            "model": "jev",
            "version": adapter.version,
            "server_model": "jev-1.13.0",
            "dataset": {"name": dataset.name, "sha256": dataset.sha256},
            "repeats": 1,
            # Each published answer is the mean of the paper's 10 repeats: a comparison against these cassettes
            # compares with 10-repeat means (docs/cassettes.md).
            "repeats_per_answer": PUBLISHED_REPEATS,
            "questions": list(QUESTIONS),
            "source": "reconstructed",
            "recorded_at": None,
            "answers": answers.after_recording(store.path, None),
            "reconstructed_from": {
                "file": str(PUBLISHED.relative_to(ROOT)),
                "sha256": hashlib.sha256(PUBLISHED.read_bytes()).hexdigest(),
                "note": (
                    "Per-item Jev outputs published with the Sys1Cal-v1 paper (results/jev_parallel_tiny_10x_parallel_002, "
                    f"mean of {PUBLISHED_REPEATS} repeats per item); one interaction per rendering; no swapped Choice was asked."
                ),
            },
        }
    )
    print(f"wrote {len(dataset.renderings)} cassettes and the manifest to {store.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
