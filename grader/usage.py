"""The kit's command lines' argument parser: `grade`'s commands and Gradescope's runner alike report a
usage error as one line and exit status 2."""

import argparse
import sys


class UsageParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit status 2."""

    def error(self, message):
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)
