#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The docs name only what exists (make check-host).

Reads docs/*.md and README.md and checks, line by line:

* counters: every `LesXxx` name is a counter les.ko defines (a string in
  kernel/ or tools/lesctl/, as kernel/stats.c's table of names); after
  `grep`, a prefix of one will do;
* tests: a span in backticks that starts with a step's or a part's label,
  `step NAME` (tests/vm/les_tests.py's steps), `accel NAME` (the tests of
  tests/vm/accel_tests.py run()), `pep NAME`, `hardening NAME`,
  `mutation NAME` (their run_parts() and configurations), names one that
  exists: the name the VM output prints ("# accel flush: 40 s") and
  LES_ACCEL_ONLY / LES_PARTS match; and after a test file's path, each
  "quoted" test description and `identifier` named in the same table cell
  or clause is in that file ({...}, ... and the like stand for the parts a
  description leaves out);
* paths: every path into the tree (kernel/..., tools/..., tests/...,
  docs/..., ../...) exists (globs match something); tests/out/ and build/
  are made by the runs;
* section references: "docs/NAME.md N", "section N of docs/NAME.md" and
  docs/NAME.md, "Title" name a heading that the doc has.

Prints each name that is missing as doc:line and exits 1 if there is any.
Python 3 standard library only."""
import ast
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP_DIRS = ("kernel", "tools", "tests", "docs", "packaging", "strongswan-plugin", ".ci")
MADE_BY_RUNS = ("tests/out", "build")
PART_LABELS = ("accel", "pep", "hardening", "mutation")
# `accel on`, `pep set ...`: lesctl's words, not tests (the test "accel off"
# is `accel accel off`).
LESCTL_WORDS = {"accel": ("on", "off", "on|off", "on\\|off"), "pep": ("set", "show")}


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def sources(patterns):
    out = []
    for p in patterns:
        out.extend(sorted(glob.glob(os.path.join(ROOT, p))))
    return out


# ---- what exists ---------------------------------------------------------------

def defined_counters():
    names = set()
    for path in sources(("kernel/*.c", "kernel/*.h", "tools/lesctl/*.c", "tools/lesctl/*.h")):
        with open(path, encoding="utf-8") as f:
            names.update(re.findall(r'"(Les[A-Z][A-Za-z0-9]*)"', f.read()))
    return names


def config_name(call):
    """str() of tests/vm/lesvm.py Config(...) with constant arguments, or None."""
    try:
        args = [ast.literal_eval(a) for a in call.args]
        kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except ValueError:
        return None
    names = ("mode", "ofam", "ifam", "esn", "encap")
    c = dict(zip(names, args), **kw)
    if "mode" not in c or "ofam" not in c:
        return None
    tunnel = c["mode"] == "tunnel"
    s = f"{c['mode']} " + (f"v{c.get('ifam') or c['ofam']}-in-v{c['ofam']}" if tunnel
                           else f"v{c['ofam']}")
    if c.get("esn"):
        s += " esn"
    if c.get("encap"):
        s += " udp-encap"
    return s


def first_strings(node):
    """The first elements of a tuple or list of tuples, if they are strings."""
    if not isinstance(node, (ast.Tuple, ast.List)):
        return []
    out = []
    for elt in node.elts:
        if (isinstance(elt, ast.Tuple) and elt.elts and isinstance(elt.elts[0], ast.Constant)
                and isinstance(elt.elts[0].value, str)):
            out.append(elt.elts[0].value)
    return out


def prefix_label(loop):
    """LABEL of a `T.prefix = f"LABEL {name}: "` in @loop's body, or None."""
    for node in ast.walk(loop):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and
                isinstance(node.targets[0], ast.Attribute) and node.targets[0].attr == "prefix" and
                isinstance(node.value, ast.JoinedStr) and node.value.values and
                isinstance(node.value.values[0], ast.Constant)):
            label = node.value.values[0].value.strip()
            if label:
                return label
    return None


def vm_tests():
    """{"step": {names}, "accel": {names}, "pep": {...}, ...} from tests/vm/*.py."""
    tests = {"step": set()}
    configs = set()
    for path in sources(("tests/vm/*.py",)):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and os.path.basename(path) == "les_tests.py" and
                    any(isinstance(t, ast.Name) and t.id == "steps" for t in node.targets)):
                tests["step"].update(first_strings(node.value))
            elif isinstance(node, ast.For) and isinstance(node.target, ast.Tuple):
                label = prefix_label(node)
                names = first_strings(node.iter)
                if label and names:
                    tests.setdefault(label, set()).update(names)
            elif isinstance(node, ast.Call):
                fn = node.func
                name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", "")
                if (name == "run_parts" and len(node.args) >= 3 and
                        isinstance(node.args[1], ast.Constant)):
                    tests.setdefault(node.args[1].value, set()).update(first_strings(node.args[2]))
                elif name == "Config" and os.path.basename(path) == "pep_tests.py":
                    c = config_name(node)
                    if c:
                        configs.add(c)
    # Step pep's parts are its configurations too (tests/vm/pep_tests.py run()).
    tests.setdefault("pep", set()).update(configs)
    return tests


# What a {field} of an f-string may stand for in a description, at most.
HOLE_MAX = 60
HOLE = None
_HOLE_TOKEN = object()


def file_strings(path):
    """The strings a test file holds, an f-string as a list of its fixed
    parts with HOLE for each {field}, and its text: what a description
    cited after its path must be found in."""
    text = read(path)
    strings = []
    if path.endswith(".py"):
        try:
            tree = ast.parse(text, path)
        except SyntaxError:
            return [[norm(text)]], text
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.append([norm(node.value)])
            elif isinstance(node, ast.JoinedStr):
                strings.append([norm(v.value) if isinstance(v, ast.Constant) else HOLE
                                for v in node.values])
    else:
        strings.append([norm(text)])
    return strings, text


def norm(s):
    return re.sub(r"\s+", " ", s)


def in_string(frag, parts):
    """Is @frag part of some value of the string @parts (fixed text, and
    HOLEs that stand for up to HOLE_MAX characters each), with at least a
    third of it, and 16 characters, the string's fixed text?"""
    if any(p is not HOLE and frag in p for p in parts):
        return True
    if HOLE not in parts:
        return False
    tokens = []
    for p in parts:
        tokens.extend([_HOLE_TOKEN] if p is HOLE else list(p))
    need = max(16, len(frag) // 3)
    # A state: the next token, what the hole there took, fixed text matched.
    states = {(i, 0, 0) for i in range(len(tokens))}
    for ch in frag:
        nxt = set()
        for i, took, fixed in states:
            # A hole may take nothing: the token after it reads @ch too.
            while i < len(tokens) and tokens[i] is _HOLE_TOKEN:
                if took < HOLE_MAX:
                    nxt.add((i, took + 1, fixed))
                i, took = i + 1, 0
            if i < len(tokens) and tokens[i] == ch:
                nxt.add((i + 1, 0, min(fixed + 1, need)))
        states = nxt
        if not states:
            return False
    return any(fixed >= need for _, _, fixed in states)


def headings(rel):
    """The section numbers and titles of a doc's headings (not in code)."""
    nums, titles, code = set(), [], False
    for line in read(rel).splitlines():
        if line.startswith("```"):
            code = not code
            continue
        m = None if code else re.match(r"#+\s+(.*)", line)
        if not m:
            continue
        title = m.group(1).replace("`", "")
        titles.append(title.lower())
        n = re.match(r"(\d+(?:\.\d+)*)\.?\s", title)
        if n:
            nums.add(n.group(1))
    return nums, titles


# ---- what the docs name ------------------------------------------------------

COUNTER = re.compile(r"(?<![A-Za-z0-9_])Les[A-Z][A-Za-z0-9]*")
BACKTICK = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w.*+/-]*[\w*/]|\.\./[\w.*+/-]*[\w*/])"
                  % "|".join(re.escape(d) for d in TOP_DIRS))
TEST_FILE = re.compile(r"(?<![\w./-])((?:tests/[\w/-]+\.(?:py|sh))|kernel/selftest\.c)\b")
SECTION = re.compile(r"(?:docs/)?\b([a-z][a-z0-9-]*)\.md,? (?:section )?(\d+(?:\.\d+)*)(?![\d-]| of )")
SECTION_OF = re.compile(r"\bsection (\d+(?:\.\d+)*) of (?:docs/)?([a-z][a-z0-9-]*)\.md")
TITLED = re.compile(r"(?:docs/)?\b([a-z][a-z0-9-]*)\.md,? \"([A-Za-z][^\"]*)\"")
QUOTED = re.compile(r"\"([^\"\n]+)\"")
LEFT_OUT = re.compile(r"\{[^}]*\}|\.\.\.|…")


def cells(line):
    """A line's table cells, or its clauses (split at ';'), escaped pipes kept."""
    parts = re.split(r"(?<!\\)\|", line)
    out = []
    for p in parts:
        out.extend(p.split(";"))
    return [p.replace("\\|", "|") for p in out]


def check_doc(rel, known, problems, text=None):
    """Appends to @problems what doc @rel (its @text, if given) names that
    does not exist."""
    counters, tests, docs = known["counters"], known["tests"], known["docs"]
    code = False
    for n, line in enumerate((read(rel) if text is None else text).splitlines(), 1):
        where = f"{rel}:{n}"
        if line.startswith("```"):
            code = not code
        # (a) counters
        for m in COUNTER.finditer(line):
            name = m.group(0)
            if name in counters:
                continue
            if (re.search(r"grep\s+(?:-\S+\s+)*$", line[:m.start()]) and
                    any(c.startswith(name) for c in counters)):
                continue
            problems.append(f"{where}: counter {name} is not defined in kernel/ or tools/lesctl/")
        # (b) tests cited as `LABEL NAME`
        for m in BACKTICK.finditer(line):
            span = m.group(1).strip()
            label, _, name = span.partition(" ")
            if not name or (label != "step" and label not in PART_LABELS):
                continue
            if name.split(" ")[0] in LESCTL_WORDS.get(label, ()):
                continue
            if name not in tests.get(label, ()):
                what = "step" if label == "step" else f"{label} test"
                problems.append(f"{where}: {what} \"{name}\" (`{span}`) does not exist")
        # (b) descriptions and identifiers after a test file's path
        if not code:
            for cell in cells(line):
                # What follows a test file's path, up to the next path.
                stops = [m.start() for m in PATH.finditer(cell)] + [len(cell)]
                for m in TEST_FILE.finditer(cell):
                    path = m.group(1)
                    if not os.path.isfile(os.path.join(ROOT, path)):
                        continue    # reported as a path below
                    end = min(e for e in stops if e >= m.end())
                    seg = cell[m.end():end]
                    if seg.startswith("`"):
                        seg = seg[1:]       # the path's own closing backtick
                    if path not in known["files"]:
                        known["files"][path] = file_strings(path)
                    strings, source = known["files"][path]
                    for q in QUOTED.finditer(seg):
                        for frag in LEFT_OUT.split(norm(q.group(1))):
                            frag = frag.strip(" ,.:")
                            if len(frag) >= 4 and not any(in_string(frag, s) for s in strings):
                                problems.append(f"{where}: {path} has no test \"{q.group(1)}\" "
                                                f"(\"{frag}\" not found)")
                                break
                    for b in BACKTICK.finditer(seg):
                        ident = b.group(1)
                        if (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident) and "_" in ident and
                                not re.search(r"\b%s\b" % re.escape(ident), source)):
                            problems.append(f"{where}: {path} has no `{ident}`")
        # (c) paths
        for m in PATH.finditer(line):
            p = m.group(1)
            if p.startswith("../"):
                full = os.path.normpath(os.path.join(ROOT, os.path.dirname(rel), p))
            else:
                if p.rstrip("/").startswith(MADE_BY_RUNS):
                    continue
                full = os.path.join(ROOT, p)
            if not (glob.glob(full) if any(c in p for c in "*?[") else os.path.exists(full)):
                problems.append(f"{where}: path {p} does not exist in the tree")
        # (d) section references
        refs = [(m.group(1), m.group(2)) for m in SECTION.finditer(line)]
        refs += [(m.group(2), m.group(1)) for m in SECTION_OF.finditer(line)]
        for doc, num in refs:
            if doc in docs and num not in docs[doc][0]:
                problems.append(f"{where}: {doc}.md has no section {num}")
        for m in TITLED.finditer(line):
            doc, title = m.group(1), m.group(2).lower()
            if doc in docs and not any(title in t for t in docs[doc][1]):
                problems.append(f"{where}: {doc}.md has no section \"{m.group(2)}\"")


def doc_paths():
    docs = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs/*.md")))
    return docs + ["README.md"]


def known_names(docs):
    """What exists: counters, tests, the docs' sections, test files' strings."""
    return {
        "counters": defined_counters(),
        "tests": vm_tests(),
        "docs": {os.path.splitext(os.path.basename(d))[0]: headings(d) for d in docs},
        "files": {},
    }


def main():
    docs = doc_paths()
    known = known_names(docs)
    problems = []
    for d in docs:
        check_doc(d, known, problems)
    for p in problems:
        print(p)
    if problems:
        print(f"doccheck: {len(problems)} missing in {len(docs)} docs")
        return 1
    print(f"doccheck: {len(docs)} docs, every counter, test, path and section they name exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
