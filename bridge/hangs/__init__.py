"""Diagnosing a hung job: every rank's stack merged (``stacks``, ``stack_tree``), the verdict
a watch keeps while stacks stand still (``verdicts``, ``watch``), the collective sequence read
from torch's Flight Recorders (``recorders``, ``desync``, ``collective_reader``,
``async_waits``), the reports torch's analyzer reads (``reports``), and pausing a rank that
waits in native code (``outside_pause``). Given the workers the bridge holds; it never
changes what they are."""
