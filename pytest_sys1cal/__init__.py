"""pytest-sys1cal: the Sys1Cal-v1 calibration benchmark as a pytest gate."""

__version__ = "0.1.0"
