#!/usr/bin/env python3
"""Check the links of the built book and of the repository's top-level Markdown files.

    .ci/check-links.py BOOK_DIR [MARKDOWN_FILE ...]

BOOK_DIR is mdBook's output (target/book). In every .html file under it, each relative `href` or
`src` must name a file that exists (a folder: its index.html), and a `#fragment` must be the id of
an element in the page it points to. Each MARKDOWN_FILE (README.md, ARCHITECTURE.md, ...) is read
as GitHub renders it: a relative link must name a file or folder of the repository, and a
`#fragment` into a Markdown file must be the GitHub slug of one of its headings. External http(s)
links are not fetched (CI is offline) but must be well-formed URLs. Exits 1 listing every broken
link as FILE: LINK: why; 0 when there is none. Standard library only.
"""

import html.parser
import os
import re
import sys
import urllib.parse

ALLOWED_SCHEMES = {"http", "https", "mailto", "data"}


def check_external(url):
    """Why an absolute URL is malformed, or None."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ALLOWED_SCHEMES:
        return f"scheme {parts.scheme!r} is not one a reader can follow"
    if parts.scheme in ("http", "https"):
        if not parts.netloc or not parts.hostname:
            return "no host"
        if any(c.isspace() for c in url):
            return "white space in the URL"
        try:
            parts.port
        except ValueError:
            return "bad port"
    return None


class Page(html.parser.HTMLParser):
    """The ids a page defines and the links it makes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif name in ("href", "src"):
                self.links.append(value)


def check_book(book):
    problems = []
    pages = {}
    for root, _, files in os.walk(book):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(root, name)
                page = Page()
                with open(path, encoding="utf-8") as f:
                    page.feed(f.read())
                pages[os.path.normpath(path)] = page
    if not pages:
        return [f"{book}: no .html files: was the book built?"]
    for path, page in sorted(pages.items()):
        shown = os.path.relpath(path, book)
        for link in page.links:
            why = check_html_link(book, path, link, pages)
            if why:
                problems.append(f"{book}/{shown}: {link}: {why}")
    return problems


def check_html_link(book, path, link, pages):
    parts = urllib.parse.urlsplit(link)
    if parts.scheme or link.startswith("//"):
        return check_external(link)
    target_path = urllib.parse.unquote(parts.path)
    if target_path:
        # A root-absolute link (mdBook's 404 page has some) is read against the book's root, where
        # the book is served.
        base = book if target_path.startswith("/") else os.path.dirname(path)
        target = os.path.normpath(os.path.join(base, target_path.lstrip("/")))
        if not (target + os.sep).startswith(os.path.normpath(book) + os.sep):
            return "points outside the book (mention repository files as `code`, not links)"
        if os.path.isdir(target):
            target = os.path.join(target, "index.html")
        if not os.path.exists(target):
            return "no such file in the built book"
    else:
        target = path
    if parts.fragment:
        if not target.endswith(".html"):
            return None
        page = pages.get(os.path.normpath(target))
        if page is None or urllib.parse.unquote(parts.fragment) not in page.ids:
            return f"no element with id {parts.fragment!r} in {os.path.relpath(target, book)}"
    return None


FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_lines(text):
    """The lines of a Markdown text outside fenced code blocks."""
    fenced = False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def github_slug(heading, seen):
    """The anchor GitHub gives a heading (and its -1, -2... when it repeats)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text)
    slug = "".join(c for c in text.lower() if c.isalnum() or c in " -_").replace(" ", "-")
    n = seen.get(slug, 0)
    seen[slug] = n + 1
    return slug if n == 0 else f"{slug}-{n}"


def markdown_anchors(path):
    seen = {}
    with open(path, encoding="utf-8") as f:
        return {github_slug(m.group(2), seen) for line in markdown_lines(f.read()) if (m := HEADING.match(line))}


def check_markdown(path):
    problems = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for line in markdown_lines(text):
        links = [m.group(1) for m in INLINE_LINK.finditer(INLINE_CODE.sub("", line))]
        if m := REFERENCE_DEF.match(line):
            links.append(m.group(1))
        for link in links:
            why = check_markdown_link(path, link)
            if why:
                problems.append(f"{path}: {link}: {why}")
    return problems


def check_markdown_link(path, link):
    parts = urllib.parse.urlsplit(link)
    if parts.scheme:
        return check_external(link)
    target_path = urllib.parse.unquote(parts.path)
    if target_path:
        target = os.path.normpath(os.path.join(os.path.dirname(path) or ".", target_path))
        if not os.path.exists(target):
            return "no such file or folder"
    else:
        target = path
    if parts.fragment and target.endswith(".md"):
        if parts.fragment not in markdown_anchors(target):
            return f"no heading with the anchor #{parts.fragment} in {target}"
    return None


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    problems = check_book(argv[1])
    for path in argv[2:]:
        problems += check_markdown(path)
    if problems:
        print(f"{len(problems)} broken link(s):")
        for problem in problems:
            print(f"  {problem}")
        return 1
    print(f"links checked: the book in {argv[1]}" + (f", {', '.join(argv[2:])}" if argv[2:] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
