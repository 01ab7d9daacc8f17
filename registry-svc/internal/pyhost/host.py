"""Mirobody Python tool host (stdlib only).

registry-svc embeds this script and runs it as a pool of processes. Requests
arrive as JSON lines on fd 3 and replies leave as JSON lines on fd 4, so that
a tool's print() and logging (stdout/stderr) reach the service log and can
never corrupt the protocol.

Operations: hello (sent once at start), discover, call, cancel, ping, and
read, prompt, complete for the modules' RESOURCES and PROMPTS (extras.py,
which runs in front of this script); while a call runs, the host may send
progress and log lines for it.
Discovery, schemas and calls follow registry-svc/design.md ("Tool
discovery", "Input schema", "Calling").

registry-svc puts MIROBODY_SOURCE (the text of mirobody.py) in front of this
script; main() installs it as the importable module ``mirobody``.
"""

import asyncio
import base64
import collections.abc
import concurrent.futures
import contextvars
import dataclasses
import datetime
import decimal
import enum
import functools
import importlib.util
import inspect
import json
import logging
import math
import os
import re
import sys
import threading
import time
import traceback
import types
import typing
import uuid

MIN_PYTHON = (3, 9)
MAX_RESULT_BYTES = 16 << 20  # larger results become an error, not a protocol failure
MAX_GENERATOR_ITEMS = 100000  # a generator yielding more is cut off with an error
MAX_SYNC_CALLS = 64  # threads running plain functions' calls, on reader threads and again in the pool

TOOLS = {}  # name -> Tool
TASKS = {}  # call id -> asyncio.Task
DIRECT = {}  # call id -> DirectCall, for calls run by the reader threads (see Host.reader)
RUNNING = set()  # ids of sync calls whose thread is running
ABANDONED = set()  # ids of sync calls cancelled while their thread still runs
THREADS_LOCK = threading.Lock()
HOST = None  # the running Host (run_sync records a call's timing in it)
HELPERS = None  # the mirobody module (content blocks, progress); see install_helpers


class Tool(object):
    def __init__(self, name, fn, info):
        self.name = name
        self.fn = fn
        self.info = info
        self.is_async = inspect.iscoroutinefunction(fn)
        # A plain function runs on the reader thread that read its call,
        # without the event loop's two hops (Host.reader).
        self.direct = not (self.is_async or inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn))
        self.takes_user_info = info["takes_user_info"]
        self.fill_none = info.pop("_fill_none")


# ---------------------------------------------------------------- discovery

def discover(dirs):
    """Imports every tool file of dirs and registers its tools (design.md "Tool discovery")."""
    logs = []
    failed = []
    found = collections.OrderedDict()
    resources, prompts = collections.OrderedDict(), collections.OrderedDict()
    for d in reversed(dirs):
        if d not in sys.path:
            sys.path.insert(0, d)
    for di, d in enumerate(dirs):
        try:
            names = sorted(os.listdir(d), key=lambda n: n.encode("utf-8", "surrogateescape"))
        except OSError as e:
            logs.append(log("warning", "tool folder cannot be read", folder=d, err=str(e)))
            continue
        for fname in names:
            path = os.path.join(d, fname)
            if not tool_file(fname, path):
                continue
            mod = import_file(di, path, logs)
            if mod is None:
                failed.append(path)
                continue
            for name, fn, owner in module_tools(mod, path, logs):
                add_tool(found, name, fn, path, owner, logs)
            module_extras(mod, path, resources, prompts, logs)  # noqa: F821 (extras.py)
    TOOLS.clear()
    TOOLS.update(found)
    extras = install_extras(resources, prompts)  # noqa: F821 (extras.py)
    return [t.info for t in found.values()], logs, failed, extras


def tool_file(fname, path):
    if not fname.endswith(".py") or fname.startswith("_"):
        return False
    if fname.startswith("test_") or fname.endswith("_test.py"):
        return False
    return os.path.isfile(path)


def import_file(di, path, logs):
    stem = os.path.basename(path)[:-3]
    modname = "mirobody_tools_%d_%s" % (di, re.sub(r"\W", "_", stem))
    try:
        spec = importlib.util.spec_from_file_location(modname, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        spec.loader.exec_module(mod)
        return mod
    except BaseException as e:  # SyntaxError, ImportError, SystemExit...
        sys.modules.pop(modname, None)
        tb = traceback.extract_tb(e.__traceback__)
        where = ""
        for fr in tb:
            if fr.filename == path:
                where = "%s:%d" % (fr.filename, fr.lineno)
        if isinstance(e, SyntaxError) and e.lineno:
            where = "%s:%d" % (e.filename or path, e.lineno)
        logs.append(log("error", "tool module failed to import; it is skipped", file=path,
                        err="%s: %s" % (type(e).__name__, e), at=where))
        return None


def module_tools(mod, path, logs):
    """Yields (name, callable, owner) for the tools a module defines."""
    for name, obj in list(vars(mod).items()):
        if name.startswith("_"):
            continue
        if inspect.isfunction(obj) and obj.__module__ == mod.__name__:
            yield name, obj, None
        elif inspect.isclass(obj) and name.endswith("Service") and obj.__module__ == mod.__name__:
            for item in service_tools(obj, path, logs):
                yield item


def service_tools(cls, path, logs):
    if getattr(cls, "_enabled", None) is not None:
        try:
            ok = getattr(cls, "_enabled")()
        except Exception as e:
            logs.append(log("error", "service _enabled() raised; the class is skipped", file=path,
                            service=cls.__name__, err="%s: %s" % (type(e).__name__, e)))
            return
        if not ok:
            logs.append(log("info", "service disabled by _enabled()", file=path, service=cls.__name__))
            return
    try:
        inst = cls()
    except Exception as e:
        logs.append(log("error", "service constructor raised; the class is skipped", file=path,
                        service=cls.__name__, err="%s: %s" % (type(e).__name__, e)))
        return
    for name, raw in list(cls.__dict__.items()):
        if name.startswith("_"):
            continue
        fn = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
        if not inspect.isfunction(fn) or fn.__module__ != cls.__module__:
            continue
        yield name, getattr(inst, name), cls.__name__


def add_tool(found, name, fn, path, owner, logs):
    target = fn.__func__ if inspect.ismethod(fn) else fn
    code = getattr(target, "__code__", None)
    where = "%s:%d" % (path, code.co_firstlineno if code else 0)
    if name in found:
        logs.append(log("warning", "tool name collision; the first one wins", tool=name,
                        kept=found[name].info["source"], ignored=where))
        return
    try:
        info = describe(name, fn, logs)
    except Exception as e:
        logs.append(log("error", "tool schema could not be generated; the tool is skipped", tool=name,
                        file=path, err="%s: %s" % (type(e).__name__, e)))
        return
    info["source"] = where
    found[name] = Tool(name, fn, info)


# ------------------------------------------------------------------ schema

NONE_TYPE = type(None)
UNION_TYPES = (typing.Union,) + ((types.UnionType,) if hasattr(types, "UnionType") else ())
SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Returns|Return|Yields|Raises|Examples?|Notes?|Attributes|See Also|Todo|Warnings?)\s*:\s*$")
ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
RET_TYPE = re.compile(r"^[A-Za-z_][\w.]*(?:\[[^\]]*\])?\s*:\s+(.*)$")


def describe(name, fn, logs):
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = dict(getattr(fn, "__annotations__", {}) or {})
    summary, arg_docs, returns = parse_doc(inspect.getdoc(fn) or "")
    props = collections.OrderedDict()
    required = []
    fill_none = []
    for pname, p in sig.parameters.items():
        if pname == "user_info" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        hint = hints.get(pname, p.annotation)
        optional, hint = strip_optional(hint)
        schema = type_schema(hint, name, pname, logs)
        if pname in arg_docs:
            schema["description"] = arg_docs[pname]
        if p.default is not p.empty:
            if p.default is not None:
                try:
                    schema["default"] = jsonable(p.default)
                except Exception:
                    pass
        elif optional:
            fill_none.append(pname)
        else:
            required.append(pname)
        props[pname] = schema
    input_schema = {"type": "object", "properties": props}
    if required:
        input_schema["required"] = required
    # input_schema is ours; inputSchema is upstream Mirobody's spelling
    # (its chart tools attach one loaded from JSON to each method).
    for attr in ("input_schema", "inputSchema"):
        custom = getattr(fn, attr, None)
        if isinstance(custom, dict):
            input_schema = jsonable(custom)
            break
    description = summary
    if returns:
        r = returns[0].lower() + returns[1:] if len(returns) > 1 and not returns[1].isupper() else returns
        if not r.endswith((".", "!", "?")):
            r += "."
        description = (description + " " if description else "") + "Returns " + r
    info = {
        "name": name,
        "description": description,
        "inputSchema": input_schema,
        "takes_user_info": "user_info" in sig.parameters,
        "is_async": inspect.iscoroutinefunction(fn),
        "_fill_none": fill_none,
    }
    annotations = getattr(fn, "annotations", None)
    if isinstance(annotations, dict):
        info["annotations"] = annotations
    meta = getattr(fn, "meta", None)
    if isinstance(meta, dict):
        info["_meta"] = jsonable(meta)  # upstream: a tool's meta is its _meta
    support = getattr(fn, "task_support", None)
    if support in ("optional", "required"):
        # SEP-2663: the client may poll a long call as a task.
        info["execution"] = {"taskSupport": support}
        if getattr(fn, "task_after_input", False) is True:
            # SEP-2322 + SEP-2663: ask inline first, become a task once answered.
            info["task_after_input"] = True
    requires = getattr(fn, "requires_data", None)
    if isinstance(requires, str) and requires:
        info["requires_data"] = requires
    return info


def strip_optional(hint):
    if typing.get_origin(hint) in UNION_TYPES:
        args = [a for a in typing.get_args(hint) if a is not NONE_TYPE]
        if len(args) < len(typing.get_args(hint)):
            if len(args) == 1:
                return True, args[0]
            return True, typing.Union[tuple(args)]
    return False, hint


def type_schema(hint, tool, pname, logs):
    if hint is inspect.Parameter.empty or hint is typing.Any or hint is object:
        return {}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", NONE_TYPE: "null"}
    if hint in simple:
        return {"type": simple[hint]}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hasattr(typing, "Annotated") and origin is typing.Annotated:
        return type_schema(args[0], tool, pname, logs)
    if origin in UNION_TYPES:
        opt, inner = strip_optional(hint)
        if opt:
            return type_schema(inner, tool, pname, logs)
        return {"anyOf": [type_schema(a, tool, pname, logs) for a in args]}
    if origin is typing.Literal:
        values = [jsonable(a) for a in args]
        out = {"enum": values}
        kinds = set(type(v) for v in values)
        if len(kinds) == 1 and next(iter(kinds)) in simple:
            out = {"type": simple[next(iter(kinds))], "enum": values}
        return out
    seq = (list, tuple, set, frozenset, collections.abc.Sequence, collections.abc.Set,
           collections.abc.Iterable, collections.abc.Collection, collections.abc.MutableSequence)
    if hint in (list, tuple, set, frozenset, typing.List, typing.Tuple, typing.Set, typing.Sequence):
        return {"type": "array"}
    if origin in seq:
        if origin is tuple and args and (len(args) != 2 or args[1] is not Ellipsis):
            return {"type": "array", "prefixItems": [type_schema(a, tool, pname, logs) for a in args],
                    "minItems": len(args), "maxItems": len(args)}
        if args:
            return {"type": "array", "items": type_schema(args[0], tool, pname, logs)}
        return {"type": "array"}
    if hint in (dict, typing.Dict, typing.Mapping) or origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping):
        if len(args) == 2 and args[1] is not typing.Any:
            return {"type": "object", "additionalProperties": type_schema(args[1], tool, pname, logs)}
        return {"type": "object"}
    logs.append(log("warning", "unknown parameter type; it is treated as a string", tool=tool,
                    parameter=pname, type=getattr(hint, "__name__", repr(hint))))
    return {"type": "string"}


def parse_doc(doc):
    """Returns (first paragraph, {arg: description}, returns text)."""
    lines = doc.splitlines()
    summary = []
    i = 0
    while i < len(lines) and lines[i].strip() and not SECTION.match(lines[i].strip()):
        summary.append(lines[i].strip())
        i += 1
    args, returns = {}, []
    section = None
    base = None
    current = None
    for line in lines[i:]:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        m = SECTION.match(stripped)
        if m and indent == 0:
            section, base, current = m.group(1), None, None
            continue
        if not stripped:
            continue
        if indent == 0:
            section = None
            continue
        if section in ("Args", "Arguments", "Parameters", "Params"):
            if base is None:
                base = indent
            am = ARG_LINE.match(stripped)
            if indent <= base and am:
                current = am.group(1)
                args[current] = am.group(3).strip()
            elif current is not None:
                args[current] = (args[current] + " " + stripped).strip()
        elif section in ("Returns", "Return"):
            returns.append(stripped)
    ret = " ".join(returns).strip()
    m = RET_TYPE.match(ret)
    if m:
        ret = m.group(1)
    return " ".join(summary), args, ret


# ----------------------------------------------------------------- results

def jsonable(o, depth=0):
    """Turns o into JSON-native values; never raises for ordinary objects."""
    if depth > 64:
        return str(o)
    if o is None or isinstance(o, (bool, str)):
        return o
    if isinstance(o, int):
        return int(o)
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, decimal.Decimal):
        if not o.is_finite():
            return str(o)
        return int(o) if o == o.to_integral_value() and abs(o) < 2 ** 63 else float(o)
    if isinstance(o, (datetime.datetime, datetime.date, datetime.time)):
        return o.isoformat()
    if isinstance(o, datetime.timedelta):
        return o.total_seconds()
    if isinstance(o, enum.Enum):
        return jsonable(o.value, depth + 1)
    if isinstance(o, (bytes, bytearray, memoryview)):
        b = bytes(o)
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(b).decode("ascii")
    if isinstance(o, uuid.UUID) or isinstance(o, os.PathLike):
        return str(o)
    if isinstance(o, collections.abc.Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in o.items()}
    if hasattr(o, "_asdict") and isinstance(o, tuple):
        return jsonable(o._asdict(), depth + 1)
    if isinstance(o, (list, tuple)):
        return [jsonable(v, depth + 1) for v in o]
    if isinstance(o, (set, frozenset)):
        items = [jsonable(v, depth + 1) for v in o]
        try:
            return sorted(items)
        except TypeError:
            return items
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return jsonable(dataclasses.asdict(o), depth + 1)
    for attr in ("model_dump", "to_dict", "dict", "tolist", "item"):
        m = getattr(o, attr, None)
        if callable(m):
            try:
                return jsonable(m(), depth + 1)
            except Exception:
                pass
    return str(o)


# One encoder for every reply: json.dumps with options builds a new one
# per call. encode is safe to call from several threads at once.
ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

# What a tool most often returns: to_result and Host.call_direct check
# these exact types first, skipping checks of the rarer results.
PLAIN_TYPES = frozenset((str, dict, list, int, float, bool, type(None)))


def dumps(v):
    return ENCODER.encode(v)


def to_result(name, value):
    if type(value) is str:
        return {"content": [{"type": "text", "text": value}]}
    if isinstance(value, collections.abc.Mapping) and value.get("success") is True and "data" in value:
        # Upstream Mirobody's envelope: the result is the data.
        return to_result(name, value["data"])
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"content": [bytes_block(name, bytes(value))]}
    if isinstance(value, Collected):
        return collected_result(name, value)
    if isinstance(value, HELPERS.Content):
        return content_result(value)
    if isinstance(value, BLOCK_TYPES):
        return {"content": [value._mcp_block()]}
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}]}
    if value is None:
        return {"content": []}
    v = jsonable(value)
    if isinstance(v, dict):
        if v.get("success") is False:
            err = v.get("error", v.get("message", v))
            return {"content": [{"type": "text", "text": err if isinstance(err, str) else dumps(err)}], "isError": True}
        return {"content": [{"type": "text", "text": dumps(v)}], "structuredContent": v}
    if isinstance(v, list):
        return {"content": [{"type": "text", "text": dumps(v)}], "structuredContent": {"result": v}}
    if isinstance(v, str):
        return {"content": [{"type": "text", "text": v}]}
    return {"content": [{"type": "text", "text": dumps(v)}]}


# Magic numbers of the binary results a tool is likely to return; anything
# else that is not UTF-8 text is an application/octet-stream blob.
MAGIC = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),
    (b"BM", 0, "image/bmp"),
    (b"WAVE", 8, "audio/wav"),
    (b"ID3", 0, "audio/mpeg"),
    (b"\xff\xfb", 0, "audio/mpeg"),
    (b"\xff\xf3", 0, "audio/mpeg"),
    (b"OggS", 0, "audio/ogg"),
    (b"fLaC", 0, "audio/flac"),
    (b"ftypM4A", 4, "audio/mp4"),
    (b"%PDF-", 0, "application/pdf"),
    (b"PK\x03\x04", 0, "application/zip"),
)


def sniff(b):
    """Returns the MIME type of b from its first bytes, or None."""
    for magic, at, mime in MAGIC:
        if b[at:at + len(magic)] == magic:
            if at == 8 and b[:4] != b"RIFF":
                continue
            return mime
    return None


def bytes_block(name, b):
    """An image, audio or embedded blob block for bytes a tool returned."""
    mime = sniff(b)
    if mime is None:
        try:
            return {"type": "text", "text": b.decode("utf-8")}
        except UnicodeDecodeError:
            mime = "application/octet-stream"
    data = base64.b64encode(b).decode("ascii")
    if mime.startswith("image/"):
        return {"type": "image", "data": data, "mimeType": mime}
    if mime.startswith("audio/"):
        return {"type": "audio", "data": data, "mimeType": mime}
    return {"type": "resource", "resource": {"uri": "mirobody://tools/%s/result" % name, "mimeType": mime, "blob": data}}


class Collected(list):
    """The items a generator tool yielded."""


class GeneratorTooLarge(Exception):
    pass


def collect_sync(gen):
    out, size = Collected(), 0
    try:
        for item in gen:
            size = grow(out, item, size)
    finally:
        gen.close()
    return out


async def collect_async(agen):
    out, size = Collected(), 0
    try:
        async for item in agen:
            size = grow(out, item, size)
    finally:
        await agen.aclose()
    return out


def grow(out, item, size):
    """Appends item, keeping the collected result under the size caps."""
    if isinstance(item, (bytes, bytearray, memoryview)):
        size += len(item) * 4 // 3
    elif isinstance(item, str):
        size += len(item.encode("utf-8", "surrogatepass"))
    elif not hasattr(item, "_mcp_block"):
        size += len(dumps(jsonable(item)))
    if size > MAX_RESULT_BYTES or len(out) >= MAX_GENERATOR_ITEMS:
        raise GeneratorTooLarge("its generator yielded more than %d bytes or %d items" % (MAX_RESULT_BYTES, MAX_GENERATOR_ITEMS))
    out.append(item)
    return size


def collected_result(name, items):
    """Text chunks join into one text; items with binary or content blocks
    become blocks in order; anything else is a list result."""
    if all(isinstance(i, str) for i in items):
        return {"content": [{"type": "text", "text": "".join(items)}]} if items else {"content": []}
    if any(isinstance(i, (bytes, bytearray, memoryview)) or isinstance(i, BLOCK_TYPES) for i in items):
        blocks = []
        for i in items:
            if isinstance(i, (bytes, bytearray, memoryview)):
                blocks.append(bytes_block(name, bytes(i)))
            elif isinstance(i, BLOCK_TYPES):
                blocks.append(i._mcp_block())
            elif isinstance(i, str):
                blocks.append({"type": "text", "text": i})
            else:
                blocks.append({"type": "text", "text": dumps(jsonable(i))})
        return {"content": blocks}
    return to_result(name, list(items))


def content_result(c):
    blocks = []
    for item in c.blocks:
        if isinstance(item, str):
            blocks.append({"type": "text", "text": item})
        elif isinstance(item, BLOCK_TYPES):
            blocks.append(item._mcp_block())
        else:
            blocks.append({"type": "text", "text": dumps(jsonable(item))})
    out = {"content": blocks}
    if c.structured is not None:
        sc = jsonable(c.structured)
        if isinstance(sc, list):
            sc = {"result": sc}
        if not isinstance(sc, dict):
            raise TypeError("mirobody.Content structured must be a dict or a list, not %s" % type(c.structured).__name__)
        out["structuredContent"] = sc
    if c.is_error:
        out["isError"] = True
    return out


def install_helpers(source):
    """Makes mirobody.py importable as ``mirobody`` (design.md "Content blocks and progress")."""
    global HELPERS, BLOCK_TYPES
    mod = types.ModuleType("mirobody")
    mod.__file__ = "mirobody.py"
    exec(compile(source, "mirobody.py", "exec"), mod.__dict__)
    sys.modules["mirobody"] = mod
    HELPERS = mod
    BLOCK_TYPES = (mod.Image, mod.Audio, mod.EmbeddedResource, mod.ResourceLink)


BLOCK_TYPES = ()


# ------------------------------------------------------------------- calls

class Host(object):
    def __init__(self, rfd, wfd):
        self.rf = os.fdopen(rfd, "rb")
        self.wf = os.fdopen(wfd, "wb", buffering=0)
        self.wlock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=MAX_SYNC_CALLS, thread_name_prefix="tool")
        # timings holds the running calls' timing (see call), by call id.
        self.timings = {}
        # The reader threads (see reader): how many run a call, and the
        # wake-up locks of those waiting to lead, under THREADS_LOCK.
        self.inline = 0
        self.standby = []

    def send(self, msg):
        self.send_line(dumps(msg))

    def send_line(self, text):
        data = (text + "\n").encode("utf-8")
        with self.wlock:
            self.wf.write(data)

    def reader(self):
        """A reader thread (design.md "Python tool host", leader and
        followers): it leads, reading requests, until it takes a plain
        function's call; then another thread leads and this one runs the
        call, then waits in standby until it is asked to lead again."""
        wake = threading.Lock()
        wake.acquire()
        while True:
            job = self.lead()
            if job is None:
                return
            try:
                job()
            except BaseException:  # the reply could not be sent: keep serving
                traceback.print_exc()
            with THREADS_LOCK:
                self.inline -= 1
                self.standby.append(wake)
            wake.acquire()  # released by the next thread to take a call

    def lead(self):
        """Reads requests until the end of the input (None), or until it
        takes a call of a plain function, which it returns for this thread
        to run once another thread leads."""
        while True:
            line = self.rf.readline()
            if not line:
                self.loop.call_soon_threadsafe(self.loop.stop)
                return None
            msg = self.decode(line)
            if msg is None:
                continue
            if "traceparent" in msg:
                # The Go side records a traced call's span from these
                # wall-clock times (registry-svc/design.md "Tracing"): when
                # the request was read, ...
                msg["_received_ns"] = time.time_ns()
            op = msg.get("op")
            if op == "cancel" and self.cancel_direct(msg.get("id")):
                continue
            job = self.start_direct(msg) if op == "call" else None
            if job is None:
                self.loop.call_soon_threadsafe(self.dispatch, msg)
                continue
            with THREADS_LOCK:
                inline = self.inline < MAX_SYNC_CALLS
                if inline:
                    self.inline += 1
                    wake = self.standby.pop() if self.standby else None
            if not inline:
                self.pool.submit(job)
                continue
            if wake is not None:
                wake.release()
                return job
            try:
                threading.Thread(target=self.reader, name="reader", daemon=True).start()
            except RuntimeError:
                # No new thread (a process limit): this one reads on, and
                # the pool's threads run the call.
                with THREADS_LOCK:
                    self.inline -= 1
                self.pool.submit(job)
                continue
            return job

    def decode(self, line):
        """The request line decoded, or None when it is not JSON (its
        caller, when the line names one, is told)."""
        try:
            # Go sends UTF-8: decoded here, without json's sniffing of
            # UTF-16 and UTF-32 (a ValueError too when it is not UTF-8).
            return json.loads(line.decode("utf-8"))
        except ValueError as e:
            # Never drop a request silently: its caller would wait for
            # its deadline. A line that is JSON once decoded leniently
            # (invalid UTF-8) names its id, which gets the reason.
            sys.stderr.write("tool host: bad request line: %s\n" % e)
            try:
                mid = json.loads(line.decode("utf-8", "replace")).get("id")
            except (ValueError, AttributeError):
                mid = None
            if mid is not None:
                self.send({"id": mid, "error": "the request is not valid UTF-8 JSON", "invalid": True})
            return None

    def start_direct(self, msg):
        """Starts a call of a plain function: the function of no arguments
        that runs and answers it, or None when msg is for the event loop."""
        mid = msg.get("id")
        tool = TOOLS.get(msg.get("name"))
        if tool is None or not tool.direct:
            return None
        call = DirectCall()
        with THREADS_LOCK:
            DIRECT[mid] = call
        if "traceparent" in msg:
            # ... when its call started, as Host.call does.
            self.timings[mid] = {"received_ns": msg.get("_received_ns"), "started_ns": time.time_ns()}
        ctx = contextvars.copy_context()
        ctx.run(self.enter_call, mid, msg)
        return functools.partial(ctx.run, self.call_direct, mid, tool, msg, call)

    def cancel_direct(self, mid):
        """Cancels call mid of a plain function; False when it is not one
        (the event loop may know it) or has ended."""
        with THREADS_LOCK:
            call = DIRECT.pop(mid, None)
            if call is None:
                return False
            call.cancelled = True
            # A thread cannot be interrupted: remember it, so that a
            # host filling up with stuck threads gets replaced.
            if mid in RUNNING:
                ABANDONED.add(mid)
        self.reply(mid, {"id": mid, "cancelled": True})
        return True

    def call_direct(self, mid, tool, msg, call):
        """Runs a plain function's call on this thread and answers it,
        unless it was cancelled meanwhile (the answer was sent then)."""
        name = tool.name
        try:
            kwargs = dict(msg.get("args") or {})
            for p in tool.fill_none:
                kwargs.setdefault(p, None)
            if tool.takes_user_info:
                kwargs["user_info"] = msg.get("user_info")
            with THREADS_LOCK:
                if call.cancelled:
                    return  # cancelled before it started: it never runs
            value = run_sync(mid, tool.fn, kwargs)
            if type(value) not in PLAIN_TYPES:
                if inspect.isawaitable(value) or inspect.isasyncgen(value):
                    # A plain function that returned a coroutine: the loop runs it.
                    value = asyncio.run_coroutine_threadsafe(resolve(value), self.loop).result()
                if inspect.isgenerator(value):
                    value = run_sync(mid, collect_sync, {"gen": value})
            line = self.result_line(mid, name, value)
        except BaseException as e:
            line = dumps(self.with_timing(mid, failure(mid, name, e)))
        with THREADS_LOCK:
            if call.cancelled:
                return
            DIRECT.pop(mid, None)
        self.send_line(line)

    def result_line(self, mid, name, value):
        """The reply line carrying value as name's result, encoded once for
        the size check and the reply."""
        encoded = dumps(to_result(name, value))
        if len(encoded) > MAX_RESULT_BYTES:
            encoded = dumps({"content": [{"type": "text", "text": "%s failed: its result is larger than %d bytes" % (name, MAX_RESULT_BYTES)}],
                             "isError": True})
        timing = self.end_timing(mid)
        tail = ',"timing":%s' % dumps(timing) if timing is not None else ""
        return '{"id":%s,"result":%s%s}' % (dumps(mid), encoded, tail)

    def dispatch(self, msg):
        op = msg.get("op")
        mid = msg.get("id")
        if op == "ping":
            with THREADS_LOCK:
                abandoned = len(ABANDONED)
            self.send({"id": mid, "pong": True, "abandoned": abandoned})
        elif op == "discover":
            self.loop.create_task(self.discover(mid, msg.get("dirs") or []))
        elif op == "call":
            TASKS[mid] = self.loop.create_task(self.call(mid, msg))
        elif op in ("read", "prompt", "complete"):
            self.loop.create_task(self.extra(mid, op, msg))
        elif op == "cancel":
            t = TASKS.get(mid)
            if t is not None:
                t.cancel()

    async def discover(self, mid, dirs):
        # Importing runs module code, which may block: keep the loop free.
        try:
            tools, logs, failed, (resources, prompts) = await self.loop.run_in_executor(self.pool, discover, dirs)
            self.send({"id": mid, "tools": tools, "logs": logs, "failed": failed, "resources": resources, "prompts": prompts})
        except BaseException as e:
            self.send({"id": mid, "error": "%s: %s" % (type(e).__name__, e)})

    async def call(self, mid, msg):
        name = msg.get("name")
        # ... when its task started (the difference is the event loop's
        # queue), when the tool itself started (a sync tool may also wait
        # for a thread) and when its result was ready.
        timing = None
        if "traceparent" in msg:
            timing = {"received_ns": msg.get("_received_ns"), "started_ns": time.time_ns()}
            self.timings[mid] = timing
        try:
            tool = TOOLS.get(name)
            if tool is None:
                self.send({"id": mid, "error": "unknown tool %s" % name})
                return
            kwargs = dict(msg.get("args") or {})
            for p in tool.fill_none:
                kwargs.setdefault(p, None)
            if tool.takes_user_info:
                kwargs["user_info"] = msg.get("user_info")
            # This task's own context: the tool's thread or coroutine sees it.
            self.enter_call(mid, msg)
            if tool.is_async:
                if timing is not None:
                    timing["run_ns"] = time.time_ns()
                value = await tool.fn(**kwargs)
            else:
                ctx = contextvars.copy_context()
                value = await self.loop.run_in_executor(self.pool, functools.partial(ctx.run, run_sync, mid, tool.fn, kwargs))
            if inspect.isawaitable(value):
                value = await value
            if inspect.isgenerator(value):
                # A sync generator's body runs as it is iterated: in a thread.
                ctx = contextvars.copy_context()
                value = await self.loop.run_in_executor(self.pool, functools.partial(ctx.run, run_sync, mid, collect_sync, {"gen": value}))
            elif inspect.isasyncgen(value):
                value = await collect_async(value)
            self.send_line(self.result_line(mid, name, value))
        except asyncio.CancelledError:
            # A thread cannot be interrupted: remember it, so that a host
            # filling up with stuck threads gets replaced.
            with THREADS_LOCK:
                if mid in RUNNING:
                    ABANDONED.add(mid)
            self.reply(mid, {"id": mid, "cancelled": True})
        except BaseException as e:
            self.reply(mid, failure(mid, name, e))
        finally:
            TASKS.pop(mid, None)
            self.timings.pop(mid, None)

    def enter_call(self, mid, msg):
        """Sets call mid's context, which its tool sees in its thread or
        coroutine: its progress reporter, what it may send and ask its
        caller (design.md "Logging", "Elicitation and sampling"), its
        traceparent. Both paths of a call (call, call_direct) run it in the
        call's own context."""
        HELPERS._call.set((self.report_progress, mid) if msg.get("want_progress") else None)
        HELPERS._interact.set(HELPERS._Interaction(functools.partial(self.report_log, mid), msg.get("log_level"),
                                                   msg.get("caps"), msg.get("inputs"), msg.get("replay")))
        HELPERS._traceparent.set(msg.get("traceparent"))

    def reply(self, mid, msg):
        """Sends a call's reply, with its timing when the call is traced."""
        self.send(self.with_timing(mid, msg))

    def with_timing(self, mid, msg):
        """msg with the traced call's timing added, if mid is traced."""
        timing = self.end_timing(mid)
        if timing is not None:
            msg["timing"] = timing
        return msg

    def end_timing(self, mid):
        """The traced call's timing ended now, or None; it is forgotten, so
        the one reply of a call carries it."""
        timing = self.timings.pop(mid, None)
        if timing is not None:
            timing["ended_ns"] = time.time_ns()
        return timing

    async def extra(self, mid, op, msg):
        """Reads a resource, renders a prompt or completes an argument; the
        module's function runs in a thread and may be a coroutine."""
        try:
            if op == "read":
                fn = functools.partial(read_resource, msg.get("uri") or "")  # noqa: F821 (extras.py)
            elif op == "prompt":
                # A prompt function may ask its caller like a tool: it
                # runs in a context of its own with the request's answers.
                ctx = contextvars.copy_context()
                ctx.run(HELPERS._interact.set, HELPERS._Interaction(lambda *a: None, None, msg.get("caps"),
                                                                    msg.get("inputs"), msg.get("replay")))
                fn = functools.partial(ctx.run, get_prompt, msg.get("name") or "", msg.get("arguments") or {})  # noqa: F821
            else:
                fn = functools.partial(complete, msg.get("name") or "", msg.get("uri") or "",  # noqa: F821
                                       msg.get("argument") or "", msg.get("value") or "", msg.get("arguments") or {})
            value = await self.loop.run_in_executor(self.pool, fn)
            if op in ("read", "prompt"):
                first, body = value
                if inspect.isawaitable(body):
                    body = await body
            if op == "read":
                uri = msg.get("uri")
                self.send({"id": mid, "contents": [resource_contents(uri, first, body)]})  # noqa: F821 (extras.py)
            elif op == "prompt":
                self.send({"id": mid, "description": first, "messages": prompt_messages(body)})  # noqa: F821
            else:
                self.send({"id": mid, "values": value})
        except ExtraError as e:  # noqa: F821 (extras.py)
            self.send({"id": mid, "error": str(e), "invalid": e.kind == "invalid"})
        except HELPERS.InputRequired as e:
            self.send({"id": mid, "inputRequests": jsonable(e.requests)})
        except HELPERS.CapabilityUnavailable as e:
            self.send({"id": mid, "missingCapability": e.capability})
        except BaseException as e:
            self.send({"id": mid, "error": "%s: %s" % (type(e).__name__, e), "raised": True,
                       "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__))})

    def report_progress(self, mid, progress, total, message):
        m = {"id": mid, "op": "progress", "progress": progress}
        if total is not None:
            m["total"] = total
        if message:
            m["message"] = message
        self.send(m)

    def report_log(self, mid, level, logger, data):
        m = {"id": mid, "op": "log", "level": level, "data": jsonable(data)}
        if logger:
            m["logger"] = logger
        self.send(m)

    def run(self):
        asyncio.set_event_loop(self.loop)
        install_log_handler()
        threading.Thread(target=self.reader, name="reader", daemon=True).start()
        self.send({"op": "hello", "python": "%d.%d.%d" % sys.version_info[:3], "pid": os.getpid()})
        self.loop.run_forever()


def failure(mid, name, e):
    """The reply to call mid of tool name that raised e (cancellation
    aside): the questions of a tool that waits for its caller's answers
    (mirobody.ask), or a failed result."""
    if isinstance(e, HELPERS.InputRequired):
        return {"id": mid, "result": {"content": [], "inputRequests": jsonable(e.requests)}}
    if isinstance(e, HELPERS.CapabilityUnavailable):
        text = "%s failed: %s" % (name, e)
        return {"id": mid, "result": {"content": [{"type": "text", "text": text}], "isError": True,
                                      "missingCapability": e.capability}}
    if isinstance(e, GeneratorTooLarge):
        return {"id": mid, "result": {"content": [{"type": "text", "text": "%s failed: %s" % (name, e)}], "isError": True}}
    text = "%s failed: %s: %s" % (name, type(e).__name__, e)
    return {"id": mid, "result": {"content": [{"type": "text", "text": text}], "isError": True},
            "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__))}


class DirectCall(object):
    """A plain function's call (Host.start_direct); cancelled once its
    caller gave up."""

    def __init__(self):
        self.cancelled = False


async def resolve(value):
    """Awaits what a plain function returned, as Host.call does."""
    if inspect.isawaitable(value):
        value = await value
    if inspect.isasyncgen(value):
        value = await collect_async(value)
    return value


def run_sync(mid, fn, kwargs):
    with THREADS_LOCK:
        RUNNING.add(mid)
    timing = HOST.timings.get(mid)
    if timing is not None and "run_ns" not in timing:
        timing["run_ns"] = time.time_ns()
    try:
        return fn(**kwargs)
    finally:
        with THREADS_LOCK:
            RUNNING.discard(mid)
            ABANDONED.discard(mid)


class CallerLogHandler(logging.Handler):
    """Sends the log records of a tool call to its caller, at the level the
    caller asked for (design.md "Logging"); records outside a call, or below
    that level, go nowhere."""

    def emit(self, record):
        st = HELPERS._interact.get()
        if st is None:
            return
        level = mcp_level(record.levelno)
        if not st.wants(level):
            return
        try:
            st.send_log(level, record.name, self.format(record))
        except Exception:
            self.handleError(record)


def mcp_level(levelno):
    """The MCP level of a Python logging level."""
    for limit, name in ((logging.INFO, "debug"), (logging.WARNING, "info"), (logging.ERROR, "warning"),
                        (logging.CRITICAL, "error")):
        if levelno < limit:
            return name
    return "critical"


def install_log_handler():
    """Lets every record of a tool reach CallerLogHandler. The root logger
    had no handler, so Python printed warnings and above to stderr (its
    last resort); a stderr handler at WARNING keeps that for the service
    log."""
    root = logging.getLogger()
    err = logging.StreamHandler(sys.stderr)
    err.setLevel(logging.WARNING)
    root.addHandler(err)
    root.addHandler(CallerLogHandler())
    root.setLevel(logging.DEBUG)


def log(level, msg, **attrs):
    return {"level": level, "msg": msg, "attrs": attrs}


def main():
    if sys.version_info < MIN_PYTHON:
        sys.stderr.write("the Mirobody tool host needs Python %d.%d or newer, not %s\n"
                         % (MIN_PYTHON + (sys.version.split()[0],)))
        sys.exit(3)
    global HOST
    install_helpers(MIROBODY_SOURCE)  # noqa: F821 (prepended by registry-svc)
    HOST = Host(3, 4)
    HOST.run()
    sys.stdout.flush()
    sys.stderr.flush()
    # Threads of sync tools that never returned must not keep us alive.
    os._exit(0)


if __name__ == "__main__":
    main()
