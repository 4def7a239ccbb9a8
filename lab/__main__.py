"""`python -m lab`: the lab's command line."""

import sys

from lab.cli.main import main

if __name__ == "__main__":  # not when a worker process imports it
    sys.exit(main())
