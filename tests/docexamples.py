# SPDX-License-Identifier: BSD-3-Clause
"""Find the shell examples in largeblock's docs, and the output they show.

An example is a code block right after an annotation that names it:

  Markdown (README.md, docs/*.md):   <!-- example: ID -->
                                     <!-- output: ID -->
  POD (man pages):                   =for comment example: ID
                                     =for comment output: ID

The annotation applies to the next code block (a fenced or 4-space
indented block in Markdown, a verbatim paragraph in POD), with only blank
lines between.  "output: ID" marks what the docs show the example ID
printing.  A code block that is not annotated but is a shell block (a
Markdown block fenced as ```sh, or any block whose first command is one
of COMMANDS) is returned as "unannotated", so a new example cannot go
unnoticed.  POD SYNOPSIS
sections are not examples.
"""
import re

# The first word of a line that makes a code block a shell example.
COMMANDS = {
    "nbdkit", "largeblock-run", "largeblock-verify", "largeblock-vm",
    "nbdinfo", "nbdfuse", "nbdsh", "nbdcopy", "nbd-client", "losetup",
    "mkfs.xfs", "mount", "umount", "modprobe", "blockdev", "echo", "for",
    "make", "cc", "qemu-img", "qemu-io", "qemu-system-x86_64", "mkdir",
    "cut", "dir", "loop", "pod2man", "man", "autoreconf", "sudo",
}

ANNOTATION_MD = re.compile(r"^<!-- (example|output): ([\w.-]+) -->\s*$")
ANNOTATION_POD = re.compile(r"^=for comment (example|output): ([\w.-]+)\s*$")


class Block:
    def __init__(self, path, line, text, kind=None, ident=None, lang=""):
        self.path, self.line, self.text = path, line, text
        self.kind, self.ident, self.lang = kind, ident, lang

    def where(self):
        return "%s:%d" % (self.path, self.line)


def looks_like_shell(text):
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        # Past the environment assignments a command starts with.
        line = re.sub(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+", "", line)
        word = re.split(r"[\s=(]", line, 1)[0]
        return word in COMMANDS or word.startswith(("./", "scripts/"))
    return False


def markdown_blocks(path, lines):
    """Code blocks of a Markdown file, with their annotation."""
    blocks, pending, i, prev_blank = [], None, 0, True
    while i < len(lines):
        line = lines[i]
        m = ANNOTATION_MD.match(line)
        if m:
            pending = (m.group(1), m.group(2), i + 1)
            i += 1
            continue
        if line.startswith("```"):
            lang, start, body = line[3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            blocks.append(_annotated(path, start + 1, "\n".join(body),
                                     pending, lang))
            pending, prev_blank = None, False
            i += 1
            continue
        if line.startswith("    ") and prev_blank and line.strip():
            start, body = i + 1, []
            while i < len(lines) and (lines[i].startswith("    ") or
                                      not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            blocks.append(_annotated(path, start, "\n".join(body), pending))
            pending, prev_blank = None, True
            continue
        if line.strip() and pending:
            raise SystemExit("%s:%d: annotation '%s: %s' is not followed by "
                             "a code block" % (path, pending[2], pending[0],
                                               pending[1]))
        prev_blank = not line.strip()
        i += 1
    return blocks


def pod_blocks(path, lines):
    """Verbatim paragraphs of a POD file, with their annotation."""
    paragraphs, cur, start = [], [], 0
    for n, line in enumerate(lines + [""], 1):
        if line.strip():
            if not cur:
                start = n
            cur.append(line)
        elif cur:
            paragraphs.append((start, cur))
            cur = []
    blocks, pending, section = [], None, ""
    for start, para in paragraphs:
        first = para[0]
        if first.startswith("=head1"):
            section = first[6:].strip()
        m = ANNOTATION_POD.match(first)
        if m:
            pending = (m.group(1), m.group(2), start)
            continue
        if first[:1] in (" ", "\t"):
            if section != "SYNOPSIS":
                indent = min(len(l) - len(l.lstrip()) for l in para
                             if l.strip())
                text = "\n".join(l[indent:] if l[:1] == " " else l
                                 for l in para)
                blocks.append(_annotated(path, start, text, pending))
            pending = None
        elif pending:
            raise SystemExit("%s:%d: annotation '%s: %s' is not followed by "
                             "a verbatim paragraph" % (path, pending[2],
                                                       pending[0], pending[1]))
    return blocks


def _annotated(path, line, text, pending, lang=""):
    if pending:
        return Block(path, line, text, pending[0], pending[1], lang)
    shell = lang == "sh" or (lang == "" and looks_like_shell(text))
    kind = "unannotated" if shell else None
    return Block(path, line, text, kind, None, lang)


def blocks_of(path):
    with open(path) as f:
        lines = f.read().split("\n")
    if path.endswith(".pod"):
        return pod_blocks(path, lines)
    return markdown_blocks(path, lines)


def shown_output(example, outputs):
    """The lines the docs show the example printing: its own trailing
    comment lines ("# 16384" after the command), then its output blocks."""
    lines = example.text.splitlines()
    tail = []
    while lines and lines[-1].startswith("#"):
        tail.insert(0, lines.pop()[1:])
    for block in outputs:
        tail.extend(block.text.splitlines())
    return [l for l in tail if l.strip()]
