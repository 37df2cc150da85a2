// feed.js: the real OpenTelemetry JS SDK (sdk-trace-base 1.30, the OTLP exporters 0.57)
// exporting spans to dqd, with the SDK's default batch settings (BatchSpanProcessor: a
// batch every 5 s, or at once at 512 spans; a queue of 2048).
//
//   node feed.js URL PROTOCOL MODE SERVICE TRACES [TOKEN]
//
// The environment's FEED_LINGER_MS (default 6000) is how long the application runs on after
// its last span before it shuts the provider down: longer than the 5 s export interval, so
// the last batch goes out on the processor's timer, 5 s after its spans ended. With
// FEED_WINDOW_MS (dqd's window), a checkout trace that would straddle a window boundary is
// moved earlier to end before it, so that a trace's spans all fall in one window.
//
// URL       dqd's OTLP endpoint, http://127.0.0.1:PORT/v1/traces
// PROTOCOL  json (exporter-trace-otlp-http) or proto (exporter-trace-otlp-proto, gzip)
// MODE      checkout: traces `checkout` with the children `payment` then `stock` (one in
//           twenty payments fails with status ERROR, and its checkout too);
//           shapes: four structures for `dqctl diagram --infer`: a sequence (`order`:
//           validate, charge, ship one after another), a fan-out joined on the last child
//           (`search`: index_a, index_b, index_c at once), a race ended by the first
//           (`lookup`: cache and db at once, it ends with the first), a choice (`pay`:
//           card 70 %, voucher 30 %).
// TRACES    how many traces
//
// Spans are made with the SDK's API (startSpan with the parent's context, explicit start
// and end times just before now) and paced so that the queue never overflows. Prints one
// JSON line: the spans made per probe and status, and what the processor dropped.
'use strict';

const api = require('@opentelemetry/api');
const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { Resource } = require('@opentelemetry/resources');

const [url, protocol, mode, service, tracesArg, token] = process.argv.slice(2);
if (!url || !['json', 'proto'].includes(protocol) || !['checkout', 'shapes'].includes(mode)) {
  console.error('usage: node feed.js URL json|proto checkout|shapes SERVICE TRACES [TOKEN]');
  process.exit(2);
}
const traces = parseInt(tracesArg, 10);
const headers = token ? { Authorization: 'Bearer ' + token } : {};
const Exporter =
  protocol === 'json'
    ? require('@opentelemetry/exporter-trace-otlp-http').OTLPTraceExporter
    : require('@opentelemetry/exporter-trace-otlp-proto').OTLPTraceExporter;
const exporter = new Exporter({ url, headers, compression: protocol === 'proto' ? 'gzip' : 'none' });

let exportErrors = 0;
const exportFn = exporter.export.bind(exporter);
exporter.export = (spans, done) =>
  exportFn(spans, (res) => {
    if (res.code !== 0) {
      exportErrors++;
      console.error('export failed:', res.error && res.error.message);
    }
    done(res);
  });

const processor = new BatchSpanProcessor(exporter); // the SDK's defaults
const provider = new BasicTracerProvider({
  resource: new Resource({ 'service.name': service }),
  spanProcessors: [processor],
});
const tracer = provider.getTracer('dqd-otlp-test', '1.0.0');

const made = {};
function count(name, failed) {
  made[name] = made[name] || { ok: 0, fa: 0 };
  made[name][failed ? 'fa' : 'ok']++;
}

// ms since the epoch (fractional) as the SDK's HrTime
function hr(ms) {
  const s = Math.floor(ms / 1000);
  return [s, Math.round((ms - s * 1000) * 1e6)];
}

function span(name, parent, startMs, endMs, failed) {
  const ctx = parent ? api.trace.setSpan(api.context.active(), parent) : api.context.active();
  const s = tracer.startSpan(name, { startTime: hr(startMs) }, ctx);
  if (failed) {
    s.setStatus({ code: api.SpanStatusCode.ERROR, message: 'declined' });
  }
  return { s, endMs, name, failed };
}

function end(...spans) {
  for (const x of spans) {
    x.s.end(hr(x.endMs));
    count(x.name, x.failed);
  }
}

let rnd = 12345;
function random() {
  rnd = (rnd * 1103515245 + 12345) % 2147483648;
  return rnd / 2147483648;
}

const windowMs = parseInt(process.env.FEED_WINDOW_MS || '0', 10);

// the start of a trace of length ms: start, or earlier so that it ends in start's window
function inOneWindow(start, ms) {
  if (!windowMs) return start;
  const boundary = (Math.floor(start / windowMs) + 1) * windowMs;
  return start + ms < boundary ? start : boundary - ms - 0.1;
}

function checkoutTrace(i) {
  const pay = 10 + 20 * random();
  const stock = 3 + 6 * random();
  const t0 = inOneWindow(Date.now() - 80, pay + stock + 0.5);
  const failed = i % 20 === 7;
  const root = span('checkout', null, t0, t0 + pay + stock + 0.5, failed);
  const p = span('payment', root.s, t0 + 0.2, t0 + 0.2 + pay, failed);
  const k = span('stock', root.s, t0 + 0.3 + pay, t0 + 0.3 + pay + stock, false);
  end(p, k, root);
}

function shapesTrace(i) {
  const t0 = Date.now() - 120;
  switch (i % 4) {
    case 0: {
      const a = 2 + 3 * random(), b = 4 + 4 * random(), c = 1 + 2 * random();
      const root = span('order', null, t0, t0 + a + b + c + 1.2);
      const v = span('validate', root.s, t0 + 0.3, t0 + 0.3 + a);
      const ch = span('charge', root.s, t0 + 0.6 + a, t0 + 0.6 + a + b);
      const sh = span('ship', root.s, t0 + 0.9 + a + b, t0 + 0.9 + a + b + c);
      end(v, ch, sh, root);
      break;
    }
    case 1: {
      const d = [5 + 10 * random(), 5 + 10 * random(), 5 + 10 * random()];
      const last = Math.max(...d);
      const root = span('search', null, t0, t0 + 0.2 + last + 0.3);
      const kids = ['index_a', 'index_b', 'index_c'].map((n, j) =>
        span(n, root.s, t0 + 0.2 + 0.01 * j, t0 + 0.2 + d[j]));
      end(...kids, root);
      break;
    }
    case 2: {
      const dc = 1 + 8 * random(), dd = 2 + 10 * random();
      const first = Math.min(dc, dd);
      const root = span('lookup', null, t0, t0 + 0.2 + first + 0.2);
      const c = span('cache', root.s, t0 + 0.2, t0 + 0.2 + dc);
      const db = span('db', root.s, t0 + 0.21, t0 + 0.21 + dd);
      end(c, db, root);
      break;
    }
    default: {
      const card = random() < 0.7;
      const d = card ? 3 + 5 * random() : 1 + 2 * random();
      const root = span('pay', null, t0, t0 + d + 0.6);
      const k = span(card ? 'card' : 'voucher', root.s, t0 + 0.3, t0 + 0.3 + d);
      end(k, root);
      break;
    }
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

(async () => {
  const make = mode === 'checkout' ? checkoutTrace : shapesTrace;
  for (let i = 0; i < traces; i++) {
    make(i);
    if (i % 100 === 99) {
      await sleep(300); // at most ~400 spans between exports' chances: the queue holds 2048
    }
  }
  await sleep(parseInt(process.env.FEED_LINGER_MS || '6000', 10));
  await provider.shutdown(); // exports what is left, as an application's exit does
  let total = 0;
  for (const k of Object.keys(made)) total += made[k].ok + made[k].fa;
  console.log(JSON.stringify({ made, total, exportErrors }));
  process.exit(exportErrors ? 1 : 0);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
