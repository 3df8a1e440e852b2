"""Tools to measure and exercise the product, outside the app packages."""
