"""The charts room: a count's history as a picture (``chart``), drawn in child processes
(``process``) running ``python -m bot.charts.child``."""
