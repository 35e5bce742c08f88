#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that test_judge.py can fail: break judge.py in one place at a time
(in a scratch copy) and require the tests to catch every breakage."""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join(HERE, "..", "lib")

MUTATIONS = [
    ("SKIP passes", 'elif r.directive == "SKIP":', "elif False:"),
    ("'not ok' passes", 'if not r.ok and r.directive != "TODO":', "if False:"),
    ("missing end marker passes", '"BTS-GUEST-END" not in text', "False"),
    ("plan mismatch passes", "elif plan != count:", "elif False:"),
    ("Bail out! ignored", 'if line.startswith("Bail out!"):', "if False:"),
    ("host checks always hold", "ok = got == want", "ok = True"),
    ("QEMU status ignored", 'elif qemu_status not in ("0", ""):', "elif False:"),
    ("host timeout ignored", 'if qemu_status == "timeout":', "if False:"),
    ("KASAN not matched", 'r"BUG: KASAN: "', 'r"NO MATCH"'),
    ("UBSAN not matched", 'r"UBSAN: "', 'r"NO MATCH"'),
    ("WARNING not matched", 'r"\\bWARNING: "', 'r"NO MATCH"'),
    ("Oops not matched", 'r"\\bOops\\b"', 'r"NO MATCH"'),
    ("silent kselftest passes", 'r.desc.startswith("selftests: ") and r.children == 0', "False"),
    ("splats ignored", "for kind, no, line in splats:", "for kind, no, line in []:"),
]


def main():
    with open(os.path.join(LIB, "judge.py")) as f:
        orig = f.read()
    survived = 0
    for name, old, new in MUTATIONS:
        if old not in orig:
            print("mutation %r: pattern not found in judge.py" % name)
            survived += 1
            continue
        with tempfile.TemporaryDirectory() as tmp:
            lib = os.path.join(tmp, "lib")
            tests = os.path.join(tmp, "tests")
            os.mkdir(lib)
            shutil.copytree(HERE, tests, ignore=shutil.ignore_patterns("__pycache__"))
            with open(os.path.join(lib, "judge.py"), "w") as f:
                f.write(orig.replace(old, new, 1))
            rc = subprocess.run([sys.executable, os.path.join(tests, "test_judge.py")],
                                capture_output=True).returncode
        print("mutation %-28s %s" % (name + ":", "caught" if rc else "SURVIVED"))
        survived += rc == 0
    print("%d of %d mutations caught" % (len(MUTATIONS) - survived, len(MUTATIONS)))
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
