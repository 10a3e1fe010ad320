"""MarkdownV2 and legacy Markdown, parsed as tdlib parses them (errors worded the same)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .entities import Entity, byte_offset, link_entity, sort_entities, utf16_len
from .errors import cant_parse

RESERVED = "_*[]()~`>#+-=|{}.!\n"
NAMES = {
    "bold": "Bold", "italic": "Italic", "underline": "Underline", "strikethrough":
    "Strikethrough", "spoiler": "Spoiler", "code": "Code", "pre": "Pre", "text_link":
    "TextUrl", "custom_emoji": "CustomEmoji", "blockquote": "BlockQuote",
}  # fmt: skip


@dataclass
class _Open:
    kind: str
    argument: str
    start: int
    """UTF-16 offset in the output."""
    at: int
    """Index in the source where the entity began."""
    out_index: int

    @property
    def name(self) -> str:
        return "PreCode" if self.kind == "pre" and self.argument else NAMES[self.kind]


class MarkdownV2:
    def __init__(self, src: str) -> None:
        self.src = src
        self.out: list[str] = []
        self.u16 = 0
        self.entities: list[Entity] = []
        self.stack: list[_Open] = []
        self.quote = False

    def ch(self, k: int) -> str:
        return self.src[k] if k < len(self.src) else "\0"

    def emit(self, chars: str) -> None:
        self.out.append(chars)
        self.u16 += utf16_len(chars)

    def unclosed(self, entity: _Open) -> Exception:
        offset = byte_offset(self.src, entity.at)
        return cant_parse(f"Can't find end of {entity.name} entity at byte offset {offset}")

    def run(self) -> tuple[str, list[Entity]]:
        i = 0
        while i < len(self.src):
            c = self.src[i]
            if c == "\\" and 0 < ord(self.ch(i + 1)) <= 126:
                self.emit(self.src[i + 1])
                i += 2
                continue
            top = self.stack[-1] if self.stack else None
            reserved = "`" if top is not None and top.kind in ("code", "pre") else RESERVED
            if c not in reserved:
                self.emit(c)
                i += 1
                continue
            if top is not None and self.is_end(top, c, i):
                i = self.close(top, c, i)
            else:
                i = self.open(c, i)
        if self.quote and self.stack and self.stack[-1].kind == "blockquote":
            self.quote = False
            self.add(self.stack.pop(), "")
        if self.stack:
            raise self.unclosed(self.stack[-1])
        return "".join(self.out), sort_entities(self.entities)

    def is_end(self, top: _Open, c: str, i: int) -> bool:
        if self.quote and c == "\n" and self.ch(i + 1) != ">":
            return True
        nxt = self.ch(i + 1)
        return {
            "bold": c == "*",
            "italic": c == "_" and nxt != "_",
            "code": c == "`",
            "pre": c == "`" and self.src[i + 1 : i + 3] == "``",
            "text_link": c == "]",
            "underline": c == "_" and nxt == "_",
            "strikethrough": c == "~",
            "spoiler": c == "|" and nxt == "|",
            "custom_emoji": c == "]",
        }.get(top.kind, False)

    def reserved_error(self, c: str) -> Exception:
        return cant_parse(
            f"Character '{c}' is reserved and must be escaped with the preceding '\\'"
        )

    def open(self, c: str, i: int) -> int:
        at, argument, nxt = i, "", self.ch(i + 1)
        if c == "_":
            kind = "underline" if nxt == "_" else "italic"
            i += 1 if nxt == "_" else 0
        elif c in "*~[":
            kind = {"*": "bold", "~": "strikethrough", "[": "text_link"}[c]
        elif c == "|" and nxt == "|":
            kind, i = "spoiler", i + 1
        elif c == "!" and nxt == "[":
            kind, i = "custom_emoji", i + 1
        elif c == "`" and self.src[i + 1 : i + 3] == "``":
            kind, i = "pre", i + 3
            end = i
            while not self.ch(end).isspace() and self.ch(end) not in "`\0":
                end += 1
            if end != i and end < len(self.src) and self.src[end] != "`":
                argument, i = self.src[i:end], end
            if self.ch(i) in "\r\n":
                pair = self.ch(i + 1) in "\r\n" and self.ch(i) != self.ch(i + 1)
                i += 2 if pair else 1
            i -= 1
        elif c == "`":
            kind = "code"
        elif c == "\n":
            self.emit("\n")
            if nxt != ">":
                return i + 1
            if self.quote:
                return i + 2
            kind, i, self.quote = "blockquote", i + 1, True
        elif c == ">" and i == 0:
            kind, self.quote = "blockquote", True
        else:
            raise self.reserved_error(c)
        self.stack.append(_Open(kind, argument, self.u16, at, len(self.out)))
        return i + 1

    def close(self, top: _Open, c: str, i: int) -> int:
        if c == "\n" and top.kind != "blockquote":
            raise self.unclosed(top)
        self.stack.pop()
        url = ""
        if top.kind in ("underline", "spoiler"):
            i += 1
        elif top.kind == "pre":
            i += 2
        elif top.kind == "blockquote":
            self.emit("\n")
            self.quote = False
        elif top.kind in ("text_link", "custom_emoji"):
            if self.ch(i + 1) != "(":
                if top.kind == "custom_emoji":
                    raise cant_parse("Custom emoji entity must contain a tg://emoji URL")
                url = "".join(self.out[top.out_index :])
            else:
                url, i = self.read_url(i + 2, top.kind)
        self.add(top, url)
        return i + 1

    def read_url(self, i: int, kind: str) -> tuple[str, int]:
        begin, parts = i, []
        while i < len(self.src) and self.src[i] != ")":
            if self.src[i] == "\\" and 0 < ord(self.ch(i + 1)) <= 126:
                parts.append(self.src[i + 1])
                i += 2
                continue
            parts.append(self.src[i])
            i += 1
        if self.ch(i) != ")":
            what = "a custom emoji URL" if kind == "custom_emoji" else "a URL"
            raise cant_parse(
                f"Can't find end of {what} at byte offset {byte_offset(self.src, begin)}"
            )
        return "".join(parts), i

    def add(self, top: _Open, url: str) -> None:
        length = self.u16 - top.start
        if length == 0:
            return
        if top.kind == "text_link":
            link = link_entity(url, top.start, length)
            if link is not None:
                self.entities.append(link)
            return
        entity: Entity = {"type": top.kind, "offset": top.start, "length": length}
        if top.kind == "custom_emoji":
            match = re.fullmatch(r"tg://emoji\?id=(\d+)", url)
            if match is None:
                raise cant_parse("Custom emoji URL must have an emoji identifier")
            entity["custom_emoji_id"] = match.group(1)
        if top.kind == "pre" and top.argument:
            entity["language"] = top.argument
        self.entities.append(entity)


def markdown_legacy(src: str) -> tuple[str, list[Entity]]:
    """parse_mode "Markdown": *bold*, _italic_, `code`, ```pre```, [text](url); no nesting."""
    out: list[str] = []
    entities: list[Entity] = []
    u16, i, n = 0, 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\" and i + 1 < n and src[i + 1] in "_*`[":
            out.append(src[i + 1])
            u16, i = u16 + 1, i + 2
            continue
        if c not in "_*`[":
            out.append(c)
            u16, i = u16 + utf16_len(c), i + 1
            continue
        begin, pre = i, c == "`" and src[i + 1 : i + 3] == "``"
        end_char = "]" if c == "[" else c
        i += 3 if pre else 1
        start, inner = u16, []
        while i < n and (src[i] != end_char or (pre and src[i + 1 : i + 3] != "``")):
            inner.append(src[i])
            u16, i = u16 + utf16_len(src[i]), i + 1
        if i == n:
            offset = byte_offset(src, begin)
            raise cant_parse(f"Can't find end of the entity starting at byte offset {offset}")
        out.extend(inner)
        length = u16 - start
        if c == "[":
            url = "".join(inner)
            if src[i + 1 : i + 2] == "(":
                close = src.find(")", i + 2)
                url, i = src[i + 2 : close if close >= 0 else n], close if close >= 0 else n - 1
            link = link_entity(url, start, length) if length else None
            if link is not None:
                entities.append(link)
        elif length:
            kind = {"_": "italic", "*": "bold", "`": "pre" if pre else "code"}[c]
            entities.append({"type": kind, "offset": start, "length": length})
        i += 3 if pre else 1
    return "".join(out), sort_entities(entities)
