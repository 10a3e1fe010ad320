"""Photo uploads: Telegram's checks on the bytes, and the PhotoSize list it answers with."""

from __future__ import annotations

import hashlib
import struct

from .args import Upload
from .core import Core, StoredPhoto
from .errors import bad_request
from .limits import MAX_PHOTO_BYTES
from .world import JSON

THUMB_SIDES = (90, 320, 800, 1280, 2560)
JPEG_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a PNG or JPEG; None for anything else."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if marker in JPEG_SOF:
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(width), int(height)
        i += 2 + length
    return None


def resolve(core: Core, value: Upload | str | None) -> StoredPhoto:
    """The photo of a sendPhoto: a new upload, or a file_id sent before."""
    if value is None:
        raise bad_request("there is no photo in the request")
    if isinstance(value, str):
        if value.startswith(("http://", "https://")):
            # The fake never fetches URLs (nor would tallybot hand Telegram a user's URL).
            raise bad_request("failed to get HTTP URL content")
        known = core.photos.get(value)
        if known is None:
            raise bad_request("wrong file identifier/HTTP URL specified")
        return known
    data = value.data
    if not data:
        raise bad_request("file must be non-empty")
    if len(data) > MAX_PHOTO_BYTES:
        raise bad_request("file is too big")
    size = image_size(data)
    if size is None:
        raise bad_request("IMAGE_PROCESS_FAILED")
    width, height = size
    if width + height > 10_000 or max(width, height) > 20 * min(width, height):
        raise bad_request("PHOTO_INVALID_DIMENSIONS")
    digest = hashlib.sha256(data).hexdigest()
    photo = StoredPhoto(data, _sizes(digest, width, height, len(data)), digest)
    core.photos[photo.sizes[-1]["file_id"]] = photo
    return photo


def _sizes(digest: str, width: int, height: int, n_bytes: int) -> list[JSON]:
    longest = max(width, height)
    sizes: list[JSON] = []
    for k, side in enumerate(THUMB_SIDES):
        scale = min(1.0, side / longest)
        w, h = max(1, round(width * scale)), max(1, round(height * scale))
        sizes.append(
            {
                "file_id": f"AgACAgIAAxkBAAI{digest[:24]}{k}",
                "file_unique_id": f"AQAD{digest[:12]}{k}",
                "width": w,
                "height": h,
                "file_size": max(1, round(n_bytes * scale * scale)),
            }
        )
        if side >= longest:
            break
    return sizes
