"""A team's monthly budgets: tokens and cost, counted from its usage rows, reset on the first of each month.

Every service that starts a model call for a person (a reply, a manual compaction or its preview, a
branch, a /v1 turn) asks `team_budget_check` first, before it writes anything, and a spent budget
refuses the call (BudgetExhausted, a 429 whose Retry-After is the time left until the reset).
Automatic compaction is nobody's request: the scanner's hourly budgets govern it (the site's and the
team's own), so a spent monthly budget does not stop the summaries that keep its channels usable.

The month is the calendar month in UTC, so every process and machine agrees when it starts.
"""

import dataclasses
import datetime as dt
import math
from decimal import Decimal

from django.db.models import Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from chatcore.errors import BudgetExhausted
from chatcore.models import Team, UsageEntry


def month_start(now: dt.datetime) -> dt.datetime:
    now = now.astimezone(dt.UTC)
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_reset(now: dt.datetime) -> dt.datetime:
    start = month_start(now)
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)


@dataclasses.dataclass(frozen=True)
class Spend:
    """What a team's channels used this month, against its budgets (None: no limit)."""

    tokens: int
    cost: Decimal
    token_budget: int | None
    cost_budget: Decimal | None

    @property
    def tokens_spent(self) -> bool:
        return self.token_budget is not None and self.tokens >= self.token_budget

    @property
    def cost_spent(self) -> bool:
        return self.cost_budget is not None and self.cost >= self.cost_budget


def team_spend(*, team: Team, now: dt.datetime | None = None) -> Spend:
    """One aggregate over the team's usage rows since the month began (the (team, created_at) index)."""
    since = month_start(now or timezone.now())
    totals = UsageEntry.objects.filter(team=team, created_at__gte=since).aggregate(
        tokens_in=Coalesce(Sum("input_tokens"), 0),
        tokens_out=Coalesce(Sum("output_tokens"), 0),
        cost=Coalesce(Sum("cost"), Decimal(0)),
    )
    return Spend(
        tokens=totals["tokens_in"] + totals["tokens_out"],
        cost=Decimal(totals["cost"]),
        token_budget=team.monthly_token_budget,
        cost_budget=team.monthly_cost_budget,
    )


def team_budget_check(*, team_id: int | None, now: dt.datetime | None = None) -> None:
    """BudgetExhausted when the team has a monthly budget and has spent it; nothing for a channel outside a team
    or a team without budgets (no query beyond the team's row then)."""
    if team_id is None:
        return
    team = Team.objects.filter(pk=team_id).first()
    if team is None or (team.monthly_token_budget is None and team.monthly_cost_budget is None):
        return
    now = now or timezone.now()
    spend = team_spend(team=team, now=now)
    if not (spend.tokens_spent or spend.cost_spent):
        return
    reset = next_reset(now)
    wait = max(1, math.ceil((reset - now).total_seconds()))
    what = (
        f"{spend.tokens:,} of its {spend.token_budget:,} tokens"
        if spend.tokens_spent
        else f"{spend.cost:.2f} of its {spend.cost_budget:.2f} cost budget"
    )
    raise BudgetExhausted(
        f"The team {team} has used its monthly budget ({what}); no model is called for its channels until "
        f"the budget resets on {reset:%Y-%m-%d} (UTC). Nothing was done.",
        retry_after=wait,
    )
