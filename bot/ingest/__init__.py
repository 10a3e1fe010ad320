"""Every way a tally arrives: sources polled on a schedule (``poller``, ``scheduler``, ``sources``),
signed pushes (``push_body``), recordings (``recording``), and the ``pipeline`` that checks each
one, stores it and queues its messages in the outbox.
"""
