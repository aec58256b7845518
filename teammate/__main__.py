"""``python -m teammate``: run one teammate process (see `teammate.cli`)."""

import sys

from teammate.cli import main

sys.exit(main())
