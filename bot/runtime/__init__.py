"""The runtime room: building the app and starting it (``app``, ``run``, ``cli``), the
platforms a configuration turns on (``plugins``), the checks before a start
(``preflight``) and the logs."""
