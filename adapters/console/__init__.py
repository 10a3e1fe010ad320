"""The console: a terminal is one channel; messages are printed, commands typed.

``plugin``: the ``tallybot.adapters`` entry point (the ``[console]`` table, its ``admin``
switch); ``adapter``: printing and the prompt's commands; ``prompt``: the prompt itself.
"""
