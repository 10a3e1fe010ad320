"""The pure domain core: counts, tallies, their arithmetic, what changed, and the words and figure
that say it. Nothing here does I/O or imports from outside ``bot.domain`` (but the standard
library, matplotlib for the chart figure, and the exception root ``bot.errors``).
"""
