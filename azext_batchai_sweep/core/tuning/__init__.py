"""Sweeps steered by their results: the controller, its early-termination policies and its samplers.

Everything here is a pure function of what the service reports (trials in, decisions and suggestions out), so
it is tested without a service. ``trial.py`` holds the vocabulary every module shares.
"""
