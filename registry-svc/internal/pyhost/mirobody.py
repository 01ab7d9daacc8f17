"""Helpers for Mirobody Python tools (stdlib only).

The tool host makes this module importable as ``mirobody``; a tool that does
not import it behaves exactly as before. It offers MCP content blocks other
than text, progress notifications, and the call's W3C ``traceparent()``:

    import mirobody

    def chart(city: str):
        mirobody.progress(0, 2, "fetching")
        png = render(city)
        mirobody.progress(1, 2, "rendering")
        return mirobody.Content(["Forecast for " + city, mirobody.Image(png, "image/png")])

A tool returns one block (Image, Audio, EmbeddedResource, ResourceLink) or a
Content of several; every other return value keeps its usual mapping (str to
text, dict or list to text plus structuredContent, None to no content).
"""

import base64
import contextvars
import math

__all__ = ["Image", "Audio", "EmbeddedResource", "ResourceLink", "Content", "progress", "traceparent"]

# The running call, set by the host for each call: (report, call id), where
# report sends a progress notification, or None when the caller asked for
# no progress. Sync tools see it in their thread, async tools in their task.
_call = contextvars.ContextVar("mirobody_call", default=None)

# The running call's W3C traceparent, set by the host for each call.
_traceparent = contextvars.ContextVar("mirobody_traceparent", default=None)


def _b64(data, what):
    if isinstance(data, str):
        return data  # already base64
    if isinstance(data, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(data)).decode("ascii")
    raise TypeError("%s data must be bytes (or a base64 str), not %s" % (what, type(data).__name__))


def _str(value, what):
    if not isinstance(value, str) or not value:
        raise TypeError("%s must be a non-empty str" % what)
    return value


class _Media(object):
    """A binary content block; subclasses name the MCP type and default MIME type."""

    __slots__ = ("data", "mime_type")
    _type = ""
    _default_mime = ""

    def __init__(self, data, mime_type=None):
        name = type(self).__name__
        self.data = _b64(data, name)
        self.mime_type = _str(self._default_mime if mime_type is None else mime_type, name + " mime_type")

    def _mcp_block(self):
        return {"type": self._type, "data": self.data, "mimeType": self.mime_type}


class Image(_Media):
    """An image content block: Image(data, mime_type="image/png").

    data is the raw image as bytes, or a str already base64-encoded.
    """

    __slots__ = ()
    _type = "image"
    _default_mime = "image/png"


class Audio(_Media):
    """An audio content block: Audio(data, mime_type="audio/wav").

    data is the raw audio as bytes, or a str already base64-encoded.
    """

    __slots__ = ()
    _type = "audio"
    _default_mime = "audio/wav"


class EmbeddedResource(object):
    """A resource embedded in the result: EmbeddedResource(uri, text=... or blob=..., mime_type=None).

    Give exactly one of text (a str) and blob (bytes, or a base64 str).
    """

    __slots__ = ("uri", "text", "blob", "mime_type")

    def __init__(self, uri, text=None, blob=None, mime_type=None):
        self.uri = _str(uri, "EmbeddedResource uri")
        if (text is None) == (blob is None):
            raise TypeError("EmbeddedResource needs exactly one of text and blob")
        if text is not None and not isinstance(text, str):
            raise TypeError("EmbeddedResource text must be a str, not %s" % type(text).__name__)
        self.text = text
        self.blob = None if blob is None else _b64(blob, "EmbeddedResource blob")
        self.mime_type = None if mime_type is None else _str(mime_type, "EmbeddedResource mime_type")

    def _mcp_block(self):
        res = {"uri": self.uri}
        if self.mime_type is not None:
            res["mimeType"] = self.mime_type
        if self.text is not None:
            res["text"] = self.text
        else:
            res["blob"] = self.blob
        return {"type": "resource", "resource": res}


class ResourceLink(object):
    """A link to a resource the client may fetch: ResourceLink(uri, name, mime_type=None, description=None)."""

    __slots__ = ("uri", "name", "mime_type", "description")

    def __init__(self, uri, name, mime_type=None, description=None):
        self.uri = _str(uri, "ResourceLink uri")
        self.name = _str(name, "ResourceLink name")
        self.mime_type = None if mime_type is None else _str(mime_type, "ResourceLink mime_type")
        self.description = None if description is None else _str(description, "ResourceLink description")

    def _mcp_block(self):
        out = {"type": "resource_link", "uri": self.uri, "name": self.name}
        if self.mime_type is not None:
            out["mimeType"] = self.mime_type
        if self.description is not None:
            out["description"] = self.description
        return out


class Content(object):
    """A tool result of several content blocks, in order.

    Content(blocks, structured=None, is_error=False): each item of blocks is
    a str (a text block), an Image, Audio, EmbeddedResource or ResourceLink,
    or any other value (a text block of its compact JSON). structured, a dict
    (or a list, wrapped as {"result": [...]}), becomes structuredContent;
    is_error marks the result as a tool error.
    """

    __slots__ = ("blocks", "structured", "is_error")

    def __init__(self, blocks, structured=None, is_error=False):
        if isinstance(blocks, (str, bytes)) or hasattr(blocks, "_mcp_block"):
            blocks = [blocks]
        self.blocks = list(blocks)
        self.structured = structured
        self.is_error = bool(is_error)


def progress(progress, total=None, message=None):
    """Reports the running tool's progress to the caller.

    progress (and total, when known) are numbers; progress should grow with
    each report. message is an optional str. Returns True when the report
    was sent, False when the caller asked for no progress (or outside a
    tool call), so a tool may call it unconditionally.
    """
    for name, v in (("progress", progress), ("total", total)):
        if v is None and name == "total":
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise TypeError("mirobody.progress: %s must be a finite number, not %r" % (name, v))
    if message is not None and not isinstance(message, str):
        raise TypeError("mirobody.progress: message must be a str, not %s" % type(message).__name__)
    call = _call.get()
    if call is None:
        return False
    report, call_id = call
    report(call_id, progress, total, message)
    return True


def traceparent():
    """Returns the running call's W3C traceparent header value, or None.

    A tool that calls an HTTP service may send it as the traceparent header,
    so that the service's spans join the trace of the tool call. It is None
    when Mirobody exports no traces (OTEL_EXPORTER_OTLP_ENDPOINT unset).
    """
    return _traceparent.get()
