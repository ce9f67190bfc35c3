"""Looking without stopping: capture points set on live workers (``points``), the captures
they send and the bridge keeps (``store``), and what the doors ask of both (``service``)."""
