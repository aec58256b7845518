"""``python -m swarm``: the `swarm` command (`swarm.cli.quick.main`, which hands everything but a
plain ``swarm status`` to the click group in `swarm.cli.main`)."""

import sys

from swarm.cli.quick import main

sys.exit(main())
