"""Is a model suspiciously better on the public Sys1Cal items than on fresh ones?
(`python -m pytest_sys1cal contamination PUBLIC.json FRESH.json`)

Input: two JSON reports of the same model and version, one measured on the public dataset and one on a
fresh set generated with ``python -m pytest_sys1cal generate`` (issue 7). A model that saw the public items
in training scores better on them than on new items of the same design; one that did not scores the same.

**Statistic.** Per primitive, the mean OVL of each report exactly as Table 1 computes it (OVL_i = 1 −
|p̄_i − p*_i|, p̄_i the repeat mean of rendering i), and the difference public − fresh. The two sets hold
different items, so the comparison is **unpaired**: item difficulty does not cancel, and the interval is
much wider than the paired upgrade gate's (calibration-statistics.md §3.1).

**Like with like.** The public set and a generated one differ in design:

* Family mix: Sys1Cal-v1 has 20 latent problems in four families but 7 bayes and 5 frequency ones; the
  generator splits problems evenly over the six families, and renders each problem in every
  representation its family allows. Families differ in difficulty, so the raw difference mixes contamination
  with composition. The **reweighted** difference standardises the fresh set to the public set's mix:
  per stratum s the fresh mean OVL of s weighted by the public set's share w_s of renderings in s; the public
  side is then its plain mean over the strata both sets have. The verdict uses the reweighted difference
  unless ``--stratify none``.
* p* mix: the generator draws p* evenly over the eleven Sys1Cal-v1 probability bands, the public set has
  most problems in the middle ones, and how close a model gets to p* depends on p* (near 0 and 1 an answer
  has little room to miss). So the default stratum is family × p* band (``--stratify family+band``;
  ``family``, ``family+band+representation`` and so on are accepted).
* Leaks: in the public file every prose rendering states p*, and every sequential_bayes rendering lists the
  posterior trajectory (the generator's docstring). A model reads the answer there without having seen the
  item, so these renderings are left out of **both** reports by default when the public report is the bundled
  sys1cal-v1 (``--exclude none`` keeps them; ``--exclude NAME`` chooses what to leave out).
* Repeats: the OVL of a repeat mean grows with the number of repeats (§4.3), so reports with different
  repeat counts are refused. Reconstructed cassettes (the bundled Jev ones) hold means over the paper's 10
  repeats stored as one; a caveat says so.

**Interval.** A percentile bootstrap: each resample draws latent problems with replacement, independently in
the two reports (renderings and repeats of a problem stay together, §2.5), and recomputes both differences,
the public stratum shares included. The public set is resampled within each family (its design fixes the
family sizes, while many family × band cells hold a single problem, whose variance a within-cell draw would
lose); the fresh set within each family × p* band when the strata include the band (the generator's blocked
band schedule fixes those counts, and every public cell then keeps its fresh counterpart), else within each
family. A band cell with fewer than 5 fresh problems cannot show the spread between problems: it is left out
of the reweighted difference (with its public renderings, counted and said) and pooled with its family's
other thin cells for resampling; a generated set of 330 problems or more has none. One seeded generator, so
the same reports and seed give the same output. Holm's procedure over the primitives adjusts the one-sided
bootstrap p-values of "public advantage > margin" for the overall line.

Verdict per primitive: "suspicious" when the lower end of the interval exceeds ``--margin`` (default 0);
otherwise the wording says whether there is no significant difference (and what advantage the interval
still allows), a smaller significant one, or a fresh-set advantage.

A difference is evidence of contamination only as far as the fresh set is of the same design: the generator
words problems its own way, so a significant gap says "the public items are easier for this model", of
which having seen them is the likely but not the only explanation.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .analysis.compare import COLUMNS, holm
from .analysis.stats import Clusters, percentile_interval
from .generate.exact import band_of
from .report.json_report import ReportError, read_report, validate_report
from .vocabulary import LABELS, PRIMITIVES

__all__ = [
    "PUBLIC_LEAKS",
    "ContaminationError",
    "add_arguments",
    "check_contamination",
    "format_check",
    "run",
]

RESAMPLES = 2000
CHUNK = 250  # bootstrap resamples per block: bounds the (resamples × latent problems) count matrices
STRATUM_KEYS = ("family", "band", "representation")
DEFAULT_STRATA = "family+band"
# Fresh latent problems a family × p* band cell needs to enter the reweighted difference (and to be its own
# resampling group): fewer cannot show the spread between problems.
MIN_FRESH_PER_CELL = 5
# Renderings of the public Sys1Cal-v1 file whose state shows p* (prose) or the posterior trajectory
# (sequential_bayes): left out of both sides by default when the public report is of that file.
PUBLIC_LEAKS = ("prose", "sequential_bayes")
PUBLIC_DATASET = "sys1cal-v1"

SUSPICIOUS = "suspicious"
NOT_SUSPICIOUS = "not suspicious"


class ContaminationError(ValueError):
    """The two reports cannot be compared for contamination (same dataset, other model, other design)."""


# ---------------------------------------------------------------------------------------------- input


def _describe(report: Mapping[str, Any]) -> str:
    model = report.get("model") or {}
    return f"{model.get('name')} {model.get('version')}"


def _dataset_sha(report: Mapping[str, Any]) -> str | None:
    return (report.get("dataset") or {}).get("sha256")


def _bundled_public_sha() -> str | None:
    from .dataset import DatasetError, resolve_path

    try:
        _, path = resolve_path(PUBLIC_DATASET)
    except DatasetError:
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_design(public: Mapping[str, Any], fresh: Mapping[str, Any], ignore_repeats: bool) -> list[str]:
    """Refuse what cannot be compared; return caveats for what can, but with care."""
    sha_public, sha_fresh = _dataset_sha(public), _dataset_sha(fresh)
    if sha_public is not None and sha_public == sha_fresh:
        raise ContaminationError(
            f"both reports were computed on the same dataset (sha256 {sha_public}): the check compares the public "
            "set with a fresh one, e.g. `python -m pytest_sys1cal generate --seed 1 --problems 400 --out fresh.jsonl`, "
            "recorded with `--sys1cal-dataset fresh.jsonl`"
        )
    model_public, model_fresh = public.get("model") or {}, fresh.get("model") or {}
    for key in ("name", "version"):
        if model_public.get(key) != model_fresh.get(key):
            raise ContaminationError(
                f"the reports are of different models (public: {_describe(public)}, fresh: {_describe(fresh)}): "
                "the check compares one model version on two item sets"
            )
    caveats: list[str] = []
    r_public, r_fresh = public.get("repeats"), fresh.get("repeats")
    if r_public != r_fresh:
        if not ignore_repeats:
            raise ContaminationError(
                f"the public report averaged {r_public} repeat(s) per rendering and the fresh one {r_fresh}: the OVL of "
                "a repeat mean grows with the number of repeats, so the set with more repeats looks better by itself; "
                "record both with the same --sys1cal-repeats (or pass --ignore-repeats to compare anyway)"
            )
        caveats.append(
            f"repeat counts differ ({r_public} public, {r_fresh} fresh): the set with more repeats is favoured"
        )
    sources = {model_public.get("source"), model_fresh.get("source")}
    if "reconstructed" in sources:
        caveats.append(
            "a reconstructed report holds per-item means over the paper's 10 repeats stored as 1 repeat: its OVL is "
            "that of a 10-repeat mean, higher than a 1-repeat recording of the same model"
        )
    servers = (model_public.get("server_model"), model_fresh.get("server_model"))
    if all(servers) and servers[0] != servers[1]:
        caveats.append(f"the server reported different models ({servers[0]} public, {servers[1]} fresh)")
    return caveats


# ---------------------------------------------------------------------------------------------- exclusions


def _exclusion_matcher(specs: Sequence[str]) -> tuple[set[str], set[tuple[str, str]]]:
    names: set[str] = set()
    cells: set[tuple[str, str]] = set()
    for spec in specs:
        if ":" in spec:
            family, representation = spec.split(":", 1)
            cells.add((family, representation))
        else:
            names.add(spec)
    return names, cells


def _excluded(item: Mapping[str, Any], names: set[str], cells: set[tuple[str, str]]) -> bool:
    family, representation = item["family"], item["representation"]
    return family in names or representation in names or (family, representation) in cells


def _resolve_exclusions(
    exclude: Iterable[str] | None, public: Mapping[str, Any], fresh: Mapping[str, Any]
) -> tuple[list[str], str | None]:
    """The exclusion specs to apply and, when they are the defaults, why."""
    if exclude is None:
        sha = _dataset_sha(public)
        if sha is not None and sha == _bundled_public_sha():
            return list(PUBLIC_LEAKS), (
                "left out of both sets: prose renderings and the sequential_bayes family (in the public file they "
                "state p* or list the posterior trajectory, so a model reads the answer without having seen the "
                "item; --exclude none keeps them)"
            )
        return [], None
    specs = [spec for spec in exclude if spec != "none"]
    known = {
        value
        for report in (public, fresh)
        for item in report["items"]
        for value in (item["family"], item["representation"], f"{item['family']}:{item['representation']}")
    }
    unknown = [spec for spec in specs if spec not in known]
    if unknown:
        raise ContaminationError(
            f"--exclude {unknown[0]}: no family, representation or family:representation of that name in either report"
        )
    return specs, (f"left out of both sets: {', '.join(specs)}" if specs else None)


# ---------------------------------------------------------------------------------------------- one report


class _Side:
    """One report's renderings as per-latent, per-stratum sums of OVL, ready for the bootstrap.

    group_of: the resampling group of a rendering's latent problem, within which the bootstrap draws."""

    def __init__(
        self,
        report: Mapping[str, Any],
        names: set[str],
        cells: set[tuple[str, str]],
        keys: Sequence[str],
        group_of: Callable[[Mapping[str, Any]], str],
    ):
        items = [item for item in report["items"] if not _excluded(item, names, cells)]
        self.renderings = len(items)
        self.items = items
        # Latent problems sorted by (group, id): each group's problems form one block of columns.
        latents = sorted({(group_of(item), item["latent_instance_id"]) for item in items})
        self.latent_index = {latent: k for k, (_, latent) in enumerate(latents)}
        self.latent_ids = np.asarray([latent for _, latent in latents], dtype=str)
        self.latent_group = np.asarray([group for group, _ in latents], dtype=str)
        self.families = dict(Counter(item["family"] for item in {i["latent_instance_id"]: i for i in items}.values()))
        self.stratum = [_stratum_of(item, keys) for item in items]
        self.p_star = np.asarray([float(item["p_star"]) for item in items])

    @property
    def latent_problems(self) -> int:
        return len(self.latent_index)

    def ovl(self, primitive: str) -> np.ndarray:
        column = COLUMNS[primitive][0]
        p = np.asarray([np.nan if item.get(column) is None else float(item[column]) for item in self.items])
        return 1 - np.abs(p - self.p_star)

    def sums(self, primitive: str, strata: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(J, C) sums of OVL and counts of measured renderings per latent problem and stratum."""
        ovl = self.ovl(primitive)
        measured = ~np.isnan(ovl)
        index = {name: c for c, name in enumerate(strata)}
        rows = np.asarray([self.latent_index[item["latent_instance_id"]] for item in self.items], dtype=int)
        cols = np.asarray([index[s] for s in self.stratum], dtype=int)
        sums = np.zeros((self.latent_problems, len(strata)))
        counts = np.zeros_like(sums)
        np.add.at(sums, (rows[measured], cols[measured]), ovl[measured])
        np.add.at(counts, (rows[measured], cols[measured]), 1.0)
        return sums, counts

    def resample(self, rng: np.random.Generator, resamples: int) -> np.ndarray:
        """(resamples, J) multiplicities: latent problems drawn with replacement within each group."""
        out = np.zeros((resamples, self.latent_problems))
        for group in np.unique(self.latent_group):
            block = np.flatnonzero(self.latent_group == group)  # contiguous and sorted by id, as Clusters numbers them
            out[:, block] = Clusters.of(self.latent_ids[block]).resample_counts(rng, resamples)
        return out


def _stratum_of(item: Mapping[str, Any], keys: Sequence[str]) -> str:
    if not keys:
        return "all"
    parts = {
        "family": lambda: item["family"],
        "representation": lambda: item["representation"],
        "band": lambda: _band(item),
    }
    return " ".join(parts[key]() for key in keys)


def _band(item: Mapping[str, Any]) -> str:
    """The Sys1Cal-v1 probability band of p* (the generator draws p* evenly over these bands; the public set
    is concentrated in the middle ones). repr() gives the decimal the dataset wrote, so a p* of 0.1 is exactly
    1/10 and lands in [0.01,0.10], not in the band above it."""
    return band_of(Fraction(repr(float(item["p_star"]))))


def _strata_keys(stratify: str) -> tuple[str, ...]:
    if stratify == "none":
        return ()
    keys = tuple(stratify.split("+"))
    if not keys or any(key not in STRATUM_KEYS for key in keys) or len(set(keys)) != len(keys):
        raise ValueError(
            f"--stratify {stratify}: use 'none' or names from {', '.join(STRATUM_KEYS)} joined by '+', e.g. family+band"
        )
    return keys


# ---------------------------------------------------------------------------------------------- check


def check_contamination(
    public: Mapping[str, Any],
    fresh: Mapping[str, Any],
    *,
    seed: int = 0,
    resamples: int = RESAMPLES,
    level: float = 0.95,
    stratify: str = DEFAULT_STRATA,
    exclude: Iterable[str] | None = None,
    margin: float = 0.0,
    primitives: Iterable[str] = PRIMITIVES,
    ignore_repeats: bool = False,
) -> dict[str, Any]:
    """Per primitive, mean OVL public − fresh (raw and reweighted to the public stratum mix) with bootstrap
    intervals and a verdict. JSON-able (no NaN).

    public, fresh: loaded reports (`read_report`). exclude: family / representation / family:representation
    names left out of both reports; None applies the default (the public file's leaking renderings, when
    `public` is a report of the bundled sys1cal-v1), [] or ["none"] nothing. margin: a public advantage must
    exceed it (at the lower end of the interval) to be called suspicious. Raises ContaminationError when the
    reports cannot be compared.
    """
    keys = _strata_keys(stratify)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if resamples < 100:
        raise ValueError(f"use at least 100 resamples, got {resamples}")
    chosen = [p for p in PRIMITIVES if p in set(primitives)]
    validate_report(public, "the public report")
    validate_report(fresh, "the fresh report")
    caveats = _check_design(public, fresh, ignore_repeats)
    specs, exclusion_note = _resolve_exclusions(exclude, public, fresh)
    names, cells = _exclusion_matcher(specs)
    # The public set's design fixes how many problems each family has; a generated set's also fixes how many
    # fall in each p* band of a family (its blocked band schedule), so those are its resampling groups. A band
    # cell with few fresh problems cannot show their spread: it is pooled with the family's other thin cells
    # for resampling and left out of the reweighted difference.
    thin: set[tuple[str, str]] = set()
    if "band" in keys:
        fresh_cells = Counter(
            (item["family"], _band(item))
            for item in {i["latent_instance_id"]: i for i in fresh["items"] if not _excluded(i, names, cells)}.values()
        )
        thin = {cell for cell, count in fresh_cells.items() if count < MIN_FRESH_PER_CELL}

    def fresh_group(item: Mapping[str, Any]) -> str:
        if "band" not in keys:
            return item["family"]
        band = _band(item)
        return f"{item['family']} (thin bands)" if (item["family"], band) in thin else f"{item['family']} {band}"

    sides = {
        "public": _Side(public, names, cells, keys, lambda item: item["family"]),
        "fresh": _Side(fresh, names, cells, keys, fresh_group),
    }
    for which, side in sides.items():
        if side.latent_problems < 2:
            raise ContaminationError(
                f"the {which} report has {side.latent_problems} latent problem(s) left after the exclusions: "
                "not enough to compare"
            )
    strata = sorted(set(sides["public"].stratum) | set(sides["fresh"].stratum))
    tables = {prim: {w: side.sums(prim, strata) for w, side in sides.items()} for prim in chosen}
    cell_of = {
        stratum: (item["family"], _band(item))
        for side in sides.values()
        for item, stratum in zip(side.items, side.stratum, strict=True)
    }
    usable = np.asarray([cell_of[stratum] not in thin for stratum in strata]) if thin else np.ones(len(strata), bool)
    if thin:
        caveats.append(
            f"{len(thin)} family × p* band cell(s) of the fresh set hold fewer than {MIN_FRESH_PER_CELL} latent problems: "
            f"left out of the reweighted difference, with their public renderings (a generated set of at least "
            f"{6 * 11 * MIN_FRESH_PER_CELL} problems fills every cell; or use --stratify family)"
        )

    # One generator: the public resamples, then the fresh ones, chunk by chunk; shared by every primitive.
    rng = np.random.default_rng(seed)
    boots: dict[str, dict[str, list[np.ndarray]]] = {p: {"raw": [], "reweighted": []} for p in chosen}
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        counts = {w: side.resample(rng, size) for w, side in sides.items()}
        for prim in chosen:
            raw, reweighted = _statistics(tables[prim], counts, usable)
            boots[prim]["raw"].append(raw)
            boots[prim]["reweighted"].append(reweighted)

    verdict_key = "raw" if stratify == "none" else "reweighted"
    metrics: dict[str, dict[str, Any]] = {}
    for prim in chosen:
        point_raw, point_reweighted = _statistics(tables[prim], None, usable)
        metrics[prim] = _metric(
            prim,
            tables[prim],
            strata,
            float(point_raw[0]),
            float(point_reweighted[0]),
            {k: np.concatenate(v) for k, v in boots[prim].items()},
            usable=usable,
            level=level,
            margin=margin,
            verdict_key=verdict_key,
        )
    measured = [p for p in chosen if metrics[p]["verdict"] is not None]
    if measured:
        _, _, adjusted = holm([metrics[p]["p_value"] for p in measured], 1 - level)
        for prim, p_holm in zip(measured, adjusted, strict=True):
            metrics[prim]["p_value_holm"] = float(p_holm)
    flagged = [p for p in measured if metrics[p]["verdict"] == SUSPICIOUS]
    return {
        "model": dict(public.get("model") or {}),
        "repeats": {"public": public.get("repeats"), "fresh": fresh.get("repeats")},
        "public": _side_summary(public, sides["public"]),
        "fresh": _side_summary(fresh, sides["fresh"]),
        "excluded": specs,
        "exclusion_note": exclusion_note,
        "stratify": stratify,
        "verdict_uses": verdict_key,
        "level": level,
        "margin": margin,
        "resamples": resamples,
        "seed": seed,
        "bootstrap": (
            "latent problems drawn with replacement, independently in each report: within each family of the public "
            "set, within each "
            + ("family × p* band (cells with few problems pooled per family)" if "band" in keys else "family")
            + " of the fresh set"
        ),
        "caveats": caveats,
        "metrics": metrics,
        "suspicious": flagged,
        "verdict": SUSPICIOUS if flagged else NOT_SUSPICIOUS,
    }


def _statistics(
    table: Mapping[str, tuple[np.ndarray, np.ndarray]], counts: Mapping[str, np.ndarray] | None, usable: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Raw and reweighted differences, public − fresh: one value per resample (or the point estimate when
    counts is None).

    Reweighted: strata measured in both reports (in the original data) only; the public side is its mean
    over them, the fresh side the mean of its stratum means weighted by the public shares of renderings,
    both recomputed from each resample (the public mix is itself estimated from the public sample)."""
    totals: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for which, (sums, n) in table.items():
        if counts is None:
            totals[which] = (sums.sum(axis=0, keepdims=True), n.sum(axis=0, keepdims=True))
        else:
            totals[which] = (counts[which] @ sums, counts[which] @ n)
    (s_pub, n_pub), (s_fresh, n_fresh) = totals["public"], totals["fresh"]
    shared = _shared(table, usable)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = s_pub.sum(1) / n_pub.sum(1) - s_fresh.sum(1) / n_fresh.sum(1)
        public = s_pub[:, shared].sum(1) / n_pub[:, shared].sum(1)
        weights = n_pub[:, shared] / n_pub[:, shared].sum(1, keepdims=True)
        fresh_means = s_fresh[:, shared] / n_fresh[:, shared]
        fresh = np.where(weights > 0, weights * fresh_means, 0.0).sum(1)
        fresh[np.any((weights > 0) & np.isnan(fresh_means), axis=1)] = np.nan
    return raw, public - fresh


def _shared(table: Mapping[str, tuple[np.ndarray, np.ndarray]], usable: np.ndarray) -> np.ndarray:
    """Usable strata with measured renderings in both reports."""
    return usable & (table["public"][1].sum(axis=0) > 0) & (table["fresh"][1].sum(axis=0) > 0)


def _weights(table: Mapping[str, tuple[np.ndarray, np.ndarray]], usable: np.ndarray) -> np.ndarray:
    """The public set's shares of renderings over the shared strata (0 elsewhere)."""
    weights = np.where(_shared(table, usable), table["public"][1].sum(axis=0), 0.0)
    total = weights.sum()
    return weights / total if total > 0 else weights


def _metric(
    prim: str,
    table: Mapping[str, tuple[np.ndarray, np.ndarray]],
    strata: Sequence[str],
    raw: float,
    reweighted: float,
    boot: Mapping[str, np.ndarray],
    *,
    usable: np.ndarray,
    level: float,
    margin: float,
    verdict_key: str,
) -> dict[str, Any]:
    pub_sums, pub_n = (a.sum(axis=0) for a in table["public"])
    fresh_sums, fresh_n = (a.sum(axis=0) for a in table["fresh"])
    weights = _weights(table, usable)
    shared = weights > 0
    out: dict[str, Any] = {
        "label": LABELS[prim],
        "n": {"public": int(pub_n.sum()), "fresh": int(fresh_n.sum())},
        "verdict": None,
    }
    if not shared.any():
        missing = [w for w, n in (("public", pub_n), ("fresh", fresh_n)) if n.sum() == 0]
        out["reason"] = (
            f"{LABELS[prim]} was not asked in the {' or '.join(missing)} report"
            if missing
            else "no stratum is measured in both reports"
            if usable.all()
            else f"no stratum shared with the public set has {MIN_FRESH_PER_CELL} or more fresh latent problems: "
            f"generate at least {6 * 11 * MIN_FRESH_PER_CELL} problems, or use --stratify family"
        )
        return out
    with np.errstate(invalid="ignore", divide="ignore"):
        pub_means, fresh_means = pub_sums / pub_n, fresh_sums / fresh_n
    fresh_reweighted = float(fresh_means[shared] @ weights[shared])
    public_shared = float(pub_means[shared] @ weights[shared])
    result = {}
    for key, point in (("raw", raw), ("reweighted", reweighted)):
        values = boot[key][~np.isnan(boot[key])]
        if values.size < 0.99 * boot[key].size:
            out["reason"] = (
                f"{boot[key].size - values.size} of {boot[key].size} bootstrap resamples left a stratum empty: too few "
                "latent problems per stratum; use coarser --stratify"
            )
            return out
        low, high = percentile_interval(values, level)
        result[key] = {"difference": point, "ci": [low, high], "se": float(values.std(ddof=1))}
    chosen = boot[verdict_key][~np.isnan(boot[verdict_key])]
    low, high = result[verdict_key]["ci"]
    out.update(
        public=float(pub_sums.sum() / pub_n.sum()),
        fresh=float(fresh_sums.sum() / fresh_n.sum()),
        public_shared_strata=public_shared,
        fresh_reweighted=fresh_reweighted,
        raw=result["raw"],
        reweighted=result["reweighted"],
        # One-sided bootstrap p-value of H0: public advantage ≤ margin.
        p_value=float((1 + np.sum(chosen <= margin)) / (chosen.size + 1)),
        verdict=SUSPICIOUS if low > margin else NOT_SUSPICIOUS,
        finding=_finding(low, high, margin),
        strata=[
            {
                "stratum": name,
                "weight": float(weights[c]),
                "public": {"n": int(pub_n[c]), "mean_ovl": _finite(pub_means[c])},
                "fresh": {"n": int(fresh_n[c]), "mean_ovl": _finite(fresh_means[c])},
            }
            for c, name in enumerate(strata)
            if pub_n[c] > 0 or fresh_n[c] > 0
        ],
        public_renderings_without_fresh_counterpart=int(pub_n[~shared].sum()),
    )
    return out


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _finding(low: float, high: float, margin: float) -> str:
    if low > margin:
        return "suspiciously better on the public set — the public items may have been seen in training"
    if high < 0:
        return "better on the fresh set: no sign that the public items were seen in training"
    if low > 0:
        return (
            f"slightly better on the public set, but not shown to be by more than the margin {margin:+.3f}: "
            "no clear sign of contamination"
        )
    return (
        f"no significant difference: no sign that the public items were seen in training (an advantage up to "
        f"{high:+.3f} cannot be ruled out)"
    )


def _side_summary(report: Mapping[str, Any], side: _Side) -> dict[str, Any]:
    dataset = report.get("dataset") or {}
    return {
        "dataset": dataset.get("name"),
        "sha256": dataset.get("sha256"),
        "renderings": len(report["items"]),
        "compared_renderings": side.renderings,
        "latent_problems": side.latent_problems,
        "families": dict(sorted(side.families.items())),
    }


# ---------------------------------------------------------------------------------------------- text


def format_check(result: Mapping[str, Any]) -> str:
    level = f"{result['level']:.0%}"
    model = result["model"]
    lines = [
        f"Contamination check: {model.get('name')} {model.get('version')}, mean OVL on the public set vs a fresh set"
    ]
    for which in ("public", "fresh"):
        side = result[which]
        families = ", ".join(f"{name} {count}" for name, count in side["families"].items())
        lines.append(
            f"  {which + ':':7} {side['dataset']} (sha256 {str(side['sha256'])[:12]}…), {side['compared_renderings']} of "
            f"{side['renderings']} renderings compared, {side['latent_problems']} latent problems ({families})"
        )
    if result["exclusion_note"]:
        lines.append(f"  {result['exclusion_note']}")
    if result["stratify"] == "none":
        lines.append("  verdict on the raw difference (--stratify none): the two sets' family mixes are not adjusted")
    else:
        lines.append(
            f"  verdict on the reweighted difference: the fresh set's mean OVL per {_mix(result['stratify'], each=True)} "
            "weighted by the public set's share of renderings there (like with like); the raw difference alongside"
        )
    lines.append(
        f"  {level} intervals from {result['resamples']} bootstrap resamples ({result['bootstrap']}); "
        f"seed {result['seed']}; repeats {result['repeats']['public']} public, {result['repeats']['fresh']} fresh"
    )
    lines += [f"  caveat: {text}" for text in result["caveats"]]
    lines.append("")
    header = (
        "primitive",
        "public",
        "fresh",
        "raw diff",
        f"{level} CI",
        "fresh reweighted",
        "reweighted diff",
        f"{level} CI",
    )
    rows = []
    for metric in result["metrics"].values():
        if metric["verdict"] is None:
            rows.append((metric["label"], *["—"] * 7))  # the reason follows below the table
            continue
        raw, rew = metric["raw"], metric["reweighted"]
        rows.append(
            (
                metric["label"],
                f"{metric['public']:.3f}",
                f"{metric['fresh']:.3f}",
                f"{raw['difference']:+.3f}",
                _ci(raw["ci"]),
                f"{metric['fresh_reweighted']:.3f}",
                f"{rew['difference']:+.3f}",
                _ci(rew["ci"]),
            )
        )
    lines += _table(header, rows)
    lines.append("")
    key = result["verdict_uses"]
    for metric in result["metrics"].values():
        if metric["verdict"] is None:
            lines.append(f"{metric['label']}: not compared: {metric['reason']}")
            continue
        chosen = metric[key]
        public = metric["public_shared_strata"] if key == "reweighted" else metric["public"]
        fresh = metric["fresh_reweighted"] if key == "reweighted" else metric["fresh"]
        how = f" (reweighted to the public {_mix(result['stratify'])} mix)" if key == "reweighted" else ""
        lost = metric["public_renderings_without_fresh_counterpart"]
        extra = (
            f"; {lost} public renderings have no fresh counterpart and are left out"
            if key == "reweighted" and lost
            else ""
        )
        lines.append(
            f"{metric['label']}: public {public:.3f} vs fresh {fresh:.3f}{how}, difference {chosen['difference']:+.3f} "
            f"[{level} CI {chosen['ci'][0]:+.3f}, {chosen['ci'][1]:+.3f}]: {metric['finding']}{extra}"
        )
    measured = [m for m in result["metrics"].values() if m["verdict"] is not None]
    if measured:
        best = min(measured, key=lambda m: m["p_value_holm"])
        summary = (
            f"SUSPICIOUS on {', '.join(result['metrics'][p]['label'] for p in result['suspicious'])}"
            if result["suspicious"]
            else "not suspicious on any primitive"
        )
        lines.append(
            f"Overall: {summary} (smallest Holm-adjusted one-sided p over {len(measured)} primitives: "
            f"{best['p_value_holm']:.4f}, {best['label']})"
        )
    return "\n".join(lines)


def _mix(stratify: str, each: bool = False) -> str:
    names = {"family": "family", "band": "p* band", "representation": "representation"}
    words = [names[key] for key in stratify.split("+")]
    return (" × " if each else " × ").join(words)


def _ci(ci: Sequence[float]) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(row[k])) for row in [header, *rows]) for k in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if k == 0 else str(c).rjust(w) for k, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return [line(header), line(["-" * w for w in widths]), *(line(row) for row in rows)]


# ---------------------------------------------------------------------------------------------- command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("public", type=Path, metavar="PUBLIC.json", help="JSON report of the model on the public set")
    parser.add_argument("fresh", type=Path, metavar="FRESH.json", help="JSON report of the same model on a fresh set")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help=f"bootstrap resamples (default {RESAMPLES})")
    parser.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    parser.add_argument(
        "--stratify",
        default=DEFAULT_STRATA,
        metavar="KEYS",
        help="reweight the fresh set to the public mix of these strata: names from family, band (of p*), "
        f"representation joined by '+', or 'none' (default {DEFAULT_STRATA})",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="NAME",
        help="leave a family, representation or family:representation out of both reports (repeatable); "
        "'none' keeps everything. Default: the public file's leaking renderings (prose, sequential_bayes) "
        "when PUBLIC.json is a report of the bundled sys1cal-v1",
    )
    parser.add_argument(
        "--margin", type=float, default=0.0, help="public advantage that must be exceeded to flag it (default 0)"
    )
    parser.add_argument(
        "--ignore-repeats", action="store_true", help="compare reports with different repeat counts anyway"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of text")
    parser.add_argument("--fail-if-suspicious", action="store_true", help="exit 1 when any primitive is suspicious")


def run(args: argparse.Namespace) -> int:
    try:
        public, fresh = read_report(args.public), read_report(args.fresh)
        result = check_contamination(
            public,
            fresh,
            seed=args.seed,
            resamples=args.resamples,
            level=args.level,
            stratify=args.stratify,
            exclude=args.exclude,
            margin=args.margin,
            ignore_repeats=args.ignore_repeats,
        )
    except (ReportError, ContaminationError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False))
    else:
        print(format_check(result))
    return 1 if args.fail_if_suspicious and result["suspicious"] else 0
