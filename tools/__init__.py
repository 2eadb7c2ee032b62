"""Maintenance scripts that build the app's shipped files; the product never imports them."""
