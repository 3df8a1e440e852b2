"""Message metadata: what a write may store (`validation`), and how a read sees whatever is
stored (`stored`).

Metadata is JSON that clients send (the API, imports, the /v1 gateway) and that pages,
exports, the context sent to models and the compaction transcript all read. It is checked
once, on every write (`validation.metadata_validate`, called by `message_append` and
`messages_bulk_import`). Rows written before these checks (or by hand) may hold anything, so
readers go through `stored.stored_metadata`, `stored_tool_calls` and `metadata_display`, which
never raise; a copy of an older row (a branch) is made storable again by
`stored.metadata_repaired`.
"""
