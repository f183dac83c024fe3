"""Renderers of one result object: terminal tables, Markdown, JSON, JUnit properties."""
