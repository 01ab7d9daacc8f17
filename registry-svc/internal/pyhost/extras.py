"""Resources and prompts of the tool modules (registry-svc/design.md
"Resources and prompts from tool folders").

registry-svc runs this text in front of host.py, in the same namespace: it
uses host.py's helpers (log, parse_doc, HELPERS, BLOCK_TYPES, bytes_block)
only when called, after host.py has defined them.

A tool module may define, beside its tool functions:

    RESOURCES = [
        {"uri": "ui://clock/face.html", "text": "<html>...</html>"},
        {"uri": "notes://daily/{day}", "read": _daily_note},   # a template
    ]
    PROMPTS = [
        {"name": "summarise", "text": "Summarise {topic} in three lines."},
        {"name": "review", "get": _review},                  # a function
    ]

Each entry is a plain dict; functions are ordinary (private) functions, so
they never become tools.
"""

import collections
import inspect
import mimetypes
import re
import string

RESOURCE_ITEMS = collections.OrderedDict()  # uri or uri template -> Resource
PROMPT_ITEMS = collections.OrderedDict()  # name -> Prompt
MAX_COMPLETIONS = 100
UI_MIME = "text/html;profile=mcp-app"  # MCP Apps (SEP-1865)
TEMPLATE_VAR = re.compile(r"\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}")


class ExtraError(Exception):
    """A request for a resource or prompt that cannot be answered; kind is
    "not_found" or "invalid"."""

    def __init__(self, kind, msg):
        Exception.__init__(self, msg)
        self.kind = kind


class Resource(object):
    def __init__(self, entry, source):
        self.uri = entry["uri"]
        self.source = source
        self.text = entry.get("text")
        self.blob = entry.get("blob")
        self.read = entry.get("read")
        self.complete = entry.get("complete") or {}
        names = [m.group(2) for m in TEMPLATE_VAR.finditer(self.uri)]
        self.template = bool(names)
        self.pattern = None
        if self.template:
            parts, last = [], 0
            for m in TEMPLATE_VAR.finditer(self.uri):
                parts.append(re.escape(self.uri[last:m.start()]))
                parts.append("(?P<%s>%s)" % (m.group(2), ".+" if m.group(1) else "[^/]+"))
                last = m.end()
            parts.append(re.escape(self.uri[last:]))
            self.pattern = re.compile("^" + "".join(parts) + "$")
        self.vars = names
        doc = inspect.getdoc(self.read) if callable(self.read) else None
        mime = entry.get("mimeType") or entry.get("mime_type") or guess_mime(self.uri, self.blob)
        info = {"name": entry.get("name") or default_name(self.uri), "mimeType": mime}
        desc = entry.get("description") or (parse_doc(doc)[0] if doc else "")  # noqa: F821 (host.py)
        if desc:
            info["description"] = desc
        if entry.get("title"):
            info["title"] = entry["title"]
        meta = entry.get("_meta", entry.get("meta"))
        if meta is not None:
            info["_meta"] = meta
        if self.template:
            info["uriTemplate"] = self.uri
        else:
            info["uri"] = self.uri
            if self.text is not None:
                info["size"] = len(self.text.encode("utf-8"))
            elif self.blob is not None:
                info["size"] = len(self.blob)
        self.info = info


class Prompt(object):
    def __init__(self, entry, source):
        self.name = entry["name"]
        self.source = source
        self.text = entry.get("text")
        self.get = entry.get("get")
        self.complete = entry.get("complete") or {}
        info = {"name": self.name}
        args = []
        if self.get is not None:
            summary, arg_docs, _ = parse_doc(inspect.getdoc(self.get) or "")  # noqa: F821 (host.py)
            for pname, p in inspect.signature(self.get).parameters.items():
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    continue
                a = {"name": pname}
                if arg_docs.get(pname):
                    a["description"] = arg_docs[pname]
                if p.default is p.empty:
                    a["required"] = True
                args.append(a)
        else:
            summary = ""
            seen = set()
            for _, field, _, _ in string.Formatter().parse(self.text):
                if field and field not in seen:
                    seen.add(field)
                    args.append({"name": field, "required": True})
        # Clients show the description in their prompt pickers (and the
        # conformance suite requires one): the text's first line, else the
        # name, when the entry and its function say nothing.
        fallback = self.text.strip().splitlines()[0][:200] if self.text and self.text.strip() else self.name
        info["description"] = entry.get("description") or summary or fallback
        if entry.get("title"):
            info["title"] = entry["title"]
        if args:
            info["arguments"] = args
        self.args = args
        self.info = info


def default_name(uri):
    rest = uri.split("://", 1)[-1].rstrip("/")
    return rest.rsplit("/", 1)[-1] or uri


def guess_mime(uri, blob):
    if uri.startswith("ui://"):
        return UI_MIME
    mime = mimetypes.guess_type(TEMPLATE_VAR.sub("x", uri).split("?", 1)[0])[0]
    if mime:
        return mime
    if blob is not None:
        return sniff(bytes(blob)) or "application/octet-stream"  # noqa: F821 (host.py)
    return "text/plain"


def module_extras(mod, path, resources, prompts, logs):
    """Collects a module's RESOURCES and PROMPTS; the first entry wins a URI or name."""
    for kind, found, make, key in (("RESOURCES", resources, Resource, "uri"), ("PROMPTS", prompts, Prompt, "name")):
        entries = getattr(mod, kind, None)
        if entries is None:
            continue
        if not isinstance(entries, (list, tuple)):
            logs.append(log("error", "%s must be a list of dicts; it is skipped" % kind, file=path))  # noqa: F821
            continue
        for i, entry in enumerate(entries):
            where = "%s:%s[%d]" % (path, kind, i)
            try:
                problem = check_entry(kind, entry, key)
                if problem:
                    raise ValueError(problem)
                item = make(entry, where)
            except Exception as e:
                logs.append(log("error", "entry is invalid; it is skipped", entry=where,  # noqa: F821
                                err="%s: %s" % (type(e).__name__, e)))
                continue
            if entry[key] in found:
                logs.append(log("warning", "%s collision; the first one wins" % key, kept=found[entry[key]].source,  # noqa: F821
                                ignored=where))
                continue
            found[entry[key]] = item


def check_entry(kind, entry, key):
    if not isinstance(entry, dict):
        return "an entry must be a dict"
    if not isinstance(entry.get(key), str) or not entry[key]:
        return "%s is required" % key
    bodies = ("text", "blob", "read") if kind == "RESOURCES" else ("text", "get")
    given = [b for b in bodies if entry.get(b) is not None]
    if len(given) != 1:
        return "give exactly one of %s" % ", ".join(bodies)
    if "read" in given or "get" in given:
        if not callable(entry[given[0]]):
            return "%s must be a function" % given[0]
    elif given[0] == "blob":
        if not isinstance(entry["blob"], (bytes, bytearray)):
            return "blob must be bytes"
    elif not isinstance(entry["text"], str):
        return "text must be a str"
    if kind == "RESOURCES" and TEMPLATE_VAR.search(entry[key]) and "read" not in given:
        return "a URI template needs a read function"
    return None


def install_extras(resources, prompts):
    RESOURCE_ITEMS.clear()
    RESOURCE_ITEMS.update(resources)
    PROMPT_ITEMS.clear()
    PROMPT_ITEMS.update(prompts)
    return [r.info for r in resources.values()], [p.info for p in prompts.values()]


def call_with(fn, values):
    """Calls fn with the values it has parameters for (uri is optional)."""
    params = inspect.signature(fn).parameters
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return fn(**values)
    return fn(**{k: v for k, v in values.items() if k in params})


def read_resource(uri):
    """Returns (mime type, value) of uri, a direct resource or a template
    match; the value may still be awaitable (an async read function)."""
    r = RESOURCE_ITEMS.get(uri)
    values = {"uri": uri}
    if r is None or r.template:
        r = None
        for cand in RESOURCE_ITEMS.values():
            m = cand.pattern.match(uri) if cand.template else None
            if m:
                r = cand
                values.update(m.groupdict())
                break
    if r is None:
        raise ExtraError("not_found", "no resource %s" % uri)
    value = r.text if r.text is not None else r.blob if r.blob is not None else call_with(r.read, values)
    return r.info["mimeType"], value


def resource_contents(uri, mime, value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"uri": uri, "mimeType": mime, "blob": base64.b64encode(bytes(value)).decode("ascii")}
    if not isinstance(value, str):
        value = dumps(jsonable(value))  # noqa: F821 (host.py)
    return {"uri": uri, "mimeType": mime, "text": value}


def get_prompt(name, arguments):
    """Returns (description, value) of a prompt, value for prompt_messages;
    it may still be awaitable (an async get function)."""
    p = PROMPT_ITEMS.get(name)
    if p is None:
        raise ExtraError("not_found", "no prompt %s" % name)
    known = [a["name"] for a in p.args]
    for k in arguments:
        if k not in known:
            raise ExtraError("invalid", "prompt %s has no argument %r; accepted: %s" % (name, k, ", ".join(known) or "none"))
    for a in p.args:
        if a.get("required") and a["name"] not in arguments:
            raise ExtraError("invalid", "prompt %s needs the argument %r" % (name, a["name"]))
    if p.get is not None:
        value = p.get(**arguments)
    else:
        value = p.text.format(**arguments)
    return p.info.get("description", ""), value


def prompt_messages(value):
    """str: one user message; a list: one message per item, each a str, a
    mirobody block (Image, Audio, EmbeddedResource, ResourceLink), bytes,
    a (role, item) pair, or an MCP message dict."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for item in items:
        role = "user"
        if isinstance(item, tuple) and len(item) == 2 and item[0] in ("user", "assistant"):
            role, item = item
        if isinstance(item, dict) and "role" in item and "content" in item:
            out.append(item)
            continue
        if isinstance(item, str):
            block = {"type": "text", "text": item}
        elif isinstance(item, BLOCK_TYPES):  # noqa: F821 (host.py)
            block = item._mcp_block()
        elif isinstance(item, (bytes, bytearray, memoryview)):
            block = bytes_block("prompt", bytes(item))  # noqa: F821 (host.py)
        else:
            block = {"type": "text", "text": dumps(jsonable(item))}  # noqa: F821 (host.py)
        out.append({"role": role, "content": block})
    return out


def complete(prompt, template, argument, value, context):
    """Values of a prompt argument or template variable starting with value."""
    if prompt:
        item = PROMPT_ITEMS.get(prompt)
        names = [a["name"] for a in item.args] if item else []
    else:
        item = RESOURCE_ITEMS.get(template)
        names = item.vars if item else []
    if item is None:
        raise ExtraError("not_found", "no %s %s" % ("prompt" if prompt else "resource template", prompt or template))
    if argument not in names:
        raise ExtraError("invalid", "%s has no argument %r" % (prompt or template, argument))
    source = item.complete.get(argument)
    if source is None:
        return []
    if callable(source):
        values = call_with(source, {"value": value, "context": context or {}})
    else:
        values = [v for v in source if str(v).startswith(value)]
    return [str(v) for v in list(values)[:MAX_COMPLETIONS + 1]]
