"""What every comparison of two reports shares (the upgrade gate, trend, power, contamination): the report
item columns per primitive, pairing two reports' renderings, the per-repeat samples and their within-item
variance, and Holm's step-down correction. Knows nothing of pytest or of thresholds.yaml."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..document import ANSWER_COLUMNS, AnswerColumn, Item, ReportDocument
from ..errors import InputError
from ..vocabulary import CALL_READING, MEAN_READING
from .calls import call_probabilities, per_rendering
from .items import LEVEL_VALUES, score_expectation
from .primitives import ovl

# Per primitive: the report item column holding the repeat mean, and the sample key of one repeat (the
# primitive's own name).
COLUMNS = {prim: (column, prim) for prim, column in ANSWER_COLUMNS.items()}


class PairingError(InputError):
    """The two reports cannot be compared (different repeat counts, nothing matched, not a report)."""


def holm(p_values: Sequence[float] | np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Holm's step-down procedure (family-wise error ≤ alpha under any dependence).

    Returns (reject, level, adjusted): whether each hypothesis is rejected, the level α/(m − k) it was
    tested at (k = its 0-based rank by p-value; ties keep input order), and the Holm-adjusted p-value
    max_{j ≤ k} min(1, (m − j)·p_(j)). reject[i] ⇔ adjusted[i] ≤ alpha.
    """
    p = np.asarray(p_values, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    ranks = np.empty(m, dtype=int)
    ranks[order] = np.arange(m)
    level = alpha / (m - ranks)
    adjusted_sorted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    # Step down: reject the smallest p-values while each is within its level; stop at the first that is not.
    within = p[order] <= level[order]
    stop = int(np.argmin(within)) if not within.all() else m
    reject = np.zeros(m, dtype=bool)
    reject[order[:stop]] = True
    return reject, level, adjusted


@dataclass(frozen=True)
class Paired:
    """The renderings measured in both reports, sorted by instance_id."""

    instance_id: list[str]
    latent_ids: np.ndarray
    p_star: np.ndarray
    new: dict[str, np.ndarray]  # primitive → repeat-mean probability (NaN where not asked)
    base: dict[str, np.ndarray]
    new_repeats: dict[str, np.ndarray | None]  # primitive → (n, r) per-repeat probabilities, or None
    base_repeats: dict[str, np.ndarray | None]
    family: list[str | None]  # of each rendering, for the per-family Δ (None in a report without it)
    representation: list[str | None]  # likewise, for the per-representation Δ
    repeats: int  # per rendering (the fewer of the two sides' when read per call, where they may differ)
    only_in_new: int
    only_in_baseline: int
    reading: str = MEAN_READING
    # Primitive → each rendering's OVL under the reading: 1 − |p̄ − p*| of the repeat mean, or per call the mean
    # over its calls of 1 − |p − p*| (docs/statistics.md §6.1); NaN where not asked.
    new_ovl: dict[str, np.ndarray] | None = None
    base_ovl: dict[str, np.ndarray] | None = None
    new_r: int = 0  # calls per rendering on each side (the median), what repeat noise is divided by
    base_r: int = 0

    def ovl(self, side: str, prim: str) -> np.ndarray:
        """Each rendering's OVL under the reading on one side ("new" or "base")."""
        given = self.new_ovl if side == "new" else self.base_ovl
        if given is not None:
            return given[prim]
        return ovl((self.new if side == "new" else self.base)[prim], self.p_star)


def pair_reports(new: ReportDocument, baseline: ReportDocument, reading: str = MEAN_READING) -> Paired:
    """Match the items of two reports on instance_id. Raises PairingError when they cannot be compared.

    reading "mean": each rendering's repeat mean, so both must average as many calls (the OVL of a mean depends
    on how many it averages). "call": each call's own OVL, whose expectation does not depend on how many were
    asked, so the repeats may differ, but both reports must hold single calls (not published means)."""
    if reading == CALL_READING:
        return _pair_calls(new, baseline)
    new_items, base_items, shared = _shared(new, baseline)
    new_r = _repeat_count(new, [new_items[i] for i in shared], "this run")
    base_r = _repeat_count(baseline, [base_items[i] for i in shared], "the baseline")
    # What is compared is the mean over all the model repeats behind each value: samples × repeats per sample.
    new_avg, base_avg = new_r * _per_answer(new), base_r * _per_answer(baseline)
    if new_avg != base_avg:
        raise PairingError(
            f"the baseline averages {base_avg} repeat{'s' if base_avg != 1 else ''} per rendering and this run "
            f"{new_avg}: the OVL of a repeat mean depends on the number of repeats (averaging more repeats removes "
            "noise, so the same model scores higher), so only recordings averaging as many repeats compare"
        )
    new_rows = [new_items[i] for i in shared]
    base_rows = [base_items[i] for i in shared]
    return Paired(
        new_r=new_avg,
        base_r=base_avg,
        instance_id=shared,
        latent_ids=np.asarray([new_items[i]["latent_instance_id"] for i in shared], dtype=str),
        p_star=np.asarray([float(new_items[i]["p_star"]) for i in shared]),
        new={prim: column(new_rows, key) for prim, (key, _) in COLUMNS.items()},
        base={prim: column(base_rows, key) for prim, (key, _) in COLUMNS.items()},
        new_repeats=per_repeat(new_rows, new_r) if _per_answer(new) == 1 else dict.fromkeys(COLUMNS),
        base_repeats=per_repeat(base_rows, base_r) if _per_answer(baseline) == 1 else dict.fromkeys(COLUMNS),
        family=[new_items[i].get("family") for i in shared],
        representation=[new_items[i].get("representation") for i in shared],
        repeats=new_avg,
        only_in_new=len(new_items.keys() - base_items.keys()),
        only_in_baseline=len(base_items.keys() - new_items.keys()),
    )


def _shared(new: ReportDocument, baseline: ReportDocument) -> tuple[dict[str, Item], dict[str, Item], list[str]]:
    """Both reports' items by instance id, and the ids in both (refused: none shared, or other latent problems)."""
    new_items = _items_by_id(new, "the new report")
    base_items = _items_by_id(baseline, "the baseline report")
    shared = sorted(new_items.keys() & base_items.keys())
    if not shared:
        raise PairingError(
            f"no rendering is in both reports ({len(new_items)} in the new one, {len(base_items)} in the "
            "baseline): compare runs of the same dataset"
        )
    wrong_latent = [
        i for i in shared if new_items[i].get("latent_instance_id") != base_items[i].get("latent_instance_id")
    ]
    if wrong_latent:
        raise PairingError(
            f"{len(wrong_latent)} matched renderings belong to different latent problems in the two reports "
            f"(first: {wrong_latent[0]}): they were not computed on the same dataset"
        )
    return new_items, base_items, shared


def _pair_calls(new: ReportDocument, baseline: ReportDocument) -> Paired:
    """The per-call pairing: D_i from each side's mean over rendering i's calls of its calls' OVL."""
    for report, what in ((new, "this run"), (baseline, "the baseline")):
        if _per_answer(report) > 1:
            raise PairingError(
                f"{what} holds {_per_answer(report)}-call means (each answer rebuilt from a published mean), not "
                "single calls, so it cannot be compared per call"
            )
    new_items, base_items, shared = _shared(new, baseline)
    new_rows, base_rows = [new_items[i] for i in shared], [base_items[i] for i in shared]
    p_star = np.asarray([float(new_items[i]["p_star"]) for i in shared])
    new_calls = call_probabilities([item.get("samples") or [] for item in new_rows])
    base_calls = call_probabilities([item.get("samples") or [] for item in base_rows])
    new_r, base_r = _calls_per_rendering(new_calls), _calls_per_rendering(base_calls)
    return Paired(
        instance_id=shared,
        latent_ids=np.asarray([new_items[i]["latent_instance_id"] for i in shared], dtype=str),
        p_star=p_star,
        new={prim: column(new_rows, key) for prim, (key, _) in COLUMNS.items()},
        base={prim: column(base_rows, key) for prim, (key, _) in COLUMNS.items()},
        new_repeats={prim: new_calls[prim] for prim in COLUMNS},
        base_repeats={prim: base_calls[prim] for prim in COLUMNS},
        family=[new_items[i].get("family") for i in shared],
        representation=[new_items[i].get("representation") for i in shared],
        repeats=min(new_r, base_r),
        only_in_new=len(new_items.keys() - base_items.keys()),
        only_in_baseline=len(base_items.keys() - new_items.keys()),
        reading=CALL_READING,
        new_ovl={prim: 1 - per_rendering(new_calls[prim], p_star)[0] for prim in COLUMNS},
        base_ovl={prim: 1 - per_rendering(base_calls[prim], p_star)[0] for prim in COLUMNS},
        new_r=new_r,
        base_r=base_r,
    )


def _calls_per_rendering(calls: Mapping[str, np.ndarray]) -> int:
    """The median number of calls of a rendering (over every primitive's answers), at least 1."""
    counts = [np.sum(~np.isnan(values), axis=1) for values in calls.values() if values.size]
    asked = np.concatenate([c[c > 0] for c in counts]) if counts else np.zeros(0)
    return max(int(np.median(asked)), 1) if asked.size else 1


def _items_by_id(report: ReportDocument, what: str) -> dict[str, Item]:
    items = report.get("items") if isinstance(report, Mapping) else None
    if not isinstance(items, list):
        raise PairingError(f"{what} has no items[] (not a sys1cal report, or one written without items)")
    out: dict[str, Item] = {}
    for item in items:
        if not isinstance(item, Mapping) or "instance_id" not in item or "p_star" not in item:
            raise PairingError(f"{what} has an item without instance_id or p_star")
        if item["instance_id"] in out:
            raise PairingError(f"{what} lists rendering {item['instance_id']} twice")
        out[item["instance_id"]] = item
    return out


def _repeat_count(report: ReportDocument, items: list[Item], what: str) -> int:
    counts = {int(item["repeats"]) for item in items if item.get("repeats") is not None}
    if len(counts) > 1:
        raise PairingError(
            f"{what} has renderings with different repeat counts ({', '.join(map(str, sorted(counts)))}); "
            "the OVL of a repeat mean depends on the number of repeats, so it cannot be compared item by item"
        )
    if counts:
        return counts.pop()
    repeats = report.get("repeats")
    if isinstance(repeats, int):
        return repeats
    raise PairingError(f"{what} does not say how many repeats each rendering has")


def _per_answer(report: ReportDocument) -> int:
    """Model repeats averaged into each of a report's samples (10 for cassettes rebuilt from published means)."""
    value = report.get("repeats_per_answer")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def column(items: Sequence[Item], key: AnswerColumn | Literal["p_choice_swapped"]) -> np.ndarray:
    """One answer column of every item as floats, NaN where null or absent (a primitive not asked)."""
    return np.asarray([np.nan if (value := item.get(key)) is None else float(value) for item in items])


def per_repeat(items: Sequence[Item], repeats: int) -> dict[str, np.ndarray | None]:
    """Per primitive: (n, r) per-repeat probabilities (Score: μ of each repeat's distribution), NaN where
    missing; None when no item carries that primitive's samples or there is a single repeat (then the
    repeat noise cannot be estimated). One pass over the samples for all primitives."""
    if repeats < 2:
        return dict.fromkeys(COLUMNS)
    keys = [sample_key for _, sample_key in COLUMNS.values()]
    found: dict[str, tuple[list[int], list[int], list[Any]]] = {key: ([], [], []) for key in keys}
    for i, item in enumerate(items):
        for k, sample in enumerate((item.get("samples") or [])[:repeats]):
            if not isinstance(sample, dict):
                continue
            for key in keys:
                value = sample.get(key)
                if value is not None:
                    rows, cols, values = found[key]
                    rows.append(i)
                    cols.append(k)
                    values.append(value)
    out: dict[str, np.ndarray | None] = {}
    for prim, (_, key) in COLUMNS.items():
        rows, cols, values = found[key]
        out[prim] = _to_matrix(len(items), repeats, rows, cols, values, score=key == "score")
    return out


def _to_matrix(
    n: int, repeats: int, rows: list[int], cols: list[int], values: list[Any], *, score: bool
) -> np.ndarray | None:
    if not values:
        return None
    if score:
        try:
            q = np.asarray(values, dtype=float).reshape(len(values), -1)
        except ValueError:  # ragged distributions: not a 10-level Score
            return None
        if q.shape[1] != LEVEL_VALUES.size:
            return None
        with np.errstate(invalid="ignore", divide="ignore"):
            flat = score_expectation(q) / q.sum(axis=1)
    else:
        flat = np.asarray(values, dtype=float)
    out = np.full((n, repeats), np.nan)
    out[rows, cols] = flat
    return out


def within_variance(values: np.ndarray | None, rows: np.ndarray) -> float | None:
    """Mean over items of the sample variance across repeats (σ_w²), on the selected rows."""
    if values is None:
        return None
    sub = values[rows]
    complete = np.sum(~np.isnan(sub), axis=1) >= 2
    if not complete.any():
        return None
    return float(np.mean(np.nanvar(sub[complete], axis=1, ddof=1)))


def per_repeat_ovl(per_repeat_p: np.ndarray | None, p_star: np.ndarray) -> np.ndarray | None:
    """(n, r) per-repeat OVL = 1 − |p − p*| from per-repeat probabilities."""
    return None if per_repeat_p is None else ovl(per_repeat_p, p_star[:, None])


def rendering_ovl(items: Sequence[Item], primitive: str) -> np.ndarray:
    """OVL_i = 1 − |p̄_i − p*_i| of each rendering of a saved report (p̄_i its repeat mean, as in Table 1); NaN
    where the primitive was not asked."""
    return ovl(column(items, ANSWER_COLUMNS[primitive]), p_stars(items))


def p_stars(items: Sequence[Item]) -> np.ndarray:
    """Every item's p* as floats (NaN where null: read_report refuses such a report, a mapping built in memory may
    hold one)."""
    return np.asarray([np.nan if item.get("p_star") is None else float(item["p_star"]) for item in items])
