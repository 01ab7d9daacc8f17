// The API client: every request carries the signed-in key as a bearer
// token and no cookies, or, signed in with a password, the session cookie
// (sent to /api only) and its CSRF token (auth.js).

import { credentials } from "./auth.js";

/** ApiError is a failed API request, with the gateway's error body. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || `request failed (${status})`);
    this.status = status;
    this.code = body?.error || "";
    this.body = body;
  }
}

let unauthorized = () => {};

/** onUnauthorized sets what happens when the key stops being accepted. */
export function onUnauthorized(fn) {
  unauthorized = fn;
}

async function errorOf(resp) {
  let body = null;
  try {
    body = await resp.json();
  } catch {
    // Not JSON (a proxy's page, say): the status says enough.
  }
  return new ApiError(resp.status, body);
}

/**
 * request sends one API request and returns the response. body is sent as
 * JSON. A non-2xx answer throws an ApiError; a 401 also signs out.
 */
export async function request(path, { method = "GET", body, signal, token } = {}) {
  const cred = credentials(token);
  const headers = { ...cred.headers, Accept: "application/json" };
  const init = { method, headers, signal, credentials: cred.credentials, cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  if (!resp.ok) {
    const err = await errorOf(resp);
    if (resp.status === 401 && token === undefined) unauthorized(err);
    throw err;
  }
  return resp;
}

/** api sends a request and decodes its JSON answer (null for 204). */
export async function api(path, opts) {
  const resp = await request(path, opts);
  return resp.status === 204 ? null : resp.json();
}

/**
 * upload posts a file with XMLHttpRequest, the one browser API that
 * reports upload progress. onProgress gets the fraction sent (0..1), or
 * null once the body is sent and the server is working. It resolves to
 * {status, body} for any answer; network failures reject.
 */
export function upload(path, file, { contentType, onProgress = () => {} } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    xhr.responseType = "json";
    for (const [k, v] of Object.entries(credentials().headers)) xhr.setRequestHeader(k, v);
    xhr.setRequestHeader("Content-Type", contentType || file.type || "application/octet-stream");
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) onProgress(e.loaded / e.total);
    };
    xhr.upload.onload = () => onProgress(null);
    xhr.onload = () => {
      if (xhr.status === 401) unauthorized(new ApiError(401, xhr.response));
      resolve({ status: xhr.status, body: xhr.response });
    };
    xhr.onerror = () => reject(new Error("the upload failed: the server could not be reached"));
    xhr.onabort = () => reject(new Error("the upload was cancelled"));
    xhr.send(file);
  });
}
