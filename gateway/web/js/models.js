// The model picker of the composer: the chosen agent's providers and
// their models, from /api/providers. A choice is sent with each turn as
// provider and model; "Default" sends neither, so the server picks.

import { api } from "./api.js";
import { $, h } from "./dom.js";

let loaded = ""; // the agent whose providers the picker lists

/** load fills the picker with the providers of the agent chosen now. */
async function load() {
  const agent = $("composer-agent").value;
  const select = $("composer-model");
  if (loaded === agent && select.options.length > 1) return;
  loaded = agent;
  let list;
  try {
    list = await api(`/api/providers${agent ? `?agent=${encodeURIComponent(agent)}` : ""}`);
  } catch {
    // The picker is optional: without the list the server's default serves.
    return;
  }
  if (loaded !== agent) return; // the agent changed again meanwhile
  const previous = select.value;
  select.replaceChildren(h("option", { value: "" }, "Default"));
  for (const p of list.providers) {
    for (const m of p.models) {
      const label = `${p.name} · ${m}${p.default ? " (default)" : ""}${p.ready ? "" : " (no key)"}`;
      const opt = h("option", { value: JSON.stringify([p.name, m]) }, label);
      opt.disabled = !p.ready;
      select.append(opt);
    }
  }
  select.value = [...select.options].some((o) => o.value === previous) ? previous : "";
}

/** initPicker lists the providers now and whenever the agent changes. */
export function initPicker() {
  $("composer-agent").addEventListener("change", load);
  load();
}

/** choice returns the turn's provider and model fields ({} for the default). */
export function choice() {
  const v = $("composer-model").value;
  if (!v) return {};
  const [provider, model] = JSON.parse(v);
  return { provider, model };
}
