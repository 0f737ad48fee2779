"""When check-ins are due, claiming them, and starting their dialogues into the outbox.

Imports store, coaching/engine and apscheduler; never telegram.
"""
