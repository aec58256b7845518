"""The file store never needs PostgreSQL: importing protocols and its stores leaves psycopg out."""

from __future__ import annotations

import subprocess
import sys


def test_the_file_layer_imports_no_postgresql_driver() -> None:
    program = (
        "import sys, protocols, protocols.inbox.mailbox, protocols.tasks.board, protocols.team.file, "
        "protocols.inbox.permissions, protocols.member.status; "
        "assert 'psycopg' not in sys.modules, 'psycopg imported'"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
