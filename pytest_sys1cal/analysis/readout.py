"""Reading P(True) out as a binary answer: recall per class, balanced accuracy, ROC AUC, logit margins.

Gold class: True when p* ≥ 0.5 (the dataset's gold_argmax sends ties to the lexicographically larger label,
"True"); the predicted class uses the same rule on P(True).
"""

from __future__ import annotations

import numpy as np

from ..document_decisions import Readout
from .stats import with_reasons

# Margins are logits of P(True), clipped so that answers of exactly 0 or 1 stay finite.
CLIP = 1e-12


def readout(p: np.ndarray, p_star: np.ndarray) -> Readout:
    """offset = (m₊ + m₋)/2 and sep = (m₊ − m₋)/2 of the mean logit margins m± on gold-True/-False items.
    |offset| > |sep| puts both class means on one side of 0, so argmax collapses one class's recall."""
    positive = p_star >= 0.5
    predicted = p >= 0.5
    n_true, n_false = int(positive.sum()), int((~positive).sum())
    recall_true = float(predicted[positive].mean()) if n_true else None
    recall_false = float((~predicted[~positive]).mean()) if n_false else None
    out: Readout = {
        "n_true": n_true,
        "n_false": n_false,
        "recall_true": recall_true,
        "recall_false": recall_false,
        "balanced_accuracy": None,
        "auc": None,
        "offset": None,
        "sep": None,
        "collapsed": None,
    }
    if recall_true is None or recall_false is None:
        missing = "True" if not n_true else "False"
        return with_reasons(out, [f"not enough data: no item whose gold answer is {missing}"])
    margin = logit(p)
    m_pos, m_neg = float(margin[positive].mean()), float(margin[~positive].mean())
    offset, sep = (m_pos + m_neg) / 2, (m_pos - m_neg) / 2
    out.update(
        {
            "balanced_accuracy": (recall_true + recall_false) / 2,
            "auc": roc_auc(p, positive),
            "offset": offset,
            "sep": sep,
            "collapsed": bool(abs(offset) > abs(sep)),  # m₊·m₋ > 0: both class means on one side of 0
        }
    )
    return out


def logit(p: np.ndarray) -> np.ndarray:
    """The logit margin log(p/(1−p)) of P(True), clipped at CLIP: the one definition, used by the readout,
    its held-out recalibration and the HTML report's margin figure."""
    clipped = np.clip(p, CLIP, 1 - CLIP)
    return np.log(clipped) - np.log1p(-clipped)


def roc_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """P(score of a random positive > score of a random negative), ties ½, by the rank-sum formula."""
    n_pos = int(positive.sum())
    n_neg = scores.size - n_pos
    return float((average_ranks(scores)[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values sharing their average rank (scipy.stats.rankdata's default)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)
    return (last - (counts - 1) / 2)[inverse.reshape(-1)]
