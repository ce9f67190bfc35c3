"""The raydap daemon and its command line, in rooms by role.

``cluster`` faces Ray (the dashboard's State API, discovery, legacy pdb breakpoints in GCS);
``workers`` is what the bridge holds (held debugpy connections, the registry of records,
filters, group commands); ``server`` is what it serves (the HTTP/WebSocket app, the DAP
listener, auth, limits, audit, settings); ``client`` is what a person runs (the CLI, the API
and DAP clients, the terminal debugger, the demo with its embedded Ray head). Imports point
from ``client`` and ``server`` down to ``workers`` and ``cluster``, and from all of them down to
:mod:`raydap.adapter` and :mod:`raydap.protocol`, never back up.
"""
