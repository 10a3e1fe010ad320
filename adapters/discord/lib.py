"""discord.py, imported once for the package, quietly.

``discord.player`` imports ``audioop``, deprecated since Python 3.11; and the bot never joins
a voice channel, so discord.py's warnings that voice support is missing ("PyNaCl is not
installed", "davey is not installed") on every start are noise: these are the switches
discord.py itself turns off after warning once.
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord
    import discord.gateway
    import discord.http
    from discord import app_commands

discord.VoiceClient.warn_nacl = False
discord.VoiceClient.warn_dave = False

__all__ = ["app_commands", "discord"]
