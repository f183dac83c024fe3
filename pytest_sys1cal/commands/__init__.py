"""The `python -m pytest_sys1cal` commands, one module each: `add_arguments(parser)` and `main(args) -> int`."""
