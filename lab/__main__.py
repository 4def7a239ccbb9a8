"""`python -m lab`: the lab's command line."""

import sys

from lab.cli.main import main

sys.exit(main())
