#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fill git format-patch's cover letter from patches/cover-letter.txt.

The text file's first line is the subject, the rest the blurb; format-patch
keeps the shortlog, diffstat and base-commit below it.
"""
import sys

src, cover = sys.argv[1], sys.argv[2]
with open(src) as f:
    subject, _, blurb = f.read().partition("\n")
with open(cover) as f:
    text = f.read()
for marker, value in (("*** SUBJECT HERE ***", subject.strip()),
                      ("*** BLURB HERE ***", blurb.strip("\n"))):
    if marker not in text:
        sys.exit("cover.py: %s not found in %s" % (marker, cover))
    text = text.replace(marker, value, 1)
with open(cover, "w") as f:
    f.write(text)
