"""What a recording will send and what it costs: the requests each rendering still needs in this record
mode, the plan printed before anything is sent (refused over --sys1cal-max-cost), and the meter that
keeps the spend under the cap while recording (the server's reported usage replacing the estimate)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..dataset import Rendering
from ..measure import Measurer
from ..models.base import WireRequest, WireResponse
from .policy import PRICE_PER_MILLION_INPUT_TOKENS, Limits
from .proxies import Route, route_for

CHARS_PER_TOKEN = 4
ESTIMATE_NOTE = "estimate: characters of each JSON request body ÷ 4"


def estimate_tokens(request: WireRequest) -> int:
    return math.ceil(len(request.content().decode("utf-8")) / CHARS_PER_TOKEN)


def dollars(tokens: float, price: float = PRICE_PER_MILLION_INPUT_TOKENS) -> float:
    return tokens * price / 1e6


@dataclass
class Plan:
    """What this run will send: the renderings that need the network (in item order), and its price."""

    mode: str
    selected: int
    renderings: list[Rendering]
    requests: int
    tokens: int
    repeats: int
    route: Route = field(default_factory=Route)  # through which proxy, if the environment names one

    def lines(self, limits: Limits, workers: int = 1) -> list[str]:
        if not self.renderings:
            have = "already have cassettes" if self.mode != "new_episodes" else "replay in full from their cassettes"
            return [f"sys1cal: nothing to record: all {self.selected} selected renderings {have}"]
        count = f"{len(self.renderings)} of {self.selected} renderings"
        skipped = self.selected - len(self.renderings)
        if self.mode == "all":
            first = f"sys1cal: re-recording {count} (record mode all)"
        elif self.mode == "new_episodes":
            first = f"sys1cal: recording missing requests of {count} ({skipped} replay in full from their cassettes)"
        else:
            first = f"sys1cal: recording {count} ({skipped} already have cassettes)"
        cost = dollars(self.tokens, limits.price)
        price = (
            f"sys1cal: {self.requests:,} requests ({self.repeats} repeat{'s' if self.repeats != 1 else ''}); "
            f"about {self.tokens:,} input tokens ≈ ${cost:.4f} at ${limits.price:g} per million input tokens "
            f"({limits.price_source}; {ESTIMATE_NOTE})"
        )
        if limits.max_cost is not None:
            price += f"; cap --sys1cal-max-cost ${limits.max_cost * workers:g}"
        pace = f"sys1cal: concurrency {limits.concurrency * workers}"
        if limits.rate:
            rate = limits.rate * workers
            pace += f", at most {rate:,.0f} requests/min: at least {duration(self.requests * 60 / rate)}"
        else:
            pace += ", no rate limit"
        if workers > 1:
            pace += f" (shared by {workers} xdist workers, each recording the items it is given)"
        route = self.route.line()
        return [first, price, pace, f"sys1cal: rate: {limits.rate_source}", *([route] if route else [])]

    def refusal(self, limits: Limits) -> str | None:
        if self.renderings and self.route.problem:
            return f"sys1cal: cannot record through the proxy: {self.route.problem}. Nothing was sent."
        if limits.max_cost is None or not self.renderings:
            return None
        cost = dollars(self.tokens, limits.price)
        if cost <= limits.max_cost:
            return None
        return (
            f"sys1cal: recording {self.requests:,} requests would cost about ${cost:.4f} "
            f"({self.tokens:,} input tokens at ${limits.price:g} per million, {limits.price_source}; {ESTIMATE_NOTE}), "
            "more than "
            f"--sys1cal-max-cost ${limits.max_cost:g}. Nothing was sent. Select fewer renderings (-k), lower "
            f"--sys1cal-repeats, or raise --sys1cal-max-cost."
        )


def make_plan(measurer: Measurer, renderings: Iterable[Rendering]) -> Plan:
    selected, to_record, requests, tokens = 0, [], 0, 0
    for rendering in renderings:
        selected += 1
        missing = measurer.unanswered(rendering)
        if missing:
            to_record.append(rendering)
            requests += len(missing)
            distinct = {id(request): request for request in missing}  # repeats share their request objects
            estimates = {key: estimate_tokens(request) for key, request in distinct.items()}
            tokens += sum(estimates[id(request)] for request in missing)
    route = route_for(measurer.codec.adapter.base_url, os.environ)
    return Plan(measurer.folder.record_mode, selected, to_record, requests, tokens, measurer.codec.repeats, route)


class CostMeter:
    """Input tokens spent (server-reported where the server says, estimated where it does not), and
    projected for requests in flight and the next one."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.spent = 0.0  # tokens of answered requests
        self.reported = 0  # of which the server reported
        self.reported_estimate = 0  # our estimate for the requests the server reported on
        self.in_flight = 0.0

    @property
    def ratio(self) -> float:
        return self.reported / self.reported_estimate if self.reported and self.reported_estimate else 1.0

    def projected(self, estimate: int) -> float:
        return estimate * self.ratio

    def allows(self, estimate: int) -> bool:
        cap = self.limits.max_cost
        return cap is None or dollars(self.spent + self.in_flight + self.projected(estimate), self.limits.price) <= cap

    def answered(self, estimate: int, projected: float, usage: int | None) -> None:
        self.in_flight -= projected
        if usage is None:
            self.spent += estimate
        else:
            self.spent += usage
            self.reported += usage
            self.reported_estimate += estimate

    def dollars(self) -> float:
        return dollars(self.spent, self.limits.price)


def reported_input_tokens(response: WireResponse) -> int | None:
    try:
        tokens = json.loads(response.content)["usage"]["input_tokens"]
    except (ValueError, KeyError, TypeError):
        return None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else None


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    return f"{minutes:.0f} min" if minutes < 90 else f"{minutes / 60:.1f} h"
