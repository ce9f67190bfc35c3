"""What the bridge holds: one debugpy connection per paused worker (``holder``), the record
every interface shows of it (``records``, kept current by ``keeper``), the registry with its
change feed, the policy that detaches and expires held workers, and what a session or a group
command means by "these workers" (``filters``, ``follow``, ``group``)."""
