"""Backends: how actors run. Each plugs into :mod:`racecheck.engine` the same way."""
