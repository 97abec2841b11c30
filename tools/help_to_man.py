#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Writes a tool's man page (section 1, roff) from its own --help and
--version, so that the page says what the tool does and never drifts from it
(as help2man does, without needing it).

Usage: help_to_man.py TOOL_BINARY OUTPUT SUMMARY [SEE_ALSO ...]

SUMMARY is the NAME line's description. The usage lines become the
SYNOPSIS, the rest the DESCRIPTION (text lines joined into paragraphs, an
indented "  --flag  text" line an option item, deeper-indented lines that
item's continuation); the --version line gives the page's header. Exits 1
when the tool's --help or --version fails.
"""
import os
import re
import subprocess
import sys


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def run(binary, flag):
    # The tool's own text, not one shaped by the caller's environment.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUHAL_")}
    out = subprocess.run([binary, flag], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit("help_to_man.py: %s %s exited with %d" % (binary, flag, out.returncode))
    return out.stdout


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    binary, output, summary, see_also = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    name = os.path.basename(binary)
    help_text = run(binary, "--help").rstrip("\n").split("\n")
    version = run(binary, "--version").strip()
    synopsis, rest = [], []
    for line in help_text:
        if not rest and (line.startswith("usage: ") or (synopsis and line.startswith(" " * 7))):
            synopsis.append(line[len("usage: "):] if line.startswith("usage: ") else line.strip())
        else:
            rest.append(line)
    page = [".TH %s 1 \"\" \"%s\" \"User Commands\"" % (name.upper(), roff(version)),
            ".SH NAME", "%s \\- %s" % (roff(name), roff(summary.rstrip("."))),
            ".SH SYNOPSIS"]
    for s in synopsis:
        page += [".nf" if s is synopsis[0] else "", roff(s)]
    page += [".fi", ".SH DESCRIPTION"]
    option = re.compile(r"^\s{2}(-\S.*?)(\s{2,})(\S.*)$")
    paragraph = []
    def flush():
        if paragraph:
            page.extend([".PP", roff(" ".join(paragraph))])
            paragraph.clear()
    for line in rest:
        m = option.match(line)
        if m:
            flush()
            page += [".TP", "\\fB%s\\fR" % roff(m.group(1)), roff(m.group(3))]
        elif line.startswith(" " * 4) and line.strip() and not paragraph and page[-1] != ".PP":
            page[-1] += " " + roff(line.strip())  # an option's continued description
        elif line.strip():
            paragraph.append(line.strip())
        else:
            flush()
    flush()
    page += [".SH EXIT STATUS",
             "0 on success; 2 on bad usage (an unknown option, a missing or refused value, options that "
             "exclude each other), with the reason and the usage on standard error; other values as the "
             "DESCRIPTION says.",
             ".SH SEE ALSO"]
    page.append(", ".join("\\fB%s\\fR(1)" % roff(s) for s in see_also) + ("; " if see_also else "") +
                "the gpuhal documentation (docs/tools.md), installed under share/doc/gpuhal.")
    with open(output, "w") as f:
        f.write("\n".join(p for p in page if p != "") + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
