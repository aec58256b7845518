"""``python -m swarm``: the `swarm` command."""

import sys

from swarm.cli import main

sys.exit(main())
