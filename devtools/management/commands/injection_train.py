"""python manage.py injection_train [--output PATH] [--no-probes] [--no-phrasebook]

Trains the injection model (compaction.safety.model) on the development part of the injection corpus, with the
project's own red-team probes and the phrasebook's texts in every language (devtools.injection_phrasebook) as
further cases, and writes its weights (by default to the file the package
ships, compaction/safety/injection_model.npz). Never reads the test part. Prints the cross-validated figures it
chose the thresholds by (devtools.injection_train says how).
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from compaction.safety import model as injection_model
from devtools import injection_data, injection_phrasebook, injection_train


class Command(BaseCommand):
    help = "Train the injection model on the development part of the corpus and write its weights."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--output", type=Path, default=None, help="where to write the weights")
        parser.add_argument("--no-probes", action="store_true", help="leave the project's own probes out")
        parser.add_argument("--no-phrasebook", action="store_true", help="leave the phrasebook's texts out")

    def handle(self, *args, **options) -> None:
        cases, source = injection_data.cases("dev")
        extra = []
        if not options["no_probes"]:
            extra.append("the probes")
            cases += injection_data.probe_cases()
        if not options["no_phrasebook"]:
            extra.append("the phrasebook")
            cases += injection_phrasebook.cases()
        self.stdout.write(f"training on {len(cases)} cases from {' and '.join([source, *extra])}")
        trained = injection_train.train(cases, injection_train.ordinary_texts(), log=self.stdout.write)
        output = options["output"] or injection_model.weights_path()
        injection_model.save(trained.model, output)
        figures = ", ".join(f"{key} {value:.4f}" for key, value in trained.out_of_fold.items())
        self.stdout.write(f"wrote {output} ({Path(output).stat().st_size / 1024:.0f} KiB); out of fold: {figures}")
