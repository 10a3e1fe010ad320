"""Commands, carried out the same way on every platform.

An adapter turns a slash command or a typed line into a :class:`~bot.commands.request.Request`
and shows the :class:`~bot.commands.request.Reply` that
:meth:`~bot.commands.handler.Commands.handle` answers. The grammar and usage are
:mod:`~bot.commands.parse` (with hints after a rejection in :mod:`~bot.commands.hints`); who may
run admin commands is each platform's admin policy (:mod:`bot.platform`); the limits per person and
channel are
:mod:`~bot.commands.throttle`. The read-only answers (list, status, history, chart, deliveries)
are :mod:`~bot.commands.reports`; manual figures are :mod:`~bot.commands.manual`.
"""
