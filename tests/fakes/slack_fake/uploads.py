"""File uploads: files.getUploadURLExternal, the upload URL itself, and
files.completeUploadExternal sharing the files into a channel."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from .args import JsonDict, int_arg, opt_str
from .limits import SlackError, parse_json_arg
from .records import RecordedSlackMessage, RecordedUpload
from .workspace import Channel, Workspace


@dataclass
class PendingUpload:
    file_id: str
    filename: str
    declared_length: int
    alt_txt: str | None = None
    data: bytes | None = None


class Uploads:
    """Uploads begun, their bytes once sent to the upload URL, and the completed ones."""

    def __init__(
        self,
        *,
        workspace: Workspace,
        clock: Callable[[], float],
        base_url: Callable[[], str],
        on_change: Callable[[], None],
    ) -> None:
        self.ws = workspace
        self.clock = clock
        self._base_url = base_url
        self._on_change = on_change
        self._pending: dict[str, PendingUpload] = {}
        self._secrets: dict[str, str] = {}
        self.recorded: list[RecordedUpload] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        file_id = self._secrets.get(request.match_info["secret"])
        pending = self._pending.get(file_id or "")
        if pending is None:
            return web.Response(status=404, text="not_found", content_type="text/plain")
        if request.content_type == "multipart/form-data":
            form = await request.post()
            field = form.get("file") or form.get("filename")
            if not isinstance(field, web.FileField):
                return web.Response(status=400, text="no_file_data", content_type="text/plain")
            data = field.file.read()
        else:
            data = await request.read()
        pending.data = data
        self._on_change()
        return web.Response(text=f"OK - {len(data)}", content_type="text/plain")

    def get_upload_url(self, args: JsonDict) -> JsonDict:
        filename = args.get("filename")
        length = int_arg(args.get("length"), default=0)
        if not isinstance(filename, str) or not filename or length <= 0:
            raise SlackError("invalid_arguments")
        file_id = self.ws.next_id("F")
        secret = f"{file_id}-{len(self._secrets) + 1:04d}"
        alt_txt = opt_str(args.get("alt_txt"))
        self._pending[file_id] = PendingUpload(file_id, filename, length, alt_txt)
        self._secrets[secret] = file_id
        return {"upload_url": f"{self._base_url()}upload/v1/{secret}", "file_id": file_id}

    def complete_upload(self, args: JsonDict) -> JsonDict:
        files = parse_json_arg(args.get("files"), error="invalid_arguments")
        if not isinstance(files, list) or not files:
            raise SlackError("invalid_arguments")
        channel: Channel | None = None
        channel_ref = args.get("channel_id") or args.get("channels")
        if channel_ref:
            channel = self.ws.writable_channel(str(channel_ref).split(",")[0])
        pending: list[tuple[PendingUpload, str]] = []
        for item in files:
            if not isinstance(item, dict):
                raise SlackError("invalid_arguments")
            upload = self._pending.get(str(item.get("id")))
            if upload is None or upload.data is None:
                raise SlackError("file_not_found")
            pending.append((upload, str(item.get("title") or upload.filename)))
        out_files: list[JsonDict] = []
        for upload, title in pending:
            assert upload.data is not None
            del self._pending[upload.file_id]
            out_files.append(
                {
                    "id": upload.file_id,
                    "name": upload.filename,
                    "title": title,
                    "size": len(upload.data),
                    "user": self.ws.bot_user_id,
                    "channels": [channel.id] if channel is not None else [],
                    **({"alt_txt": upload.alt_txt} if upload.alt_txt is not None else {}),
                }
            )
        initial_comment = opt_str(args.get("initial_comment"))
        thread_ts = opt_str(args.get("thread_ts"))
        share: RecordedSlackMessage | None = None
        if channel is not None:
            # Shared into the channel (in a thread with thread_ts): one message shows the files,
            # as it does in conversations.history (a thread reply counts on its parent).
            share = self.ws.add_message(
                channel,
                text=initial_comment or "",
                blocks=None,
                metadata=None,
                user=self.ws.bot_user_id,
                from_bot=True,
                thread_ts=thread_ts,
                source="files.completeUploadExternal",
                now=self.clock(),
                files=[{k: v for k, v in f.items() if k != "channels"} for f in out_files],
            )
        for upload, title in pending:
            assert upload.data is not None
            self.recorded.append(
                RecordedUpload(
                    file_id=upload.file_id,
                    filename=upload.filename,
                    title=title,
                    length=len(upload.data),
                    declared_length=upload.declared_length,
                    channel=channel.id if channel is not None else None,
                    initial_comment=initial_comment,
                    thread_ts=thread_ts,
                    data=upload.data,
                    alt_txt=upload.alt_txt,
                    message_ts=share.ts if share is not None else None,
                )
            )
        return {"files": out_files}
