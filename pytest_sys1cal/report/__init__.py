"""The report document (document.py, its one typed home) and its renderers: terminal tables, Markdown, HTML and
figures, and the texts of the offline commands."""
