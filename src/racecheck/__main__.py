"""``python -m racecheck``: the same as the ``racecheck`` command."""

import sys

from racecheck.cli import main

sys.exit(main())
