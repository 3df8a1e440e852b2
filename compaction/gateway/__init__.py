"""The OpenAI-compatible gateway: `POST /v1/chat/completions` and `GET /v1/models`.

Any OpenAI client (the `openai` SDKs, LangChain's ChatOpenAI, Open WebUI's
"custom endpoint", scripts) gets compaction without changing how it works:
it resends the whole history each call, and the server

1. hashes the incoming messages into content chain hashes
   (`chatcore.chain`) and finds the caller's deepest stored message on that
   chain (one indexed lookup in the usual case; `lookup.py`);
2. appends only what is new under it (an edited or dropped turn becomes a
   sibling branch; no match starts a channel; `X-Channel-Id` or
   `metadata.channel_id` pins one);
3. assembles *our* context for that leaf (system prompt, the summary in
   force as reference-only background, the messages after it) and, when it
   would not fit the model's window, compacts first, inline, through
   `channel_compact` with its lease (`services.py`);
4. sends that upstream through the chat gateway (`chatcore.llm`: fallback,
   usage rows, cost), streamed through when asked, stores the reply and
   announces it like any reply, so the usual trigger compacts in the
   background above the threshold.

Why it lives in the compaction app: step 3 needs `channel_compact`, and
chatcore never imports compaction (it only announces with signals). The
protocol (parsing, error objects, SSE) is kept apart from the use cases
(`protocol.py` vs `services.py`); the views are thin.
"""
