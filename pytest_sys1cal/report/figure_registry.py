"""The HTML report's figure registry: every figure in page order, with its title and caption, and drawing
the ones that have something to show. Imported only for ``--sys1cal-html`` (and scripts/readme_figures.py)."""

from __future__ import annotations

from ..document import ReportDocument
from ..gates.rows import GateSummary
from .figures import (
    Inputs,
    Rendered,
    Spec,
    draw_all,
    reliability_diagram,
    score_against,
    score_to_choice,
    sensitivity,
    transfer,
)
from .figures_groups import family_delta, option_swap, ovl_by_group, readout_margins
from .figures_upgrade import paired_differences
from .figures_why import why_triptych

# Drawn in the page's upgrade section, under the verdict, when the report has a comparison block.
UPGRADE_FIGURES = ("why", "paired-d", "family-delta")

SPECS = [
    Spec(
        "transfer",
        "Probability transfer",
        "Each dot is one rendering: its exact p* across, the primitive's answer up (mean over repeats). A calibrated "
        "model sits on the dashed diagonal; mean TV is the average vertical distance to it.",
        transfer,
    ),
    Spec(
        "reliability",
        "Reliability diagrams",
        "Answers in 15 equal-width bins (those of the ECE): each point is a bin's mean answer across and its mean "
        "exact p* up, the bars count its renderings. Above the diagonal the model says less than p*, below more.",
        reliability_diagram,
    ),
    Spec(
        "score",
        "The Score expectation against p*, Noul and Choice",
        "μ_S = Σ q_j·j/9 up, one dot per rendering, against the exact p*, the Noul answer and the Choice answer "
        "across: on the diagonal the two agree; in the Choice panel, dots below it are Choice above μ_S.",
        score_against,
    ),
    Spec(
        "score-choice",
        "The Score → Choice map",
        "Choice up against its Score expectation μ_S across, one dot per rendering, with the fitted latent curve and "
        "the T/U/F band [μ_S, μ_S + U], both drawn only when the valid test rejects λ = 0 at the λ gate's α: dots "
        "above the dashed diagonal are Choice claiming more than μ_S.",
        score_to_choice,
    ),
    Spec(
        "sensitivity",
        "Representation sensitivity",
        "Each vertical line is one latent problem at its exact p*, spanning the answers of its renderings (dots): "
        "a long line is an answer that changes with the wording. The numbers are Table 6's.",
        sensitivity,
    ),
    Spec(
        "groups",
        "Mean OVL by family and by representation",
        "Each marker is one primitive's mean OVL on a family's or representation's renderings (n renderings in "
        "brackets); dotted lines mark the whole dataset, so a group far left of its line is where the model breaks.",
        ovl_by_group,
    ),
    Spec(
        "option-swap",
        "Option swap",
        "Choice's P(True) with True listed first (across) and second (up), and the shift per rendering: an "
        "order-blind model sits on the diagonal with every shift at 0.",
        option_swap,
    ),
    Spec(
        "readout",
        "Readout margins",
        "logit P(True) of gold-True and gold-False renderings (clipped at ±8); solid lines mark their means m₊ and m₋, "
        "the dotted line offset = (m₊ + m₋)/2: both means on one side of 0 (|offset| > sep) collapse the argmax.",
        readout_margins,
    ),
    Spec(
        "why",
        "Why it reads so: reliability, ranking, and miscalibration against discrimination",
        "Per primitive, left: the isotonic reliability curve (p* fitted on the answers, ties pooled; ticks below mark "
        "the answers) in the grey consistency band where a calibrated model's curve would fall; middle: the ROC "
        "curve, the ranking alone, which no monotone recalibration can change; right: miscalibration MCB against "
        "discrimination DSC with 95% intervals (with a baseline, an arrow from it to this run): up is worse "
        "calibration, a recalibration can take it back; left is lost ranking, it cannot.",
        why_triptych,
    ),
    Spec(
        "paired-d",
        "Paired differences per rendering",
        "Per compared primitive, the histogram of D = OVL new − OVL baseline over the paired renderings (the middle "
        "bin is centred on 0), with Δ̂ (their mean, which the gate tests) and the margins −δ and −δ₀: a broad shift "
        "moves the whole histogram, a few bad items leave the bulk at 0 and a tail to the left.",
        paired_differences,
    ),
    Spec(
        "family-delta",
        "Upgrade comparison by family",
        "Δ mean OVL (new − baseline) on each family's paired renderings with its 95% interval from the upgrade gate's "
        "bootstrap, and on top the whole dataset's Δ between the gate's one-sided bounds, the row the verdicts read; "
        "left of 0 is worse, the dashed red line is the gate's margin −δ. Descriptive per family: the gate decides.",
        family_delta,
    ),
]


def render_figures(
    report: ReportDocument, gates: GateSummary, baseline: ReportDocument | None = None
) -> list[Rendered]:
    """Every figure that has something to show for this report (its gates, a baseline), as standalone SVG."""
    return draw_all(SPECS, Inputs.of(report, gates, baseline))
