"""A local server recorded at its own speed (issue 37): a systemone or semif server on this machine or a private
network gets no rate limit by default (the circuit breaker, back-off and Retry-After still hold), Jev's public
origin keeps 1,000/min, a rate given is used as given, and the plan says which is in force and the flag that
changes it. Real recordings (pytester) against a loopback server."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_sys1cal.models.systemone import JevAdapter
from pytest_sys1cal.recording.policy import local_origin
from pytest_sys1cal.session.recording_hooks import rate_in_force
from tests.recording.test_recording import FaultServer, record, subset


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1"),
        ("http://localhost:11434/v1", "localhost"),
        ("http://[::1]:8080", "::1"),
        ("http://10.0.0.5", "10.0.0.5"),
        ("https://192.168.1.20:8443", "192.168.1.20"),
        ("http://172.16.3.4", "172.16.3.4"),
        ("https://api.typesafe.ai", None),
        ("https://8.8.8.8", None),
        ("http://my-server.internal", None),  # names are not resolved
    ],
)
def test_what_counts_as_a_local_origin(url: str, local: str | None) -> None:
    assert local_origin(url) == local


def settings(rate: int | None) -> SimpleNamespace:
    return SimpleNamespace(rate=rate)


def test_jevs_public_origin_keeps_its_default_and_a_given_rate_is_used_as_given() -> None:
    jev = JevAdapter(None, None, {})
    assert jev.base_url.startswith("https://")
    rate, why = rate_in_force(settings(None), jev)  # type: ignore[arg-type]
    assert rate == 1000 and "--sys1cal-rate=0 lifts it" in why
    local_jev = SimpleNamespace(name="jev", base_url="http://127.0.0.1:9")  # a Jev mock: still Jev's pacing
    assert rate_in_force(settings(None), local_jev)[0] == 1000  # type: ignore[arg-type]
    semif = SimpleNamespace(name="semif", base_url="http://127.0.0.1:8080/v1")
    assert rate_in_force(settings(None), semif)[0] == 0  # type: ignore[arg-type]
    assert rate_in_force(settings(600), semif) == (600, "--sys1cal-rate=600")  # type: ignore[arg-type]


def test_a_local_systemone_server_is_recorded_at_its_own_pace(pytester: pytest.Pytester, tmp_path: Path) -> None:
    dataset, renderings = subset(tmp_path / "six.jsonl", 6)
    with FaultServer(renderings) as server:
        result = record(pytester, server.url, dataset, tmp_path / "cassettes")
        result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        [
            "sys1cal: concurrency 8, no rate limit",
            "sys1cal: rate: a systemone server on 127.0.0.1 is recorded at its own pace (Jev's default of 1,000/min "
            "is not applied; --sys1cal-rate=N caps it); the circuit breaker and back-off still apply",
        ]
    )
    with FaultServer(renderings) as server:
        # One repeat: the plan is what is checked here (the spacing itself: test_rate_limit_spaces_requests_evenly),
        # and 60 requests at 10 a second were 6 s of waiting.
        capped = record(pytester, server.url, dataset, tmp_path / "again", "--sys1cal-rate=600", "--sys1cal-repeats=1")
        capped.assert_outcomes(passed=6)
    capped.stdout.fnmatch_lines(
        ["sys1cal: concurrency 8, at most 600 requests/min: at least *", "sys1cal: rate: --sys1cal-rate=600"]
    )
