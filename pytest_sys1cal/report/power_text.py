"""The text `python -m pytest_sys1cal power` prints: what was measured or assumed, the sample-size table over
repeat counts, and whether the report's own design detects the drop. See docs/power.md."""

from __future__ import annotations

from ..analysis.power import SMALL
from ..document import model_and_version
from ..document_commands import PowerPlan, PowerRow
from .table import aligned


def format_plan(result: PowerPlan) -> str:
    """The plan (`plan_power`'s result) as text."""
    return "\n".join(
        [
            *_plan_heading(result),
            *_inputs(result),
            "",
            *_sample_sizes(result),
            "",
            *_conclusion(result),
        ]
    )


def _effect(result: PowerPlan) -> str:
    return "a drop" if result["design"] == "paired" else "a public-set advantage"


def _plural(count: int) -> str:
    return "s" if count != 1 else ""


def _plan_heading(result: PowerPlan) -> list[str]:
    est, dataset = result["estimates"], result["dataset"]
    what = (
        "paired design: the same renderings measured by two versions (the upgrade gate, --sys1cal-baseline)"
        if result["design"] == "paired"
        else "unpaired design: this report's set against a fresh one (the contamination check)"
    )
    return [
        f"Power for {result['label']} mean OVL: detect {_effect(result)} of {result['drop']:.3f} at one-sided "
        f"α = {result['alpha']:g} with power {result['power']:.0%}",
        f"  {what}",
        f"  report: {model_and_version(result['model'])} on {dataset.get('name')}, {est['renderings']} renderings of "
        f"{est['latent_problems']} latent problems, {est['repeats']} repeat{_plural(est['repeats'])}; "
        f"mean OVL {est['mean_ovl']:.3f}",
        "",
    ]


def _inputs(result: PowerPlan) -> list[str]:
    """σ_w, the spread, ρ and m with where each comes from, then the assumptions."""
    est, paired = result["estimates"], result["design"] == "paired"
    rho_kind = "ρ_Δ of the paired differences" if result["baseline"] else "ρ  of per-rendering OVL"
    spread_name = (
        "σ_Δ SD over renderings of the true change" if paired else "σ_B SD over renderings of per-rendering OVL"
    )
    measured = [
        ("σ_w repeat noise (SD of per-repeat OVL over repeats)", result["sigma_w"], result["sigma_w_source"]),
        (spread_name, result["spread"], result["spread_source"]),
        (
            f"{rho_kind} within a latent problem",
            result["rho"],
            "one-way ANOVA ICC" + (", noise removed" if est["sigma_w"] is not None else ""),
        ),
        (
            "m   renderings per latent problem",
            result["renderings_per_problem"],
            f"{result['renderings_per_problem_deff']:.2f} size-weighted in DEFF = 1 + (m − 1)ρ_r",
        ),
    ]
    if paired:
        measured.insert(2, ("SD over renderings of per-rendering OVL (for reference)", est["sd_ovl"], "observed"))
    width = max(len(name) for name, _, _ in measured)
    lines = [f"  {name:<{width}}  {value:6.3f}  {source}" for name, value, source in measured]
    return lines + [f"  assumption: {text}" for text in result["assumptions"]]


def _sample_sizes(result: PowerPlan) -> list[str]:
    """The table over repeat counts, with its footnotes."""
    paired = result["design"] == "paired"
    if paired:
        header = ["repeats", "ρ_r", "DEFF", "renderings", "latent problems", "requests"]
        header.append(f"MDE at {result['estimates']['renderings']} renderings")
    else:
        header = ["repeats", "ρ_r", "DEFF", "fresh renderings", "fresh latent problems", "requests"]
        header += ["MDE, fresh as large", "MDE, fresh unlimited"]
    lines = aligned(header, [_table_row(result, row) for row in result["table"]])
    if any(row["t_corrected"] for row in result["table"]):
        lines.append(f"  * fewer than {SMALL} latent problems: Student t quantiles, df = latent problems − 1")
    if not paired and any(row["renderings"] is None for row in result["table"]):
        lines.append(
            "  — not reachable: this report's own size limits the comparison; no fresh set detects the drop (see the "
            "last column for what an unlimited fresh set would detect)"
        )
    return lines


def _table_row(result: PowerPlan, row: PowerRow) -> list[str]:
    m_eff = result["renderings_per_problem_deff"]
    rho_r = (row["design_effect"] - 1) / (m_eff - 1) if m_eff > 1 else 0.0
    cells = [
        str(row["repeats"]),
        f"{rho_r:.2f}",
        f"{row['design_effect']:.2f}",
        _count(row["renderings"]),
        _count(row["latent_problems"]) + ("*" if row["t_corrected"] else ""),
        _count(row["requests"]),
        f"{row['mde_at_report_size']:.4f}",
    ]
    if result["design"] != "paired":
        cells.append(f"{row['mde_unlimited_fresh']:.4f}")
    return cells


def _conclusion(result: PowerPlan) -> list[str]:
    """The MDE of the report's own design, the σ_Δ what-if, the cost sentence and the notes."""
    own, paired = result["own_design"], result["design"] == "paired"
    verdict = "detectable" if own["mde"] <= result["drop"] else "NOT reliably detectable"
    design_words = "this report's design" if paired else "this report against a fresh set of the same size"
    lines = [
        f"MDE of {design_words} ({own['renderings']} renderings, {own['repeats']} repeat{_plural(own['repeats'])}, "
        f"DEFF {own['design_effect']:.2f}): {own['mde']:.4f}, so {_effect(result)} of {result['drop']:.3f} is "
        f"{verdict} with {result['power']:.0%} power"
    ]
    what_if = result.get("what_if")
    if what_if is not None:
        cases = ", ".join(f"σ_Δ = {s}: {_count(n)}" for s, n in what_if["latent_problems"].items())
        lines.append(f"σ_Δ is assumed; latent problems needed at r = {what_if['repeats']} if it were {cases}")
    lines.append(
        "Requests = renderings × repeats (one request per repeat asks every question). Generated problems cost "
        "nothing, so more problems with fewer repeats is the cheaper way to power; compare only reports with the "
        "same repeats (the OVL of a repeat mean depends on r)."
    )
    return lines + [f"Note: {text}" for text in result["notes"]]


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"
