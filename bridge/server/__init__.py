"""What ``raydap serve`` serves: its settings, the HTTP API and WebSocket endpoints, the DAP
TCP listener, and the checks in front of them (tokens and roles, connection limits, the
audit log). ``bridge.Bridge`` wires them to the cluster and workers rooms."""
