"""The attempt: the body of the automatic compaction task.

1. claim: a conditional UPDATE that succeeds only while the reservation
   made by the tick (or the event trigger) is the latest and unfinished, so
   a duplicate delivery by the broker, or a task that waited so long that its
   channel was reserved again, does nothing;
2. compact: `channel_compact(trigger="auto")`, which takes the lease itself;
3. finish: `last_finished_at`, `last_outcome`, `last_error`, failures.

An attempt reserved or claimed and unfinished holds one of the
`concurrency` slots until it finishes or its lease time passes; after that
it is abandoned (its worker died or was timed out) and the channel may be
tried again.
"""

import dataclasses
import datetime
import logging
import time

from django.db.models import F
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from chatcore.errors import Conflict, ModelCallFailed, Unprocessable
from chatcore.models import Channel
from compaction import conf
from compaction.models import CompactionLease
from compaction.observability.metrics import auto_labelled
from compaction.scanner import selectors
from compaction.scanner.decide import Action, channel_budget, channel_opted_out, channel_threshold
from compaction.scanner.selectors import COOLDOWN_OUTCOMES, NO_LOOP_OUTCOMES, Outcome, compaction_settings_get
from compaction.scanner.tick import auto_compaction_reserve, scan_run
from compaction.scanner.trigger import event_pending_clear
from compaction.services import channel_compact

logger = logging.getLogger("compaction.scanner")


@dataclasses.dataclass
class AutoOutcome:
    channel_id: int
    outcome: str
    detail: str = ""
    tokens_before: int = 0
    tokens_after: int = 0


def _claim(*, channel_id: int, ticket: datetime.datetime) -> bool:
    """The task takes its reservation; False for a stale or duplicate delivery."""
    return (
        CompactionLease.objects.filter(pk=channel_id, last_auto_at=ticket)
        .filter(selectors.unfinished_q())
        .update(last_auto_at=timezone.now())
        == 1
    )


def _finish(*, outcome: AutoOutcome) -> None:
    """Record how the attempt ended. The service leaves automatic attempts to us:
    a failure counts and keeps its error; a written summary clears both."""
    values = {
        "last_finished_at": timezone.now(),
        "last_outcome": outcome.outcome,
        "last_error": outcome.detail if outcome.outcome in NO_LOOP_OUTCOMES else "",
    }
    if outcome.outcome == Outcome.FAILED:
        values["failure_count"] = F("failure_count") + 1
    elif outcome.outcome in COOLDOWN_OUTCOMES:
        values["failure_count"] = 0
    CompactionLease.objects.filter(pk=outcome.channel_id).update(**values)


def _attempt(*, channel_id: int, ticket: str | None) -> AutoOutcome:
    """Claim, compact, record the outcome of one reserved (or event-triggered) channel."""
    event = ticket is None
    if ticket is None:
        event_pending_clear(channel_id=channel_id)
        decision = auto_compaction_reserve(channel_id=channel_id)
        if decision.action != Action.ENQUEUE:
            return AutoOutcome(channel_id, Outcome.SKIPPED, decision.detail)
        ticket = decision.ticket
    reserved = parse_datetime(ticket) if ticket else None
    if reserved is None or not _claim(channel_id=channel_id, ticket=reserved):
        logger.info(
            "auto: channel %s: reservation %s is stale or was already handled; nothing to do", channel_id, ticket
        )
        return AutoOutcome(channel_id, Outcome.STALE, "stale or duplicate delivery")
    # Counted as "event" when a reply's pressure asked for it (no ticket from a tick), "auto" when the scanner did.
    with auto_labelled("event" if event else "auto"):
        outcome = _compact(channel_id=channel_id)
    _finish(outcome=outcome)
    return outcome


def auto_compaction_drain(
    *, channel_id: int, ticket: str | None = None, seconds: float | None = None
) -> list[AutoOutcome]:
    """The body of the automatic compaction task: the reserved channel, then
    the next ones this worker reserves for itself while `seconds` last.

    Expected failures (lease held, nothing to compact, model failure) are
    outcomes, not exceptions, so the broker never retries them: the scanner
    decides when to try again (no-loop rule, cooldown).

    After each compaction the worker refills the slot it frees. Keeping the
    next reservation instead of enqueuing it saves a broker round trip per
    compaction, during which the slot would carry no model call. A reservation
    taken by a worker that then dies is like a lost task: unfinished past the
    lease time, it is abandoned and the scanner offers the channel again.
    """
    deadline = time.monotonic() + (conf.DRAIN_SECONDS if seconds is None else seconds)
    outcomes = [_attempt(channel_id=channel_id, ticket=ticket)]
    while conf.REFILL_ON_FINISH and outcomes[-1].outcome not in (Outcome.BUSY, Outcome.SKIPPED, Outcome.STALE):
        # What went wrong from here on is this worker's extra work: the compactions already
        # finished stand, the next scheduled tick refills the slot, and the broker must not
        # retry a task whose own channel is done.
        try:
            taken = scan_run(source="refill", take=1 if time.monotonic() < deadline else 0).taken
        except Exception:
            logger.exception(
                "refill: the tick after channel %s failed; the next tick refills the slot", outcomes[-1].channel_id
            )
            break
        if taken is None:
            break
        try:
            outcomes.append(_attempt(channel_id=taken.channel_id, ticket=taken.ticket))
        except Exception as error:
            logger.exception("auto: channel %s, taken by this worker, raised", taken.channel_id)
            outcome = AutoOutcome(taken.channel_id, Outcome.FAILED, f"{type(error).__name__}: {error}")
            outcomes.append(outcome)
            try:
                _finish(outcome=outcome)
            except Exception:  # left unfinished: abandoned after the lease time, like a lost task
                logger.exception("auto: channel %s: the failure could not be recorded", taken.channel_id)
            break
    return outcomes


def _compact(*, channel_id: int) -> AutoOutcome:
    settings = compaction_settings_get()
    channel = Channel.objects.select_related("owner", "model").filter(pk=channel_id).first()
    if not settings.enabled:
        return AutoOutcome(channel_id, Outcome.SKIPPED, "auto-compaction was turned off")
    if channel is None or not channel.is_pressure_watched:
        return AutoOutcome(channel_id, Outcome.SKIPPED, "the channel is gone, archived, ephemeral or not direct")
    if channel_opted_out(channel):
        return AutoOutcome(channel_id, Outcome.SKIPPED, "the channel opted out")
    budget = channel_budget(channel=channel, settings=settings, utility_window=selectors.utility_context_window())
    threshold = channel_threshold(channel=channel, settings=settings)
    logger.info(
        "auto: compacting channel %s for user %s (trigger=auto, %d tokens, %.0f%% of %d)",
        channel_id,
        channel.owner_id,
        channel.context_tokens,
        100 * channel.context_tokens / budget,
        budget,
    )
    try:
        result = channel_compact(channel=channel, actor=channel.owner, trigger="auto")
    except Conflict as error:
        outcome = AutoOutcome(
            channel_id, Outcome.BUSY if error.code == "in_progress" else Outcome.FAILED, error.message
        )
    except Unprocessable as error:
        outcome = AutoOutcome(channel_id, Outcome.NOTHING, error.message)
    except ModelCallFailed as error:
        outcome = AutoOutcome(channel_id, Outcome.FAILED, error.message)
    except Exception as error:  # recorded and logged; a broker retry would not help
        logger.exception("auto: channel %s: compaction raised", channel_id)
        outcome = AutoOutcome(channel_id, Outcome.FAILED, f"{type(error).__name__}: {error}")
    else:
        under = result.tokens_after / budget < threshold
        outcome = AutoOutcome(
            channel_id,
            Outcome.DONE if under else Outcome.INEFFECTIVE,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            detail=f"{result.summarized_count} messages summarized by {result.model}",
        )
        logger.info(
            "auto: channel %s done: %s tokens -> %s (%.0f%% -> %.0f%% of %d)%s; %s",
            channel_id,
            f"{result.tokens_before:,}",
            f"{result.tokens_after:,}",
            100 * result.tokens_before / budget,
            100 * result.tokens_after / budget,
            budget,
            "" if under else ", still over the threshold",
            outcome.detail,
        )
        return outcome
    logger.warning("auto: channel %s %s: %s", channel_id, outcome.outcome, outcome.detail)
    return outcome


def worker_warm() -> None:
    """Load the model client library, the tokenizer tables and the secret
    detectors once in the qcluster parent, before it forks its workers:
    otherwise every worker's first compaction spends seconds on them, inside
    its task timeout and while it holds a concurrency slot."""
    import openai  # noqa: F401

    from chatcore.tokens import count_tokens
    from compaction.redaction import redact

    count_tokens("warm")
    redact("warm up the detectors: SSN 000-00-0000")
