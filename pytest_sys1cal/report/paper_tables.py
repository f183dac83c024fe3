"""The paper's tables (1, 2, 3, 6, decisions, option swap) as `Table` data, for every renderer."""

from __future__ import annotations

from collections.abc import Callable

from ..document import PaperSummary, Reasoned, ReportDocument, averaged_calls
from ..vocabulary import MEAN_READING, reading_label
from .breakdown_tables import by_family_table, by_representation_table, several_calls
from .figure_data import LatentBand, r2_words
from .recalibration_table import recalibration_table
from .table import Table, fmt, fmt_interval, fmt_p, fmt_t
from .why_text import decomposition_table


def table1(result: ReportDocument) -> Table:
    prims = result["primitives"]
    rows = [
        [
            name.capitalize(),
            str(stats["n"]),
            fmt(stats["mean_tv"], 4),
            fmt(stats["mean_ovl"]),
            fmt(stats["median_ovl"]),
        ]
        for name, stats in prims.items()
    ]
    return Table(
        title="Table 1: distance to the exact p* (OVL = 1 − TV)",
        columns=["primitive", "n", "mean TV", "mean OVL", "median OVL"],
        rows=rows,
        notes=["Score uses its expectation μ_S = Σ q_j·j/9; each value is the mean over repeats.", *_call_note(result)],
    )


def _call_note(result: ReportDocument) -> list[str]:
    """What Table 1 says of the per-call reading when no table of its own shows it."""
    calls = result.get("calls")
    if calls is None or several_calls(result):
        return []
    if not calls["measured"]:
        return [f"Per call: not measured: {calls.get('reason', 'no call was recorded')}."]
    return ["One call per rendering: the per-call reading (what one request gets) is these same values."]


def per_call_table(result: ReportDocument) -> Table | None:
    """Each primitive per call beside its repeat mean (Table 1's, the paper's protocol): OVL, median OVL, Brier
    and ECE. Only where the cassettes hold several calls of a rendering (else the two readings are one)."""
    if not several_calls(result):
        return None
    mean = reading_label(MEAN_READING, averaged_calls(result))
    rows = []
    for name, row in result["primitives"].items():
        call = row.get("per_call")
        calibration = result["calibration"].get(name)
        call_cal = None if calibration is None else calibration.get("per_call")
        rows.append(
            [
                name.capitalize(),
                "0" if call is None else str(call["calls"]),
                fmt(None if call is None else call["mean_ovl"]),
                fmt(row["mean_ovl"]),
                fmt(None if call is None else call["median_ovl"]),
                fmt(row["median_ovl"]),
                fmt(None if call_cal is None else call_cal["brier"], 4),
                fmt(None if calibration is None else calibration["brier"], 4),
                fmt(None if call_cal is None else call_cal["ece"], 4),
                fmt(None if calibration is None else calibration["ece"], 4),
            ]
        )
    pairs = ("mean OVL", "median OVL", "Brier", "ECE")
    return Table(
        title=f"Per call beside the {mean}: what one request to the service gets",
        columns=["primitive", "calls", *(f"{what}: {side}" for what in pairs for side in ("per call", mean))],
        rows=rows,
        notes=[
            "Per call: each rendering's mean over its calls of 1 − |p − p*| (Brier: of (p − p*)²; ECE: every call a "
            f"point weighing 1/r), then the mean over renderings: what a single call is expected to get. {mean}: "
            "Table 1's, the paper's protocol. A mean is never further from p* than its calls are on average, and "
            "averaging hedges a noisy model toward 0.5, so the mean's OVL is never below the per-call OVL "
            "(python -m pytest_sys1cal docs statistics, §1.6).",
        ],
    )


def _reason_notes(*blocks: Reasoned | None) -> list[str]:
    return [f"Not computed: {reason}." for block in blocks if block and (reason := block.get("reason"))]


def table2(result: ReportDocument) -> Table:
    unc = result["uncertainty"]
    test = unc["test"]
    df = None if unc["latent_problems"] < 2 else unc["latent_problems"] - 1
    peak = "" if unc["u_peak_at"] is None else f" at μ_S = {unc['u_peak_at']:.3f}"
    shape = "—" if unc["alpha"] is None else f"{unc['alpha']:.3f}, {unc['beta']:.3f}"
    band = LatentBand.of(result)
    r2 = r2_words(unc["r2"]) or fmt(None)
    fitted = [
        ["λ (global fit)", fmt(unc["lambda"]), fmt_interval(unc["lambda_ci"]), "", ""],
        ["α, β (global fit)", shape, "", "", ""],
        ["R², R² vs identity Choice = μ_S", f"{r2}, {fmt(unc['r2_vs_identity'])}", "", "", ""],
        [f"U_max, peak uncertain mass{peak}", fmt(unc["u_max"]), fmt_interval(unc["u_max_ci"]), "", ""],
    ]
    if not band.shown:  # the fit is not a band the test found: no U_max, the fit's own numbers marked as such
        fitted = [
            [f"latent uncertainty: {band.absent()}", "", "", "", ""],
            *[[row[0].replace("(global fit)", "(global fit, not detected)"), *row[1:]] for row in fitted[:3]],
            [f"U_max, peak uncertain mass{peak}", "— (not detected)", "—", "", ""],
        ]
    rows = [
        *fitted,
        ["share of items with Choice < μ_S", fmt(unc["share_choice_below_mu"]), "", "", ""],
        [
            "mean λ_j per latent: paper's statistic (not a valid test of λ=0)",
            fmt(unc["lambda_latent_mean"]),
            fmt_interval(unc["lambda_latent_ci"]),
            fmt_t(unc["lambda_latent_t"], df),
            fmt_p(unc["lambda_latent_p"]),
        ],
        _improvement_row(unc["improvement"], df),
        [
            "valid test of λ=0: mean d_j = Choice − μ_S per latent (one-sided)",
            fmt(test["effect"], 4),
            fmt_interval(test["effect_ci"], 4),
            fmt_t(test["statistic"], test["df"]),
            fmt_p(test["p_value"], floored=True),
        ],
        ["  same, sign-flip permutation test", "", "", "", fmt_p(test["permutation_p_value"], floored=True)],
    ]
    return Table(
        title="Table 2: latent uncertainty, Choice = μ/(1 − λ·μ^α·(1−μ)^β) with μ = μ_S",
        columns=["statistic", "estimate", "95% interval", "t (df)", "p"],
        rows=rows,
        notes=[
            f"Fit on {unc['n']} renderings of {unc['latent_problems']} latent problems; intervals for λ and "
            f"U_max from {unc['bootstrap_resamples']} latent-problem bootstrap resamples.",
            *unc["notes"],
            test["note"],
            *_reason_notes(unc, test),
        ],
    )


def _improvement_row(improvement: PaperSummary | None, df: int | None) -> list[str]:
    label = "improvement |μ_S−Choice| − |f(μ_S)−Choice|: paper's statistic"
    if improvement is None:
        return [label, fmt(None, 4), fmt_interval(None, 4), fmt_t(None, df), fmt_p(None)]
    i = improvement
    return [label, fmt(i["mean"], 4), fmt_interval(i["ci"], 4), fmt_t(i["t"], df), fmt_p(i["p"])]


def table3(result: ReportDocument) -> Table:
    cal = result["choice_calibration"]
    inverse, tuf = cal["inverse"], cal["tuf"]
    rows = [
        ["raw Choice", fmt(cal["raw"]["mean_ovl"]), fmt(cal["raw"]["median_ovl"]), "", ""],
        ["inverse-calibrated f⁻¹(Choice)", fmt(inverse["mean_ovl"]), fmt(inverse["median_ovl"]), "", ""],
        [
            "T/U/F interval [μ_S, μ_S + U(μ_S)]",
            fmt(tuf["mean_ovl"]),
            fmt(tuf["median_ovl"]),
            fmt(tuf["mean_width"]),
            fmt(tuf["coverage"]),
        ],
    ]
    return Table(
        title="Table 3: Choice calibration through the latent model",
        columns=["Choice reading", "mean OVL", "median OVL", "mean width", "coverage of p*"],
        rows=rows,
        notes=[
            f"{cal['n']} renderings with both Choice and Score. Interval OVL = 1 − distance from p* to the "
            "interval: read it with the width, since [0, 1] would score 1.",
            *_reason_notes(cal),
        ],
    )


def table6(result: ReportDocument) -> Table:
    sens = result["representation_sensitivity"]
    rows = [
        [
            name.capitalize(),
            fmt(row["mean_pairwise_tv"], 4),
            fmt(row["mean_max_tv"], 4),
            str(row["latent_problems"]),
        ]
        for name, row in sens.items()
    ]
    return Table(
        title="Table 6: representation sensitivity (|Δp| between renderings of one latent problem)",
        columns=["primitive", "mean pairwise TV", "mean max TV", "latent problems"],
        rows=rows,
        notes=[
            "Per latent problem with ≥ 2 renderings: mean and max |Δp| over all pairs; then the mean over "
            "problems. Score uses μ_S.",
            *_reason_notes(*sens.values()),
        ],
    )


_ACTION_LABELS = {"act_true": "act True", "act_false": "act False", "defer": "defer"}
_RULE_LABELS = {
    "raw": "raw Choice (Bayes)",
    "inverse": "inverse-calibrated Choice (Bayes)",
    "interval": "T/U/F interval (Γ-minimax)",
    "oracle": "oracle p*",
}


def decisions_as_table(result: ReportDocument) -> Table:
    dec = result["decisions"]
    rows = []
    for rule, label in _RULE_LABELS.items():
        stats = dec["rules"][rule]
        if stats is None:
            rows.append([label, "—", "—", "—", "—", "—"])
            continue
        share = stats["share"]
        rows.append(
            [
                label,
                fmt(share["act_true"]),
                fmt(share["act_false"]),
                fmt(share["defer"]),
                fmt(stats["mean_risk"], 2),
                fmt(stats["mean_regret"], 2),
            ]
        )
    agreement = ", ".join(f"{pair.replace('_vs_', ' vs ')} {fmt(v)}" for pair, v in dec["agreement"].items())
    notes = [
        f"A wrong action costs {dec['error_cost']:g}, deferring {dec['defer_cost']:g}; risk is the exact "
        "expected loss under p*, regret the excess over acting on p*.",
        f"Agreement between rules: {agreement}.",
    ]
    example = dec["worked_example"]
    if example and example.get("reason") is None and example["actions"] is not None:
        actions = {rule: _ACTION_LABELS[action] for rule, action in example["actions"].items()}
        notes.append(
            f"Worked example: μ_S = {example['mu_score']:.3f}, where the model predicts Choice "
            f"{example['choice']:.3f}. Raw Choice → {actions['raw']}; inverse-calibrated "
            f"{example['inverse']:.3f} → {actions['inverse']}; interval "
            f"{fmt_interval(example['interval'])} → {actions['interval']}."
        )
    return Table(
        title="Decisions (paper §5): act True / act False / defer from each reading of Choice",
        columns=["rule", "act True", "act False", "defer", "mean risk", "mean regret"],
        rows=rows,
        notes=notes + _reason_notes(dec, example),
    )


def option_swap_as_table(result: ReportDocument) -> Table:
    swap = result["option_swap"]
    title = "Option swap: Choice asked with options [False, True] and [True, False]"
    if swap is None:
        return Table(
            title=title,
            columns=["metric", "value"],
            rows=[["not measured", "no rendering carries a swapped Choice (e.g. reconstructed cassettes)"]],
        )
    collapsed = "—" if swap["collapsed"] is None else ("yes" if swap["collapsed"] else "no")
    rows = [
        ["mean shift P(True | True second) − P(True | True first)", fmt(swap["mean_shift"], 4)],
        [f"p ({swap['test']})", fmt_p(swap["p_value"], floored=True)],
        ["first-position rate (0.5 = no order bias)", fmt(swap["first_position_rate"])],
        ["swap consistency (same answer in both orders)", fmt(swap["swap_consistency"])],
        ["recall True, recall False", f"{fmt(swap['recall_true'])}, {fmt(swap['recall_false'])}"],
        ["balanced accuracy, ROC AUC", f"{fmt(swap['balanced_accuracy'])}, {fmt(swap['auc'])}"],
        ["logit offset, sep (nats)", f"{fmt(swap['offset'], 2)}, {fmt(swap['sep'], 2)}"],
        ["one class collapsed (|offset| > |sep|)", collapsed],
    ]
    return Table(
        title=title,
        columns=["metric", "value"],
        rows=rows,
        notes=[
            f"{swap['n']} renderings asked in both orders; recall, accuracy, AUC and margins use P(True) "
            "averaged over the two orders.",
            *_reason_notes(swap),
        ],
    )


# The order in which the summary prints the tables; each builder returns None when it has nothing to show.
TABLES: list[Callable[[ReportDocument], Table | None]] = [
    table1,
    per_call_table,
    by_family_table,
    by_representation_table,
    table2,
    table3,
    table6,
    decisions_as_table,
    option_swap_as_table,
    recalibration_table,
    decomposition_table,
]


def build_tables(result: ReportDocument) -> list[Table]:
    return [table for build in TABLES if (table := build(result)) is not None]
