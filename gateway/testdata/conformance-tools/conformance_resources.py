"""Fixture resources and prompts of the official MCP conformance suite
(@modelcontextprotocol/conformance), as plain RESOURCES and PROMPTS of a
Mirobody tool module (tools/README.md "Resources and prompts").

Loaded only by the conformance runs in services/stack, never by ./tools.
"""

import json
import struct
import zlib

import mirobody


def _red_pixel_png() -> bytes:
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _template_data(id: str) -> str:
    """Data of one test item (scenario resources-templates-read)."""
    return json.dumps({"id": id, "templateTest": True, "data": "Data for ID: %s" % id})


RESOURCES = [
    {"uri": "test://static-text", "name": "static-text", "description": "A static text resource (resources-read-text).",
     "mimeType": "text/plain", "text": "This is the content of the static text resource."},
    {"uri": "test://static-binary", "name": "static-binary", "description": "A 1x1 PNG (resources-read-binary).",
     "mimeType": "image/png", "blob": _red_pixel_png()},
    {"uri": "test://watched-resource", "name": "watched-resource",
     "description": "A resource to subscribe to (resources-subscribe).", "mimeType": "text/plain",
     "text": "This resource is watched."},
    {"uri": "test://template/{id}/data", "name": "template-data", "mimeType": "application/json",
     "read": _template_data, "complete": {"id": ["123", "124", "200"]}},
]


def _prompt_with_arguments(arg1: str, arg2: str):
    """A prompt with two arguments (prompts-get-with-args).

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return "Prompt with arguments: arg1='%s', arg2='%s'" % (arg1, arg2)


def _prompt_with_embedded_resource(resourceUri: str):
    """A prompt that embeds a resource (prompts-get-embedded-resource).

    Args:
        resourceUri: URI of the resource to embed.
    """
    return [mirobody.EmbeddedResource(resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"),
            "Please process the embedded resource above."]


def _prompt_with_image():
    """A prompt with an image (prompts-get-with-image)."""
    return [mirobody.Image(_red_pixel_png(), "image/png"), "Please analyze the image above."]


PROMPTS = [
    {"name": "test_simple_prompt", "description": "A simple prompt without arguments (prompts-get-simple).",
     "text": "This is a simple prompt for testing."},
    {"name": "test_prompt_with_arguments", "get": _prompt_with_arguments,
     "complete": {"arg1": ["paris", "park", "party", "test", "testing"]}},
    {"name": "test_prompt_with_embedded_resource", "get": _prompt_with_embedded_resource},
    {"name": "test_prompt_with_image", "get": _prompt_with_image},
]
