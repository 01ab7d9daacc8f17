// The official TypeScript SDK client reads resources and gets prompts on
// /mcp: a skill file, the caller's own file through the template, a tool
// folder's ui:// page, and a tool folder's prompt with arguments. Usage:
// node ts-resources.mjs URL API_KEY. Prints one JSON line; a read that
// fails leaves its field empty and records the error.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
const client = new Client({ name: "mirobody-ts-resources", version: "1.0.0" });
await client.connect(transport);
const out = { resources: [], templates: [], skill: "", file: "", fileErr: "", ui: "", uiMime: "", prompt: "", promptArgs: [] };
out.resources = (await client.listResources()).resources.map((r) => r.uri);
out.templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
out.skill = (await client.readResource({ uri: "skill://greet/SKILL.md" })).contents[0].text;
try {
  out.file = (await client.readResource({ uri: "vfs:///memories/plans/todo.md" })).contents[0].text;
} catch (e) {
  out.fileErr = String(e).slice(0, 300);
}
const ui = (await client.readResource({ uri: "ui://weather/card.html" })).contents[0];
out.ui = ui.text;
out.uiMime = ui.mimeType;
const prompts = (await client.listPrompts()).prompts;
out.promptArgs = (prompts.find((p) => p.name === "plan_trip")?.arguments ?? []).map((a) => a.name + (a.required ? "*" : ""));
const p = await client.getPrompt({ name: "plan_trip", arguments: { city: "Oslo", days: "3" } });
out.prompt = p.messages.map((m) => m.role + ":" + (m.content.type === "text" ? m.content.text : m.content.type)).join("|");
await client.close();
console.log(JSON.stringify(out));
