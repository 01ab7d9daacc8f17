// Server-Sent Events over fetch. EventSource cannot POST or send an
// Authorization header, so /api/chat's stream is read from the response
// body. Lines end with LF or CRLF (the gateway sends LF); a lone CR is not
// treated as a line end.

/**
 * events yields the parsed JSON of each event's data in a response body.
 * Comments and fields other than data and id are ignored; an event cut
 * off by the end of the stream is dropped, as the SSE rules say. The last
 * id seen goes to state.lastId, to resume a run's stream from it.
 */
export async function* events(body, state = {}) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        let line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.endsWith("\r")) line = line.slice(0, -1);
        if (line === "") {
          if (data.length) yield JSON.parse(data.join("\n"));
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "data") data.push(val);
        else if (field === "id") state.lastId = val;
      }
    }
  } finally {
    // Stops the download when the caller leaves the loop early.
    reader.cancel().catch(() => {});
  }
}
