"""Rendering: fabric facts -> per-device structured data -> text (Jinja2 templates)."""
