"""The King James Version text, as Debian's bible-kjv packages ship it, split into books of verses.

`bible` (package bible-kjv) decompresses /usr/lib/bible.data (package bible-kjv-text). Each output line is
`<Book><chapter>:<verse> <text>`; the reference is dropped, so the model learns the prose alone.
"""

import re
import shutil
import subprocess

_REF = re.compile(r"^([1-3]?[A-Za-z]+)(\d+):(\d+) (.*)$")


def read_books():
    """Returns [(book, [verse text, ...]), ...] in canonical order (Genesis .. Revelation)."""
    if shutil.which("bible") is None:
        raise SystemExit("error: the `bible` program is missing: apt-get install bible-kjv bible-kjv-text")
    out = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True, text=True,
                         env={"COLUMNS": "100000", "PATH": "/usr/bin:/bin"}).stdout
    books = []
    for line in out.splitlines():
        m = _REF.match(line)
        if not m:
            raise SystemExit(f"error: unexpected line from `bible`: {line[:80]!r}")
        book, chapter, verse, text = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4).strip()
        if not books or books[-1][0] != book:
            books.append((book, []))
        books[-1][1].append(text)
    if len(books) != 66:  # Ge Exo .. Ruth .. Jonah .. Phmn .. Rev: the names `bible` prints
        raise SystemExit(f"error: expected the 66 books of the KJV, got {len(books)}")
    return books


def book_text(verses):
    """A book as the model sees it: one verse per line."""
    return "".join(v + "\n" for v in verses)
