"""Where data enters: the fetch cycle, the one HTTP client, offline recordings, adapters."""
