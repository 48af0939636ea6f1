"""Run a command with the settings of an environment file (deploy/start.sh, deploy/ctl.sh).

    python deploy/with_env.py ENV_FILE COMMAND [ARGUMENT ...]

The file is read as honcho reads it (``KEY=value`` lines, ``#`` comments, quotes optional) over
the current environment. ``VAR_DIR`` (the settings' default: ``var/`` of the project) is made
absolute and its ``log/`` folder exists afterwards: supervisord writes its own log and each
process's there. ``SUPERVISOR_PROGRAMS`` (the program files ``deploy/supervisord.conf``
includes) defaults to all of them. COMMAND then replaces this process, so every signal sent to
it reaches the command itself.
"""

import os
import sys
from pathlib import Path

from honcho.environ import parse

PROJECT = Path(__file__).resolve().parent.parent


def main(arguments: list[str]) -> None:
    if len(arguments) < 2:
        sys.exit(__doc__)
    env_file, *command = arguments
    os.environ.update(parse(Path(env_file).read_text()))
    var_dir = PROJECT / os.environ.get("VAR_DIR", "var")  # an absolute VAR_DIR stays as it is
    (var_dir / "log").mkdir(parents=True, exist_ok=True)
    os.environ["VAR_DIR"] = str(var_dir)
    os.environ.setdefault("SUPERVISOR_PROGRAMS", "programs/*.conf")
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
