"""Discord for tallybot: ``/count`` slash commands, embeds, live scoreboards (discord.py).

The plug-in (``adapters.discord.plugin``) is what the core loads; the modules:

========== ===============================================================================
plugin     the ``tallybot.adapters`` entry point: settings, secrets, policy, build, ``invite``
settings   the ``[discord]`` table, its admin keys included
admins     who is an admin: configured user ids everywhere; Manage Server, Administrator and
           the configured roles only in the listed servers
adapter    the lifecycle (log in, gateway, command sync) and ``health()``
commands   the ``/count`` command tree, translated to the core's text grammar
delivery   posts, edits, finding earlier posts, error translation, ``DISCORD_LIMITS``
embeds     rendering messages as embeds; text: escaping of Discord markdown
invite     the install URL (``tallybot invite``)
========== ===============================================================================
"""
