"""The public scoreboard: a page for every public count, updated live as tallies are accepted.

* :mod:`bot.web.public`: which counts are public (a lookup the web layer is given);
* :mod:`bot.web.view`: what a page shows, worded by the chat messages' own formatter;
* :mod:`bot.web.events`: the page and its live events, read from the store;
* :mod:`bot.web.broadcast`: accepted tallies to every open stream, slow viewers dropped;
* :mod:`bot.web.stream`: one viewer's Server-Sent Events stream, with catch-up, then handed
  over to the broadcaster (the connection's protocol is the viewer);
* :mod:`bot.web.feed`: on PostgreSQL, every instance's tallies (``LISTEN``/``NOTIFY``);
* :mod:`bot.web.pages`: templates (Jinja2, autoescaped), static files, security headers;
* :mod:`bot.web.server`: the listener (``[web]``) and its routes.
"""
