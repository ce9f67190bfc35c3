"""Client sessions: one per editor, debugger or page connected, with its mux over the
workers it shows, its breakpoints across them, its ids, phases, paths and translation, and
the capabilities and WebSocket framing clients see."""
