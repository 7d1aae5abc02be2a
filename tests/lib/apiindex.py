#!/usr/bin/env python3
"""docs/api-index.md from the sources (issue 44 item 4, as git's
api-index.sh builds its index from Documentation/technical/api-*.txt).
Two parts, both generated:
- "Where things happen": every `@where TOPIC` tag of a source comment,
  topics in alphabetical order, each with the places that tagged it. A
  tag beside a function, struct, table or macro names it; a tag in a
  file's opening comment (or in a script's comments) names the file. So
  the index follows the code: a renamed function keeps its row, a removed
  one takes its tag with it.
- per header of builder/, the first paragraph of its opening comment and
  every function it declares, in the header's order.
The prose of docs/architecture.md keeps the design; the names live here.

A tag is one comment line `@where TOPIC` or `@where TOPIC -- NOTE`; the
lines after it in the same comment that are indented deeper continue it.
Tags with the same TOPIC (character for character) make one row; the NOTE
says what this place does for the topic.

usage: apiindex.py ROOT          print the index
       apiindex.py ROOT --check  exit 1 (with a diff) when docs/api-index.md
                                 is not what the sources give (docs.bats)
       apiindex.py ROOT --write  rewrite docs/api-index.md (make api-index)
       apiindex.py ROOT --stale [DOC...]
                                 exit 1, naming each, when a doc (default:
                                 docs/*.md and README.md) names a repository
                                 path (or a builder/ source from its layer:
                                 recipe/urls.c), `make` target, bats file, quoted test
                                 title or WINBUILD_* variable that ROOT does
                                 not have (docs.bats)"""
import difflib
import fnmatch
import glob
import os
import re
import sys

root = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else ""

# where tags are looked for: the sources, the tests and CI (not packer/ or
# recipes/: a comment there lands in what winbuild emits or stages, so the
# C that renders or reads them carries their tags)
TAG_DIRS = ["builder", "tests", ".ci", "bench"]
TAG_SKIP = {"node_modules", ".cache", "corpus", "regressions", "fixtures"}
C_EXT = (".c", ".h", ".cs", ".cjs", ".js")
SCRIPT_EXT = (".py", ".bash", ".bats", ".sh", ".ps1")
TAG_RE = re.compile(r"^(\s*(?:/\*+|\*|#+|//)?\s*)@where\s+(.*)$")


def opening_paragraph(text):
    m = re.match(r"\s*/\*(.*?)\*/", text, re.S)
    if not m:
        return ""
    lines = [re.sub(r"^\s*\*\s?", "", l).rstrip() for l in m.group(1).split("\n")]
    para = []
    for l in lines:
        if not l.strip() or l.strip().startswith("@where"):
            if para:
                break
            continue
        para.append(l.strip())
    return " ".join(para)


def functions(text):
    # comments, preprocessor lines and bodies of structs/enums out first
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", " ", text, flags=re.M)
    depth, flat = 0, []
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            flat.append(ch)
    names = []
    for decl in "".join(flat).split(";"):
        decl = " ".join(decl.split())
        if decl.startswith("typedef") or "(" not in decl:
            continue
        m = re.match(r"(?:extern\s+)?[A-Za-z_][\w\s\*]*?\b([a-z_][a-z0-9_]*)\s*\(", decl)
        if m and "(*" not in decl.split("(", 1)[0]:
            names.append(m.group(1))
    return names


def tags_in(lines):
    """(line index, topic, note) of every tag; continuation lines are the
    following lines of the comment indented deeper than the tag's text"""
    out = []
    i = 0
    while i < len(lines):
        m = TAG_RE.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group(1))
        text = m.group(2).rstrip()
        closes = text.endswith("*/")
        j = i + 1
        while not closes and j < len(lines):
            c = re.match(r"^(\s*(?:\*|#+|//)\s*)(\S.*)$", lines[j])
            if not c or len(c.group(1)) <= indent or c.group(2).startswith("*/"):
                break
            text += " " + c.group(2).rstrip()
            closes = text.endswith("*/")
            j += 1
        text = re.sub(r"\s*\*/$", "", text)
        topic, _, note = text.partition(" -- ")
        out.append((i, j, topic.strip(), note.strip()))
        i = j
    return out


def c_subject(text, end):
    """what the code after a comment ending at END declares, or None when
    the comment opens the file"""
    if not text[:text.find("/*")].strip() and text.find("*/") + 2 >= end:
        return None
    rest = text[end:]
    while True:  # further comments, blank lines
        rest = rest.lstrip()
        if rest.startswith("/*"):
            rest = rest[rest.find("*/") + 2:]
        elif rest.startswith("//"):
            rest = rest[rest.find("\n") + 1:]
        else:
            break
    m = re.match(r"#\s*define\s+([A-Za-z_]\w*)", rest)
    if m:
        return m.group(1)
    head = re.split(r"[{;=]", rest, 1)[0]
    if "(" in head:  # a function, unless a pointer to one: "int (*f)(void)"
        m = re.search(r"([A-Za-z_]\w*)\s*$", head.split("(", 1)[0])
        if m:
            return m.group(1) + "()"
    m = re.match(r"\s*(?:static\s+)?(?:const\s+)?(struct|enum)\s+(\w+)\s*$", head)
    if m:
        return "%s %s" % (m.group(1), m.group(2))
    m = re.search(r"([A-Za-z_]\w*)\s*\[[^\]]*\]\s*$", head)
    if m:
        return m.group(1) + "[]"
    return None


def script_subject(lines, j):
    while j < len(lines) and re.match(r"^\s*(#|//)", lines[j]):
        j += 1
    if j < len(lines):
        m = (re.match(r"^\s*(?:async\s+)?(?:def|function)\s+(\w+)", lines[j])
             or re.match(r"^(\w+)\s*\(\)\s*\{", lines[j]))
        if m:
            return m.group(1) + "()"
    return None


def source_files():
    for d in TAG_DIRS:
        for dirpath, dirs, files in os.walk(os.path.join(root, d)):
            dirs[:] = sorted(x for x in dirs if x not in TAG_SKIP)
            for f in sorted(files):
                p = os.path.join(dirpath, f)
                if os.path.islink(p) or os.path.getsize(p) > 1 << 20:
                    continue
                if f.endswith(C_EXT + SCRIPT_EXT) or "." not in f:
                    yield p


def where_tags():
    topics = {}
    for p in sorted(source_files(), key=lambda p: os.path.relpath(p, root)):
        try:
            text = open(p, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        if "@where" not in text:
            continue
        rel = os.path.relpath(p, root)
        lines = text.split("\n")
        offs = [0]
        for l in lines:
            offs.append(offs[-1] + len(l) + 1)
        for i, j, topic, note in tags_in(lines):
            if p.endswith(C_EXT) and not lines[i].lstrip().startswith(("//", "#")):
                end = text.find("*/", offs[i])
                subject = c_subject(text, end + 2) if end >= 0 else None
            else:
                subject = script_subject(lines, j)
            place = "`%s`" % rel if not subject else "`%s` in `%s`" % (subject, rel)
            if note:
                place += ": " + note
            topics.setdefault(topic, []).append(place)
    return topics


def index_text():
    out = ["# API index", "",
           "Generated by `tests/lib/apiindex.py` (`make api-index`) from the sources:",
           "where each job is done (the `@where` tags of their comments), then each",
           "header of `builder/` with its opening paragraph and the functions it",
           "declares. Do not edit: `tests/cli/docs.bats` fails when this file and the",
           "sources differ. The design is in docs/architecture.md.", "",
           "## Where things happen", "",
           "| you look for | where |", "|---|---|"]
    tags = where_tags()
    for topic in sorted(tags, key=lambda t: re.sub(r"[^a-z0-9 ]", "", t.lower())):
        out.append("| %s | %s |" % (topic, "; ".join(tags[topic])))
    out.append("")
    for h in sorted(glob.glob(os.path.join(root, "builder", "**", "*.h"), recursive=True)):
        rel = os.path.relpath(h, root)
        text = open(h, encoding="utf-8").read()
        out.append("## `%s`" % rel)
        out.append("")
        para = opening_paragraph(text)
        if para:
            out.append(para)
            out.append("")
        fns = functions(text)
        if fns:
            out.append(", ".join("`%s()`" % f for f in fns))
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


# --stale: what a doc names must exist (issue 44 item 4; issue 29 found
# `verify_signed()` in docs/hardening.md long after it was renamed). The
# functions, `name()`, are docs.bats' own grep; these are the other names.
PATH_RE = re.compile(r"(?<![\w./~$-])((?:builder|tests|recipes|overrides|packer|bench|docs|\.ci)"
                     r"/[\w.{},*<>/+-]*)")
# a source named from its layer, as the prose does: `recipe/urls.c`
MODULE_RE = re.compile(r"(?<![\w./-])((?:cmd|emit|fetch|lib|recipe|stage|trust)/[\w.*{},<>-]+\.[ch])\b")
# `make TARGET...` in a code span, or a command line of a code block
MAKE_RE = re.compile(r"(?:`|^ {4,}(?:\$ )?|^\t(?:\$ )?)make((?: +[^\s`]+)+)", re.M)
BATS_RE = re.compile(r"(?<![\w/.-])((?:[\w/.-]*/)?[\w*-]+\.bats)\b")
# `file.bats "title"`, `file.bats "t1", "t2"`: a title quoted right after
# its file (a part of one, "…" where the doc leaves some out)
TITLE_RE = re.compile(r"(?<![\w/.-])([\w-]+\.bats)`?(?:'s)? +\(?((?:\"[^\"]+\"(?:,? (?:and |or )?(?=\"))?)+)")
ENV_RE = re.compile(r"\bWINBUILD_[A-Z0-9_]*[A-Z0-9]\b")


def braces(p):
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        return [p]
    return [x for alt in m.group(1).split(",") for x in braces(p[:m.start()] + alt + p[m.end():])]


def made_paths():
    """The anchored entries of .gitignore (/build/, /tests/.cache/): places
    the build and `make deps` make, absent from a fresh clone but real."""
    try:
        lines = open(os.path.join(root, ".gitignore"), encoding="utf-8").read().split("\n")
    except OSError:
        return []
    return [l.strip("/") for l in lines if l.startswith("/") and l.strip("/")]


def made_names():
    """The plain names .gitignore ignores anywhere (node_modules): a path
    through one is made by `make deps` (npm ci), absent from a clone."""
    try:
        lines = open(os.path.join(root, ".gitignore"), encoding="utf-8").read().split("\n")
    except OSError:
        return []
    return [l.strip("/") for l in lines
            if l and not l.startswith("/") and not any(c in l for c in "*?[")]


def path_exists(p):
    p = re.sub(r"<[^<>/]*>", "*", p.rstrip(".,:;)'"))
    for q in braces(p):
        if any(q.rstrip("/") == m or q.startswith(m + "/") for m in made_paths()):
            continue
        if any(n in q.rstrip("/").split("/") for n in made_names()):
            continue
        if not glob.glob(os.path.join(root, q)):
            return False
    return True


def make_targets():
    targets = set()
    for line in open(os.path.join(root, "Makefile"), encoding="utf-8"):
        m = re.match(r"^([\w./-][\w./ -]*?)\s*:(?!=)", line)
        if m:
            targets.update(m.group(1).split())
    return targets


def bats_titles():
    titles = {}
    for f in glob.glob(os.path.join(root, "tests", "**", "*.bats"), recursive=True):
        for line in open(f, encoding="utf-8"):
            m = re.match(r'^@test "((?:[^"\\]|\\.)*)" \{', line)
            if m:
                t = re.sub(r"\\(.)", r"\1", m.group(1))
                titles.setdefault(os.path.basename(f), []).append(" ".join(t.split()))
    return titles


def env_names():
    names = set(ENV_RE.findall(open(os.path.join(root, "Makefile"), encoding="utf-8").read()))
    for p in source_files():
        try:
            names.update(ENV_RE.findall(open(p, encoding="utf-8").read()))
        except (UnicodeDecodeError, OSError):
            pass
    return names


def quoted_title_ok(want, titles):
    # "…" or "..." marks what the doc left out; the pieces, in order, are
    # in one title of the file
    pieces = [" ".join(x.split()) for x in re.split(r"…|\.\.\.", want)]
    for t in titles:
        at = 0
        for piece in pieces:
            at = t.find(piece, at)
            if at < 0:
                break
            at += len(piece)
        else:
            return True
    return False


def stale(docs):
    targets, titles, envs = make_targets(), bats_titles(), env_names()
    bats_files = {os.path.basename(f) for f in glob.glob(os.path.join(root, "tests", "**", "*.bats"),
                                                         recursive=True)}
    bad = []
    for doc in docs:
        text = open(doc, encoding="utf-8").read()
        name = os.path.relpath(doc, root) if doc.startswith(root) else doc
        line_of = lambda off: text.count("\n", 0, off) + 1
        for m in PATH_RE.finditer(text):
            if not path_exists(m.group(1)):
                bad.append("%s:%d: path %s" % (name, line_of(m.start()), m.group(1)))
        for m in MODULE_RE.finditer(text):
            if not path_exists("builder/" + m.group(1)):
                bad.append("%s:%d: path %s (builder/%s)" % (name, line_of(m.start()), m.group(1), m.group(1)))
        for m in MAKE_RE.finditer(text):
            for w in m.group(1).split():
                if re.match(r"^(-|[A-Z_]+=)", w):
                    continue
                if not re.match(r"^[a-z][\w.-]*$", w):
                    break
                if w not in targets:
                    bad.append("%s:%d: make target %s" % (name, line_of(m.start()), w))
        for m in BATS_RE.finditer(text):
            b = os.path.basename(m.group(1))
            if not fnmatch_any(b, bats_files):
                bad.append("%s:%d: bats file %s" % (name, line_of(m.start()), m.group(1)))
        flat = re.sub(r"\s+", " ", text)
        for m in TITLE_RE.finditer(flat):
            for want in re.findall(r'"([^"]+)"', m.group(2)):
                if m.group(1) in bats_files and not quoted_title_ok(want, titles.get(m.group(1), [])):
                    bad.append("%s: test %s \"%s\"" % (name, m.group(1), want))
        for m in ENV_RE.finditer(text):
            if m.group(0) not in envs:
                bad.append("%s:%d: variable %s" % (name, line_of(m.start()), m.group(0)))
    return bad


def fnmatch_any(pattern, names):
    return any(fnmatch.fnmatchcase(n, pattern) for n in names)


if mode == "--stale":
    docs = sys.argv[3:] or sorted(glob.glob(os.path.join(root, "docs", "*.md"))) + [
        os.path.join(root, "README.md")]
    bad = stale(docs)
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)
text = index_text()
path = os.path.join(root, "docs", "api-index.md")
if mode == "--write":
    open(path, "w", encoding="utf-8").write(text)
elif mode == "--check":
    have = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    if have != text:
        sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), text.splitlines(True),
                                                   "docs/api-index.md", "from the sources"))
        print("docs/api-index.md is stale: run make api-index")
        sys.exit(1)
else:
    sys.stdout.write(text)
