"""Paper Table 3: Choice read raw, inverse-calibrated through the latent model, and as a T/U/F interval."""

from __future__ import annotations

import numpy as np

from ..document import ChoiceCalibration
from .latent import LatentData
from .primitives import ovl_summary
from .stats import with_reasons


def choice_calibration_table(data: LatentData) -> ChoiceCalibration:
    """OVL with p* on the renderings that have both Choice and Score, so the three readings compare."""
    out: ChoiceCalibration = {
        "n": data.n,
        "raw": {**ovl_summary(np.abs(data.choice - data.p_star))},
        "inverse": {**ovl_summary(np.empty(0))},
        "tuf": {**ovl_summary(np.empty(0)), "mean_width": None, "coverage": None},
    }
    fit = data.fit
    if fit is None:
        return with_reasons(out, [data.reason or "no fit"])
    out["inverse"] = {**ovl_summary(np.abs(fit.inverse(data.choice) - data.p_star))}
    if fit.inverse_ill_conditioned:
        out["inverse"]["note"] = "f is nearly flat somewhere, so f⁻¹ amplifies Choice noise there"
    low, high = data.mu, data.mu + fit.mass(data.mu)
    # Distance from p* to the interval [T, T+U]; 0 inside. Read it with the width: [0, 1] would score 1.
    distance = np.maximum(np.maximum(low - data.p_star, data.p_star - high), 0.0)
    out["tuf"] = {
        **ovl_summary(distance),
        "mean_width": float(np.mean(high - low)),
        "coverage": float(np.mean((low <= data.p_star) & (data.p_star <= high))),
    }
    return out
