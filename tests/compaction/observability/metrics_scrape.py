"""Reading /metrics as Prometheus does: the text exposition parsed into {(name, labels): value}."""

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples_parse(text: str) -> tuple[set[str], Samples]:
    """(the metric families named, every sample's value by name and sorted labels)."""
    families, samples = set(), {}
    for family in text_string_to_metric_families(text):
        families.add(family.name)
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return families, samples


def scrape(client, **headers) -> tuple[set[str], Samples]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/plain")
    return samples_parse(response.content.decode())


def changes(before: Samples, after: Samples) -> Samples:
    """What moved between two scrapes (new samples count from zero)."""
    return {key: value - before.get(key, 0.0) for key, value in after.items() if value != before.get(key, 0.0)}
