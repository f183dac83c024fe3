"""A clearly worse model, and a somewhat better one, for tests that need them: a copy of a /v1/systemone cassette folder (the bundled
`cassettes/jev/jev-1.13.0`, or any recording of that wire) in which every answer is mixed with the uniform
distribution, filed under another version so that it replays beside the original.

    folder = degrade(REPO / "cassettes" / "jev" / "jev-1.13.0", tmp_path / "cassettes", "jev-1.14.0")
    sys1cal(pytester, f"--sys1cal-cassettes={tmp_path / 'cassettes'}", "--sys1cal-model-version=jev-1.14.0")

With weight w every probability moves w of the way to uniform: Noul p → (1 − w)·p + w/2 (so (p + 0.5)/2 at
w = 0.5), each Choice option (both orders, when asked) → (1 − w)·q + w/2, each Score level → (1 − w)·q + w/10.
Mean OVL falls on every primitive, by w·mean|p* − 0.5| for Noul. The copy is a valid cassette folder: request
bodies name the new version (replay matches them byte for byte), the answers' own `choice`/`score` fields
agree with the mixed probabilities, and the manifest says what was done and holds the new answers' digests (as a
recording of them would).

`improve` writes the better copy the same way: every answer moved a `share` of the way towards the rendering's
exact p* (Noul and Choice's P(True) linearly; Score's distribution mixed with the two levels around p* whose
expectation is p*, so μ_S moves the same share): each rendering's OVL gains `share` of its distance to p*.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_sys1cal.store.answers import answers_digest

MANIFEST = "manifest.json"


def degrade(source_folder: Path, target_root: Path, version: str, weight: float = 0.5) -> Path:
    """Write the degraded copy of `source_folder` (…/<model>/<version>) to target_root/<model>/<version> and
    return that folder. The target must not exist yet."""
    if not 0 < weight <= 1:
        raise ValueError(f"weight must be in (0, 1], got {weight}")
    return _copy(source_folder, target_root, version, lambda _name, qid, answer: _degrade_answer(qid, answer, weight),
                 f"every answer mixed with the uniform distribution (weight {weight:g})")  # fmt: skip


def improve(source_folder: Path, target_root: Path, version: str, share: float, p_star: dict[str, float]) -> Path:
    """Write the improved copy of `source_folder` to target_root/<model>/<version> and return that folder;
    `p_star`: each rendering's exact P(A) by its cassette's file stem (the short instance id)."""
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    return _copy(source_folder, target_root, version,
                 lambda name, qid, answer: _improve_answer(qid, answer, share, p_star[name]),
                 f"every answer moved {share:g} of the way to the exact p*")  # fmt: skip


def _copy(source_folder: Path, target_root: Path, version: str, change: Any, what: str) -> Path:
    manifest = json.loads((source_folder / MANIFEST).read_text(encoding="utf-8"))
    old = manifest["version"]
    target = target_root / manifest["model"] / version
    target.mkdir(parents=True)  # exist_ok=False: never mix a degraded copy into an existing folder
    for path in sorted(source_folder.glob("*/*.json")):
        cassette = json.loads(path.read_text(encoding="utf-8"))
        for interaction in cassette["interactions"]:
            _change_interaction(
                interaction, old, version, lambda qid, answer, name=path.stem: change(name, qid, answer)
            )
        (target / path.parent.name).mkdir(exist_ok=True)
        (target / path.parent.name / path.name).write_text(json.dumps(cassette, indent=1) + "\n", encoding="utf-8")
    note = f"Test copy of {old}: {what}, tests/degraded.py."
    manifest.update(version=version, server_model=version, note=note)
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    rewrite_digests(target)
    return target


def rewrite_digests(folder: Path) -> None:
    """After a test changed a folder's answers on purpose (a simulated model): the manifest's digests of them as
    they are now, as a recording of those answers would write them (docs/cassettes.md)."""
    path = folder / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["answers"] = {
        f"{cassette.parent.name}/{cassette.name}": answers_digest(
            [i["response"] for i in json.loads(cassette.read_text(encoding="utf-8"))["interactions"]]
        )
        for cassette in sorted(folder.glob("*/*.json"))
    }
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _change_interaction(interaction: dict[str, Any], old: str, new: str, change: Any) -> None:
    request, response = interaction["request"], interaction["response"]
    prefix = f'{{"model":{json.dumps(old)},'
    if not request["body"].startswith(prefix):
        raise ValueError(f"not a /v1/systemone request for {old}: {request['body'][:60]}")
    # Splice rather than re-encode: the rest of the body stays byte-identical to what the adapter sends.
    request["body"] = f'{{"model":{json.dumps(new)},' + request["body"][len(prefix) :]
    body = json.loads(response["body"]["string"])
    body["model"] = new
    for qid, answer in body["answers"].items():
        change(qid, answer)
    response["body"]["string"] = json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _degrade_answer(qid: str, answer: dict[str, Any], weight: float) -> None:
    def mix(q: dict[str, float]) -> dict[str, float]:
        return {key: (1 - weight) * value + weight / len(q) for key, value in q.items()}

    if qid == "noul":
        answer["noul"] = (1 - weight) * answer["noul"] + weight / 2
        if isinstance(answer.get("probabilities"), dict):  # typed-gguf's {"yes": p, "no": 1 − p}
            answer["probabilities"] = mix(answer["probabilities"])
    elif qid == "score":
        answer["probabilities"] = mix(answer["probabilities"])
        answer["score"] = sum(int(level) * q for level, q in answer["probabilities"].items())
    else:  # choice, choice_swapped
        answer["probabilities"] = mix(answer["probabilities"])
        answer["choice"] = max(answer["probabilities"], key=answer["probabilities"].get)


def _improve_answer(qid: str, answer: dict[str, Any], share: float, p_star: float) -> None:
    def towards(p: float, target: float) -> float:
        return p + share * (target - p)

    if qid == "noul":
        answer["noul"] = towards(answer["noul"], p_star)
        if isinstance(answer.get("probabilities"), dict):
            answer["probabilities"] = {"yes": answer["noul"], "no": 1 - answer["noul"]}
    elif qid == "score":
        q = {int(level): value for level, value in answer["probabilities"].items()}
        target = _levels_with_mean(p_star * 9, len(q))
        answer["probabilities"] = {str(j): towards(q[j], target[j]) for j in sorted(q)}
        answer["score"] = sum(j * value for j, value in enumerate(_in_level_order(answer["probabilities"])))
    else:  # choice, choice_swapped: P(True) moves towards p*
        probabilities = answer["probabilities"]
        true = towards(probabilities["True"], p_star)
        answer["probabilities"] = {key: (true if key == "True" else 1 - true) for key in probabilities}
        answer["choice"] = max(answer["probabilities"], key=answer["probabilities"].get)


def _levels_with_mean(mean: float, levels: int) -> list[float]:
    """The distribution on two adjacent levels whose expectation (in level units) is `mean`."""
    low = min(int(mean), levels - 2)
    upper_mass = mean - low
    return [1 - upper_mass if j == low else upper_mass if j == low + 1 else 0.0 for j in range(levels)]


def _in_level_order(probabilities: dict[str, float]) -> list[float]:
    return [probabilities[str(j)] for j in range(len(probabilities))]
