/*
 * app.js: dqd's dashboard, one page served by dqd itself (embedded at build time).
 *
 * State comes from dqd's JSON API and stays current through its live events
 * (GET /api/v1/events, Server-Sent Events): on every (re)connection the page fetches the
 * state again, then applies events as they come. Rendering is batched to one animation
 * frame; charts (uPlot) are drawn only for the probe panels on screen, so hundreds of
 * open probes cost a little bookkeeping each window and no drawing.
 *
 * Every request goes to dqd's own origin; JSON bodies carry Content-Type:
 * application/json; a change carries the API token from this tab's session storage when
 * dqd needs one (the page asks for it, it is never part of the page).
 *
 * window.dqdPerf records the main-thread time each live update cost (the event's handler,
 * the frame it caused, and the ΔQ fetches it started), for docs/PERFORMANCE.md.
 */
(function () {
  "use strict";

  /* ---- formatting ---------------------------------------------------------------- */

  // 3 significant digits, trailing zeros after the point dropped: 0.5 → "500 ms"
  function trim3(x) {
    let t = Number(x).toPrecision(3);
    if (t.includes("e")) t = String(Number(t));
    return t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t;
  }
  function fmtDur(s) {
    if (s === null || s === undefined || !isFinite(s)) return "-";
    const a = Math.abs(s);
    if (a === 0) return "0";
    if (a < 1e-3) return trim3(s * 1e6) + " µs";
    if (a < 1) return trim3(s * 1e3) + " ms";
    return trim3(s) + " s";
  }
  function fmtPct(f) {
    if (f === null || f === undefined || !isFinite(f)) return "-";
    return (f * 100).toFixed(f < 0.001 && f > 0 ? 3 : 2) + "%";
  }
  function fmtNum(x, digits) {
    if (x === null || x === undefined || !isFinite(x)) return "-";
    return Number(x).toPrecision(digits || 3);
  }
  function fmtClock(unixS) {
    if (!isFinite(unixS)) return "-";
    return new Date(unixS * 1000).toISOString().slice(11, 23);
  }
  function fmtWhen(unixS) {
    if (!isFinite(unixS)) return "-";
    return new Date(unixS * 1000).toISOString().replace("T", " ").slice(0, 23);
  }
  // "1 window", "3 windows"
  function plural(n, one, many) {
    return n + " " + (n === 1 ? one : (many || one + "s"));
  }
  // how long ago, in dqd's time: "4 s", "3 min", "2 h", "5 d"
  function fmtAge(s) {
    if (!isFinite(s)) return "-";
    s = Math.max(0, s);
    if (s < 90) return Math.round(s) + " s";
    if (s < 5400) return Math.round(s / 60) + " min";
    if (s < 129600) return Math.round(s / 3600) + " h";
    return Math.round(s / 86400) + " d";
  }
  // a share of a whole: 0 … 100 %, never a negative or an overfull one ("-" then)
  function fmtShare(f) {
    return f === null || f === undefined || !isFinite(f) || f < 0 || f > 1 + 1e-9 ? "-" : fmtPct(f);
  }
  // "investigation 7", never one with a provisional or missing id
  function invLabel(id) {
    return id > 0 ? "investigation " + id : "an investigation";
  }
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const k of Object.keys(attrs)) {
        const v = attrs[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = v;
        else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v === true ? "" : v);
      }
    }
    for (const k of kids) {
      if (k === null || k === undefined || k === false) continue;
      e.append(k instanceof Node ? k : String(k));
    }
    return e;
  }
  const $ = (sel) => document.querySelector(sel);

  /* ---- performance records --------------------------------------------------------- */

  const perf = {
    updates: 0,        // live events handled
    samples: [],       // main-thread ms per window event (handler + frame + fetches it caused)
    byType: {},        // type → {count, ms}
    frames: 0,
    open: new Map(),   // update id → {ms, pending}
    next: 1,
    current: 0,        // the update whose work is being timed (0: none)
  };
  window.dqdPerf = perf;
  function perfBegin(type) {
    const id = perf.next++;
    perf.open.set(id, {type: type, ms: 0, pending: 1});
    return id;
  }
  function perfAdd(id, ms) {
    const u = perf.open.get(id);
    if (u) u.ms += ms;
  }
  function perfHold(id) {
    const u = perf.open.get(id);
    if (u) u.pending++;
  }
  function perfRelease(id) {
    const u = perf.open.get(id);
    if (!u) return;
    if (--u.pending > 0) return;
    perf.open.delete(id);
    const t = perf.byType[u.type] || (perf.byType[u.type] = {count: 0, ms: 0});
    t.count++;
    t.ms += u.ms;
    if (u.type === "window") {
      perf.samples.push(u.ms);
      if (perf.samples.length > 5000) perf.samples.shift();
    }
  }
  // runs fn, charging its time to the updates waiting for this frame
  function timed(ids, fn) {
    const t0 = performance.now();
    try {
      return fn();
    } finally {
      const ms = performance.now() - t0;
      if (ids.length) {
        for (const id of ids) perfAdd(id, ms / ids.length);
      }
    }
  }

  /* ---- the API ---------------------------------------------------------------------- */

  const TOKEN_KEY = "dqd.api_token";
  class ApiError extends Error {
    constructor(status, type, message) {
      super(message);
      this.status = status;
      this.type = type;
    }
  }

  async function api(method, path, body) {
    const headers = {Accept: "application/json"};
    const opts = {method: method, headers: headers, cache: "no-store", credentials: "same-origin"};
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    if (method !== "GET" && method !== "HEAD") {
      let token = sessionStorage.getItem(TOKEN_KEY);
      if (!token && S.status && S.status.changes === "token") token = await askToken();
      if (token) headers.Authorization = "Bearer " + token;
    }
    const r = await fetch(path, opts);
    let j = null;
    try {
      j = await r.json();
    } catch (e) {
      j = null;
    }
    if (r.status === 401 && method !== "GET") {
      sessionStorage.removeItem(TOKEN_KEY);
      const token = await askToken("dqd refused the token: " + (j && j.error ? j.error : "401"));
      if (token) return api(method, path, body);
    }
    if (!r.ok || !j || j.status !== "success") {
      throw new ApiError(r.status, j && j.errorType, (j && j.error) || method + " " + path + ": HTTP " + r.status);
    }
    return j.data;
  }
  const enc = encodeURIComponent;

  /* ---- the token dialog ------------------------------------------------------------ */

  let tokenWaiters = null;
  function askToken(why) {
    const dlg = $("#token-dialog");
    if (why) $("#token-title").textContent = why;
    else $("#token-title").textContent = "dqd needs its API token";
    dlg.hidden = false;
    const input = $("#token-input");
    input.value = "";
    input.focus();
    return new Promise((resolve) => {
      if (!tokenWaiters) tokenWaiters = [];
      tokenWaiters.push(resolve);
    });
  }
  function closeToken(token) {
    $("#token-dialog").hidden = true;
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    const w = tokenWaiters || [];
    tokenWaiters = null;
    for (const r of w) r(token || null);
    updateTokenButton();
  }
  function updateTokenButton() {
    const b = $("#token-button");
    b.hidden = !(S.status && S.status.changes === "token");
    b.textContent = sessionStorage.getItem(TOKEN_KEY) ? "token ✓" : "token";
  }

  /* ---- toast ------------------------------------------------------------------------ */

  let toastTimer = 0;
  function toast(text, isError) {
    const t = $("#toast");
    t.textContent = text;
    t.className = "show" + (isError ? " error" : "");
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.className = ""; }, isError ? 8000 : 3500);
  }
  // a request or an action that failed: said in the page, and logged as an error too
  function failed(what) {
    return (e) => {
      const text = what + ": " + (e && e.message ? e.message : e);
      console.error("dqd dashboard: " + text);
      toast(text, true);
    };
  }

  /* ---- state ------------------------------------------------------------------------ */

  const S = {
    status: null,
    diagram: null,          // {roots, probes, children}
    probes: new Map(),      // name → summary (GET /api/v1/probes)
    triggers: [],
    investigations: [],     // newest first
    invDetail: null,        // the investigation shown
    invSelected: 0,
    why: null,              // the why answer shown with it
    snapshots: [],
    snapSelected: 0,
    open: [],               // opened probes, in order
    panels: new Map(),      // name → panel
    series: new Map(),      // name → ring of window summaries (opened probes)
    lastWindow: null,       // {wid, start, end}
    windowsSeen: 0,
    windowS: 1,
    ring: 60,
    tab: "probes",
    filter: "",
    investigatingProbes: new Set(),
    verdictOf: new Map(),   // node → the newest closed investigation's verdict there
    now: 0,                 // dqd's clock, s (simulated time with --clock sim)
    range: {key: "ring", kind: "ring"}, // the time charts' range (#range=)
    marks: [],              // GET /api/v1/marks of the range, oldest first
    marksVersion: 0,
    invTouch: new Map(),    // investigation → the probes its marks name
  };
  window.dqdState = S;

  /* ---- batching: dirty flags, one frame ---------------------------------------------- */

  const dirty = {tree: false, numbers: new Set(), header: false, panels: new Set(), inv: false,
    snaps: false, rebuildTree: false};
  let frameRequested = false;
  let frameUpdates = [];
  function schedule(updateId) {
    if (updateId) {
      perfHold(updateId);
      frameUpdates.push(updateId);
    }
    if (!frameRequested) {
      frameRequested = true;
      requestAnimationFrame(frame);
    }
  }
  function frame() {
    frameRequested = false;
    const ids = frameUpdates;
    frameUpdates = [];
    perf.frames++;
    timed(ids, () => render(ids));
    for (const id of ids) perfRelease(id);
  }

  function render(ids) {
    if (dirty.rebuildTree) {
      dirty.rebuildTree = false;
      buildTree();
      dirty.tree = true;
    }
    if (dirty.tree) {
      dirty.tree = false;
      dirty.numbers.clear();
      for (const name of rows.keys()) renderRow(name);
    } else if (dirty.numbers.size) {
      for (const name of dirty.numbers) renderRow(name);
      dirty.numbers.clear();
    }
    if (dirty.header) {
      dirty.header = false;
      renderHeader();
    }
    if (dirty.panels.size) {
      const names = Array.from(dirty.panels);
      dirty.panels.clear();
      for (const name of names) {
        const p = S.panels.get(name);
        if (p) refreshPanel(p, ids);
      }
    }
    if (dirty.inv) {
      dirty.inv = false;
      renderInvList();
      renderInvDetail();
    }
    if (dirty.snaps) {
      dirty.snaps = false;
      renderSnapList();
    }
  }

  /* ---- time and the range ------------------------------------------------------------------ */

  // dqd's clock: the newest of its status and the windows it announced
  function nowS() {
    return Math.max(S.now || 0, S.lastWindow ? S.lastWindow.end : 0) || Date.now() / 1000;
  }
  const RANGES = {"5m": 300, "15m": 900, "1h": 3600, "6h": 21600, "24h": 86400, "7d": 604800};
  // "ring", "1h", or "FROM-TO" (Unix seconds) → the range; null for anything else
  function rangeOf(key) {
    if (!key || key === "ring") return {key: "ring", kind: "ring"};
    if (RANGES[key]) return {key: key, kind: "rel", secs: RANGES[key]};
    const m = /^([0-9.]+)-([0-9.]+)$/.exec(key);
    if (m && Number(m[1]) < Number(m[2])) {
      return {key: key, kind: "abs", from: Number(m[1]), to: Number(m[2])};
    }
    return null;
  }
  // {from, to, live}: what the time charts show now; live ranges follow the windows
  function rangeBounds() {
    const r = S.range, now = nowS();
    if (r.kind === "abs") return {from: r.from, to: r.to, live: false};
    const secs = r.kind === "rel" ? r.secs : S.ring * S.windowS;
    return {from: now - secs, to: now, live: true};
  }
  function rangeQuery() {
    const b = rangeBounds();
    return "from=" + b.from.toFixed(3) + "&to=" + (b.to + (b.live ? S.windowS : 0)).toFixed(3);
  }
  function setRange(key) {
    const r = rangeOf(key);
    if (!r) return false;
    S.range = r;
    $("#range").value = r.kind === "abs" ? "custom" : r.key;
    $("#custom-range").hidden = r.kind !== "abs";
    for (const p of S.panels.values()) {
      p.seriesKey = null;
      p.heat.key = null;
      p.ex.key = null;
      S.series.set(p.name, []);
      dirty.panels.add(p.name);
    }
    updateHash();
    loadMarks();
    schedule();
    return true;
  }
  // datetime-local (UTC) ↔ Unix seconds
  function toLocalInput(s) {
    return new Date(s * 1000).toISOString().slice(0, 19);
  }
  function fromLocalInput(v) {
    const t = Date.parse(v + "Z");
    return isFinite(t) ? t / 1000 : NaN;
  }
  function applyCustomRange() {
    const from = fromLocalInput($("#range-from").value), to = fromLocalInput($("#range-to").value);
    const err = $("#range-error");
    if (!isFinite(from) || !isFinite(to) || !(from < to)) {
      err.textContent = "from must be a time (UTC) before to";
      $("#range-from").setAttribute("aria-invalid", "true");
      return;
    }
    err.textContent = "";
    $("#range-from").removeAttribute("aria-invalid");
    setRange(Math.floor(from) + "-" + Math.ceil(to));
  }

  /* ---- marks: what happened, on every time chart ---------------------------------------------- */

  function loadMarks() {
    if (!S.status) return; // loadAll loads them once dqd's clock is known
    throttle("marks", 300, () => api("GET", "/api/v1/marks?" + rangeQuery() + "&limit=2000").then((d) => {
      S.marks = d.marks;
      S.invTouch = new Map();
      for (const m of d.marks) {
        if (!m.investigation) continue;
        let set = S.invTouch.get(m.investigation);
        if (!set) S.invTouch.set(m.investigation, set = new Set());
        if (m.probe) set.add(m.probe);
        const det = m.detail || {};
        for (const x of det.probes || []) set.add(x);
        if (det.verdict_node) set.add(det.verdict_node);
      }
      S.marksVersion++;
      for (const p of S.panels.values()) dirty.panels.add(p.name);
      schedule();
    }).catch(failed("marks")));
  }
  // the marks of one probe's charts: its own, dqd's, and those of investigations that went by it
  function marksFor(name, x0, x1) {
    const out = [];
    for (const m of S.marks) {
      if (m.time < x0 || m.time > x1) continue;
      const inv = m.investigation && S.invTouch.get(m.investigation);
      if (m.probe === name || !m.probe || (inv && inv.has(name))) out.push(m);
    }
    return out;
  }
  let tipTimer = 0;
  function showTip(m, anchor) {
    clearTimeout(tipTimer);
    const tip = $("#mark-tip");
    tip.textContent = "";
    tip.dataset.kind = m.kind;
    tip.append(el("span", {class: "when", text: fmtWhen(m.time) + " UTC · " + m.kind.replace(/_/g, " ")}), m.text);
    if (m.investigation > 0) {
      tip.append(" ", el("a", {href: "#inv=" + m.investigation, class: "inv-link", onclick: (e) => {
        e.preventDefault();
        openInvestigation(m.investigation);
        tip.hidden = true;
      }}, "open " + invLabel(m.investigation)));
    }
    tip.hidden = false;
    const r = anchor.getBoundingClientRect();
    const w = Math.min(420, tip.offsetWidth || 300);
    tip.style.left = Math.max(4, Math.min(innerWidth - w - 4, r.left + 8)) + "px";
    tip.style.top = Math.max(4, r.top + 4) + "px";
  }
  function hideTipSoon() {
    clearTimeout(tipTimer);
    tipTimer = setTimeout(() => { $("#mark-tip").hidden = true; }, 400);
  }
  function openInvestigation(id) {
    S.invSelected = id;
    selectTab("investigations");
    loadInvDetail(id);
    dirty.inv = true;
    schedule();
  }
  // places the marks of the chart's x range over its plot (DOM: hover shows the sentence)
  function placeMarks(u, p) {
    let layer = u.__marks;
    if (!layer) {
      layer = u.__marks = el("div", {class: "marks-layer"});
      u.over.append(layer);
    }
    const x0 = u.scales.x.min, x1 = u.scales.x.max;
    const list = marksFor(p.name, x0, x1);
    const sig = S.marksVersion + ":" + list.length + ":" + (list.length ? list[0].time : 0);
    if (layer.__sig !== sig) {
      layer.__sig = sig;
      layer.textContent = "";
      for (const m of list) {
        const e = el("div", {class: "mark", "data-kind": m.kind, "aria-label": m.text});
        e.__mark = m;
        e.addEventListener("mouseenter", () => showTip(m, e));
        e.addEventListener("mouseleave", hideTipSoon);
        e.addEventListener("click", () => { if (m.investigation > 0) openInvestigation(m.investigation); });
        layer.append(e);
      }
    }
    for (const e of layer.children) e.style.left = u.valToPos(e.__mark.time, "x") + "px";
  }

  /* ---- loading ------------------------------------------------------------------------ */

  async function loadAll() {
    const [status, diagram, probes, triggers, invs, snaps] = await Promise.all([
      api("GET", "/api/v1/status"),
      api("GET", "/api/v1/diagram"),
      api("GET", "/api/v1/probes"),
      api("GET", "/api/v1/triggers"),
      api("GET", "/api/v1/investigations?limit=50"),
      api("GET", "/api/v1/snapshots"),
    ]);
    S.status = status;
    S.windowS = status.window_ms / 1000;
    S.now = Math.max(S.now, status.now || 0);
    if (status.last_window && (!S.lastWindow || S.lastWindow.wid < status.last_window.wid)) {
      const w = status.last_window;
      S.lastWindow = {wid: w.wid, start: w.start, end: w.end, probes: probes.filter((p) =>
        p.last_window && Math.abs(p.last_window.start - w.start) < 1e-6).length};
    }
    S.diagram = diagram;
    S.probes = new Map(probes.map((p) => [p.name, p]));
    S.triggers = triggers;
    S.snapshots = snaps;
    setInvestigations(invs);
    dirty.rebuildTree = true;
    dirty.header = true;
    dirty.snaps = true;
    updateTokenButton();
    for (const name of S.open) {
      if (S.probes.has(name)) loadSeries(name);
    }
    if (S.invSelected) loadInvDetail(S.invSelected);
    loadMarks();
    schedule();
  }

  // an opened probe's time series: the ring's windows, or the store's over the range
  async function loadSeries(name) {
    const key = S.range.key;
    const p = S.panels.get(name);
    if (p) p.seriesKey = key;
    let points;
    if (S.range.kind === "ring") {
      const d = await api("GET", "/api/v1/probes/" + enc(name) + "/windows");
      S.ring = d.ring;
      S.windowS = d.window_s;
      points = d.windows.map((w) => ({
        wid: w.wid, start: w.start, span: d.window_s, n: w.n, p50: w.p50, p95: w.p95, p99: w.p99,
        lost: w.lost, no_data: w.no_data}));
    } else {
      const d = await api("GET", "/api/v1/probes/" + enc(name) + "/windows?" + rangeQuery());
      points = d.windows.map((w) => ({
        wid: Math.floor(w.start / S.windowS + 1e-6), start: w.start, span: w.end - w.start, n: w.n,
        p50: w.p50, p95: w.p95, p99: w.p99, lost: w.lost, no_data: false}));
    }
    if (S.range.key !== key || !S.panels.has(name)) return; // the range changed meanwhile
    S.series.set(name, points);
    dirty.panels.add(name);
    schedule();
  }

  const throttles = new Map();
  // runs fn at most once per ms (the last call wins), tied to the update that asked
  function throttle(key, ms, fn) {
    const t = throttles.get(key);
    if (t) {
      t.fn = fn;
      return;
    }
    const entry = {fn: fn};
    throttles.set(key, entry);
    setTimeout(() => {
      throttles.delete(key);
      entry.fn();
    }, ms);
  }

  function refreshTriggers() {
    throttle("triggers", 250, () => api("GET", "/api/v1/triggers").then((t) => {
      S.triggers = t;
      dirty.tree = true;
      schedule();
    }).catch(failed("triggers")));
  }
  function refreshInvestigations() {
    throttle("investigations", 250, () => api("GET", "/api/v1/investigations?limit=50").then((l) => {
      setInvestigations(l);
      if (S.invSelected) loadInvDetail(S.invSelected);
      dirty.tree = true;
      dirty.inv = true;
      schedule();
    }).catch(failed("investigations")));
  }
  function refreshSnapshots() {
    throttle("snapshots", 500, () => api("GET", "/api/v1/snapshots").then((l) => {
      S.snapshots = l;
      dirty.snaps = true;
      schedule();
    }).catch(failed("snapshots")));
  }
  function refreshStatus() {
    throttle("status", 1000, () => api("GET", "/api/v1/status").then((s) => {
      S.status = s;
      S.now = Math.max(S.now, s.now || 0);
      dirty.header = true;
      updateTokenButton();
      schedule();
    }).catch(failed("status")));
  }
  function refreshProbe(name) {
    throttle("probe:" + name, 100, () => api("GET", "/api/v1/probes/" + enc(name)).then((p) => {
      S.probes.set(name, p);
      dirty.numbers.add(name);
      if (S.panels.has(name)) dirty.panels.add(name);
      schedule();
    }).catch(failed("probe " + name)));
  }

  function setInvestigations(list) {
    S.investigations = list;
    S.verdictOf = new Map();
    S.investigatingProbes = new Set();
    for (const inv of list) {
      if (inv.open) {
        S.investigatingProbes.add(inv.node);
      } else if (inv.verdict && !S.verdictOf.has(inv.node)) {
        S.verdictOf.set(inv.node, inv);
        if (inv.verdict_node && inv.verdict_node !== inv.node && !S.verdictOf.has(inv.verdict_node)) {
          S.verdictOf.set(inv.verdict_node, inv);
        }
      }
    }
    $("#inv-count").textContent = list.length ? "(" + list.length + ")" : "";
    dirty.inv = true;
  }

  /* ---- live events ------------------------------------------------------------------------ */

  let es = null;
  function connect() {
    es = new EventSource("/api/v1/events");
    es.addEventListener("open", () => setLive(true));
    es.addEventListener("error", () => setLive(false));
    const on = (type, fn) => es.addEventListener(type, (ev) => {
      const id = perfBegin(type);
      perf.updates++;
      timed([id], () => {
        let data = null;
        try {
          data = JSON.parse(ev.data);
        } catch (e) {
          console.error("dqd dashboard: a " + type + " event that is not JSON");
          toast("a " + type + " event that is not JSON", true);
        }
        if (data) fn(data, id);
      });
      perfRelease(id);
    });
    on("hello", () => {
      setLive(true);
      loadAll().catch(failed("loading dqd's state"));
    });
    on("window", onWindow);
    on("probe", (d) => {
      refreshStatus();
      if (d.change === "enable" || d.change === "disable" || d.change === "dmax") loadMarks();
      if (d.change === "delete") {
        S.probes.delete(d.probe);
        dirty.rebuildTree = true;
      } else if (d.summary) {
        const known = S.probes.has(d.probe);
        S.probes.set(d.probe, d.summary);
        if (!known) dirty.rebuildTree = true;
        dirty.numbers.add(d.probe);
        if (S.panels.has(d.probe)) dirty.panels.add(d.probe);
      }
      schedule();
    });
    on("diagram", (d) => {
      S.diagram = d.diagram;
      dirty.rebuildTree = true;
      api("GET", "/api/v1/probes").then((l) => {
        S.probes = new Map(l.map((p) => [p.name, p]));
        dirty.rebuildTree = true;
        schedule();
      }).catch(failed("probes"));
      schedule();
    });
    on("trigger_fired", () => { refreshTriggers(); loadMarks(); });
    on("trigger_cleared", () => { refreshTriggers(); loadMarks(); });
    on("hypothesis", (d) => {
      if (d.node) S.investigatingProbes.add(d.node);
      for (const p of d.probes || []) S.investigatingProbes.add(p);
      dirty.tree = true;
      refreshInvestigations();
      loadMarks();
      schedule();
    });
    on("verdict", () => {
      refreshInvestigations();
      refreshSnapshots();
      loadMarks();
    });
    on("probe_silent", (d) => { refreshProbe(d.probe); loadMarks(); });
    on("probe_data_returned", (d) => { refreshProbe(d.probe); loadMarks(); });
  }
  function setLive(on) {
    const l = $("#live");
    l.className = "live " + (on ? "on" : "off");
    l.textContent = on ? "live" : "reconnecting…";
  }

  function onWindow(d, updateId) {
    S.lastWindow = {wid: d.wid, start: d.start, end: d.end, probes: d.probes.length};
    S.now = Math.max(S.now, d.end);
    const b = rangeBounds();
    S.windowsSeen++;
    dirty.header = true;
    for (const w of d.probes) {
      const p = S.probes.get(w.name);
      if (p) {
        if (w.n > 0 || !p.last_window) {
          p.last_window = {start: d.start, end: d.end, n: w.n, ok: w.ok, fa: w.fa, to: w.to,
            mean: w.mean, p50: w.p50, p95: w.p95, p99: w.p99, lost: w.lost};
        }
        dirty.numbers.add(w.name);
      } else {
        refreshProbe(w.name); // a probe the page has not seen yet
        dirty.rebuildTree = true;
      }
      const ring = S.series.get(w.name);
      if (ring && b.live) {
        // the live windows join the series (the ring's, or the range's that ends now)
        if (!ring.length || ring[ring.length - 1].wid < d.wid) {
          ring.push({wid: d.wid, start: d.start, span: d.end - d.start, n: w.n, p50: w.p50,
            p95: w.p95, p99: w.p99, lost: w.lost, no_data: w.no_data});
          if (S.range.kind === "ring") {
            while (ring.length > S.ring) ring.shift();
          } else {
            while (ring.length && ring[0].start < b.from) ring.shift();
          }
        }
        dirty.panels.add(w.name);
      }
    }
    if (S.windowsSeen % 10 === 0) refreshStatus();
    schedule(updateId);
  }

  /* ---- the header ----------------------------------------------------------------------- */

  // "2 wrappers (3 links)": a legacy wrapper's data link and command link are one wrapper
  function wrappersText(s) {
    const n = s.wrappers_distinct === undefined ? s.wrappers_connected : s.wrappers_distinct;
    const links = s.wrappers_connected;
    return n + " wrapper" + (n === 1 ? "" : "s") + (links !== n ? " (" + links + " link" + (links === 1 ? "" : "s") + ")" : "");
  }

  function renderHeader() {
    const w = S.lastWindow;
    const wl = $("#window-label");
    if (w) {
      wl.textContent = "window " + fmtClock(w.start) + " +" + fmtDur(w.end - w.start) + " UTC, " +
        w.probes + " probe" + (w.probes === 1 ? "" : "s");
      wl.dataset.wid = String(w.wid);
      wl.dataset.seen = String(S.windowsSeen);
    }
    const s = S.status;
    if (s) {
      $("#status-line").textContent = "dqd " + s.version + ", " + s.clock + " clock, " +
        s.probes + " probes (" + s.enabled + " on), " + wrappersText(s) + (s.diagram ? ", diagram " + s.diagram : "") +
        (s.downtime ? "; dqd was not running from " + fmtWhen(s.downtime.from_ns / 1e9) + " to " + fmtWhen(s.downtime.to_ns / 1e9) + " UTC" + (s.downtime.clean ? "" : " (no stop recorded)") : "");
      $("#status-line").title = $("#status-line").textContent;
    }
    $("#open-count").textContent = S.open.length ? "(" + S.open.length + ")" : "";
  }

  /* ---- the tree ------------------------------------------------------------------------ */

  const rows = new Map(); // name → [{li, row, nums, badges}] (a node the diagram shares has several)

  const OPS = {sequence: "seq", all: "all", first: "first", choice: "choice"};
  const OP_WORDS = {sequence: "sequence", all: "all-to-finish", first: "first-to-finish",
    choice: "probabilistic choice"};
  // a node's operator as the diagram has it ({kind, weights}), or null
  function operatorOf(name) {
    const ops = S.diagram && S.diagram.operators;
    return ops && ops[name] ? ops[name] : null;
  }

  function makeRow(name, hasKids, parent) {
    const twist = el("span", {class: "twist", text: hasKids ? "▾" : ""});
    const nums = el("span", {class: "nums"});
    const badges = el("span", {class: "badges"});
    // its operator (a node with children), and its weight in a parent's choice
    const op = operatorOf(name), pop = parent ? operatorOf(parent) : null;
    // (a definition of one component is that component: no operator of its own to show)
    const nKids = (((S.diagram && S.diagram.children) || {})[name] || []).length;
    const opEl = hasKids && op && OPS[op.kind] && (op.kind !== "sequence" || nKids > 1) ? el("span", {class: "op " + op.kind, "data-op": op.kind,
      title: OP_WORDS[op.kind] + " of its children"}, OPS[op.kind]) : null;
    const w = pop && pop.kind === "choice" && pop.weights ? pop.weights[name] : undefined;
    const wEl = w !== undefined ? el("span", {class: "op weight", "data-weight": String(w),
      title: "taken with probability " + trim3(w) + " in " + parent + "'s choice"}, "p " + trim3(w)) : null;
    const nameEl = el("span", {class: "name", title: name}, opEl, wEl, name, badges);
    const row = el("div", {class: "row", role: "treeitem"}, twist, el("span", {class: "state"}), nameEl, nums);
    const li = el("li", {"data-node": name}, row);
    twist.addEventListener("click", (e) => {
      e.stopPropagation();
      li.classList.toggle("collapsed");
      twist.textContent = li.classList.contains("collapsed") ? "▸" : "▾";
    });
    row.addEventListener("click", () => toggleOpen(name));
    if (!rows.has(name)) rows.set(name, []);
    rows.get(name).push({li: li, row: row, nums: nums, badges: badges, text: "", badgeText: ""});
    return li;
  }

  function buildTree() {
    rows.clear();
    const tree = $("#tree");
    const others = $("#others");
    tree.textContent = "";
    others.textContent = "";
    const g = S.diagram;
    const inDiagram = new Set();
    if (g && g.roots && g.roots.length) {
      $("#no-diagram").hidden = true;
      const kids = g.children || {};
      const add = (name, parentUl, path, parent) => {
        const ch = (kids[name] || []).filter((c) => !path.has(c));
        const li = makeRow(name, ch.length > 0, parent);
        inDiagram.add(name);
        parentUl.append(li);
        if (ch.length) {
          const ul = el("ul", {role: "group"});
          li.append(ul);
          const p2 = new Set(path);
          p2.add(name);
          for (const c of ch) add(c, ul, p2, name);
        }
      };
      for (const r of g.roots) add(r, tree, new Set(), null);
    } else {
      $("#no-diagram").hidden = false;
    }
    const rest = Array.from(S.probes.keys()).filter((n) => !inDiagram.has(n)).sort();
    $("#others-head").hidden = rest.length === 0;
    for (const n of rest) others.append(makeRow(n, false));
    applyFilter();
  }

  function probeState(name) {
    const p = S.probes.get(name);
    const fired = S.triggers.filter((t) => t.probe === name && t.enabled && t.fired).map((t) => t.kind);
    return {
      p: p,
      enabled: !!(p && p.enabled),
      silent: !!(p && p.silent_since_ns !== null && p.silent_since_ns !== undefined),
      fired: fired,
      investigating: S.investigatingProbes.has(name),
      verdict: S.verdictOf.get(name) || null,
    };
  }

  function renderRow(name) {
    const list = rows.get(name);
    if (!list) return;
    const st = probeState(name);
    for (const r of list) renderRowEntry(name, r, st);
  }

  function renderRowEntry(name, r, st) {
    const li = r.li;
    const set = (k, v) => {
      const s = v ? "1" : "0";
      if (li.dataset[k] !== s) li.dataset[k] = s;
    };
    set("enabled", st.enabled);
    set("silent", st.silent);
    set("fired", st.fired.length > 0);
    set("investigating", st.investigating);
    const verdict = st.verdict ? st.verdict.verdict : "";
    if (li.dataset.verdict !== verdict) li.dataset.verdict = verdict;
    const w = st.p && st.p.last_window;
    // numbers a disabled probe or a silent source left behind carry their age, greyed
    const stale = !!w && (!st.enabled || st.silent);
    let text = w ? fmtDur(w.p50) + " · " + fmtDur(w.p95) + " · " + fmtPct(w.lost) : (st.enabled ? "no window" : "");
    if (stale) text += " · " + fmtAge(nowS() - w.end) + " old";
    if (r.text !== text) {
      r.text = text;
      r.nums.textContent = text;
      r.nums.classList.toggle("stale", stale);
      r.nums.title = stale ? "p50 · p95 · lost as of " + fmtWhen(w.end) + " UTC: " + (st.enabled ? "its source is silent" : "disabled") : (w ? "p50 · p95 · lost of the last window" : "");
    }
    let badgeText = "";
    const badges = [];
    if (st.silent) badges.push(["silent", "silent"]);
    for (const k of st.fired) badges.push(["fired", k]);
    if (st.investigating) badges.push(["investigating", "searching"]);
    if (st.verdict) badges.push(["verdict " + st.verdict.verdict, st.verdict.verdict + (st.verdict.verdict_node && st.verdict.verdict_node !== name ? " → " + st.verdict.verdict_node : "")]);
    badgeText = badges.map((b) => b[1]).join("|");
    if (r.badgeText !== badgeText) {
      r.badgeText = badgeText;
      r.badges.textContent = "";
      for (const b of badges) r.badges.append(el("span", {class: "badge " + b[0], text: b[1]}));
    }
    const open = S.panels.has(name);
    if (r.row.classList.contains("open") !== open) r.row.classList.toggle("open", open);
  }

  function applyFilter() {
    const f = S.filter.toLowerCase();
    let shown = 0;
    for (const [name, list] of rows) {
      const out = f !== "" && !name.toLowerCase().includes(f);
      shown += out ? 0 : 1;
      for (const r of list) r.li.classList.toggle("filtered-out", out);
    }
    const none = f !== "" && shown === 0;
    const msg = $("#no-match");
    msg.hidden = !none;
    if (none) msg.textContent = "No probe matches \u201c" + S.filter + "\u201d.";
  }

  /* ---- probe panels -------------------------------------------------------------------- */

  const visibility = new IntersectionObserver((entries) => {
    for (const e of entries) {
      const p = e.target.__panel;
      if (!p) continue;
      p.visible = e.isIntersecting;
      if (p.visible && p.stale) {
        dirty.panels.add(p.name);
        schedule();
      }
    }
  }, {rootMargin: "200px 0px"});

  function toggleOpen(name) {
    if (S.panels.has(name)) closePanel(name);
    else openPanel(name, true);
    updateHash();
  }

  function openPanel(name, scroll) {
    if (S.panels.has(name)) return;
    S.open.push(name);
    const p = createPanel(name);
    S.panels.set(name, p);
    $("#panels").append(p.root);
    visibility.observe(p.root);
    $("#no-panels").hidden = true;
    S.series.set(name, S.series.get(name) || []);
    if (S.status) loadSeries(name).catch(failed("windows of " + name)); // else loadAll does
    dirty.numbers.add(name);
    dirty.header = true;
    dirty.panels.add(name);
    if (scroll) {
      selectTab("probes");
      p.root.scrollIntoView({block: "nearest"});
    }
    schedule();
  }

  function closePanel(name) {
    const p = S.panels.get(name);
    if (!p) return;
    visibility.unobserve(p.root);
    for (const plot of p.root.querySelectorAll(".charts > .chart > .plot")) sizer.unobserve(plot);
    for (const c of Object.values(p.charts)) if (c) c.destroy();
    $("#mark-tip").hidden = true;
    p.root.remove();
    S.panels.delete(name);
    S.series.delete(name);
    S.open = S.open.filter((n) => n !== name);
    $("#no-panels").hidden = S.open.length > 0;
    dirty.numbers.add(name);
    dirty.header = true;
    schedule();
  }

  // the opened probes and the range, in the URL: a view can be bookmarked or sent
  function updateHash() {
    const parts = [];
    if (S.open.length) parts.push("open=" + S.open.map(enc).join(","));
    if (S.range.key !== "ring") parts.push("range=" + S.range.key);
    history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname);
  }

  function createPanel(name) {
    const p = {name: name, visible: false, stale: true, charts: {cdf: null, q: null, loss: null, heat: null},
      density: false, dqs: null, fetching: false, refetch: false,
      draws: {cdf: 0, q: 0, loss: 0, heat: 0}, cdfSig: "", seriesKey: null, refreshes: 0,
      heat: {key: null, loading: false, grid: null, cols: [], image: null, vmax: 0},
      ex: {key: null, loading: false, list: []}, family: null, familyAt: -1};
    const facts = el("span", {class: "facts"});
    const enableBtn = el("button", {type: "button", class: "enable"});
    // the fields hold what is typed; what is set now is said beside them (never a placeholder)
    const dmax = el("input", {class: "dmax", placeholder: "e.g. 250ms", "aria-label": "new dMax",
      title: "dMax: a duration (250ms, 1.5s; bare = ms)"});
    const qta = el("input", {class: "qta", placeholder: "e.g. 0.5@100ms 0.95@250ms lost<1%",
      "aria-label": "new QTA", title: "QTA: points P@T (T a duration, bare = ms) and optionally lost<X%"});
    const dmaxNow = el("span", {class: "now dmax-now"});
    const qtaNow = el("span", {class: "now qta-now"});
    const err = el("span", {class: "field-error", role: "alert"});
    const overload = el("input", {type: "checkbox", class: "overload"});
    const densityBox = el("input", {type: "checkbox", class: "density"});
    const verdictLine = el("div", {class: "verdict-line"});
    const head = el("div", {class: "panel-head"},
      el("h3", null, name), facts,
      el("label", null, densityBox, " density"),
      el("button", {type: "button", title: "close", onclick: () => { closePanel(name); updateHash(); }}, "×"));
    const actions = el("div", {class: "actions"},
      enableBtn,
      el("label", null, "dMax ", dmaxNow, " ", dmax),
      el("button", {type: "button", class: "set-dmax", onclick: () => setDmax(p)}, "set"),
      el("label", null, "QTA ", qtaNow, " ", qta),
      el("button", {type: "button", class: "set-qta", onclick: () => setQta(p)}, "set"),
      el("button", {type: "button", class: "clear-qta", onclick: () => clearQta(p)}, "clear"),
      err,
      el("span", {class: "grow"}),
      el("button", {type: "button", class: "diagnose", onclick: () => diagnose(p)}, "Diagnose"),
      el("label", {title: "weigh every stage's utilisation and where the node saturates"}, overload, " overload"));
    const chart = (kind, title) => el("div", {class: "chart", "data-kind": kind, "data-drawn": "0"},
      el("div", {class: "chart-title"}, el("span", {class: "t", text: title}), el("span", {class: "sub"})),
      el("div", {class: "plot"}));
    const charts = el("div", {class: "charts"},
      chart("cdf", "ΔQ: observed and calculated CDF, QTA, dMax"),
      chart("quantiles", "p50 / p95 / p99 per window"),
      chart("loss", "lost % and rate per window"),
      chart("heat", "ΔQ over time: probability mass per delay bin, failures on top, exemplars as dots"));
    const family = el("div", {class: "family"});
    const exemplars = el("div", {class: "exemplars-box"});
    const more = el("div", {class: "panel-more"}, family, exemplars);
    const root = el("section", {class: "panel", "data-probe": name}, head, actions, verdictLine, charts, more);
    root.__panel = p;
    p.root = root;
    for (const plot of charts.querySelectorAll(".plot")) sizer.observe(plot);
    p.el = {facts, enableBtn, dmax, qta, dmaxNow, qtaNow, err, overload, densityBox, verdictLine,
      cdf: charts.children[0], q: charts.children[1], loss: charts.children[2],
      heat: charts.children[3], family, exemplars};
    enableBtn.addEventListener("click", () => setEnabled(p));
    dmax.addEventListener("keydown", (e) => { if (e.key === "Enter") setDmax(p); });
    qta.addEventListener("keydown", (e) => { if (e.key === "Enter") setQta(p); });
    for (const f of [dmax, qta]) f.addEventListener("input", () => fieldError(p, null, ""));
    densityBox.addEventListener("change", () => {
      p.density = densityBox.checked;
      if (p.charts.cdf) {
        p.charts.cdf.destroy();
        p.charts.cdf = null;
      }
      drawCdf(p);
    });
    return p;
  }

  // a form error shown at its field (not far away in a toast); "" clears it
  function fieldError(p, field, text) {
    p.el.err.textContent = text;
    for (const f of [p.el.dmax, p.el.qta]) {
      if (f === field && text) f.setAttribute("aria-invalid", "true");
      else f.removeAttribute("aria-invalid");
    }
  }

  function renderPanelHead(p) {
    const s = S.probes.get(p.name);
    if (!s) {
      p.el.facts.textContent = "not known to dqd (deleted?)";
      return;
    }
    const w = s.last_window;
    const st = probeState(p.name);
    const op = operatorOf(p.name);
    const parts = [s.enabled ? "enabled" : "disabled", "dMax " + fmtDur(s.dmax_ms / 1000) +
      (s.auto_range ? " (auto-ranging: it follows what is observed)" : ""),
      s.bins + " bins of " + fmtDur(s.bin_width_s)];
    if (op && OP_WORDS[op.kind] && ((S.diagram.children || {})[p.name] || []).length) {
      parts.push(OP_WORDS[op.kind] + " of " + S.diagram.children[p.name].join(", "));
    }
    if (s.qta) parts.push("QTA " + qtaText(s.qta));
    // numbers a disabled probe or a silent source left behind carry their age
    const stale = !!w && (!s.enabled || st.silent || !!w.stale);
    if (w) {
      parts.push("last window n " + w.n + ", p50 " + fmtDur(w.p50) + ", p95 " + fmtDur(w.p95) + ", lost " +
        fmtPct(w.lost) + (stale ? " (" + fmtAge(nowS() - w.end) + " old, at " + fmtClock(w.end) + " UTC)" : ""));
    }
    if (s.silent_since_ns !== null && s.silent_since_ns !== undefined) {
      parts.push("SILENT since " + fmtWhen(s.silent_since_ns / 1e9) + " UTC (" + plural(s.silent_windows, "window") + ")");
      const o = s.silent_origin;
      if (o && o.hint) parts.push(o.hint);
    }
    p.el.facts.textContent = parts.join(" · ");
    p.el.facts.classList.toggle("stale", stale);
    p.root.classList.toggle("stale", stale);
    p.el.dmaxNow.textContent = "(now " + fmtDur(s.dmax_ms / 1000) + ")";
    p.el.qtaNow.textContent = "(now " + (s.qta ? qtaText(s.qta) : "none") + ")";
    p.el.enableBtn.textContent = s.enabled ? "Disable" : "Enable";
    p.el.enableBtn.dataset.enabled = s.enabled ? "1" : "0";
    const v = st.verdict;
    p.el.verdictLine.textContent = v ? "last verdict here: " + v.verdict + (v.verdict_node ? " at " + v.verdict_node : "") +
      " (" + invLabel(v.id) + ")" : (st.investigating ? "an investigation is searching here" : "");
  }

  function qtaText(q) {
    return q.points.map((pt) => pt[0] + "@" + fmtDur(pt[1]).replace(" ", "")).join(" ") +
      ", lost ≤ " + fmtPct(q.max_lost);
  }

  function refreshPanel(p, ids) {
    if (!p.visible) {
      p.stale = true; // drawn when it comes on screen
      return;
    }
    p.stale = false;
    p.refreshes++;
    renderPanelHead(p);
    if (S.status && p.seriesKey !== S.range.key) loadSeries(p.name).catch(failed("windows of " + p.name));
    drawSeries(p);
    fetchDqs(p, ids);
    loadHeat(p);
    loadExemplars(p);
    loadFamily(p);
  }

  function fetchDqs(p, ids) {
    if (!S.probes.has(p.name)) {
      drawCdf(p);
      return;
    }
    if (p.fetching) {
      p.refetch = true;
      return;
    }
    p.fetching = true;
    const hold = ids ? ids.slice() : [];
    for (const id of hold) perfHold(id);
    fetch("/api/v1/probes/" + enc(p.name) + "/dqs", {headers: {Accept: "application/json"}, cache: "no-store"})
      .then((r) => r.json())
      .then((j) => {
        timed(hold, () => {
          if (j && j.status === "success") p.dqs = j.data;
          if (S.panels.get(p.name) === p) {
            drawCdf(p);
            if (p.dqs) heatAppend(p, p.dqs.observed);
            drawHeat(p);
          }
        });
      })
      .catch(() => { /* dqd went away: the live indicator says so */ })
      .finally(() => {
        for (const id of hold) perfRelease(id);
        p.fetching = false;
        if (p.refetch) {
          p.refetch = false;
          fetchDqs(p, null);
        }
      });
  }

  function plotSize(container) {
    const w = Math.max(200, Math.floor(container.clientWidth || 300));
    return {width: w, height: 200};
  }
  const utc = (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC");
  // time axes in UTC, HH:MM:SS
  const timeAxis = {values: (u, splits) => splits.map((v) => fmtClock(v).slice(0, 8)), size: 30, space: 70};

  function markDrawn(box, key, p) {
    p.draws[key]++;
    box.dataset.drawn = String(p.draws[key]);
  }

  // the x range of a time chart: the range's, or the data's when they reach beyond it
  function timeRange(t) {
    const b = rangeBounds();
    if (S.range.kind === "ring") return [t[0], Math.max(t[t.length - 1], t[0] + S.windowS)];
    return [Math.min(b.from, t[0]), Math.max(b.to, t[t.length - 1])];
  }

  function drawSeries(p) {
    const ring = S.series.get(p.name) || [];
    const t = [], p50 = [], p95 = [], p99 = [], lost = [], rate = [];
    let prev = null;
    for (const w of ring) {
      if (prev && w.start - prev.start > 1.5 * Math.max(prev.span || S.windowS, w.span || S.windowS)) {
        // no window in between (dqd stopped, the probe was off): the lines break there
        t.push(prev.start + (prev.span || S.windowS));
        for (const a of [p50, p95, p99, lost, rate]) a.push(null);
      }
      prev = w;
      t.push(w.start);
      const ms = (x) => (x === null || x === undefined ? null : x * 1e3);
      p50.push(ms(w.p50));
      p95.push(ms(w.p95));
      p99.push(ms(w.p99));
      lost.push(w.lost === null || w.lost === undefined ? null : w.lost * 100);
      rate.push(w.no_data ? null : w.n / (w.span || S.windowS));
    }
    const qBox = p.el.q, lBox = p.el.loss;
    if (!t.length) {
      for (const box of [qBox, lBox]) box.querySelector(".sub").textContent = p.seriesKey === S.range.key ? "no window in the range" : "no window yet";
      return;
    }
    const binned = ring.some((w) => w.span > S.windowS * 1.5);
    const what = S.range.kind === "ring" ? plural(ring.length, "window") : plural(ring.length, "point") +
      " from " + fmtWhen(t[0]).slice(0, 19) + " UTC" + (binned ? " (downsampled: p50 mean, p95 and p99 the largest of each bin)" : "");
    qBox.querySelector(".sub").textContent = what;
    lBox.querySelector(".sub").textContent = what;
    p.xRange = timeRange(t);
    const qData = [t, p50, p95, p99];
    if (!p.charts.q) {
      p.charts.q = new uPlot({
        ...plotSize(qBox.querySelector(".plot")), tzDate: utc,
        scales: {x: {time: true, range: () => p.xRange}},
        series: [{}, {label: "p50", stroke: "#2a9d8f", width: 1.5, value: (u, v) => fmtNum(v) + " ms"},
          {label: "p95", stroke: "#e9a03b", width: 1.5, value: (u, v) => fmtNum(v) + " ms"},
          {label: "p99", stroke: "#e63946", width: 1.5, value: (u, v) => fmtNum(v) + " ms"}],
        axes: [timeAxis, {label: "ms", size: 48}],
        hooks: {draw: [(u) => placeMarks(u, p)]},
        cursor: {drag: {x: false, y: false}}, legend: {live: false},
      }, qData, qBox.querySelector(".plot"));
    } else {
      p.charts.q.setData(qData);
    }
    markDrawn(qBox, "q", p);
    const lData = [t, lost, rate];
    if (!p.charts.loss) {
      p.charts.loss = new uPlot({
        ...plotSize(lBox.querySelector(".plot")), tzDate: utc,
        // percent: 0 … at least 1 %, every tick says "%"
        scales: {x: {time: true, range: () => p.xRange}, pct: {auto: true, range: (u, lo, hi) => [0, Math.max(1, (hi || 0) * 1.2)]},
          rate: {auto: true, range: (u, lo, hi) => [0, Math.max(1, (hi || 0) * 1.1)]}},
        series: [{},
          {label: "lost %", scale: "pct", stroke: "#c0392b", width: 1.5, value: (u, v) => fmtNum(v) + " %"},
          {label: "rate /s", scale: "rate", stroke: "#1d3557", width: 1.5, value: (u, v) => fmtNum(v) + " /s"}],
        axes: [timeAxis, {scale: "pct", label: "lost", size: 52, values: lossTicks},
          {scale: "rate", side: 1, label: "per s", size: 56, grid: {show: false}}],
        hooks: {draw: [(u) => placeMarks(u, p)]},
        cursor: {drag: {x: false, y: false}}, legend: {live: false},
      }, lData, lBox.querySelector(".plot"));
    } else {
      p.charts.loss.setData(lData);
    }
    markDrawn(lBox, "loss", p);
  }
  // the loss axis's ticks: "0 %", "0.5 %", "1 %"
  function lossTicks(u, splits) {
    return splits.map((v) => trim3(v) + " %");
  }

  // cumulative sums of a pdf
  function cumulative(pdf) {
    const c = new Array(pdf.length);
    let s = 0;
    for (let i = 0; i < pdf.length; i++) {
      s += pdf[i];
      c[i] = s > 1 ? 1 : s;
    }
    return c;
  }

  // The CDF at t of a ΔQ with cumulative c on bins of width w, as a step function known
  // at the bins' right edges: cdf[i] holds from (i+1)·w on, 0 before the first edge.
  function cdfAt(c, w, t) {
    const edges = Math.floor(t / w + 1e-9);
    if (edges <= 0) return 0;
    return c[Math.min(edges, c.length) - 1];
  }

  // Why the calculated ΔQ of a node may not be drawn: a child of it that is disabled, silent,
  // or whose newest window is older than the calculated one's ("" when every child is fresh).
  function staleChild(name, calc) {
    const kids = ((S.diagram && S.diagram.children) || {})[name] || [];
    for (const k of kids) {
      const s = S.probes.get(k);
      const w = s && s.last_window;
      if (!s || !s.enabled) return k + " is disabled" + (w ? " (its last window " + fmtAge(nowS() - w.end) + " old)" : "");
      if (s.silent_since_ns !== null && s.silent_since_ns !== undefined) return k + "'s source is silent";
      if (!w || w.end < calc.end - 2 * S.windowS - 1e-9) return k + " has no window since " + (w ? fmtClock(w.end) + " UTC" : "it was enabled");
    }
    return "";
  }

  // an annotation of a chart: a label placed over its plot and kept inside it
  // an annotation of a chart: a label placed over its plot and kept inside it (its size is
  // estimated from its text, so that drawing never waits for a layout)
  function annot(u, key, cls, text, x, y) {
    u.__annot = u.__annot || {};
    let a = u.__annot[key];
    if (!a) {
      a = u.__annot[key] = el("span", {class: "annot " + cls, "data-annot": key});
      u.over.append(a);
    }
    if (text === null) {
      if (!a.hidden) a.hidden = true;
      return;
    }
    const r = uPlot.pxRatio || 1;
    const w = u.bbox.width / r, h = u.bbox.height / r;
    const aw = Math.ceil(text.length * 6.6) + 6, ah = 14; // 11 px DejaVu Sans, padding
    a.hidden = false;
    if (a.textContent !== text) a.textContent = text;
    a.style.left = Math.max(0, Math.min(w - aw - 1, x)) + "px";
    a.style.top = Math.max(0, Math.min(h - ah - 1, y)) + "px";
  }

  function drawCdf(p) {
    const box = p.el.cdf;
    const s = S.probes.get(p.name);
    const d = p.dqs;
    const obs = d && d.observed;
    let calc = d && d.calculated;
    const subEl = box.querySelector(".sub");
    if (!obs && !calc) {
      subEl.textContent = "no ΔQ yet";
      if (p.charts.cdf) {
        p.charts.cdf.destroy();
        p.charts.cdf = null;
      }
      return;
    }
    // a calculated ΔQ is drawn only from fresh children: else it is old data against new
    const notFresh = calc ? staleChild(p.name, calc) : "";
    if (notFresh) calc = null;
    const stale = !!obs && !!s && (!s.enabled || (s.silent_since_ns !== null && s.silent_since_ns !== undefined));
    box.classList.toggle("stale", stale);
    const dmaxMs = s ? s.dmax_ms : null;
    const qta = s && s.qta ? s.qta : null;
    const qs = [obs, calc].filter((q) => q);
    const width = Math.min(...qs.map((q) => q.bin_width));
    const horizon = Math.max(...qs.map((q) => q.bin_width * q.bins));
    // a calculated ΔQ with lag L: cdf[i − L] is the lower bound of P(delay ≤ (i+1)·w) that the
    // QTA is checked against (docs/engine.md): drawn L bins to the right
    const lagOf = (q) => (q && q.lag > 0 ? q.lag : 0);
    const oc = obs ? cumulative(obs.pdf) : null, cc = calc ? cumulative(calc.pdf) : null;
    const settle = (q, c) => {
      if (!q) return 0;
      const top = c[c.length - 1];
      for (let i = 0; i < c.length; i++) if (c[i] >= top - 1e-4) return (i + 1 + lagOf(q)) * q.bin_width;
      return horizon;
    };
    let xmax = Math.max(settle(obs, oc), settle(calc, cc)) * 1.25;
    if (qta) xmax = Math.max(xmax, qta.points[qta.points.length - 1][1] * 1.15);
    xmax = Math.min(Math.max(xmax, width * 8), horizon);
    const n = Math.max(2, Math.ceil(xmax / width) + 1);
    const x = new Array(n), yo = new Array(n), yc = new Array(n), yq = new Array(n);
    // bin i holds the delays in (i·w, (i+1)·w]: its density spans that interval, and its
    // cdf[i] = P(delay ≤ (i+1)·w) is the CDF at the bin's right edge (docs/engine.md)
    const densityAt = (q, t) => {
      if (!q) return null;
      const i = Math.floor(t / q.bin_width + 1e-9);
      return i < q.pdf.length ? q.pdf[i] / (q.bin_width * 1e3) : 0;
    };
    for (let i = 0; i < n; i++) {
      const t = i * width;
      x[i] = t * 1e3;
      if (p.density) {
        yo[i] = densityAt(obs, t);
        yc[i] = densityAt(calc, t);
        yq[i] = null;
      } else {
        yo[i] = obs ? cdfAt(oc, obs.bin_width, t) : null;
        yc[i] = calc ? cdfAt(cc, calc.bin_width, t - lagOf(calc) * calc.bin_width) : null;
        let req = null;
        if (qta) {
          req = 0;
          for (const pt of qta.points) if (t + 1e-12 >= pt[1]) req = pt[0];
        }
        yq[i] = req;
      }
    }
    const lostObs = obs ? obs.lost : null;
    const sub = [];
    if (obs) {
      sub.push("observed n " + obs.n + ", lost " + fmtPct(obs.lost) + " @ " + fmtClock(obs.start) +
        (stale ? " (" + fmtAge(nowS() - obs.end) + " old)" : ""));
    }
    if (calc) sub.push("calculated lost " + fmtPct(calc.lost) + (lagOf(calc) ? " (lower bound: lag " + plural(calc.lag, "bin") + ")" : ""));
    if (notFresh) sub.push("calculated ΔQ not drawn: " + notFresh);
    if (dmaxMs !== null && dmaxMs > x[n - 1]) sub.push("dMax " + fmtDur(dmaxMs / 1000) + " is right of the plot");
    subEl.textContent = sub.join(" · ");
    subEl.title = subEl.textContent;
    box.dataset.xmaxMs = String(x[n - 1]);
    box.dataset.view = p.density ? "density" : "cdf";
    box.dataset.calculated = calc ? "1" : "0";
    // only the curves there are: the legend lists nothing that is not drawn
    const want = [["observed", !!obs], ["calculated", !!calc], ["QTA", !!qta && !p.density]];
    const sig = want.map((w) => (w[1] ? w[0] : "")).join("|") + (p.density ? "|density" : "");
    const data = [x];
    if (obs) data.push(yo);
    if (calc) data.push(yc);
    if (qta && !p.density) data.push(yq);
    const draw = (u) => {
      const ctx = u.ctx;
      const r = uPlot.pxRatio || 1;
      const {left, top, width: bw, height: bh} = u.bbox;
      ctx.save();
      ctx.lineWidth = r;
      let dmaxShown = false;
      if (dmaxMs !== null) {
        const xd = u.valToPos(dmaxMs, "x", true);
        if (xd >= left && xd <= left + bw) {
          ctx.strokeStyle = "#6c757d";
          ctx.setLineDash([4 * r, 3 * r]);
          ctx.beginPath();
          ctx.moveTo(xd, top);
          ctx.lineTo(xd, top + bh);
          ctx.stroke();
          dmaxShown = true;
        }
      }
      annot(u, "dmax", "dmax", dmaxShown ? "dMax" : null, u.valToPos(dmaxMs || 0, "x") - 34, 2);
      let lostShown = false;
      if (!p.density && lostObs !== null && lostObs > 0) {
        const yl = u.valToPos(1 - lostObs, "y", true);
        ctx.strokeStyle = "#c0392b";
        ctx.setLineDash([2 * r, 3 * r]);
        ctx.beginPath();
        ctx.moveTo(left, yl);
        ctx.lineTo(left + bw, yl);
        ctx.stroke();
        lostShown = true;
      }
      annot(u, "lost", "lost", lostShown ? "failure mass " + fmtPct(lostObs) : null, 6,
        u.valToPos(1 - (lostObs || 0), "y") - 15);
      if (!p.density && qta && qta.max_lost < 1) {
        const yq2 = u.valToPos(1 - qta.max_lost, "y", true);
        ctx.strokeStyle = "#2a9d8f";
        ctx.setLineDash([1 * r, 3 * r]);
        ctx.beginPath();
        ctx.moveTo(left, yq2);
        ctx.lineTo(left + bw, yq2);
        ctx.stroke();
      }
      ctx.restore();
    };
    if (p.charts.cdf && p.cdfSig !== sig) {
      p.charts.cdf.destroy();
      p.charts.cdf = null;
    }
    p.cdfSig = sig;
    if (!p.charts.cdf) {
      const stepped = uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({align: 1}) : undefined;
      const unit = p.density ? " /ms" : "";
      const series = [{label: "t", value: (u, v) => fmtNum(v) + " ms"}];
      if (obs) {
        series.push({label: "observed", stroke: "#1d3557", width: 2, paths: stepped, points: {show: false},
          value: (u, v) => fmtNum(v) + unit});
      }
      if (calc) {
        series.push({label: "calculated", stroke: "#e63946", width: 1.5, dash: [6, 4], paths: stepped, points: {show: false},
          value: (u, v) => fmtNum(v) + unit});
      }
      if (qta && !p.density) {
        series.push({label: "QTA", stroke: "#2a9d8f", width: 1.5, paths: stepped, points: {show: false},
          fill: "rgba(42,157,143,0.08)", value: (u, v) => fmtNum(v)});
      }
      p.charts.cdf = new uPlot({
        ...plotSize(box.querySelector(".plot")),
        scales: {x: {time: false}, y: p.density ? {auto: true} : {auto: false, range: [0, 1.02]}},
        series: series,
        axes: [{label: "delay (ms)"}, {label: p.density ? "density (per ms)" : "P(delay ≤ t)", size: 52}],
        hooks: {draw: [(u) => { if (u.__draw) u.__draw(u); }]},
        cursor: {drag: {x: true, y: false}}, legend: {live: false},
      }, data, box.querySelector(".plot"));
      p.charts.cdf.__draw = draw;
      p.charts.cdf.redraw(false);
    } else {
      p.charts.cdf.__draw = draw;
      p.charts.cdf.setData(data);
    }
    markDrawn(box, "cdf", p);
  }

  /* ---- the ΔQ over time: a heatmap ------------------------------------------------------------
   *
   * Columns of mass per delay bin on one grid ({w: bin width s, bins}): the store's windows
   * over the range (GET …/heatmap, downsampled server-side), then the live windows' observed
   * ΔQs as they come (from the …/dqs the panel fetches anyway). A coarser ΔQ coarsens the whole
   * grid (widths are powers of two: merging bins is exact). Drawn by uPlot (axes, cursor) with
   * the cells painted as an image, one pixel per cell (a canvas of columns × bins, scaled into
   * the plot); the failure mass of each column is a band above the delays.
   */
  const HEAT_MAX_BINS = 256;
  // white → yellow → orange → red → dark red, 256 steps (mass, square-root scaled)
  const HEAT_LUT = (() => {
    const stops = [[255, 255, 255], [255, 237, 160], [254, 178, 76], [240, 59, 32], [128, 0, 38]];
    const lut = new Uint32Array(256);
    for (let i = 0; i < 256; i++) {
      const x = i / 255 * (stops.length - 1), k = Math.min(stops.length - 2, Math.floor(x)), f = x - k;
      const c = stops[k].map((v, j) => Math.round(v + (stops[k + 1][j] - v) * f));
      lut[i] = (255 << 24) | (c[2] << 16) | (c[1] << 8) | c[0]; // little-endian RGBA
    }
    return lut;
  })();

  function heatCoarsen(h, factor) {
    const bins = Math.ceil(h.grid.bins / factor);
    for (const c of h.cols) {
      const m = new Float64Array(bins);
      for (let i = 0; i < c.mass.length; i++) m[Math.floor(i / factor)] += c.mass[i];
      c.mass = m;
    }
    h.grid = {w: h.grid.w * factor, bins: bins};
  }
  // a column from masses on bins of width w (s): on the heatmap's grid, coarsened if need be
  // a column from masses on bins of width w (s): on the heatmap's grid, coarsened if need be
  function heatColumn(h, start, end, n, lost, w, mass) {
    let top = mass.length - 1;
    while (top > 0 && !(mass[top] > 0)) top--;
    if (!h.grid) h.grid = {w: w, bins: 1};
    if (w > h.grid.w * 1.0001) heatCoarsen(h, Math.round(w / h.grid.w));
    let g = Math.max(1, Math.round(h.grid.w / w)); // the column's bins per grid bin
    while (Math.floor(top / g) + 1 > HEAT_MAX_BINS) {
      heatCoarsen(h, 2);
      g = Math.max(1, Math.round(h.grid.w / w));
    }
    const reach = Math.floor(top / g) + 1;
    if (reach > h.grid.bins) {
      for (const c of h.cols) {
        const m = new Float64Array(reach);
        m.set(c.mass);
        c.mass = m;
      }
      h.grid.bins = reach;
    }
    const m = new Float64Array(h.grid.bins);
    for (let i = 0; i <= top; i++) m[Math.floor(i / g)] += mass[i];
    return {start: start, end: end, n: n, lost: lost, mass: m};
  }

  function loadHeat(p) {
    const h = p.heat;
    if (!S.status || h.key === S.range.key || h.loading || !S.probes.has(p.name)) return;
    h.loading = true;
    const key = S.range.key;
    api("GET", "/api/v1/probes/" + enc(p.name) + "/heatmap?" + rangeQuery()).then((d) => {
      if (S.range.key !== key) return;
      h.key = key;
      h.grid = null;
      h.cols = [];
      for (const c of d.columns) {
        const mass = new Float64Array(d.bins);
        for (const k of Object.keys(c.counts)) mass[Number(k)] = c.n > 0 ? c.counts[k] / c.n : 0;
        h.cols.push(heatColumn(h, c.start, c.end, c.n, c.lost, d.bin_width, mass));
      }
      h.image = null;
      dirty.panels.add(p.name);
      schedule();
    }).catch(failed("the heatmap of " + p.name)).finally(() => { h.loading = false; });
  }
  // a live window's observed ΔQ (from …/dqs) as the heatmap's next column
  function heatAppend(p, q) {
    const h = p.heat, b = rangeBounds();
    if (!q || h.key !== S.range.key || !b.live) return;
    const last = h.cols[h.cols.length - 1];
    if (last && q.start < last.end - 1e-9) return; // the store had it, or it was added
    if (last && q.start > last.end + 0.5 * S.windowS && h.cols.length) {
      h.key = null; // windows went by unseen (the panel was off screen): the store has them
      return;
    }
    h.cols.push(heatColumn(h, q.start, q.end, q.n, q.lost, q.bin_width, q.pdf));
    while (h.cols.length && h.cols[0].end <= b.from) h.cols.shift();
    h.image = null;
  }
  // the cells as an image: a column per column, the failure band on row 0, delays above it
  // from the top row down
  function heatImage(h) {
    const cols = h.cols.length, bins = h.grid ? h.grid.bins : 1;
    const c = document.createElement("canvas");
    c.width = Math.max(1, cols);
    c.height = bins + 1;
    const ctx = c.getContext("2d");
    const img = ctx.createImageData(c.width, c.height);
    const px = new Uint32Array(img.data.buffer);
    let vmax = 0;
    for (const col of h.cols) for (const v of col.mass) if (v > vmax) vmax = v;
    px.fill(HEAT_LUT[0]);
    h.cols.forEach((col, x) => {
      const lost = Math.max(0, Math.min(1, col.lost || 0));
      px[x] = lost > 0 ? HEAT_LUT[Math.max(40, Math.round(255 * Math.sqrt(lost)))] : 0xffeeeeee;
      for (let i = 0; i < col.mass.length; i++) {
        if (col.mass[i] > 0) {
          px[(bins - i) * c.width + x] = HEAT_LUT[Math.max(12, Math.round(255 * Math.sqrt(col.mass[i] / vmax)))];
        }
      }
    });
    ctx.putImageData(img, 0, 0);
    h.vmax = vmax;
    return c;
  }

  // the plot's areas: the delays below, the failure band above them
  function heatAreas(u, p) {
    const {left, top, width, height} = u.bbox;
    const band = Math.max(6, Math.round(height * 0.08));
    return {left: left, width: width, bandTop: top, band: band, top: top + band + 2, height: height - band - 2};
  }
  function paintHeat(u, p) {
    const h = p.heat;
    if (!h.image || !h.cols.length) return;
    const ctx = u.ctx, a = heatAreas(u, p);
    ctx.save();
    ctx.imageSmoothingEnabled = false;
    ctx.beginPath();
    ctx.rect(a.left, a.bandTop, a.width, a.band + 2 + a.height);
    ctx.clip();
    // runs of columns that touch and are as wide go in one drawImage
    let i = 0;
    while (i < h.cols.length) {
      let j = i + 1;
      const wid = h.cols[i].end - h.cols[i].start;
      while (j < h.cols.length && Math.abs(h.cols[j].start - h.cols[j - 1].end) < 1e-6 &&
             Math.abs(h.cols[j].end - h.cols[j].start - wid) < 1e-6) j++;
      const x0 = u.valToPos(h.cols[i].start, "x", true), x1 = u.valToPos(h.cols[j - 1].end, "x", true);
      const w = Math.max(1, x1 - x0);
      ctx.drawImage(h.image, i, 0, j - i, 1, x0, a.bandTop, w, a.band);
      ctx.drawImage(h.image, i, 1, j - i, h.grid.bins, x0, a.top, w, a.height);
      i = j;
    }
    ctx.restore();
  }
  // exemplars as dots where they were (time, duration); failed ones on the failure band
  function paintDots(u, p) {
    const ctx = u.ctx, a = heatAreas(u, p), r = uPlot.pxRatio || 1;
    const x0 = u.scales.x.min, x1 = u.scales.x.max, ytop = u.scales.y.max;
    let n = 0;
    ctx.save();
    for (const e of p.ex.list) {
      if (e.end < x0 || e.end > x1) continue;
      const x = u.valToPos(e.end, "x", true);
      const ok = e.status === "ok";
      const y = ok ? a.top + a.height * (1 - Math.min(1, e.duration * 1e3 / ytop)) : a.bandTop + a.band / 2;
      ctx.beginPath();
      ctx.arc(x, y, 3 * r, 0, 2 * Math.PI);
      ctx.fillStyle = ok ? "#1d3557" : "#c0392b";
      ctx.strokeStyle = "#fff";
      ctx.lineWidth = r;
      ctx.fill();
      ctx.stroke();
      n++;
    }
    ctx.restore();
    p.el.heat.dataset.dots = String(n);
  }

  function drawHeat(p) {
    const box = p.el.heat, h = p.heat;
    const sub = box.querySelector(".sub");
    if (!h.cols.length || !h.grid) {
      sub.textContent = h.key === S.range.key ? "no ΔQ stored in the range" : "loading…";
      box.dataset.columns = "0";
      return;
    }
    if (!h.image) h.image = heatImage(h);
    const b = rangeBounds();
    const ymax = h.grid.w * h.grid.bins * 1e3; // ms
    p.heatView = {from: Math.min(b.from, h.cols[0].start), to: Math.max(b.to, h.cols[h.cols.length - 1].end), ymax: ymax};
    sub.textContent = plural(h.cols.length, "column") + " of " + fmtDur((h.cols[0].end - h.cols[0].start)) +
      ", bins of " + fmtDur(h.grid.w) + " up to " + fmtDur(ymax / 1e3) + "; darker: more mass; the band on top: failures";
    box.dataset.columns = String(h.cols.length);
    box.dataset.bins = String(h.grid.bins);
    const data = [[p.heatView.from, p.heatView.to], [null, null]];
    if (!p.charts.heat) {
      p.charts.heat = new uPlot({
        ...plotSize(box.querySelector(".plot")), tzDate: utc,
        scales: {x: {time: true, range: () => [p.heatView.from, p.heatView.to]},
          // the delays fill the plot below the failure band
          y: {range: (u) => [0, p.heatView.ymax / (1 - (Math.max(6, Math.round(u.bbox.height * 0.08)) + 2) /
            Math.max(1, u.bbox.height))]}},
        series: [{}, {label: "ΔQ", show: false}],
        axes: [timeAxis, {label: "delay (ms)", size: 52,
          values: (u, splits) => splits.map((v) => (v <= p.heatView.ymax * 1.0001 ? trim3(v) : ""))}],
        legend: {show: false},
        cursor: {drag: {x: false, y: false}, points: {show: false}},
        hooks: {drawClear: [(u) => paintHeat(u, p)], draw: [(u) => { paintDots(u, p); placeMarks(u, p); heatBandLabel(u, p); }]},
      }, data, box.querySelector(".plot"));
    } else {
      p.charts.heat.setData(data);
    }
    markDrawn(box, "heat", p);
  }
  // "lost" beside the failure band, inside the plot
  function heatBandLabel(u, p) {
    let lbl = u.__band;
    if (!lbl) {
      lbl = u.__band = el("span", {class: "annot band", text: "lost"});
      u.over.append(lbl);
    }
    const a = heatAreas(u, p), r = uPlot.pxRatio || 1;
    lbl.style.top = Math.max(0, Math.round((a.band / r - 13) / 2)) + "px";
  }

  /* ---- exemplars: the slowest requests, with their traces ------------------------------------- */

  function loadExemplars(p) {
    const ex = p.ex;
    // the range's slowest; again every 5 refreshes of a live range
    const again = rangeBounds().live && p.refreshes % 5 === 0;
    if (!S.status || (ex.key === S.range.key && !again) || ex.loading || !S.probes.has(p.name)) return;
    ex.loading = true;
    const key = S.range.key;
    api("GET", "/api/v1/probes/" + enc(p.name) + "/exemplars?" + rangeQuery() + "&limit=30").then((d) => {
      if (S.range.key !== key) return;
      ex.key = key;
      ex.list = d.exemplars;
      renderExemplars(p);
      if (p.charts.heat) p.charts.heat.redraw(false);
    }).catch(failed("the exemplars of " + p.name)).finally(() => { ex.loading = false; });
  }
  function renderExemplars(p) {
    const box = p.el.exemplars;
    box.textContent = "";
    const list = p.ex.list;
    const oks = list.filter((e) => e.status === "ok").slice(0, 8), bad = list.filter((e) => e.status !== "ok").slice(0, 4);
    box.append(el("h4", null, "exemplars: the slowest requests of the range" + (bad.length ? ", and failed ones" : "")));
    if (!oks.length && !bad.length) {
      box.append(el("p", {class: "hint no-exemplars"}, "None: instances become exemplars when they carry a trace or " +
        "instance id (a v2 wrapper's t: and i:, OTLP spans)."));
      return;
    }
    const t = el("table", {class: "small exemplars"},
      el("tr", null, ...["ended (UTC)", "duration", "status", "trace", "instance", "node", "attributes"].map((x) => el("th", null, x))));
    for (const e of oks.concat(bad)) {
      const trace = e.trace_id ? (e.url ? el("a", {href: e.url, target: "_blank", rel: "noopener noreferrer",
        class: "trace", title: "open the trace"}, e.trace_id) : el("code", {class: "trace"}, e.trace_id)) : "-";
      t.append(el("tr", {class: e.status === "ok" ? null : "failed", "data-trace": e.trace_id || ""},
        el("td", null, fmtClock(e.end)), el("td", null, fmtDur(e.duration)), el("td", null, e.status),
        el("td", null, trace), el("td", null, e.instance_id ? el("code", null, e.instance_id) : "-"),
        el("td", null, e.node || "-"),
        el("td", {class: "attrs"}, Object.keys(e.attrs || {}).map((k) => k + "=" + e.attrs[k]).join(", "))));
    }
    box.append(t);
  }

  /* ---- a node's operator and its children's contributions ------------------------------------ */

  function loadFamily(p) {
    if (!((S.diagram && S.diagram.children) || {})[p.name] || p.familyAt === S.windowsSeen ||
        (p.family && p.refreshes % 5 !== 1) || p.familyLoading) return;
    p.familyLoading = true;
    api("GET", "/api/v1/probes/" + enc(p.name)).then((d) => {
      p.family = d;
      p.familyAt = S.windowsSeen;
      renderFamily(p);
    }).catch(failed("probe " + p.name)).finally(() => { p.familyLoading = false; });
  }
  function renderFamily(p) {
    const box = p.el.family, f = p.family;
    box.textContent = "";
    if (!f || !f.children || !f.children.length) return;
    const op = f.operator || {};
    box.append(el("h4", null, (OP_WORDS[op.kind] || op.kind || "node") + " of " + plural(f.children.length, "child", "children")));
    const c = f.contributions;
    if (!c) return;
    const t = el("table", {class: "small contributions"},
      el("tr", null, ...["child", op.kind === "choice" ? "weight" : null, "contribution to the mean (95%)", "share",
        op.kind === "all" || op.kind === "first" ? "criticality" : null].filter((x) => x).map((x) => el("th", null, x))));
    for (const k of c.children) {
      const cells = [el("td", null, k.name)];
      if (op.kind === "choice") cells.push(el("td", null, op.weights && op.weights[k.name] !== undefined ? trim3(op.weights[k.name]) : "-"));
      if (k.missing) {
        cells.push(el("td", {class: "missing", colspan: "2"}, "no data: " + k.missing));
      } else {
        cells.push(el("td", null, fmtDur(k.contribution) + " ± " + fmtDur(k.half_width)), el("td", {class: "share"}, fmtShare(k.share)));
      }
      if (op.kind === "all" || op.kind === "first") cells.push(el("td", null, k.missing ? "-" : fmtNum(k.criticality)));
      t.append(el("tr", {"data-child": k.name}, ...cells));
    }
    box.append(t, el("div", {class: "hint-line"}, "over the last " + plural(c.windows, "window") + " as the search weighs a latency problem" +
      (c.total !== null ? "; " + p.name + "'s mean " + fmtDur(c.total) : "")));
  }

  /* ---- actions ----------------------------------------------------------------------- */

  // a change from a panel; a refusal is said at the field it came from (field: an input)
  function putProbe(p, body, what, field) {
    return api("PUT", "/api/v1/probes/" + enc(p.name), body).then((d) => {
      S.probes.set(p.name, d);
      dirty.numbers.add(p.name);
      dirty.panels.add(p.name);
      schedule();
      if (field) {
        field.value = "";
        fieldError(p, null, "");
      }
      const cmds = d.commands || [];
      const notApplied = cmds.filter((c) => c.status === "not_applied" || c.status === "failed");
      const unknown = cmds.filter((c) => c.status === "ambiguous");
      let msg = p.name + ": " + what;
      if (cmds.length) msg += " (" + cmds.length + " wrapper link" + (cmds.length === 1 ? "" : "s") + (notApplied.length ? ", NOT applied on " + notApplied.length : "") + (unknown.length ? ", NOT known to have reached " + unknown.length : "") + ")";
      // a legacy wrapper's command listener: "sent to the wrapper's command listener (…)"
      for (const c of cmds) if (c.status === "sent" && c.detail) msg += "; sent to " + c.detail;
      for (const c of unknown) msg += "; " + c.link + ": " + c.detail;
      for (const w of d.warnings || []) msg += "; " + w;
      toast(msg, notApplied.length + unknown.length > 0);
    }).catch((e) => {
      if (!field) return failed(p.name + ": " + what)(e);
      console.error("dqd dashboard: " + p.name + ": " + what + ": " + (e && e.message ? e.message : e));
      fieldError(p, field, what + ": " + (e && e.message ? e.message : e));
      return null;
    });
  }
  function setEnabled(p) {
    const s = S.probes.get(p.name);
    const on = !(s && s.enabled);
    putProbe(p, {enabled: on}, on ? "enabled" : "disabled");
  }
  function setDmax(p) {
    const v = p.el.dmax.value.trim();
    if (!v) return fieldError(p, p.el.dmax, "dMax: type a duration, e.g. 250ms or 1.5s");
    putProbe(p, {dmax_ms: /^[0-9.]+$/.test(v) ? Number(v) : v}, "dMax " + v, p.el.dmax);
  }
  // "0.5@100ms 0.95@250ms lost<1%" → {points: [[0.5,"100ms"],[0.95,"250ms"]], max_lost: 0.01}
  function parseQta(text) {
    const points = [];
    let maxLost;
    for (const word of text.trim().split(/[\s,]+/)) {
      if (!word) continue;
      let m = /^lost<=?([0-9.]+)(%?)$/.exec(word);
      if (m) {
        maxLost = Number(m[1]) / (m[2] ? 100 : 1);
        continue;
      }
      m = /^([0-9.]+)(%?)@([0-9.]+)([a-zµ]*)$/.exec(word);
      if (!m) throw new Error("not a QTA point: " + word + " (P@T, e.g. 0.95@250ms)");
      const prob = Number(m[1]) / (m[2] ? 100 : 1);
      points.push([prob, m[3] + (m[4] || "ms")]);
    }
    if (!points.length) throw new Error("a QTA needs at least one point P@T");
    const q = {points: points};
    if (maxLost !== undefined) q.max_lost = maxLost;
    return q;
  }
  function setQta(p) {
    let q;
    try {
      q = parseQta(p.el.qta.value);
    } catch (e) {
      return fieldError(p, p.el.qta, e.message);
    }
    putProbe(p, {qta: q}, "QTA set", p.el.qta);
  }
  function clearQta(p) {
    putProbe(p, {qta: null}, "QTA cleared");
  }
  function diagnose(p) {
    const body = {node: p.name, requested_by: "the dashboard"};
    if (p.el.overload.checked) body.overload = true;
    api("POST", "/api/v1/diagnose", body).then((d) => {
      toast(invLabel(d.investigation) + (d.already_open ? " was already open at " : " opened at ") + p.name);
      S.invSelected = d.investigation;
      refreshInvestigations();
      loadInvDetail(d.investigation);
      selectTab("investigations");
    }).catch(failed("diagnose " + p.name));
  }
  function abortInvestigation(id) {
    api("DELETE", "/api/v1/investigations/" + id + "?requested_by=" + enc("the dashboard")).then(() => {
      toast(invLabel(id) + " aborted");
      refreshInvestigations();
    }).catch(failed("abort investigation " + id));
  }

  /* ---- investigations ------------------------------------------------------------------ */

  function renderInvList() {
    const tb = $("#inv-list tbody");
    tb.textContent = "";
    $("#no-inv").hidden = S.investigations.length > 0;
    for (const inv of S.investigations) {
      const tr = el("tr", {"data-id": inv.id, class: inv.id === S.invSelected ? "selected" : null,
        onclick: () => { S.invSelected = inv.id; loadInvDetail(inv.id); dirty.inv = true; schedule(); }},
      el("td", null, inv.id), el("td", null, fmtWhen(inv.opened)), el("td", {class: "name"}, inv.node),
      el("td", null, inv.problem), el("td", null, inv.open ? "searching…" : inv.verdict || "-"),
      el("td", {class: "name"}, inv.verdict_node || ""));
      tb.append(tr);
    }
  }

  function loadInvDetail(id) {
    throttle("inv-detail", 150, () => api("GET", "/api/v1/investigations/" + id).then((inv) => {
      if (S.invSelected !== id) return;
      S.invDetail = inv;
      const probe = !inv.open && inv.verdict_node ? inv.verdict_node : null;
      if (probe) {
        return api("GET", "/api/v1/why/" + enc(probe)).then((w) => { S.why = w; }, () => { S.why = null; });
      }
      S.why = null;
      return null;
    }).then(() => {
      dirty.inv = true;
      schedule();
    }).catch(failed("investigation " + id)));
  }

  function statsLine(st) {
    if (!st || typeof st !== "object") return "";
    if (st.present === false) return "no data";
    const parts = [];
    const n = (st.ok || 0) + (st.fa || 0) + (st.to || 0);
    if (st.ok !== undefined) parts.push("n " + n + (st.windows !== undefined ? " in " + plural(st.windows, "window") : ""));
    if (st.mean !== undefined && st.mean !== null) parts.push("mean " + fmtDur(st.mean) + ", sd " + fmtDur(st.sd));
    if (st.lost !== undefined && st.lost !== null) parts.push("lost " + fmtPct(st.lost));
    if (st.ks_d !== undefined && st.ks_d !== null) parts.push("KS D " + fmtNum(st.ks_d) + " (p " + fmtNum(st.ks_p) + ")");
    if (st.qta_hazard !== undefined && st.qta_hazard !== null) parts.push("QTA hazard " + fmtNum(st.qta_hazard));
    return parts.join(", ");
  }
  function nodeStats(h) {
    const st = h.stats || {};
    if (st.node && typeof st.node === "object") return st.node;
    if (st.focus && typeof st.focus === "object") return st.focus;
    if (st.evidence && st.evidence.focus && typeof st.evidence.focus === "object") return st.evidence.focus;
    return null;
  }
  function contribution(kind, c) {
    if (!c || c.contribution === undefined || c.contribution === null) return "-";
    const v = (x) => (kind === "lost" ? fmtPct(x) : kind === "divergence" ? fmtNum(x) : kind === "variance" ? fmtNum(x * 1e6) + " ms²" : fmtDur(x));
    return v(c.contribution) + (c.half_width !== undefined && c.half_width !== null ? " ± " + v(c.half_width) : "");
  }

  function renderInvDetail() {
    const box = $("#inv-detail");
    const inv = S.invDetail;
    box.textContent = "";
    if (!inv || inv.id !== S.invSelected) {
      box.dataset.id = "";
      box.dataset.verdict = "";
      box.append(el("p", {class: "hint"}, "Pick an investigation on the left."));
      return;
    }
    box.dataset.id = String(inv.id);
    box.dataset.verdict = inv.verdict || "";
    box.append(el("h3", null, "Investigation " + inv.id + " at " + inv.node));
    box.append(el("div", null, (inv.problem || "?") + " problem, strategy " + inv.strategy + ", started by " +
      (inv.origin === "trigger" ? (inv.trigger > 0 ? "trigger #" + inv.trigger : "a trigger") : (inv.requested_by || "a person")) +
      " at " + fmtWhen(inv.opened) + " UTC" + (inv.closed ? ", closed " + fmtWhen(inv.closed) : "")));
    if (inv.open) {
      box.append(el("p", null, el("span", {class: "verdict"}, "searching…"), " ",
        el("button", {type: "button", class: "abort", onclick: () => abortInvestigation(inv.id)}, "Abort")));
    } else {
      const sum = inv.summary || {};
      const reason = sum.evidence && sum.evidence.reason;
      // every culprit the verdict names, each with the share of the node's change it explains
      const culprits = (sum.evidence && sum.evidence.culprits) || [];
      const names = culprits.map((c) => c.probe);
      const at = names.length > 1 ? names.slice(0, -1).join(", ") + " and " + names[names.length - 1] : inv.verdict_node;
      const list = culprits.length ? el("ul", {class: "culprits"}) : null;
      for (const c of culprits) {
        list.append(el("li", {"data-probe": c.probe}, c.probe + ": " +
          (c.share === undefined || c.share === null ? "share unknown" : fmtPct(c.share)) +
          " of " + inv.node + "'s change (reference: " + (c.reference || "its baseline") + ")"));
      }
      box.append(el("div", {class: "verdict-block"},
        el("span", {class: "verdict " + inv.verdict}, "verdict: " + inv.verdict + (at ? " at " + at : "")),
        reason ? el("div", {class: "reason"}, reason) : null, list));
      if (inv.verdict === null) box.append(el("p", null, "no verdict"));
    }
    const kids = (sum) => (sum && sum.evidence && sum.evidence.children) || [];
    const ch = kids(inv.summary);
    if (ch.length) {
      const t = el("table", {class: "small contributions"},
        el("tr", null, el("th", null, "child"), el("th", null, "n"), el("th", null, "mean"), el("th", null, "lost"),
          el("th", null, "contribution (95%)"), el("th", null, "share")));
      for (const c of ch) {
        t.append(el("tr", {class: c.node === (inv.summary.evidence.best || "") ? "bottleneck" : null},
          el("td", null, c.node), el("td", null, c.ok === undefined ? "-" : (c.ok || 0) + (c.fa || 0) + (c.to || 0)), el("td", null, fmtDur(c.mean)),
          el("td", null, fmtPct(c.lost)), el("td", null, contribution(inv.problem, c)),
          el("td", {class: "share"}, fmtShare(c.share))));
      }
      box.append(el("h4", null, "children of " + ((inv.summary.evidence.focus && inv.summary.evidence.focus.node) || inv.node)), t);
    }
    if (inv.overload) box.append(renderOverload(inv.overload));
    if (S.why && inv.verdict_node && S.why.probe === inv.verdict_node) {
      box.append(el("h4", null, "why " + inv.verdict_node));
      const ul = el("ul", {class: "why-sentences"});
      for (const s of S.why.sentences || []) ul.append(el("li", null, s));
      box.append(ul);
    }
    box.append(el("h4", null, "hypotheses (" + (inv.hypotheses || []).length + ")"));
    box.append(renderHypTree(inv));
    const cmds = inv.commands || [];
    box.append(el("h4", null, "commands (" + cmds.length + ")"));
    if (cmds.length) {
      const t = el("table", {class: "small commands"},
        el("tr", null, el("th", null, "time (UTC)"), el("th", null, "command"), el("th", null, "probe"),
          el("th", null, "args"), el("th", null, "wrapper"), el("th", null, "status"), el("th", null, "step")));
      for (const c of cmds) {
        t.append(el("tr", null, el("td", null, fmtWhen(c.time)), el("td", null, c.command), el("td", null, c.probe || ""),
          el("td", null, c.args ? JSON.stringify(c.args) : ""), el("td", null, c.wrapper || ""),
          el("td", {class: "status-" + c.status}, c.status + (c.detail ? ": " + c.detail : "")),
          el("td", null, c.hypothesis ? "#" + c.hypothesis : "")));
      }
      box.append(t);
    }
  }

  function renderHypTree(inv) {
    const hyps = inv.hypotheses || [];
    const byParent = new Map();
    const ids = new Set(hyps.map((h) => h.id));
    for (const h of hyps) {
      const k = h.parent && ids.has(h.parent) ? h.parent : 0;
      if (!byParent.has(k)) byParent.set(k, []);
      byParent.get(k).push(h);
    }
    const build = (parent) => {
      const ul = el("ul", {class: parent ? null : "hyp-tree"});
      for (const h of byParent.get(parent) || []) {
        const st = h.stats || {};
        const ns = nodeStats(h);
        const best = st.evidence && st.evidence.best && (st.evidence.children || []).find((c) => c.node === st.evidence.best);
        const li = el("li", {class: "hyp", "data-action": h.action, "data-id": h.id},
          el("div", {class: "head"}, "#" + h.id + " " + h.action + " " + h.node +
            ((h.probes || []).length ? " [" + h.probes.join(", ") + "]" : "") +
            (h.verdict && h.verdict !== "pending" ? " → " + h.verdict : ""), el("span", {class: "when"}, fmtClock(h.time))),
          ns ? el("div", {class: "nums"}, (ns.node || h.node) + ": " + statsLine(ns)) : null,
          best ? el("div", {class: "contrib"}, "largest contribution: " + best.node + " " + contribution(h.kind, best) +
            (fmtShare(best.share) !== "-" ? " (" + fmtShare(best.share) + ")" : "") +
            (st.evidence.dominant ? ", dominant" : ", not dominant")) : null,
          st.reason ? el("div", {class: "reason"}, st.reason) : null);
        if (byParent.has(h.id)) li.append(build(h.id));
        ul.append(li);
      }
      return ul;
    };
    return build(0);
  }

  function renderOverload(o) {
    const frag = el("div", {class: "overload"});
    frag.append(el("h4", null, "overload: the stages"));
    frag.append(el("div", null, "bottleneck " + (o.bottleneck || "?") +
      ((o.co_bottlenecks || []).length ? " (with " + o.co_bottlenecks.join(", ") + ")" : "") +
      "; saturates at " + fmtNum(o.saturation_per_s) + "/s" +
      (o.qta_violation_per_s !== null && o.qta_violation_per_s !== undefined ? ", QTA violated from " + fmtNum(o.qta_violation_per_s) + "/s" : "") +
      (o.divergence_onset_per_s !== null && o.divergence_onset_per_s !== undefined ? ", diverges from " + fmtNum(o.divergence_onset_per_s) + "/s" : "")));
    const t = el("table", {class: "small stages"},
      el("tr", null, ...["stage", "ρ", "ρ 95%", "service", "servers", "arrivals /s", "saturation /s", "at the root /s", "method"].map((h) => el("th", null, h))));
    for (const s of o.stages || []) {
      const bott = s.probe === o.bottleneck || (o.co_bottlenecks || []).includes(s.probe);
      t.append(el("tr", {class: bott ? "bottleneck" : null, "data-probe": s.probe},
        el("td", null, s.probe), el("td", null, fmtNum(s.rho)),
        el("td", null, fmtNum(s.rho_low, 2) + " … " + fmtNum(s.rho_high, 2)),
        el("td", null, fmtDur(s.service_ms / 1000)), el("td", null, (s.servers === null || s.servers === undefined ? "-" : s.servers) + (s.servers_from ? " (" + s.servers_from + ")" : "")),
        el("td", null, fmtNum(s.arrivals_per_s)), el("td", null, fmtNum(s.saturation_per_s)),
        el("td", null, fmtNum(s.root_saturation_per_s)), el("td", null, s.method || "")));
    }
    frag.append(t);
    return frag;
  }

  /* ---- snapshots --------------------------------------------------------------------------- */

  function renderSnapList() {
    const tb = $("#snap-list tbody");
    tb.textContent = "";
    $("#no-snap").hidden = S.snapshots.length > 0;
    $("#snap-count").textContent = S.snapshots.length ? "(" + S.snapshots.length + ")" : "";
    for (const s of S.snapshots) {
      tb.append(el("tr", {"data-id": s.id, class: s.id === S.snapSelected ? "selected" : null,
        onclick: () => showSnapshot(s.id)},
      el("td", null, s.id), el("td", null, fmtWhen(s.time)), el("td", null, s.probe), el("td", null, s.reason),
      el("td", null, s.dq_count + (s.complete ? "" : " (+)"))));
    }
  }

  let snapChart = null;
  function showSnapshot(id) {
    S.snapSelected = id;
    dirty.snaps = true;
    schedule();
    api("GET", "/api/v1/snapshots/" + id).then((snap) => {
      const box = $("#snap-detail");
      box.textContent = "";
      box.dataset.id = String(snap.id);
      if (snapChart) {
        snapChart.destroy();
        snapChart = null;
      }
      box.append(el("h3", null, "Snapshot " + snap.id + " of " + snap.probe),
        el("div", null, snap.reason + " at " + fmtWhen(snap.time) + " UTC; " + plural(snap.windows, "window") + " before and after" +
          (snap.investigation > 0 ? ", " + invLabel(snap.investigation) : "")));
      // the probe's observed and calculated ΔQs before and after the firing, each pooled
      const pools = {};
      for (const q of snap.dqs || []) {
        if (q.probe !== snap.probe) continue;
        const key = q.kind + " " + (q.end <= snap.time + 1e-9 ? "before" : "after");
        let acc = pools[key];
        if (!acc) acc = pools[key] = {bin_width: q.bin_width, pdf: new Array(q.pdf.length).fill(0), count: 0};
        if (acc.bin_width !== q.bin_width) continue; // another grid: not pooled
        for (let i = 0; i < q.pdf.length && i < acc.pdf.length; i++) acc.pdf[i] += q.pdf[i];
        acc.count++;
      }
      for (const k of Object.keys(pools)) pools[k].pdf = pools[k].pdf.map((v) => v / pools[k].count);
      const count = (k) => (pools[k] ? pools[k].count : 0);
      const plot = el("div", {class: "plot"});
      box.append(el("h4", null, "CDFs, " + plural(count("observed before"), "window") + " before and " + count("observed after") +
        " after" + (count("calculated before") + count("calculated after") ? ", observed and calculated" : "")), plot);
      const keys = ["observed before", "observed after", "calculated before", "calculated after"].filter((k) => pools[k]);
      if (!keys.length) {
        plot.append(el("p", {class: "hint"}, "no ΔQ of " + snap.probe + " in it"));
        return;
      }
      const s = S.probes.get(snap.probe);
      const qta = s && s.qta ? s.qta : null;
      const w = Math.min(...keys.map((k) => pools[k].bin_width));
      const cum = {};
      for (const k of keys) cum[k] = cumulative(pools[k].pdf);
      let last = 1;
      for (const k of keys) {
        const c = cum[k], top = c[c.length - 1];
        for (let i = 0; i < c.length; i++) if (c[i] < top - 1e-4) last = Math.max(last, Math.ceil((i + 1) * pools[k].bin_width / w));
      }
      let m = Math.ceil(last * 1.25) + 2;
      if (qta) m = Math.max(m, Math.ceil(qta.points[qta.points.length - 1][1] * 1.15 / w));
      const x = [];
      for (let i = 0; i <= m; i++) x.push(i * w * 1e3);
      const stepped = uPlot.paths.stepped({align: 1});
      const colors = {"observed before": "#1d3557", "observed after": "#e76f51", "calculated before": "#457b9d",
        "calculated after": "#e63946"};
      const series = [{label: "t", value: (u, v) => fmtNum(v) + " ms"}];
      const data = [x];
      for (const k of keys) {
        series.push({label: k, stroke: colors[k], width: k.startsWith("obs") ? 2 : 1.5,
          dash: k.startsWith("calc") ? [6, 4] : undefined, paths: stepped, points: {show: false}});
        data.push(x.map((v) => cdfAt(cum[k], pools[k].bin_width, v / 1e3)));
      }
      if (qta) {
        series.push({label: "QTA (now)", stroke: "#2a9d8f", width: 1.5, paths: stepped, points: {show: false},
          fill: "rgba(42,157,143,0.08)"});
        data.push(x.map((v) => {
          let req = 0;
          for (const pt of qta.points) if (v / 1e3 + 1e-12 >= pt[1]) req = pt[0];
          return req;
        }));
      }
      snapChart = new uPlot({
        width: Math.max(300, box.clientWidth - 30), height: 260,
        scales: {x: {time: false}, y: {auto: false, range: [0, 1.02]}},
        series: series,
        axes: [{label: "delay (ms)"}, {label: "P(delay ≤ t)", size: 52}],
      }, data, plot);
      plot.dataset.drawn = "1";
      plot.dataset.series = series.slice(1).map((x) => x.label).join("|");
    }).catch(failed("snapshot " + id));
  }

  /* ---- tabs, filter, start ---------------------------------------------------------------- */

  function selectTab(name) {
    S.tab = name;
    for (const b of document.querySelectorAll(".tabs button")) b.classList.toggle("active", b.dataset.tab === name);
    for (const t of ["probes", "investigations", "snapshots"]) $("#tab-" + t).hidden = t !== name;
  }

  let resizeTimer = 0;
  // a chart follows its box's width (the window's, or the layout's at another width)
  const resized = new Set();
  const sizer = new ResizeObserver((entries) => {
    for (const e of entries) resized.add(e.target);
    resizeSoon();
  });
  function resizeSoon() {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      for (const plot of resized) {
        const box = plot.closest(".chart"), panel = plot.closest(".panel");
        const p = panel && panel.__panel;
        const key = box && {cdf: "cdf", quantiles: "q", loss: "loss", heat: "heat"}[box.dataset.kind];
        const c = p && key ? p.charts[key] : null;
        if (c && Math.abs(c.width - plotSize(plot).width) > 1) c.setSize(plotSize(plot));
      }
      resized.clear();
    }, 100);
  }
  function onResize() {
    for (const p of S.panels.values()) {
      for (const k of ["cdf", "q", "loss", "heat"]) if (p.charts[k]) resized.add(p.el[k].querySelector(".plot"));
    }
    resizeSoon();
  }

  function start() {
    for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => selectTab(b.dataset.tab));
    $("#filter").addEventListener("input", (e) => {
      S.filter = e.target.value;
      applyFilter();
    });
    $("#token-ok").addEventListener("click", () => closeToken($("#token-input").value.trim() || null));
    $("#token-cancel").addEventListener("click", () => closeToken(null));
    $("#token-forget").addEventListener("click", () => {
      sessionStorage.removeItem(TOKEN_KEY);
      closeToken(null);
    });
    $("#token-input").addEventListener("keydown", (e) => {
      if (e.key === "Enter") closeToken(e.target.value.trim() || null);
      if (e.key === "Escape") closeToken(null);
    });
    $("#token-button").addEventListener("click", () => askToken());
    window.addEventListener("resize", onResize);
    // the range: the select, a custom one from the two UTC fields
    $("#range").addEventListener("change", (e) => {
      if (e.target.value !== "custom") {
        setRange(e.target.value);
        return;
      }
      const b = rangeBounds();
      $("#range-from").value = toLocalInput(b.from);
      $("#range-to").value = toLocalInput(b.to);
      $("#custom-range").hidden = false;
    });
    $("#range-apply").addEventListener("click", applyCustomRange);
    const tip = $("#mark-tip");
    tip.addEventListener("mouseenter", () => clearTimeout(tipTimer));
    tip.addEventListener("mouseleave", hideTipSoon);
    // #open=a,b&range=1h
    const params = new Map(location.hash.replace(/^#/, "").split("&").filter((x) => x.includes("="))
      .map((x) => [x.slice(0, x.indexOf("=")), x.slice(x.indexOf("=") + 1)]));
    if (params.has("range") && rangeOf(params.get("range"))) {
      S.range = rangeOf(params.get("range"));
      $("#range").value = S.range.kind === "abs" ? "custom" : S.range.key;
      $("#custom-range").hidden = S.range.kind !== "abs";
      if (S.range.kind === "abs") {
        $("#range-from").value = toLocalInput(S.range.from);
        $("#range-to").value = toLocalInput(S.range.to);
      }
    }
    if (params.has("open")) {
      for (const name of params.get("open").split(",")) if (name) openPanel(decodeURIComponent(name), false);
    }
    connect();
  }

  // for the benchmark (tests/web/bench_dashboard.py): the tree rebuilt and rendered at once
  window.dqdBench = {
    rebuildTree() {
      const t0 = performance.now();
      buildTree();
      for (const name of rows.keys()) renderRow(name);
      return performance.now() - t0;
    },
  };

  window.addEventListener("unhandledrejection", (e) => toast("unexpected: " + (e.reason && e.reason.message ? e.reason.message : e.reason), true));
  start();
})();
