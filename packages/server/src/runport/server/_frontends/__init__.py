"""The server's frontend wing: each chat frontend's protocol as one ``FrontendProtocol`` in a
folder of its own, one registry (``_registry.FRONTENDS``), one route per entry, and one job
that runs a chat whether or not the server is resumable (adr/0041, docs/frontends.md)."""
