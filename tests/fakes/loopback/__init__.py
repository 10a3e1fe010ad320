"""What the loopback fakes of the platforms share: the server base, their clock, rate
limiters on it, change notification and hang-ups."""
