"""The HTTP door by resource: each module declares its routes (aiohttp's ``RouteTableDef``)
for one resource: ``workers`` (list, continue, pause, evaluate), ``hangs`` (merged stacks and
hang verdicts), ``captures`` (capture points and what they captured) and ``breakpoints`` (a
job's live breakpoints). They read bodies and queries, and answer errors, one way
(:mod:`.common`); :mod:`raydap.bridge.server.http_api` makes the app of them."""
