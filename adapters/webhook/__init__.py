"""Webhooks as a tallybot platform: each selected update POSTed to URLs (``adapters.webhook``).

A target is a channel of the platform ``webhook``: ``webhook:operator/NAME`` for one the
operator configures in ``[[webhook.targets]]``. Subscriptions reach it as they reach any
channel; the plug-in subscribes a target to the counts its table lists when it starts.

* :mod:`.settings`: the ``[webhook]`` table, its targets and the secrets they read;
* :mod:`.text`: text in the Slack-compatible and Teams formats, shown as typed, pinging no one;
* :mod:`.formats`: the three bodies (tallybot's JSON, Slack/Mattermost, a Teams Adaptive Card);
* :mod:`.adapter`: the requests: signed, with an idempotency key, paced, failures translated;
* :mod:`.plugin`: the plug-in the ``tallybot.adapters`` entry point ``webhook`` names.

The receiver's duties (verify the signature, deduplicate by ``Idempotency-Key``) are in
``docs/how-to/webhooks.md``.
"""
