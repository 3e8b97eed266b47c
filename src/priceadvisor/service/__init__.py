"""The long-running service: the scheduler daemon, health and metrics endpoints, logging."""
