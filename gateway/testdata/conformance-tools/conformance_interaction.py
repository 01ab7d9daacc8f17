"""Fixture tools of the official MCP conformance suite that log and ask
their caller (logging, sampling, elicitation, input-required results), as
ordinary Mirobody Python tools. Loaded only by the conformance runs in
services/stack; users never get them.
"""

import asyncio
import json
import logging

import mirobody

LOG = logging.getLogger("conformance")

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


async def test_tool_with_logging() -> str:
    """Logs three info records 50 ms apart (scenario tools-call-with-logging)."""
    LOG.info("Tool execution started")
    await asyncio.sleep(0.05)
    mirobody.log("info", "Tool processing data")
    await asyncio.sleep(0.05)
    LOG.info("Tool execution completed")
    return "logged three messages"


def test_logging_tool() -> str:
    """Logs at every level; nothing may reach a caller that asked for no level (server-stateless)."""
    for level in mirobody.LOG_LEVELS:
        mirobody.log(level, "a %s record" % level)
    return "logged"


def test_sampling(prompt: str) -> str:
    """Asks the client's model (scenario tools-call-sampling)."""
    r = mirobody.sample(prompt, max_tokens=100)
    return "LLM response: " + r.get("content", {}).get("text", "")


def _answer(r) -> str:
    return "action=%s, content=%s" % (r.get("action"), json.dumps(r.get("content", {}), sort_keys=True))


def test_elicitation(message: str) -> str:
    """Asks the user for a name and an email (scenario tools-call-elicitation)."""
    r = mirobody.elicit(message, {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    })
    return "User response: " + _answer(r)


def test_elicitation_sep1034_defaults() -> str:
    """Elicits with a default for every primitive type (scenario elicitation-sep1034-defaults)."""
    r = mirobody.elicit("Please review your details", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    })
    return "Elicitation completed: " + _answer(r)


def test_elicitation_sep1330_enums() -> str:
    """Elicits with the five enum forms (scenario elicitation-sep1330-enums)."""
    r = mirobody.elicit("Please choose", {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}]}},
        },
    })
    return "Elicitation completed: " + _answer(r)


def test_missing_capability() -> str:
    """Needs sampling and does not handle its absence (server-stateless: -32021)."""
    return "LLM response: " + mirobody.sample("Say hi", max_tokens=10)["content"]["text"]


def test_streaming_elicitation() -> str:
    """Elicits; in 2026-07-28 that is an input-required result, never a request on the stream (server-stateless)."""
    return "Hello, %s!" % mirobody.elicit("What is your name?", NAME_SCHEMA)["content"]["name"]


def test_input_required_result_elicitation() -> str:
    """One elicitation (scenario input-required-result-basic-elicitation)."""
    r = mirobody.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return "Hello, %s!" % r.get("content", {}).get("name", "")


def test_input_required_result_sampling() -> str:
    """One sampling request (scenario input-required-result-basic-sampling)."""
    r = mirobody.sample("What is the capital of France?", max_tokens=100, key="capital_question")
    return r.get("content", {}).get("text", "")


def test_input_required_result_list_roots() -> str:
    """One roots/list request (scenario input-required-result-basic-list-roots)."""
    roots = mirobody.list_roots(key="client_roots")
    return "roots: " + ", ".join(r.get("uri", "") for r in roots)


CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def test_input_required_result_request_state() -> str:
    """Confirms through a sealed request state (scenario input-required-result-request-state)."""
    r = mirobody.elicit("Please confirm", CONFIRM, key="confirm")
    return "state-ok: confirmed=%s" % r.get("content", {}).get("ok")


def test_input_required_result_tampered_state() -> str:
    """Confirms; a tampered request state is refused before it runs (scenario input-required-result-tampered-state)."""
    r = mirobody.elicit("Please confirm", CONFIRM, key="confirm")
    return "confirmed=%s" % r.get("content", {}).get("ok")


def test_input_required_result_multiple_inputs() -> str:
    """Three questions in one round (scenario input-required-result-multiple-input-requests)."""
    a = mirobody.ask({
        "user_name": mirobody.ElicitRequest("What is your name?", NAME_SCHEMA),
        "greeting": mirobody.SampleRequest("Generate a greeting", max_tokens=50),
        "client_roots": mirobody.RootsRequest(),
    })
    return "%s %s (%d roots)" % (a["greeting"].get("content", {}).get("text", ""),
                                 a["user_name"].get("content", {}).get("name", ""), len(a["client_roots"].get("roots", [])))


def test_input_required_result_multi_round() -> str:
    """Two questions, one round each (scenario input-required-result-multi-round)."""
    name = mirobody.elicit("Step 1: What is your name?", NAME_SCHEMA, key="step1")
    color = mirobody.elicit("Step 2: What is your favorite color?",
                            {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}, key="step2")
    return "%s likes %s" % (name.get("content", {}).get("name"), color.get("content", {}).get("color"))


def test_input_required_result_capabilities() -> str:
    """Asks only what the client can answer (scenario input-required-result-capability-check)."""
    try:
        who = mirobody.elicit("What is your name?", NAME_SCHEMA, key="user_name")["content"]["name"]
    except mirobody.CapabilityUnavailable:
        who = "someone"
    r = mirobody.sample("Greet " + who, max_tokens=50, key="greeting")
    return r.get("content", {}).get("text", "")
