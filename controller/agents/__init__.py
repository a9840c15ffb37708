"""Small stdlib-only programs dpctl copies to switches and runs there (pack.py packs them)."""
