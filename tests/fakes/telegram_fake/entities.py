"""Bot API message entities: UTF-16 offsets, ordering, and links (text_link / text_mention)."""

from __future__ import annotations

import re
from typing import Any

Entity = dict[str, Any]


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def byte_offset(src: str, index: int) -> int:
    return len(src[:index].encode("utf-8"))


def sort_entities(entities: list[Entity]) -> list[Entity]:
    return sorted(entities, key=lambda e: (e["offset"], -e["length"]))


def link_entity(kind_url: str, offset: int, length: int) -> Entity | None:
    url = kind_url.strip()
    user = re.fullmatch(r"tg://user\?id=(\d+)", url)
    if user:
        mentioned = {"id": int(user.group(1)), "is_bot": False, "first_name": ""}
        return {"type": "text_mention", "offset": offset, "length": length, "user": mentioned}
    if re.match(r"(?i)(https?|tg|ton|ftp)://\S", url):
        return {"type": "text_link", "offset": offset, "length": length, "url": url}
    if re.fullmatch(r"(?:[\w-]+\.)+[A-Za-z]{2,}(?:/\S*)?", url):
        return {"type": "text_link", "offset": offset, "length": length, "url": f"http://{url}"}
    return None
