// paysuite clients: drives the published paypack-js SDK, unchanged, against one target.
//
// Reads a job (JSON) on stdin, prints one JSON result on stdout. Only the SDK's base URL is set
// (its exported axios instance, as a client developer would). The axios adapter is wrapped to
// *observe* each HTTP answer, so a cell can name the status and message that broke it even where
// the SDK replaces the error with its own (its 401 handler throws a plain Error).
"use strict";

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

let lastFailure = null; // the last non-2xx answer the SDK received: {status, message}
const adapter = http.defaults.adapter;
http.defaults.adapter = async (config) => {
  try {
    return await adapter(config);
  } catch (error) {
    if (error && error.response) {
      let body = error.response.data || {}; // a string here: axios parses after the adapter
      if (typeof body === "string") {
        try {
          body = JSON.parse(body);
        } catch (_) {
          body = { message: body.slice(0, 200) };
        }
      }
      const code = body.code ? `${body.code}: ` : "";
      lastFailure = { status: error.response.status, message: `${code}${body.message || ""}` };
    }
    throw error;
  }
};

function describe(error) {
  let sdk = error && error.message ? error.message : JSON.stringify(error);
  if (error && error.status && error.message) sdk = `${error.status} ${error.message}`;
  if (lastFailure) return `${lastFailure.status} ${lastFailure.message} (SDK: ${sdk})`;
  return sdk;
}

async function main() {
  const job = JSON.parse(await readStdin());
  http.defaults.baseURL = job.base_url.replace(/\/?$/, "/");
  const paypack = new Paypack({ client_id: job.client_id, client_secret: job.client_secret });
  const cells = [];
  const state = {};

  async function op(name, call, check) {
    lastFailure = null;
    let data;
    try {
      const res = await call();
      data = res && res.data !== undefined ? res.data : res;
    } catch (error) {
      cells.push({ op: name, ok: false, detail: describe(error) });
      return null;
    }
    const problem = check ? check(data) : null;
    cells.push({ op: name, ok: !problem, detail: problem || "", data });
    return problem ? null : data;
  }

  const has = (list, refs) => refs.every((ref) => (list || []).some((item) => JSON.stringify(item).includes(ref)));
  const createCheck = (kind) => (d) =>
    d && d.ref && d.kind === kind && d.status === "pending" ? null : `unexpected answer ${JSON.stringify(d)}`;

  const cashin = await op("cashin", () => paypack.cashin({ number: job.number, amount: job.amount, environment: "development" }), createCheck("CASHIN"));
  cells.unshift(
    utils.getAccessToken()
      ? { op: "authorize", ok: true, detail: "", data: { access: utils.getAccessToken(), refresh: utils.getRefreshToken() } }
      : { op: "authorize", ok: false, detail: cells[0].detail || "no token" }
  );
  const cashout = await op("cashout", () => paypack.cashout({ number: job.number, amount: job.amount }), createCheck("CASHOUT"));
  state.refs = [cashin && cashin.ref, cashout && cashout.ref].filter(Boolean);
  await op("find", () => paypack.transaction(cashin ? cashin.ref : "00000000-0000-4000-8000-000000000000"),
    (d) => (cashin && d && d.ref === cashin.ref ? null : `unexpected answer ${JSON.stringify(d)}`));
  await op("events", () => paypack.events({ client: job.number, limit: 10 }),
    (d) => (d && has(d.transactions, state.refs) ? null : "the created transactions are not listed"));
  const from = new Date(Date.now() - 3600 * 1000);
  const to = new Date(Date.now() + 3600 * 1000);
  await op("events from/to", () => paypack.events({ client: job.number, from, to }),
    (d) => (d && has(d.transactions, state.refs) ? null : "the created transactions are not listed"));
  await op("transactions", () => paypack.transactions({ client: job.number, offset: 0, limit: 10 }),
    (d) => (d && has(d.transactions, state.refs) ? null : "the created transactions are not listed"));
  await op("me", () => paypack.me(), (d) => (d && typeof d.id === "string" ? null : `unexpected answer ${JSON.stringify(d)}`));
  cells.push({ op: "refresh", ok: null, detail: "n/a: no public method (the SDK refreshes only after a 401)" });

  if (job.expiry_wait_s) {
    // The access token has expired: the SDK's 401 handler starts a refresh without awaiting it
    // (build/http.js, refreshAccessToken: `axiosInstance.get(...)` is not returned), so the retry
    // carries the old token. The next call, once the refresh has landed, should work.
    const before = utils.getRefreshToken();
    await sleep(job.expiry_wait_s * 1000);
    const ref = cashin ? cashin.ref : "";
    await op("find after expiry", () => paypack.transaction(ref), (d) => (d && d.ref === ref ? null : "wrong answer"));
    await sleep(500);
    await op("find after refresh", () => paypack.transaction(ref), (d) => (d && d.ref === ref ? null : "wrong answer"));
    state.refresh_before = before;
    state.refresh_after = utils.getRefreshToken();
  }
  process.stdout.write(JSON.stringify({ sdk: "paypack-js", version: sdkVersion, cells, state }) + "\n");
}

main().catch((error) => {
  process.stderr.write(`paypack-js driver: ${error && error.stack ? error.stack : error}\n`);
  process.exit(3);
});
