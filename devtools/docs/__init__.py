"""The docs site's generated pages: parts of docs/ that are written from the code at build time
(mkdocs.yml's hook, hooks.py), so that they cannot drift from it."""
