"""raydap's own Debug Adapter Protocol messages, named once: what the bridge, the adapter and
the code inside Ray workers say to each other beside DAP's own requests and events.

Only names live here, and nothing is imported: ``raydap.live`` (inside every Ray worker) reads
this module, and must not pull in pydantic with it (``raydap.protocol`` imports its parts only
when asked). The VS Code extension keeps a copy of :data:`REPLACED` (its test checks it).
"""

from __future__ import annotations

# -- requests ---------------------------------------------------------------------------------

#: A client asks its session to continue every worker it shows, at once.
CONTINUE_ALL = "raydapContinueAll"
#: The bridge asks a worker for its process groups and the tail of its collective recorder
#: (answered by :func:`raydap.live.collectives.answer`).
COLLECTIVES = "raydapCollectives"
#: The bridge asks a running live worker for every thread's stack, without pausing it
#: (answered by :func:`raydap.live.stacks.answer`).
STACKS = "raydapStacks"

# -- events -----------------------------------------------------------------------------------

#: To a client, from a bridge being replaced: what its session needs to go on with the new one.
REPLACED = "raydapReplaced"
#: From a worker: its process groups' identity, as soon as it has one.
PROCESS_GROUPS = "raydapProcessGroups"
#: From a worker: a capture point's capture, or its turning itself off.
CAPTURE = "raydapCapture"
#: From an upstream to its sessions (never to a client): a point a worker turned off.
CAPTURE_POINT_OFF = "raydapCapturePointOff"
