"""What an operator watches: the request context (its id, who and which channel) that follows a
request into its log lines, the tasks it enqueues and the model calls it makes (`context`,
`logs`, `middleware`, `tasks`), and the Prometheus metrics of the conversation substrate
(`metrics`). The endpoints that expose them live in compaction.observability, the site's
top app, which adds its own metrics and readiness checks."""
