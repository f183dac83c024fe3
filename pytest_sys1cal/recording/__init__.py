"""Recording model traffic into cassettes: concurrent, paced, retrying, resumable and cost-aware."""
