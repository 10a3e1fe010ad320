"""Commands, carried out the same way on every platform.

An adapter turns a slash command or a typed line into a :class:`~bot.commands.request.Request`
and shows the :class:`~bot.commands.request.Reply` that
:meth:`~bot.commands.handler.Commands.handle` answers. One table of verbs
(:mod:`~bot.commands.verbs`; their arguments in :mod:`~bot.commands.args`, the built-in verbs and
their handlers in :mod:`~bot.commands.builtin`) drives the grammar, usage and help, who may run
each verb, which answers may be public, and every platform's commands. A command goes through
the middleware chain of :mod:`~bot.commands.chain` (errors, throttle, audit, authorise, reply)
to its verb's handler. Who is an admin is each platform's admin policy (:mod:`bot.platform`); the
limits per person and channel are :mod:`~bot.commands.throttle`; adapters answer every command
whatever goes wrong, and wait for those in flight when leaving, with
:mod:`~bot.commands.inflight`. The read-only answers (list, status, history, chart, deliveries)
are :mod:`~bot.commands.reports`; manual figures are :mod:`~bot.commands.manual` (hints after a
rejection in :mod:`~bot.commands.manual`).
"""
