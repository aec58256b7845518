"""What a file's bytes are, and the image and PDF content blocks Read sends for them.

This module owns recognising a file by its first bytes (`image_type`, `is_pdf`, `is_binary`,
`describe`: what a file that cannot be read looks like), images as ``image`` blocks (their
media type from their bytes, decoded with Pillow, downscaled to Claude Code 2.1.330's limits and
re-encoded to its byte budget: `image_content`), and PDFs as ``document`` blocks (whole when
small, else the pages asked for, extracted with pypdf: `pdf_content`).

Pillow and pypdf are imported when an image or a PDF is read, not with this module: together
they are most of a teammate's start-up imports, and most teammates never read either.

The limits are Claude Code 2.1.330's: its model catalogue's ``image_limits`` (2576 px a side,
4784 image tokens of 28 x 28 px each, the same for every model it lists), 512,000 bytes for an
image Read returns, a whole PDF only up to 10 pages and 20 MB, at most 20 pages a read.
"""

from __future__ import annotations

import base64
import io
import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from teammate.tools.base import Content, ToolError
from teammate.tools.file_lines import human_size

if TYPE_CHECKING:
    from PIL import Image
    from pypdf import PdfReader

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
MAX_IMAGE_SIDE = 2576  # the catalogue's image_limits maxWidth / maxHeight
MAX_IMAGE_TOKENS = 4784  # ... maxImageTokens
IMAGE_PATCH_PX = 28  # one image token covers 28 x 28 pixels
IMAGE_BYTES = 512_000  # the most an image Read returns may take, encoded
MAX_IMAGE_FILE_BYTES = 64 << 20  # a larger image file is refused, not decoded
MAX_DECODE_PIXELS = 50_000_000  # ... and so is one with more pixels (JPEGs: Pillow's own limit)
PDF_WHOLE_PAGES = 10  # a longer PDF needs `pages`
PDF_WHOLE_BYTES = 20 << 20  # so does a larger one; and no read sends more than this
PDF_PAGES_PER_READ = 20
MAX_PDF_BYTES = 100 << 20  # a larger PDF is not opened at all
JPEG_QUALITIES = (85, 75, 60, 45)
EXIF_ORIENTATION = 0x0112

# first bytes of formats Read cannot show, for saying what a file is
SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a ZIP archive (.docx, .xlsx, .pptx, .jar and .epub files are ZIP archives)"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\x7fELF", "an ELF executable or shared library"),
    (b"MZ", "a Windows executable or DLL"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
    (b"\xca\xfe\xba\xbe", "a Java class file or a Mach-O universal binary"),
    (b"\x00asm", "a WebAssembly module"),
    (b"SQLite format 3\x00", "an SQLite 3 database"),
    (b"%PDF-", "a PDF document"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"OggS", "Ogg audio or video"),
    (b"fLaC", "FLAC audio"),
    (b"ID3", "MP3 audio"),
)


def image_type(head: bytes) -> str | None:
    """The media type the bytes say (PNG, JPEG, GIF, WebP: what the API takes), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def is_pdf(head: bytes) -> bool:
    return head.startswith(b"%PDF-")


def is_binary(head: bytes) -> bool:
    """Whether a file that starts with `head` is not text: a NUL byte, or a known format's
    first bytes in what is not UTF-8 (a CSV may well start with "ID3,")."""
    if b"\0" in head:
        return True
    return any(head.startswith(magic) for magic, _ in SIGNATURES) and not _utf8(head)


def _utf8(head: bytes) -> bool:
    """Whether `head` is UTF-8 (a character cut at its end allowed)."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


def describe(head: bytes) -> str:
    """What a file that starts with `head` looks like, for a refusal."""
    if not head:
        return "an empty file"
    if head[4:8] == b"ftyp":
        return "an MP4, MOV or HEIC media file"
    if head[:4] == b"RIFF":
        return f"a RIFF file ({_shown(head[8:12])}: WAV, AVI and WebP are RIFF files)"
    for magic, what in SIGNATURES:
        if head.startswith(magic):
            return what
    start = head[:200].lstrip().lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return f'an HTML document (it starts "{_shown(head)}")'
    if start.startswith((b"<?xml", b"<svg")):
        return f'an XML or SVG document (it starts "{_shown(head)}")'
    if b"\0" not in head:
        return f'text (it starts "{_shown(head)}")'
    hexed = " ".join(f"{b:02x}" for b in head[:8])
    return f"binary data in no format Read knows (its first bytes: {hexed})"


def _shown(data: bytes) -> str:
    return "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in data[:24])


# --- images ---


@dataclass(frozen=True)
class Fitted:
    """An image as sent: its bytes, media type and size, and its size in the file."""

    data: bytes
    media_type: str
    size: tuple[int, int]
    original: tuple[int, int]


def image_content(data: bytes, name: str) -> Content:
    """An ``image`` block of the image file `name` holding `data` (downscaled and re-encoded
    if it is over the limits), with a note of its size when it was downscaled."""
    media_type = image_type(data)
    if media_type is None:
        raise ToolError(
            f"{name} has an image's name but its bytes are not a PNG, JPEG, GIF or WebP image: "
            f"it looks like {describe(data[:512])} ({human_size(len(data))}). A download that "
            "saved an error page instead of the image does this; check it with "
            f'Bash: file "{name}".'
        )
    fitted = fit_image(data, media_type, name)
    blocks: Content = [image_block(fitted.data, fitted.media_type)]
    if fitted.size != fitted.original:
        (width, height), (shown_w, shown_h) = fitted.original, fitted.size
        blocks.append(
            {
                "type": "text",
                "text": f"[Image {name}: {width}x{height} pixels, shown downscaled to "
                f"{shown_w}x{shown_h}; multiply coordinates in it by {width / shown_w:.2f} for "
                "the original.]",
            }
        )
    return blocks


def image_block(data: bytes, media_type: str) -> dict[str, Any]:
    source = {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode()}
    return {"type": "image", "source": source}


def fit_image(data: bytes, media_type: str, name: str) -> Fitted:
    """The image within the limits: as it is when it already is, else downscaled to the most
    pixels they allow and re-encoded (PNG, or JPEG when PNG is too large) to `IMAGE_BYTES`."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                _check_pixels(image, media_type, name)
                original = image.size
                target = target_size(*original)
                if target == original and len(data) <= IMAGE_BYTES:
                    image.load()  # a damaged file is refused here, never sent to the API
                    return Fitted(data, media_type, original, original)
                return _shrunk(image, media_type, target, name)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as exc:
        raise ToolError(f"{name} is a damaged or unsupported {media_type} file: {exc}") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ToolError(f"{name} has too many pixels for Read to decode.") from None


def _check_pixels(image: Image.Image, media_type: str, name: str) -> None:
    from PIL import Image

    width, height = image.size
    limit = MAX_DECODE_PIXELS
    if media_type == "image/jpeg":  # decoded at a fraction of its size (`Image.draft`)
        limit = Image.MAX_IMAGE_PIXELS or MAX_DECODE_PIXELS
    if width * height > limit:
        raise ToolError(
            f"{name} is {width}x{height} pixels, more than Read decodes ({limit:,} pixels). "
            "Make a smaller copy first (e.g. Bash: convert in.png -resize 2576x2576 out.png)."
        )


def image_tokens(width: int, height: int) -> int:
    return math.ceil(width / IMAGE_PATCH_PX) * math.ceil(height / IMAGE_PATCH_PX)


def target_size(width: int, height: int) -> tuple[int, int]:
    """The largest size of the same shape within `MAX_IMAGE_SIDE` and `MAX_IMAGE_TOKENS`."""
    scale = min(1.0, MAX_IMAGE_SIDE / width, MAX_IMAGE_SIDE / height)
    fitted = max(1, round(width * scale)), max(1, round(height * scale))
    if image_tokens(*fitted) <= MAX_IMAGE_TOKENS:
        return fitted
    if height > width:
        tall = target_size(height, width)
        return tall[1], tall[0]
    ratio = width / height
    low, high = 1, fitted[0]  # the widest width that fits, by bisection
    while low + 1 < high:
        middle = (low + high) // 2
        if image_tokens(middle, max(1, round(middle / ratio))) <= MAX_IMAGE_TOKENS:
            low = middle
        else:
            high = middle
    return low, max(1, round(low / ratio))


def _shrunk(image: Image.Image, media_type: str, target: tuple[int, int], name: str) -> Fitted:
    """`image` at `target` size, turned upright as its EXIF says, encoded within
    `IMAGE_BYTES`; smaller again while it does not fit."""
    from PIL import Image, ImageOps

    original = image.size
    if media_type == "image/jpeg":
        image.draft("RGB", target)  # decode at 1/2, 1/4 or 1/8 scale when that is enough
    if image.getexif().get(EXIF_ORIENTATION, 1) in (5, 6, 7, 8):  # a quarter turn
        original, target = (original[1], original[0]), (target[1], target[0])
    upright = _resizable(ImageOps.exif_transpose(image))
    lanczos = Image.Resampling.LANCZOS
    for _ in range(6):
        resized = upright if upright.size == target else upright.resize(target, lanczos)
        encoded = _encoded(resized, prefer_jpeg=media_type == "image/jpeg")
        if encoded is not None:
            return Fitted(encoded[0], encoded[1], resized.size, original)
        target = max(1, target[0] * 3 // 4), max(1, target[1] * 3 // 4)
    raise ToolError(f"{name} could not be made to fit in {human_size(IMAGE_BYTES)}.")


def _resizable(image: Image.Image) -> Image.Image:
    """`image` in a mode that resizes smoothly (a palette or 16-bit image does not)."""
    if image.mode in ("L", "LA", "RGB", "RGBA"):
        return image
    return image.convert("RGBA" if _has_alpha(image) else "RGB")


def _encoded(image: Image.Image, prefer_jpeg: bool) -> tuple[bytes, str] | None:
    """`image` as PNG if that fits `IMAGE_BYTES` (not tried for a photo), else as JPEG at the
    best quality that fits; None if none does."""
    if not prefer_jpeg:
        png = _saved(image, "PNG", optimize=True)
        if len(png) <= IMAGE_BYTES:
            return png, "image/png"
    rgb = _flattened(image)
    for quality in JPEG_QUALITIES:
        jpeg = _saved(rgb, "JPEG", quality=quality, optimize=True)
        if len(jpeg) <= IMAGE_BYTES:
            return jpeg, "image/jpeg"
    return None


def _saved(image: Image.Image, kind: str, **options: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, kind, **options)
    return out.getvalue()


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in image.info


def _flattened(image: Image.Image) -> Image.Image:
    """`image` as RGB, transparent parts on white (JPEG has no alpha)."""
    from PIL import Image

    if not _has_alpha(image):
        return image.convert("RGB")
    rgba = image.convert("RGBA")
    white = Image.new("RGB", rgba.size, (255, 255, 255))
    white.paste(rgba, mask=rgba.getchannel("A"))
    return white


# --- PDFs ---


def pdf_content(handle: BinaryIO, size: int, pages: str | None, name: str) -> Content:
    """A ``document`` block of the PDF `name`: the whole file when it is small enough, else
    only `pages` ("3", "1-5", "10-"), after a text block saying what it holds."""
    if size == 0:
        raise ToolError(f"{name} is empty (0 bytes): there is no PDF in it.")
    handle.seek(0)
    head = handle.read(512)
    if not is_pdf(head):
        raise ToolError(
            f"{name} has a PDF's name but is not a PDF (no %PDF- header): it looks like "
            f"{describe(head)} ({human_size(size)})."
        )
    if size > MAX_PDF_BYTES:
        raise ToolError(
            f"{name} is a PDF of {human_size(size)}, more than Read opens "
            f"({human_size(MAX_PDF_BYTES)}). Split it first (e.g. Bash: qpdf --pages)."
        )
    reader = _opened_pdf(handle, name)
    count = len(reader.pages)
    if pages is None:
        return _whole_pdf(handle, reader, size, count, name)
    first, last = page_range(pages, count)
    data = _extracted(reader, first, last, name)
    if len(data) > PDF_WHOLE_BYTES:
        raise ToolError(
            f"Pages {first}-{last} of {name} make a PDF of {human_size(len(data))}, more than a "
            f"read sends ({human_size(PDF_WHOLE_BYTES)}). Ask for fewer pages."
        )
    what = f"page {first}" if first == last else f"pages {first}-{last}"
    text = f"PDF {name}: {what} of {count} ({human_size(len(data))} as sent)."
    return [{"type": "text", "text": text}, document_block(data)]


def document_block(data: bytes) -> dict[str, Any]:
    encoded = base64.b64encode(data).decode("ascii")
    source = {"type": "base64", "media_type": "application/pdf", "data": encoded}
    return {"type": "document", "source": source}


def _whole_pdf(handle: BinaryIO, reader: PdfReader, size: int, count: int, name: str) -> Content:
    if count > PDF_WHOLE_PAGES or size > PDF_WHOLE_BYTES:
        reason = (
            f"{count} pages, more than Read takes at once ({PDF_WHOLE_PAGES})"
            if count > PDF_WHOLE_PAGES
            else f"{count} pages in {human_size(size)}, more than Read sends whole "
            f"({human_size(PDF_WHOLE_BYTES)})"
        )
        raise ToolError(
            f"{name} has {reason}. Pass pages to read part of it, e.g. pages: "
            f'"1-{min(count, 5)}" (at most {PDF_PAGES_PER_READ} pages a read).'
        )
    if reader.is_encrypted:  # opened with the empty password: send it decrypted
        data = _extracted(reader, 1, count, name)
    else:
        handle.seek(0)
        data = handle.read(PDF_WHOLE_BYTES + 1)
    text = f"PDF {name}: {count} {'page' if count == 1 else 'pages'}, {human_size(size)}."
    return [{"type": "text", "text": text}, document_block(data)]


def page_range(pages: str, count: int) -> tuple[int, int]:
    """The first and last page (1-based, within the document) that `pages` asks for."""
    first, last = _parsed_pages(pages)
    if first > count:
        raise ToolError(
            f'pages "{pages}" is outside the document: it has {count} '
            f"{'page' if count == 1 else 'pages'}."
        )
    last = min(count if last is None else last, count)
    if last - first + 1 > PDF_PAGES_PER_READ:
        raise ToolError(
            f'pages "{pages}" covers {last - first + 1} pages; a read takes at most '
            f'{PDF_PAGES_PER_READ} (e.g. pages: "{first}-{first + PDF_PAGES_PER_READ - 1}").'
        )
    return first, last


def _parsed_pages(pages: str) -> tuple[int, int | None]:
    """("3") -> (3, 3), ("1-5") -> (1, 5), ("10-") -> (10, None: to the end)."""
    text = pages.strip()
    first_text, dash, last_text = text.partition("-")
    first_text, last_text = first_text.strip(), last_text.strip()
    valid = first_text.isdigit() and (not last_text or last_text.isdigit())
    valid = valid and len(first_text) <= 9 and len(last_text) <= 9 and text.isascii()
    first = int(first_text) if valid else 0
    last = int(last_text) if valid and last_text else (None if dash else first)
    if not valid or first < 1 or (last is not None and last < first):
        raise ToolError(
            f'Invalid pages "{pages}": give one page ("3") or one range ("1-5", or "10-" for '
            "page 10 to the end); pages count from 1. Read separate ranges one at a time."
        )
    return first, last


def _opened_pdf(handle: BinaryIO, name: str) -> PdfReader:
    """The PDF's reader (lazy: pages are parsed when used); encrypted ones are opened with
    the empty password or refused."""
    from pypdf import PasswordType, PdfReader

    handle.seek(0)
    try:
        reader = PdfReader(handle)
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise ToolError(f"{name} is a password-protected PDF; Read cannot open it.")
        len(reader.pages)
    except ToolError:
        raise
    except Exception as exc:  # pypdf raises many kinds on a damaged file
        raise ToolError(f"{name} is a damaged PDF, or one pypdf cannot read: {exc}") from None
    return reader


def _extracted(reader: PdfReader, first: int, last: int, name: str) -> bytes:
    """Pages `first`..`last` as a PDF of their own."""
    from pypdf import PdfWriter

    try:
        writer = PdfWriter()
        for index in range(first - 1, last):
            writer.add_page(reader.pages[index])
        out = io.BytesIO()
        writer.write(out)
    except Exception as exc:  # a damaged page
        raise ToolError(f"Pages {first}-{last} of {name} could not be extracted: {exc}") from None
    return out.getvalue()
