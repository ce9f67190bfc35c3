"""What a person runs: the ``raydap`` command line, small clients of the bridge's HTTP API and
DAP port, the terminal debugger, text rendering, and ``raydap demo`` with the throwaway local
Ray head it starts. Talks to a bridge only through its public interfaces (the demo also starts
one in-process)."""
