"""Public Python entry points; each mirrors a CLI command."""
