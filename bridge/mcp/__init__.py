"""The bridge for coding agents: an MCP server over the workers the bridge holds.

One server, in the bridge (``/mcp``, MCP's streamable HTTP, behind the bridge's token, Origin
and Host checks); ``raydap mcp`` relays an agent's stdio to it. :mod:`.catalog` says what each
tool takes and whether it only reads, :mod:`.desk` does the work on the holder, :mod:`.fit`
keeps answers small, :mod:`.server` guards and answers calls, :mod:`.http` serves them.
"""
