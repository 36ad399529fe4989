"""The PostgreSQL engine: the storage contract on a server with pgvector, for a fleet of robots.

``store.PostgresStore`` implements ``robotmem.store.protocol``; docs/fleet.md says how to run it.
"""
