"""How every renderer of a report (terminal, Markdown summary, HTML) says that the run behind it stopped before
it got through its selection (the report's ``interrupted`` block, docs/report.md), and counts the selection."""

from __future__ import annotations

from ..document import ReportDocument


def selected(result: ReportDocument) -> int:
    """The renderings the run's collection selected (after -k/-m): on an interrupted run more than ran."""
    interrupted = result.get("interrupted")
    return int(interrupted["selected"]) if interrupted else int(result["counts"]["renderings"])


def interrupted_line(result: ReportDocument) -> str | None:
    """One sentence for an interrupted run's report (None for a run that went through its selection): why it
    stopped, how many of the selected renderings ran and were measured, and what that means for the gates."""
    interrupted = result.get("interrupted")
    if not interrupted:
        return None
    counts, total = result["counts"], int(interrupted["selected"])
    ran = int(counts["renderings"])
    failed = f", {counts['failed']} failed" if counts.get("failed") else ""
    return (
        f"interrupted ({interrupted['reason']}): {interrupted['measured']} of {total} selected renderings measured "
        f"({ran} ran{failed}, {total - ran} not run); this report describes only those measured, and the threshold "
        "gates are not applied"
    )
