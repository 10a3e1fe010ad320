"""parse_mode handling the way tdlib does it: text plus entities, or Telegram's parse error.

``parse(text, parse_mode)`` returns the plain text and the entities (UTF-16 offsets, Bot
API shape) or raises "Bad Request: can't parse entities: ..." with tdlib's wording and
UTF-8 byte offsets. ``detect(text)`` finds what Telegram links by itself in any message:
mentions, bot commands, hashtags, URLs and e-mail addresses (approximate patterns: a
mention is @ plus 4-32 of [A-Za-z0-9_]; a URL without a scheme needs a common TLD).
"""

from __future__ import annotations

import re

from .entities import Entity, byte_offset, link_entity, sort_entities, utf16_len
from .errors import bad_request, cant_parse
from .markdown import MarkdownV2, markdown_legacy

HTML_TAGS = frozenset(
    {
        "a", "b", "strong", "i", "em", "s", "strike", "del", "u", "ins", "tg-spoiler",
        "tg-emoji", "span", "pre", "code", "blockquote",
    }
)  # fmt: skip
HTML_SIMPLE = {
    "b": "bold", "strong": "bold", "i": "italic", "em": "italic", "u": "underline",
    "ins": "underline", "s": "strikethrough", "strike": "strikethrough",
    "del": "strikethrough", "tg-spoiler": "spoiler", "span": "spoiler",
}  # fmt: skip
NAMED_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
COMMON_TLDS = (
    "com", "org", "net", "io", "me", "ru", "de", "uk", "co", "gov", "edu", "info", "app",
    "dev", "ly", "gg", "xyz", "ai", "us", "eu", "fr", "tv",
)  # fmt: skip
_DETECTORS = [
    ("bot_command", re.compile(r"(?<![\w/<>])/\w{1,64}(?:@\w{3,32})?(?![\w/<>])", re.ASCII)),
    ("email", re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b", re.ASCII)),
    ("mention", re.compile(r"(?<!\w)@\w{4,32}(?!\w)", re.ASCII)),
    ("hashtag", re.compile(r"(?<!\w)#\w*[^\W\d_]\w*")),
    (
        "url",
        re.compile(
            r"(?<![\w@.])(?:(?:https?|tg|ftp)://\S+|(?:[A-Za-z0-9-]+\.)+(?:"
            + "|".join(COMMON_TLDS)
            + r")\b(?:/\S*)?)",
            re.IGNORECASE,
        ),
    ),
]
_NO_DETECT_INSIDE = {"code", "pre", "text_link", "text_mention", "custom_emoji"}


def parse(text: str, parse_mode: str | None) -> tuple[str, list[Entity]]:
    """(plain text, entities) for a parse_mode of None, "HTML", "MarkdownV2" or "Markdown"."""
    if not parse_mode:
        return text, []
    mode = parse_mode.lower()
    if mode == "html":
        return _Html(text).run()
    if mode == "markdownv2":
        return MarkdownV2(text).run()
    if mode == "markdown":
        return markdown_legacy(text)
    raise bad_request("unsupported parse_mode")


def detect(text: str, entities: list[Entity]) -> list[Entity]:
    """The entities Telegram adds by itself, left out where a parsed entity covers code/links."""
    blocked = [
        (e["offset"], e["offset"] + e["length"]) for e in entities if e["type"] in _NO_DETECT_INSIDE
    ]
    found: list[Entity] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _DETECTORS:
        for match in pattern.finditer(text):
            start = utf16_len(text[: match.start()])
            end = start + utf16_len(match.group())
            if any(s < end and start < e for s, e in blocked + taken):
                continue
            taken.append((start, end))
            found.append({"type": kind, "offset": start, "length": end - start})
    return sort_entities(entities + found)


class _Html:
    def __init__(self, src: str) -> None:
        self.src, self.i = src, 0
        self.out: list[str] = []
        self.u16 = 0
        self.entities: list[Entity] = []
        self.stack: list[tuple[str, str, int, int]] = []  # tag, argument, u16 start, out index

    def ch(self, k: int) -> str:
        return self.src[k] if k < len(self.src) else "\0"

    def err(self, message: str, at: int) -> Exception:
        return cant_parse(f"{message} at byte offset {byte_offset(self.src, at)}")

    def emit(self, chars: str) -> None:
        self.out.append(chars)
        self.u16 += utf16_len(chars)

    def run(self) -> tuple[str, list[Entity]]:
        src = self.src
        while self.i < len(src):
            c = src[self.i]
            if c == "&" and (decoded := self.entity()) is not None:
                self.emit(decoded)
            elif c != "<":
                self.emit(c)
                self.i += 1
            elif self.ch(self.i + 1) != "/":
                self.start_tag()
            else:
                self.end_tag()
        if self.stack:
            raise cant_parse(f"Can't find end tag corresponding to start tag {self.stack[-1][0]}")
        for entity in self.entities:
            if entity["type"] == "code":
                entity.pop("language", None)  # a language survives only on <pre>
        return "".join(self.out), sort_entities(self.entities)

    def entity(self) -> str | None:
        m = re.compile(r"&(?:#x([0-9a-fA-F]+)|#(\d+)|([A-Za-z]+));?").match(self.src, self.i)
        if m is None:
            return None
        if m.group(3) is not None:
            value = NAMED_ENTITIES.get(m.group(3))
        else:
            code = int(m.group(1), 16) if m.group(1) else int(m.group(2))
            value = chr(code) if 0 < code < 0x10FFFF and len(m.group()) < 11 else None
        if value is not None:
            self.i = m.end()
        return value

    def start_tag(self) -> None:
        begin = self.i
        j = begin + 1
        while not self.ch(j).isspace() and self.ch(j) not in ">\0":
            j += 1
        if self.ch(j) == "\0":
            raise self.err("Unclosed start tag", begin)
        tag = self.src[begin + 1 : j].lower()
        if tag not in HTML_TAGS:
            raise self.err(f'Unsupported start tag "{tag}"', begin)
        argument, j = self.attributes(tag, begin, j)
        if tag == "span" and argument != "spoiler":
            raise self.err('Tag "span" must have class "tg-spoiler"', begin)
        self.stack.append((tag, argument, self.u16, len(self.out)))
        self.i = j + 1

    def attributes(self, tag: str, begin: int, j: int) -> tuple[str, int]:
        argument = ""
        while self.ch(j) != ">":
            while self.ch(j).isspace() and self.ch(j) != "\0":
                j += 1
            if self.ch(j) == ">":
                break
            name_start = j
            while not self.ch(j).isspace() and self.ch(j) not in "=\0>":
                j += 1
            name = self.src[name_start:j]
            if not name:
                raise self.err(f'Empty attribute name in the tag "{tag}"', begin)
            if tag == "blockquote" and name == "expandable":
                argument = "expandable"
                continue
            while self.ch(j).isspace() and self.ch(j) != "\0":
                j += 1
            if self.ch(j) != "=":
                raise self.err(
                    f'Expected equal sign in declaration of an attribute of the tag "{tag}"', begin
                )
            j += 1
            while self.ch(j).isspace() and self.ch(j) != "\0":
                j += 1
            if self.ch(j) == "\0":
                raise self.err(f'Unclosed start tag "{tag}"', begin)
            value, j = self.attribute_value(j)
            if self.ch(j) == "\0":
                raise self.err("Unclosed start tag", begin)
            if tag == "a" and name == "href":
                argument = value
            elif tag == "code" and name == "class" and value.startswith("language-"):
                argument = value[9:]
            elif tag == "span" and name == "class" and value.startswith("tg-"):
                argument = value[3:]
            elif tag == "tg-emoji" and name == "emoji-id":
                argument = value
        return argument, j

    def attribute_value(self, j: int) -> tuple[str, int]:
        quote = self.ch(j)
        if quote not in "'\"":
            start = j
            while self.ch(j).isalnum() or self.ch(j) in ".-":
                j += 1
            if not self.ch(j).isspace() and self.ch(j) != ">":
                raise self.err("Unexpected end of name token", start)
            return self.src[start:j].lower(), j
        j += 1
        parts: list[str] = []
        while self.ch(j) not in (quote, "\0"):
            self.i = j
            if self.ch(j) == "&" and (decoded := self.entity()) is not None:
                parts.append(decoded)
                j = self.i
                continue
            parts.append(self.ch(j))
            j += 1
        return "".join(parts), j + 1 if self.ch(j) == quote else j

    def end_tag(self) -> None:
        begin = self.i
        if not self.stack:
            raise self.err("Unexpected end tag", begin)
        j = begin + 2
        while not self.ch(j).isspace() and self.ch(j) not in ">\0":
            j += 1
        name = self.src[begin + 2 : j].lower()
        while self.ch(j).isspace() and self.ch(j) != "\0":
            j += 1
        if self.ch(j) != ">":
            raise self.err("Unclosed end tag", begin)
        tag, argument, start, out_index = self.stack.pop()
        if name and name != tag:
            raise cant_parse(
                f"Unmatched end tag at byte offset {byte_offset(self.src, begin)}, "
                f'expected "</{tag}>", found "</{name}>"'
            )
        self.i = j + 1
        length = self.u16 - start
        if length > 0:
            self.add(tag, argument, start, length, "".join(self.out[out_index:]))

    def add(self, tag: str, argument: str, start: int, length: int, inner: str) -> None:
        last = self.entities[-1] if self.entities else None
        same_span = last is not None and (last["offset"], last["length"]) == (start, length)
        if tag in HTML_SIMPLE:
            self.entities.append({"type": HTML_SIMPLE[tag], "offset": start, "length": length})
        elif tag == "tg-emoji":
            if not argument.isdigit() or int(argument) == 0:
                raise cant_parse("Invalid custom emoji identifier specified")
            self.entities.append(
                {"type": "custom_emoji", "offset": start, "length": length,
                 "custom_emoji_id": argument}
            )  # fmt: skip
        elif tag == "a":
            link = link_entity(argument or inner, start, length)
            if link is not None:
                self.entities.append(link)
        elif tag == "pre" and same_span and last is not None and last.get("language"):
            last["type"] = "pre"
        elif tag == "pre":
            self.entities.append({"type": "pre", "offset": start, "length": length})
        elif tag == "code" and same_span and last is not None and last["type"] == "pre":
            if argument:
                last["language"] = argument
        elif tag == "code":
            entity: Entity = {"type": "code", "offset": start, "length": length}
            if argument:
                entity["language"] = argument  # kept only if a <pre> closes around it
            self.entities.append(entity)
        else:  # blockquote
            kind = "expandable_blockquote" if argument == "expandable" else "blockquote"
            self.entities.append({"type": kind, "offset": start, "length": length})
