"""Example MCP resources and prompts of a tool folder (tools/README.md
"Resources and prompts"): an MCP Apps page for current_time (clock.py links
it from the tool's _meta) and a prompt with arguments.

Plain module-level lists: registry-svc finds them at start-up and reloads
them when the file changes, like tools.
"""

_CLOCK_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Clock</title></head>
<body style="font-family: sans-serif">
<h1 id="now">Waiting for current_time...</h1>
<script>
// The host posts the tool's result to the page (MCP Apps); show its time.
window.addEventListener("message", (e) => {
  const m = e.data || {};
  const r = m.method === "ui/notifications/tool-result" && m.params && m.params.structuredContent;
  if (r && r.now) document.getElementById("now").textContent = r.now + " (" + r.weekday + ")";
});
</script>
</body></html>
"""


def _plan_my_day(city: str, focus: str = "health"):
    """Plan the rest of today around one focus.

    Args:
        city: Where you are today (for the time zone and the weather).
        focus: What the plan should favour, for example "health" or "work".
    """
    return ("Use current_time for %s, then plan the rest of my day with a focus on %s. "
            "Keep it to five items." % (city, focus))


RESOURCES = [
    {"uri": "ui://clock/now.html", "name": "Clock", "description": "Shows current_time's result.",
     "text": _CLOCK_PAGE},
]

PROMPTS = [
    {"name": "plan_my_day", "get": _plan_my_day,
     "complete": {"focus": ["health", "work", "family", "rest"]}},
]
