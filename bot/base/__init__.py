"""What every room stands on: the clock (and ``Sleep``), the ``async with`` base
(``lifecycle``), backoff and retries, memory given back, the egress guard and capped
HTTP bodies."""
