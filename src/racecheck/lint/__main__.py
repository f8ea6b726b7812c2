"""``python -m racecheck.lint PATH...``: the lint without the rest of racecheck's CLI."""

import sys

from racecheck.lint.cli import main

sys.exit(main())
