"""Capture sessions, capture paths and capture points: looking at what live ranks
recorded without stopping them. Below the upstream and the sessions: neither is imported here."""
