"""The two reports of a contamination check as comparable sides: what is refused and what needs a caveat,
which renderings are left out, the strata (family × p* band …), and each side's per-latent OVL sums and
bootstrap resampling groups. Opens no file: the command hands it the reports and the bundled public file's
sha256. See docs/contamination.md."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..bands import ALL_BANDS, band_of
from ..document import Item, ReportDocument, dataset_sha, model_and_version, model_source
from ..document_commands import CheckedSide
from ..errors import InputError
from ..vocabulary import FAMILY_NAMES
from .paired import rendering_ovl
from .stats import Clusters

STRATUM_KEYS = ("family", "band", "representation")
# Fresh latent problems a family × p* band cell needs to enter the reweighted difference (and to be its own
# resampling group): fewer cannot show the spread between problems.
MIN_FRESH_PER_CELL = 5
# A generated set of this many problems or more fills every family × p* band cell: the generator splits the
# problems evenly over the families, and a family visits each of its bands (at most all of them) in turn.
FILLS_EVERY_CELL = len(FAMILY_NAMES) * len(ALL_BANDS) * MIN_FRESH_PER_CELL
# Renderings of the public Sys1Cal-v1 file whose state shows p* (prose) or the posterior trajectory
# (sequential_bayes): left out of both sides by default when the public report is of that file.
PUBLIC_LEAKS = ("prose", "sequential_bayes")
PUBLIC_DATASET = "sys1cal-v1"
PUBLIC_LEAKS_NOTE = (
    "left out of both sets: prose renderings and the sequential_bayes family (in the public file they state p* or "
    "list the posterior trajectory, so a model reads the answer without having seen the item; --exclude none keeps "
    "them)"
)


class ContaminationError(InputError):
    """The two reports cannot be compared for contamination (same dataset, other model, other design), or a
    setting of the check is out of range."""


# ---------------------------------------------------------------------------------------------- refusals


def check_design(public: ReportDocument, fresh: ReportDocument, ignore_repeats: bool) -> list[str]:
    """Refuse what cannot be compared; return caveats for what can, but with care."""
    sha_public, sha_fresh = dataset_sha(public), dataset_sha(fresh)
    if sha_public is not None and sha_public == sha_fresh:
        raise ContaminationError(
            f"both reports were computed on the same dataset (sha256 {sha_public}): the check compares the public "
            "set with a fresh one, e.g. `python -m pytest_sys1cal generate --seed 1 --problems 400 --out fresh.jsonl`, "
            "recorded with `--sys1cal-dataset fresh.jsonl`"
        )
    model_public, model_fresh = public["model"], fresh["model"]
    if any(model_public.get(key) != model_fresh.get(key) for key in ("name", "version")):
        raise ContaminationError(
            f"the reports are of different models (public: {model_and_version(model_public)}, fresh: "
            f"{model_and_version(model_fresh)}): the check compares one model version on two item sets"
        )
    caveats = _repeat_caveats(public.get("repeats"), fresh.get("repeats"), ignore_repeats)
    if "reconstructed" in {model_source(public), model_source(fresh)}:
        caveats.append(
            "a reconstructed report holds per-item means over the paper's 10 repeats stored as 1 repeat: its OVL is "
            "that of a 10-repeat mean, higher than a 1-repeat recording of the same model"
        )
    servers = (model_public.get("server_model"), model_fresh.get("server_model"))
    if all(servers) and servers[0] != servers[1]:
        caveats.append(f"the server reported different models ({servers[0]} public, {servers[1]} fresh)")
    return caveats


def _repeat_caveats(r_public: int | None, r_fresh: int | None, ignore_repeats: bool) -> list[str]:
    if r_public == r_fresh:
        return []
    if not ignore_repeats:
        raise ContaminationError(
            f"the public report averaged {r_public} repeat(s) per rendering and the fresh one {r_fresh}: the OVL of "
            "a repeat mean grows with the number of repeats, so the set with more repeats looks better by itself; "
            "record both with the same --sys1cal-repeats (or pass --ignore-repeats to compare anyway)"
        )
    return [f"repeat counts differ ({r_public} public, {r_fresh} fresh): the set with more repeats is favoured"]


# ---------------------------------------------------------------------------------------------- exclusions


@dataclass(frozen=True)
class Exclusions:
    """Families, representations and family:representation cells left out of both reports."""

    specs: list[str]
    note: str | None  # what was left out and why, for the output

    def excludes(self, item: Item) -> bool:
        family, representation = item["family"], item["representation"]
        return any(spec in (family, representation, f"{family}:{representation}") for spec in self.specs)


def resolve_exclusions(
    exclude: Iterable[str] | None,
    public: ReportDocument,
    fresh: ReportDocument,
    bundled_sha256: str | None = None,
) -> Exclusions:
    """The exclusions to apply: `exclude` checked against both reports, or, when None, the public file's
    leaking renderings if `public` is a report of the bundled sys1cal-v1 (whose sha256 is `bundled_sha256`;
    None: not known, nothing is left out by default)."""
    if exclude is None:
        sha = dataset_sha(public)
        if sha is not None and sha == bundled_sha256:
            return Exclusions(list(PUBLIC_LEAKS), PUBLIC_LEAKS_NOTE)
        return Exclusions([], None)
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
    return Exclusions(specs, f"left out of both sets: {', '.join(specs)}" if specs else None)


# ---------------------------------------------------------------------------------------------- strata


def strata_keys(stratify: str) -> tuple[str, ...]:
    """The keys of --stratify: "family+band" gives ("family", "band"), "none" gives (); ContaminationError
    otherwise."""
    if stratify == "none":
        return ()
    keys = tuple(stratify.split("+"))
    if not keys or any(key not in STRATUM_KEYS for key in keys) or len(set(keys)) != len(keys):
        raise ContaminationError(
            f"--stratify {stratify}: use 'none' or names from {', '.join(STRATUM_KEYS)} joined by '+', e.g. family+band"
        )
    return keys


def _stratum_of(item: Item, keys: Sequence[str]) -> str:
    if not keys:
        return "all"
    parts = {
        "family": lambda: item["family"],
        "representation": lambda: item["representation"],
        "band": lambda: _p_star_band(item),
    }
    return " ".join(parts[key]() for key in keys)


def _p_star_band(item: Item) -> str:
    """The Sys1Cal-v1 probability band of p* (the generator draws p* evenly over these bands; the public set
    is concentrated in the middle ones). repr() gives the decimal the dataset wrote, so a p* of 0.1 is exactly
    1/10 and lands in [0.01,0.10], not in the band above it."""
    return band_of(Fraction(repr(float(item["p_star"]))))


# ---------------------------------------------------------------------------------------------- one side


class Side:
    """One report's renderings as per-latent, per-stratum sums of OVL, ready for the bootstrap.

    group_of: the resampling group of a rendering's latent problem, within which the bootstrap draws."""

    def __init__(
        self,
        report: ReportDocument,
        exclusions: Exclusions,
        keys: Sequence[str],
        group_of: Callable[[Item], str],
    ):
        items = [item for item in report["items"] if not exclusions.excludes(item)]
        self.renderings = len(items)
        self.items = items
        # Latent problems sorted by (group, id): each group's problems form one block of columns.
        latents = sorted({(group_of(item), item["latent_instance_id"]) for item in items})
        self.latent_index = {latent: k for k, (_, latent) in enumerate(latents)}
        self.latent_ids = np.asarray([latent for _, latent in latents], dtype=str)
        self.latent_group = np.asarray([group for group, _ in latents], dtype=str)
        self.families = dict(Counter(item["family"] for item in {i["latent_instance_id"]: i for i in items}.values()))
        self.stratum = [_stratum_of(item, keys) for item in items]

    @property
    def latent_problems(self) -> int:
        return len(self.latent_index)

    def sums(self, primitive: str, strata: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(J, C) sums of OVL and counts of measured renderings per latent problem and stratum."""
        ovl = rendering_ovl(self.items, primitive)
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

    def summary(self, report: ReportDocument) -> CheckedSide:
        """The side as the result shows it: dataset, renderings compared, latent problems per family."""
        dataset = report["dataset"]
        return {
            "dataset": dataset.get("name"),
            "sha256": dataset.get("sha256"),
            "renderings": len(report["items"]),
            "compared_renderings": self.renderings,
            "latent_problems": self.latent_problems,
            "families": dict(sorted(self.families.items())),
        }


# ---------------------------------------------------------------------------------------------- both sides


@dataclass(frozen=True)
class Sides:
    """The public and the fresh side over their common strata; `usable` marks the strata that may enter the
    reweighted difference (not a thin fresh band cell)."""

    public: Side
    fresh: Side
    strata: list[str]
    usable: np.ndarray
    thin: set[tuple[str, str]]  # (family, band) cells with fewer than MIN_FRESH_PER_CELL fresh latent problems

    def by_name(self) -> dict[str, Side]:
        return {"public": self.public, "fresh": self.fresh}

    def thin_caveat(self) -> list[str]:
        if not self.thin:
            return []
        return [
            f"{len(self.thin)} family × p* band cell(s) of the fresh set hold fewer than {MIN_FRESH_PER_CELL} latent "
            f"problems: left out of the reweighted difference, with their public renderings (a generated set of at "
            f"least {FILLS_EVERY_CELL} problems fills every cell; or use --stratify family)"
        ]


def build_sides(public: ReportDocument, fresh: ReportDocument, exclusions: Exclusions, keys: Sequence[str]) -> Sides:
    """Both sides, resampled by family (public) and by family × p* band (fresh, when the strata include the
    band). Raises ContaminationError when a side keeps fewer than 2 latent problems."""
    # The public set's design fixes how many problems each family has; a generated set's also fixes how many
    # fall in each p* band of a family (its blocked band schedule), so those are its resampling groups. A band
    # cell with few fresh problems cannot show their spread: it is pooled with the family's other thin cells
    # for resampling and left out of the reweighted difference.
    thin = _thin_cells(fresh, exclusions) if "band" in keys else set()

    def fresh_group(item: Item) -> str:
        if "band" not in keys:
            return item["family"]
        band = _p_star_band(item)
        return f"{item['family']} (thin bands)" if (item["family"], band) in thin else f"{item['family']} {band}"

    sides = {
        "public": Side(public, exclusions, keys, lambda item: item["family"]),
        "fresh": Side(fresh, exclusions, keys, fresh_group),
    }
    for which, side in sides.items():
        if side.latent_problems < 2:
            raise ContaminationError(
                f"the {which} report has {side.latent_problems} latent problem(s) left after the exclusions: "
                "not enough to compare"
            )
    strata = sorted(set(sides["public"].stratum) | set(sides["fresh"].stratum))
    return Sides(sides["public"], sides["fresh"], strata, _usable(sides.values(), strata, thin), thin)


def _thin_cells(fresh: ReportDocument, exclusions: Exclusions) -> set[tuple[str, str]]:
    latents = {i["latent_instance_id"]: i for i in fresh["items"] if not exclusions.excludes(i)}
    cells = Counter((item["family"], _p_star_band(item)) for item in latents.values())
    return {cell for cell, count in cells.items() if count < MIN_FRESH_PER_CELL}


def _usable(sides: Iterable[Side], strata: Sequence[str], thin: set[tuple[str, str]]) -> np.ndarray:
    if not thin:
        return np.ones(len(strata), bool)
    cell_of = {
        stratum: (item["family"], _p_star_band(item))
        for side in sides
        for item, stratum in zip(side.items, side.stratum, strict=True)
    }
    return np.asarray([cell_of[stratum] not in thin for stratum in strata])
