"""PDF, DOCX and HTML files -> their text, with where each page or section starts.

Read through well-kept libraries, installed with the `documents` extra
(`pip install -e ".[documents]"`): pypdf (pure Python, BSD), python-docx (MIT) and
beautifulsoup4 (MIT). Without them such a file is skipped with the command that installs
them; with them, a file that holds no text (a scanned PDF: OCR is not done here) or cannot be
parsed is skipped with its reason, never half read.

Provenance goes into `documents.metadata`: `pages` (PDF) or `sections` (DOCX, HTML headings)
as `{"start": character offset in the text, ...}`, so a chunk can be traced to its page.
"""

from __future__ import annotations

import io
from typing import Callable

from graphrag_ray.errors import InputError

# (text, title or None, metadata)
Read = tuple[str, str | None, dict]
_EXTRA = 'pip install -e ".[documents]"'
_HEADINGS = ("h1", "h2", "h3")


def _missing(library: str, suffix: str) -> InputError:
    return InputError(f"reading .{suffix} files needs {library}: {_EXTRA}")


def _joined(parts: list[tuple[dict, str]], key: str) -> tuple[str, list[dict]]:
    """Non-empty texts joined by blank lines, and where each starts."""
    text, marks = "", []
    for mark, part in parts:
        part = part.strip()
        if not part:
            continue
        if text:
            text += "\n\n"
        marks.append({**mark, "start": len(text)})
        text += part
    if not text:
        raise InputError(f"no text in it ({key} empty)")
    return text, marks


def read_pdf(data: bytes) -> Read:
    try:
        import pypdf
    except ImportError:
        raise _missing("pypdf", "pdf") from None
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise InputError("encrypted PDF (no password is tried)")
        pages = [({"page": number}, page.extract_text() or "")
                 for number, page in enumerate(reader.pages, start=1)]
        title = (reader.metadata or {}).get("/Title")
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types for broken files
        raise InputError(f"not a readable PDF: {exc}") from None
    try:
        text, marks = _joined(pages, "every page")
    except InputError:
        raise InputError("no text in this PDF (scanned pages need OCR, which is not done "
                         "here)") from None
    return text, str(title) if title else None, {"pages": marks, "page_count": len(pages)}


def read_docx(data: bytes) -> Read:
    try:
        import docx
    except ImportError:
        raise _missing("python-docx", "docx") from None
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - a zip or XML error, whatever the library raises
        raise InputError(f"not a readable DOCX: {exc}") from None
    sections: list[tuple[dict, str]] = []
    heading, lines = None, []
    for paragraph in document.paragraphs:
        if paragraph.style is not None and paragraph.style.name.startswith(("Heading", "Title")):
            sections.append(({"heading": heading}, "\n".join(lines)))
            heading, lines = paragraph.text.strip(), [paragraph.text]
        else:
            lines.append(paragraph.text)
    sections.append(({"heading": heading}, "\n".join(lines)))
    text, marks = _joined(sections, "every paragraph")
    title = document.core_properties.title or None
    return text, title, {"sections": marks}


def read_html(data: bytes) -> Read:
    try:
        from bs4 import BeautifulSoup
    except ImportError:
        raise _missing("beautifulsoup4", "html") from None
    soup = BeautifulSoup(data, "html.parser")  # the standard library's parser: no lxml needed
    title = soup.title.get_text(" ", strip=True) if soup.title else None
    for hidden in soup(["head", "script", "style", "noscript", "template"]):
        hidden.decompose()
    body = soup.body or soup
    sections: list[tuple[dict, str]] = []
    heading, pieces = None, []
    for element in body.find_all(list(_HEADINGS) + ["p", "li", "pre", "td", "blockquote",
                                                    "div"]):
        if element.name == "div" and element.find(["p", "div"] + list(_HEADINGS)):
            continue  # a container: its blocks come on their own
        piece = element.get_text(" ", strip=True)
        if element.name in _HEADINGS:
            sections.append(({"heading": heading}, "\n".join(pieces)))
            heading, pieces = piece, [piece]
        elif piece and not element.find_parent(["li", "td", "pre", "blockquote", "p"]):
            pieces.append(piece)
    sections.append(({"heading": heading}, "\n".join(pieces)))
    try:
        text, marks = _joined(sections, "every block")
    except InputError:
        text = body.get_text("\n", strip=True)  # no block elements: the bare text
        if not text:
            raise InputError("no text in this HTML") from None
        marks = [{"heading": None, "start": 0}]
    return text, title, {"sections": marks}


READERS: dict[str, Callable[[bytes], Read]] = {
    "pdf": read_pdf, "docx": read_docx, "html": read_html, "htm": read_html}
