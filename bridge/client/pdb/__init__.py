"""``raydap attach``: a pdb for paused Ray workers, over DAP through the bridge.

pdb's commands and output conventions (``> file(line)func()``, ``-> source``, ``*** error``)
on top of the bridge's DAP session, so ``ray debug`` users feel at home; plus what one pdb
cannot do: several workers of a follow session, and legacy ``RAY_DEBUG=legacy`` pdb relayed
through the bridge's one port.

Modules, sans-I/O first: ``commands`` (what a line means), ``breakpoints`` (pdb's numbered
table, as DAP requests), ``evaluation`` (expressions as pdb shows them), ``source`` (listings),
then ``debugger`` (the commands over a :class:`DapClient`), ``console`` (readline, history,
completion, the prompt) and ``legacy`` (the raw pdb relay).
"""
