"""What an operator asks of a running site: `/healthz` (alive), `/readyz` (ready for traffic),
`/metrics` (Prometheus), the compaction metrics, and the request id carried into tasks.

The substrate's own metrics and the request context are chatcore.observability's; this app adds
what only it knows (compaction runs, the scanner, leases, the budget, redaction and injection
counts, the gateway) and owns the endpoints, since readiness depends on its task cluster.
"""
