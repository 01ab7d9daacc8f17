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

A tool may also log to its caller (log(), or Python logging) and ask it:
elicit() the user, sample() the caller's model, list_roots(), or ask()
several at once. A tool that asks stops and runs again from the start with
the answers (see the section below).
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
    st = _interact.get()
    if call is None or (st is not None and st.replay):
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


# ------------------------------------------------- logging and asking the caller
#
# Log records and questions to the caller (elicitation, sampling, roots)
# follow registry-svc/design.md "Logging" and "Elicitation and sampling".
# A tool that asks is run again with the answers: ask() returns the
# recorded answer of a request, or stops the call (InputRequired) until the
# caller has answered every pending request. Code before an ask() may thus
# run more than once, and should be free of side effects.

# The running call's interaction state (an _Interaction), set by the host.
_interact = contextvars.ContextVar("mirobody_interact", default=None)

# MCP log levels (RFC 5424), least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

__all__ += ["log", "elicit", "sample", "list_roots", "ask", "ElicitRequest", "SampleRequest", "RootsRequest",
            "CapabilityUnavailable", "LOG_LEVELS"]


class CapabilityUnavailable(Exception):
    """The caller's MCP client cannot answer this request.

    capability is "elicitation", "sampling" or "roots". A tool may catch it
    and carry on without the answer; left uncaught, the call fails with a
    message that names the capability (in the 2026-07-28 protocol, a
    MissingRequiredClientCapability error).
    """

    def __init__(self, capability):
        Exception.__init__(self, "the MCP client does not support %s" % capability)
        self.capability = capability


class InputRequired(BaseException):
    """Stops a call that waits for the caller's answers (raised by ask()).

    It derives from BaseException, like asyncio.CancelledError, so that a
    tool's ``except Exception`` does not swallow it.
    """

    def __init__(self, requests):
        BaseException.__init__(self, "waiting for the caller's input")
        self.requests = requests


class _Interaction(object):
    """What a call may do towards its caller: send logs at or above
    log_level (None: none), ask within capabilities, with the answers of
    earlier rounds. Until the requests in replay are answered, the run
    repeats the previous one, whose logs and progress the caller has."""

    __slots__ = ("send_log", "log_level", "capabilities", "answers", "asked", "replay")

    def __init__(self, send_log, log_level, capabilities, answers, replay=None):
        self.send_log = send_log
        self.log_level = log_level if log_level in LOG_LEVELS else None
        self.capabilities = frozenset(capabilities or ())
        self.answers = dict(answers or {})
        self.asked = 0
        self.replay = set(replay or ()) & set(self.answers)

    def wants(self, level):
        return (not self.replay and self.log_level is not None
                and LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level))


def log(level, message, data=None, logger=None):
    """Sends a log record to the caller as an MCP notifications/message.

    level is one of LOG_LEVELS; message a str; data, when given, any
    JSON-able value sent beside the message. Returns True when sent, False
    when the caller asked for no logs at that level (or outside a tool
    call). Python ``logging`` records of the tool reach the caller the
    same way.
    """
    if level not in LOG_LEVELS:
        raise ValueError("mirobody.log: level must be one of %s, not %r" % (", ".join(LOG_LEVELS), level))
    if not isinstance(message, str):
        raise TypeError("mirobody.log: message must be a str, not %s" % type(message).__name__)
    st = _interact.get()
    if st is None or not st.wants(level):
        return False
    st.send_log(level, logger, message if data is None else {"message": message, "data": data})
    return True


class _Request(object):
    """A request to the caller's client; ask() sends it."""

    __slots__ = ("method", "params", "capability")

    def _mcp_request(self):
        return {"method": self.method, "params": self.params}


class ElicitRequest(_Request):
    """Asks the user for input: ElicitRequest(message, schema).

    schema is a flat JSON Schema object of primitive properties (strings,
    numbers, booleans, enums), as MCP elicitation allows. The answer is a
    dict: {"action": "accept"|"decline"|"cancel", "content": {...}}.
    """

    __slots__ = ()

    def __init__(self, message, schema):
        if not isinstance(schema, dict):
            raise TypeError("mirobody.ElicitRequest: schema must be a dict, not %s" % type(schema).__name__)
        self.method, self.capability = "elicitation/create", "elicitation"
        self.params = {"message": _str(message, "ElicitRequest message"), "requestedSchema": schema}


class SampleRequest(_Request):
    """Asks the caller's model for a completion: SampleRequest(messages, max_tokens=1000, system_prompt=None, **params).

    messages is a str (one user message) or a list of {"role", "content"}
    dicts whose content may be a str. params are further fields of
    sampling/createMessage (temperature, modelPreferences, ...). The answer
    is the client's CreateMessageResult: {"role", "content", "model", ...}.
    """

    __slots__ = ()

    def __init__(self, messages, max_tokens=1000, system_prompt=None, **params):
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        out = []
        for m in messages:
            m = dict(m)
            if isinstance(m.get("content"), str):
                m["content"] = {"type": "text", "text": m["content"]}
            out.append(m)
        self.method, self.capability = "sampling/createMessage", "sampling"
        self.params = dict(params, messages=out, maxTokens=int(max_tokens))
        if system_prompt is not None:
            self.params["systemPrompt"] = system_prompt


class RootsRequest(_Request):
    """Asks the client for its roots; the answer is {"roots": [{"uri", "name"}, ...]}."""

    __slots__ = ()

    def __init__(self):
        self.method, self.capability, self.params = "roots/list", "roots", {}


def ask(requests):
    """Asks the caller several things at once and returns their answers.

    requests maps a key (a str naming the request) to an ElicitRequest,
    SampleRequest or RootsRequest; the result maps the same keys to the
    answers. Raises CapabilityUnavailable when the client cannot answer one
    of them. The call pauses until every answer is in: the tool then runs
    again from the start, and this ask() returns at once.
    """
    st = _interact.get()
    if st is None:
        raise RuntimeError("mirobody.ask: called outside a tool call")
    for key, req in requests.items():
        if not isinstance(key, str) or not key:
            raise TypeError("mirobody.ask: keys must be non-empty str")
        if not isinstance(req, _Request):
            raise TypeError("mirobody.ask: %s is not an ElicitRequest, SampleRequest or RootsRequest" % key)
        if req.capability not in st.capabilities:
            raise CapabilityUnavailable(req.capability)
    missing = {k: r._mcp_request() for k, r in requests.items() if k not in st.answers}
    if missing:
        raise InputRequired(missing)
    st.replay.difference_update(requests)
    return {k: st.answers[k] for k in requests}


def _ask_one(req, key):
    st = _interact.get()
    if key is None and st is not None:
        # The n-th unnamed request of a call: stable as long as the tool
        # asks in the same order on every run.
        st.asked += 1
        key = "%s-%d" % (req.capability, st.asked)
    return ask({key or req.capability: req})[key or req.capability]


def elicit(message, schema, key=None):
    """Asks the user (mirobody.ElicitRequest) and returns {"action", "content"}.

    key names the request (default: its position among the call's
    requests). Raises CapabilityUnavailable when the client cannot elicit.
    """
    return _ask_one(ElicitRequest(message, schema), key)


def sample(messages, max_tokens=1000, system_prompt=None, key=None, **params):
    """Asks the caller's model (mirobody.SampleRequest) and returns its CreateMessageResult.

    Raises CapabilityUnavailable when the client cannot sample.
    """
    return _ask_one(SampleRequest(messages, max_tokens, system_prompt, **params), key)


def list_roots(key=None):
    """Returns the client's roots: a list of {"uri", "name"} dicts.

    Raises CapabilityUnavailable when the client has no roots capability.
    """
    return _ask_one(RootsRequest(), key).get("roots", [])
