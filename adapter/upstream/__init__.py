"""The bridge's side of each worker: its one debugpy connection (``connection``), that
connection's life, hand-over and settling of stops, debugpy's quirks, the stop cache, and the
worker's one owner of breakpoints with the books they are kept in. Sessions use it; it uses
no session."""
