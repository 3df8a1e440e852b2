"""System checks of the compaction app's deployment settings."""

from django.core.checks import Warning, register

from compaction import conf


@register()
def timeouts_nest(app_configs, **kwargs):
    return [
        Warning(
            f"Compaction timeouts: {problem}.",
            hint="Adjust CHATCORE_LLM_TIMEOUT_SECONDS, CHATCORE_LLM_MAX_RETRIES, the cluster's timeout and "
            "retry (Q_CLUSTER, or COMPACTION_TASK_TIMEOUT_SECONDS and COMPACTION_RETRY_SECONDS), "
            "COMPACTION_LEASE_SECONDS and COMPACTION_DRAIN_SECONDS.",
            id="compaction.W001",
        )
        for problem in conf.timeouts_problems()
    ]
