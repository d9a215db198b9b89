// paysuite clients: drives the published paypack-js SDK, unchanged, against one target.
//
// Reads a job (JSON) on stdin, prints one JSON result on stdout. Only the SDK's base URL is set
// (its exported axios instance, as a client developer would). The axios adapter is wrapped,
// through axios's own request options, to bound every answer with conform's limits (the job's
// `limits`: a read time-out, a cap on the body, and a total deadline that aborts the request)
// and to *record* each exchange, so a cell can name the status and message that broke it even
// where the SDK replaces the error with its own (its 401 handler throws a plain Error).
// A cell is ok, fail (the target answered, not as the SDK needs: expected and actual), error
// (no usable answer within the limits) or "not run" (the target had stopped answering).
"use strict";

const fs = require("fs");
const https = require("https");
const http = require("paypack-js/build/http.js");
const utils = require("paypack-js/build/utils.js");
const Paypack = require("paypack-js").default;
const sdkVersion = require("paypack-js/package.json").version;

function readStdin() {
  return new Promise((resolve, reject) => {
    let text = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk) => (text += chunk));
    process.stdin.on("end", () => resolve(text));
    process.stdin.on("error", reject);
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const oneLine = (text, limit = 200) => {
  const flat = String(text).split(/\s+/).filter(Boolean).join(" ");
  return flat.length <= limit ? flat : flat.slice(0, limit - 1) + "…";
};
const shown = (data, limit = 120) => oneLine(typeof data === "string" ? data : JSON.stringify(data), limit);

let limits = { connect_s: 10, read_s: 30, total_s: 60, max_body_bytes: 1 << 20 };
const exchanges = []; // every exchange of the walk, in order
class Unanswered extends Error {
  constructor(message, gone) {
    super(message);
    this.gone = gone;
  }
}

function headerList(headers) {
  return Object.entries(headers || {})
    .filter(([, value]) => typeof value !== "object" && typeof value !== "function")
    .map(([name, value]) => [name, String(value)]);
}

function bodyText(data) {
  if (data === undefined || data === null) return "";
  return typeof data === "string" ? data : Buffer.isBuffer(data) ? data.toString("utf8") : JSON.stringify(data);
}

// The run's TLS settings (paysuite_core.tls, TLSSettings.node_environment): the CAs to trust,
// the client certificate to present, or no verification at all; one agent for every request.
function tlsAgent(env) {
  const options = {};
  if (env.PAYSUITE_CA_BUNDLE) options.ca = fs.readFileSync(env.PAYSUITE_CA_BUNDLE);
  if (env.PAYSUITE_CLIENT_CERT) {
    options.cert = fs.readFileSync(env.PAYSUITE_CLIENT_CERT);
    options.key = fs.readFileSync(env.PAYSUITE_CLIENT_KEY || env.PAYSUITE_CLIENT_CERT);
  }
  if (env.PAYSUITE_INSECURE === "1") options.rejectUnauthorized = false;
  return new https.Agent(options);
}
const httpsAgent = tlsAgent(process.env);

const adapter = http.defaults.adapter;
http.defaults.adapter = async (config) => {
  const base = (config.baseURL || "").replace(/\/?$/, "/");
  const url = /^https?:/.test(config.url) ? config.url : base + String(config.url || "").replace(/^\//, "");
  const record = {
    method: String(config.method || "get").toUpperCase(),
    url,
    request_headers: headerList(config.headers),
    request_body: config.data === undefined ? null : bodyText(config.data),
    status: 0,
    response_headers: [],
    response_body: "",
    elapsed_ms: 0,
    error: "",
  };
  exchanges.push(record);
  const started = Date.now();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), limits.total_s * 1000);
  const bounded = {
    ...config,
    timeout: limits.read_s * 1000, // the socket's idle time: connect, and between two bytes
    maxContentLength: limits.max_body_bytes,
    maxBodyLength: limits.max_body_bytes,
    signal: controller.signal,
    httpsAgent,
  };
  try {
    const response = await adapter(bounded);
    record.status = response.status;
    record.response_headers = headerList(response.headers);
    record.response_body = bodyText(response.data).slice(0, 65536); // parsed after the adapter
    return response;
  } catch (error) {
    if (error && error.response) {
      record.status = error.response.status;
      record.response_headers = headerList(error.response.headers);
      record.response_body = bodyText(error.response.data).slice(0, 65536);
      throw error;
    }
    const message = String((error && error.message) || error);
    let reason = `no answer: ${oneLine(message, 120)}`;
    let gone = true;
    if (controller.signal.aborted) reason = `no complete answer within ${limits.total_s} s (--total-timeout)`;
    else if (/maxContentLength/.test(message)) {
      reason = `the target sent a body over the ${limits.max_body_bytes}-byte limit (--max-response-bytes): read no further`;
      gone = false;
    } else if (/timeout/i.test(message)) reason = `no answer: a read waited ${limits.read_s} s (--read-timeout)`;
    else if (error && error.code === "ECONNREFUSED") reason = "no answer: connection refused";
    else if (error && /CERT|TLS|SSL/.test(String(error.code))) reason = `no answer: TLS ${error.code}: ${oneLine(message, 120)}`;
    record.error = `${record.method} ${url}: ${reason}`;
    throw new Unanswered(reason, gone);
  } finally {
    clearTimeout(timer);
    record.elapsed_ms = Date.now() - started;
  }
};

function answerText(exchange) {
  let body = null;
  try {
    body = JSON.parse(exchange.response_body);
  } catch (_) {
    body = null;
  }
  if (body && typeof body === "object" && (body.message || body.code)) {
    return oneLine(`${exchange.status} ${body.code ? `${body.code}: ` : ""}${body.message || ""}`);
  }
  const type = (exchange.response_headers.find(([k]) => k.toLowerCase() === "content-type") || [, "no type"])[1];
  return oneLine(`${exchange.status} ${type.split(";")[0]} ${JSON.stringify(exchange.response_body.slice(0, 80))}`);
}

function lastFailure(first) {
  for (const exchange of exchanges.slice(first).reverse()) {
    if (exchange.status >= 300) return answerText(exchange);
  }
  return null;
}

function unansweredIn(error) {
  // The SDK wraps or replaces errors; the transport's own word is in the recorded exchange.
  if (error instanceof Unanswered) return error;
  return null;
}

async function main() {
  const job = JSON.parse(await readStdin());
  limits = { ...limits, ...(job.limits || {}) };
  http.defaults.baseURL = job.base_url.replace(/\/?$/, "/");
  const paypack = new Paypack({ client_id: job.client_id, client_secret: job.client_secret });
  const cells = [];
  const state = {};
  const walkDeadline = Date.now() + (job.walk_s || 120) * 1000;
  let stopped = null;

  async function op(name, call, check) {
    if (!stopped && Date.now() > walkDeadline) stopped = `the walk used its ${job.walk_s || 120} s budget`;
    if (stopped) {
      cells.push({ op: name, ok: null, outcome: "not run", detail: stopped });
      return null;
    }
    const first = exchanges.length;
    const cell = { op: name };
    let data;
    try {
      const res = await call();
      data = res && res.data !== undefined ? res.data : res;
      const mismatch = check ? check(data) : null;
      if (mismatch) {
        const failure = lastFailure(first);
        const [expected, actual] = failure ? ["a 2xx answer", failure] : mismatch;
        Object.assign(cell, { ok: false, outcome: "fail", detail: oneLine(`expected ${expected}, got ${actual}`), expected, actual });
      } else {
        Object.assign(cell, { ok: true, outcome: "ok", detail: "" });
      }
      cell.data = data;
    } catch (error) {
      const transport = exchanges.slice(first).reverse().find((e) => e.error);
      const unanswered = unansweredIn(error);
      if (unanswered || transport) {
        const reason = unanswered ? unanswered.message : transport.error.replace(/^[A-Z]+ \S+: /, "");
        if (!unanswered || unanswered.gone) {
          if (!/over the/.test(reason)) stopped = `not run: the target stopped answering (${name})`;
        }
        Object.assign(cell, { ok: false, outcome: "error", detail: oneLine(reason) });
      } else {
        let sdk = error && error.message ? error.message : JSON.stringify(error);
        if (error && error.status && error.message) sdk = `${error.status} ${error.message}`;
        sdk = oneLine(sdk, 120);
        const failure = lastFailure(first);
        Object.assign(cell, {
          ok: false,
          outcome: "fail",
          detail: failure ? `${failure} (SDK: ${sdk})` : sdk,
          expected: "a 2xx JSON answer",
          actual: failure || sdk,
        });
      }
    }
    cell.exchanges = exchanges.slice(first);
    cells.push(cell);
    return cell.ok ? data : null;
  }

  const has = (list, refs) => refs.every((ref) => (list || []).some((item) => JSON.stringify(item).includes(ref)));
  const listed = (d) => {
    if (!d || !Array.isArray(d.transactions)) return ["an object with a transactions list", shown(d)];
    const missing = state.refs.filter((ref) => !has(d.transactions, [ref]));
    if (missing.length) return [`the ${state.refs.length} created transaction(s) listed`, `${d.transactions.length} listed, without ${missing.join(", ")}`];
    return null;
  };
  const createCheck = (kind) => (d) => {
    if (!d || typeof d !== "object") return [`a ${kind} creation (JSON object)`, shown(d)];
    if (d.kind !== kind) return [`kind ${kind}`, shown(d.kind, 40)];
    if (d.status !== "pending") return ["status pending", shown(d.status, 40)];
    if (!d.ref) return ["a ref", shown(d.ref, 40)];
    return null;
  };
  const sameRef = (ref) => (d) => {
    if (!d || typeof d !== "object") return [`the transaction ${ref}`, shown(d)];
    return d.ref === ref ? null : [`ref ${ref}`, `ref ${shown(d.ref, 60)}`];
  };

  // paypack-js authorizes inside its first call (a request interceptor): the authorize cell is
  // read from that call's exchanges.
  const cashin = await op("cashin", () => paypack.cashin({ number: job.number, amount: job.amount, environment: "development" }), createCheck("CASHIN"));
  const first = cells[0];
  const authExchanges = (first.exchanges || []).filter((e) => e.url.includes("auth/agents/authorize"));
  cells.unshift(
    utils.getAccessToken()
      ? { op: "authorize", ok: true, outcome: "ok", detail: "", exchanges: authExchanges, data: { access: utils.getAccessToken(), refresh: utils.getRefreshToken() } }
      : { op: "authorize", ok: false, outcome: first.outcome === "error" ? "error" : "fail", detail: first.detail || "no token", expected: first.expected, actual: first.actual, exchanges: authExchanges }
  );
  const cashout = await op("cashout", () => paypack.cashout({ number: job.number, amount: job.amount }), createCheck("CASHOUT"));
  state.refs = [cashin && cashin.ref, cashout && cashout.ref].filter(Boolean);
  const ref = cashin ? cashin.ref : "00000000-0000-4000-8000-000000000000";
  await op("find", () => paypack.transaction(ref), sameRef(ref));
  await op("events", () => paypack.events({ client: job.number, limit: 10 }), listed);
  const from = new Date(Date.now() - 3600 * 1000);
  const to = new Date(Date.now() + 3600 * 1000);
  await op("events from/to", () => paypack.events({ client: job.number, from, to }), listed);
  await op("transactions", () => paypack.transactions({ client: job.number, offset: 0, limit: 10 }), listed);
  await op("me", () => paypack.me(), (d) => (d && typeof d.id === "string" ? null : ["an object with an id", shown(d)]));
  cells.push({ op: "refresh", ok: null, outcome: "n/a", detail: "n/a: no public method (the SDK refreshes only after a 401)" });

  if (job.expiry_wait_s && !stopped) {
    // The access token has expired: the SDK's 401 handler starts a refresh without awaiting it
    // (build/http.js, refreshAccessToken: `axiosInstance.get(...)` is not returned), so the retry
    // carries the old token. The next call, once the refresh has landed, should work.
    const before = utils.getRefreshToken();
    await sleep(job.expiry_wait_s * 1000);
    await op("find after expiry", () => paypack.transaction(ref), sameRef(ref));
    await sleep(500);
    await op("find after refresh", () => paypack.transaction(ref), sameRef(ref));
    state.refresh_before = before;
    state.refresh_after = utils.getRefreshToken();
  }
  process.stdout.write(JSON.stringify({ sdk: "paypack-js", version: sdkVersion, cells, state }) + "\n");
}

main().catch((error) => {
  process.stderr.write(`paypack-js driver: ${error && error.stack ? error.stack : error}\n`);
  process.exit(3);
});
