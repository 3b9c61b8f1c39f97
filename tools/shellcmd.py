# SPDX-License-Identifier: GPL-2.0
"""A shell command's argv: `bash -c CMD`, or CMD's own words when it is one
plain command.  Under emulation every exec costs (measured in the VM: bash
or ip about 0.2 s on Debian's kernels, 1.1 s each on the debug kernel), so
the VM tests' agents (tests/vm/nsagent.py) and the testbed
(tools/testbed.py) leave bash out where it has nothing to do."""
import re
import shlex
import shutil

SHELL_SYNTAX = set(";&|<>$`*?()[]{}~\\\n#!=")
QUOTED = re.compile(r"'[^']*'|\"[^\"$`\\\\]*\"")


def argv(cmd):
    if not SHELL_SYNTAX & set(QUOTED.sub("", cmd)):
        try:
            words = shlex.split(cmd)
        except ValueError:      # an unbalanced quote: bash says what is wrong
            words = []
        # `time` is a bash keyword before it is /usr/bin/time.
        if words and words[0] != "time" and shutil.which(words[0]):
            return words
    return ["bash", "-c", cmd]
