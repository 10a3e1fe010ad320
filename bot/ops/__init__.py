"""Operations: the ops server (health, readiness, metrics, push ingest), its signing scheme, the
push client and the Discord invite URL.

    hooks.py      the no-op metrics hooks the core calls (``Hooks``); ``Metrics`` overrides them
    metrics.py    Prometheus metrics on a per-App registry
    readiness.py  what /readyz checks
    signing.py    the push signature: HMAC-SHA256 over "v1:" + timestamp, method, path and body
    push_body.py  a pushed JSON tally read into a ``Tally``
    server.py     the aiohttp server and its routes
    push_client.py  what ``tallybot push`` sends
    invite.py     the Discord install URL and the permissions the bot needs

Nothing is imported here, so the core can import ``bot.ops.hooks`` without aiohttp or
prometheus-client.
"""
