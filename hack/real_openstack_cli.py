"""The `openstack` CLI for the real-systems tests, one process for a whole test binary.

Each line on stdin is one command, as JSON: {"argv": [...], "clouds": "/path/clouds.yaml"}.
Each answer is one line on stdout: {"rc": N, "stdout": "...", "stderr": "..."}, what the
command `OS_CLIENT_CONFIG_FILE=clouds openstack ARGV...` would have exited with and
printed. It runs python-openstackclient's own entry point (openstackclient.shell.main)
with the same arguments, so the tests look at the cloud through the same code a user's
`openstack` runs; only the CLI's start-up (about 1.2 s of imports, paid by each of a few
hundred calls in the real-systems stage) is paid once. Each command runs in a child
forked from the imported process, as fresh as a new `openstack` process.

Usage: python3 hack/real_openstack_cli.py   (the python3 of the openstack CLI's venv;
       tests/it/support/real.rs starts it). Ends at the end of its input.
"""

import contextlib
import io
import json
import os
import sys

# cliff names the program after argv[0] when it is imported: "openstack", as a user's.
sys.argv[0] = "openstack"
from openstackclient import shell  # noqa: E402


def run(argv, clouds):
    """The command in a child forked from this process, so that no state one command
    leaves in the CLI's modules (python-openstackclient and openstacksdk keep some
    between runs in one process: a second `server list` answered the first's servers)
    reaches the next; the fork costs milliseconds, the imports it saves a second."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        # Nothing it reads or writes outside sys.stdout/sys.stderr may touch the requests
        # and answers (a password prompt would read the next request).
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        sys.stdin = open(os.devnull)
        answer = json.dumps(command(argv, clouds)).encode()
        with os.fdopen(write_end, "wb") as out:
            out.write(answer)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answers:
        answer = answers.read()
    _, status = os.waitpid(pid, 0)
    if not answer:
        return {"rc": 1, "stdout": "", "stderr": f"openstack {' '.join(argv)}: the command's process ended with status {status} and no answer\n"}
    return json.loads(answer)


def command(argv, clouds):
    os.environ["OS_CLIENT_CONFIG_FILE"] = clouds
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = shell.main(argv)
        except SystemExit as e:  # argparse's refusals and --help exit
            rc = e.code if isinstance(e.code, int) else 1
        except Exception as e:  # what the CLI would have printed as a traceback
            print(f"openstack {' '.join(argv)}: {type(e).__name__}: {e}", file=sys.stderr)
            rc = 1
    return {"rc": rc or 0, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main():
    answers = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        answer = run(request["argv"], request["clouds"])
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
