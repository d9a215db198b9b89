"""Locust load profiles with SLO gates and a no-loss reconciliation."""
