from django.apps import AppConfig


class DevtoolsConfig(AppConfig):
    """Development tools: benchmarks, the soak, the LoCoMo fidelity measure and
    the loopback OpenAI-compatible server. It owns their management commands
    (compaction_bench, compaction_soak, compaction_fidelity) and has no models;
    the product apps never import it."""

    name = "devtools"
    verbose_name = "Development tools"
