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
    schedule();
  }

  async function loadSeries(name) {
    const d = await api("GET", "/api/v1/probes/" + enc(name) + "/windows");
    S.ring = d.ring;
    S.windowS = d.window_s;
    S.series.set(name, d.windows.map((w) => ({
      wid: w.wid, start: w.start, n: w.n, p50: w.p50, p95: w.p95, p99: w.p99, lost: w.lost,
      no_data: w.no_data})));
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
    on("trigger_fired", refreshTriggers);
    on("trigger_cleared", refreshTriggers);
    on("hypothesis", (d) => {
      if (d.node) S.investigatingProbes.add(d.node);
      for (const p of d.probes || []) S.investigatingProbes.add(p);
      dirty.tree = true;
      refreshInvestigations();
      schedule();
    });
    on("verdict", () => {
      refreshInvestigations();
      refreshSnapshots();
    });
    on("probe_silent", (d) => refreshProbe(d.probe));
    on("probe_data_returned", (d) => refreshProbe(d.probe));
  }
  function setLive(on) {
    const l = $("#live");
    l.className = "live " + (on ? "on" : "off");
    l.textContent = on ? "live" : "reconnecting…";
  }

  function onWindow(d, updateId) {
    S.lastWindow = {wid: d.wid, start: d.start, end: d.end, probes: d.probes.length};
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
      if (ring) {
        if (!ring.length || ring[ring.length - 1].wid < d.wid) {
          ring.push({wid: d.wid, start: d.start, n: w.n, p50: w.p50, p95: w.p95, p99: w.p99,
            lost: w.lost, no_data: w.no_data});
          while (ring.length > S.ring) ring.shift();
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
    }
    $("#open-count").textContent = S.open.length ? "(" + S.open.length + ")" : "";
  }

  /* ---- the tree ------------------------------------------------------------------------ */

  const rows = new Map(); // name → [{li, row, nums, badges}] (a node the diagram shares has several)

  function makeRow(name, hasKids) {
    const twist = el("span", {class: "twist", text: hasKids ? "▾" : ""});
    const nums = el("span", {class: "nums"});
    const badges = el("span", {class: "badges"});
    const nameEl = el("span", {class: "name", title: name}, name, badges);
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
      const add = (name, parentUl, path) => {
        const ch = (kids[name] || []).filter((c) => !path.has(c));
        const li = makeRow(name, ch.length > 0);
        inDiagram.add(name);
        parentUl.append(li);
        if (ch.length) {
          const ul = el("ul", {role: "group"});
          li.append(ul);
          const p2 = new Set(path);
          p2.add(name);
          for (const c of ch) add(c, ul, p2);
        }
      };
      for (const r of g.roots) add(r, tree, new Set());
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
    const text = w ? fmtDur(w.p50) + " · " + fmtDur(w.p95) + " · " + fmtPct(w.lost) : (st.enabled ? "no window" : "");
    if (r.text !== text) {
      r.text = text;
      r.nums.textContent = text;
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
    for (const [name, list] of rows) {
      for (const r of list) r.li.classList.toggle("filtered-out", f !== "" && !name.toLowerCase().includes(f));
    }
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
    loadSeries(name).catch(failed("windows of " + name));
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
    for (const c of Object.values(p.charts)) if (c) c.destroy();
    p.root.remove();
    S.panels.delete(name);
    S.series.delete(name);
    S.open = S.open.filter((n) => n !== name);
    $("#no-panels").hidden = S.open.length > 0;
    dirty.numbers.add(name);
    dirty.header = true;
    schedule();
  }

  function updateHash() {
    const h = S.open.length ? "#open=" + S.open.map(enc).join(",") : " ";
    history.replaceState(null, "", h === " " ? location.pathname : h);
  }

  function createPanel(name) {
    const p = {name: name, visible: false, stale: true, charts: {cdf: null, q: null, loss: null},
      density: false, dqs: null, fetching: false, refetch: false, draws: {cdf: 0, q: 0, loss: 0}};
    const facts = el("span", {class: "facts"});
    const enableBtn = el("button", {type: "button", class: "enable"});
    const dmax = el("input", {class: "dmax", placeholder: "250ms", title: "dMax: a duration (250ms, 1.5s; bare = ms)"});
    const qta = el("input", {class: "qta", placeholder: "0.5@100ms 0.95@250ms lost<1%",
      title: "QTA: points P@T (T a duration, bare = ms) and optionally lost<X%"});
    const overload = el("input", {type: "checkbox", class: "overload"});
    const densityBox = el("input", {type: "checkbox", class: "density"});
    const verdictLine = el("div", {class: "verdict-line"});
    const head = el("div", {class: "panel-head"},
      el("h3", null, name), facts,
      el("label", null, densityBox, " density"),
      el("button", {type: "button", title: "close", onclick: () => { closePanel(name); updateHash(); }}, "×"));
    const actions = el("div", {class: "actions"},
      enableBtn,
      el("label", null, "dMax ", dmax),
      el("button", {type: "button", class: "set-dmax", onclick: () => setDmax(p)}, "set"),
      el("label", null, "QTA ", qta),
      el("button", {type: "button", class: "set-qta", onclick: () => setQta(p)}, "set"),
      el("button", {type: "button", class: "clear-qta", onclick: () => clearQta(p)}, "clear"),
      el("span", {class: "grow"}),
      el("button", {type: "button", class: "diagnose", onclick: () => diagnose(p)}, "Diagnose"),
      el("label", {title: "weigh every stage's utilisation and where the node saturates"}, overload, " overload"));
    const chart = (kind, title) => el("div", {class: "chart", "data-kind": kind, "data-drawn": "0"},
      el("div", {class: "chart-title"}, el("span", {class: "t", text: title}), el("span", {class: "sub"})),
      el("div", {class: "plot"}));
    const charts = el("div", {class: "charts"},
      chart("cdf", "ΔQ: observed and calculated CDF, QTA, dMax"),
      chart("quantiles", "p50 / p95 / p99 per window"),
      chart("loss", "lost % and rate per window"));
    const root = el("section", {class: "panel", "data-probe": name}, head, actions, verdictLine, charts);
    root.__panel = p;
    p.root = root;
    p.el = {facts, enableBtn, dmax, qta, overload, densityBox, verdictLine,
      cdf: charts.children[0], q: charts.children[1], loss: charts.children[2]};
    enableBtn.addEventListener("click", () => setEnabled(p));
    dmax.addEventListener("keydown", (e) => { if (e.key === "Enter") setDmax(p); });
    qta.addEventListener("keydown", (e) => { if (e.key === "Enter") setQta(p); });
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

  function renderPanelHead(p) {
    const s = S.probes.get(p.name);
    if (!s) {
      p.el.facts.textContent = "not known to dqd (deleted?)";
      return;
    }
    const w = s.last_window;
    const parts = [s.enabled ? "enabled" : "disabled", "dMax " + fmtDur(s.dmax_ms / 1000),
      s.bins + " bins of " + fmtDur(s.bin_width_s)];
    if (s.qta) parts.push("QTA " + qtaText(s.qta));
    if (w) parts.push("last window n " + w.n + ", p50 " + fmtDur(w.p50) + ", p95 " + fmtDur(w.p95) + ", lost " + fmtPct(w.lost));
    if (s.silent_since_ns !== null && s.silent_since_ns !== undefined) {
      parts.push("SILENT since " + fmtWhen(s.silent_since_ns / 1e9) + " UTC (" + s.silent_windows + " windows)");
      const o = s.silent_origin;
      if (o && o.hint) parts.push(o.hint);
    }
    p.el.facts.textContent = parts.join(" · ");
    p.el.enableBtn.textContent = s.enabled ? "Disable" : "Enable";
    p.el.enableBtn.dataset.enabled = s.enabled ? "1" : "0";
    const st = probeState(p.name);
    const v = st.verdict;
    p.el.verdictLine.textContent = v ? "last verdict here: " + v.verdict + (v.verdict_node ? " at " + v.verdict_node : "") +
      " (investigation " + v.id + ")" : (st.investigating ? "an investigation is searching here" : "");
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
    renderPanelHead(p);
    drawSeries(p);
    fetchDqs(p, ids);
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
          if (S.panels.get(p.name) === p) drawCdf(p);
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

  function drawSeries(p) {
    const ring = S.series.get(p.name) || [];
    const t = [], p50 = [], p95 = [], p99 = [], lost = [], rate = [];
    for (const w of ring) {
      t.push(w.start);
      const ms = (x) => (x === null || x === undefined ? null : x * 1e3);
      p50.push(ms(w.p50));
      p95.push(ms(w.p95));
      p99.push(ms(w.p99));
      lost.push(w.lost === null || w.lost === undefined ? null : w.lost * 100);
      rate.push(w.no_data ? null : w.n / S.windowS);
    }
    const qBox = p.el.q, lBox = p.el.loss;
    if (!t.length) {
      for (const box of [qBox, lBox]) box.querySelector(".sub").textContent = "no window yet";
      return;
    }
    qBox.querySelector(".sub").textContent = ring.length + " windows";
    lBox.querySelector(".sub").textContent = "";
    const qData = [t, p50, p95, p99];
    if (!p.charts.q) {
      p.charts.q = new uPlot({
        ...plotSize(qBox.querySelector(".plot")), tzDate: utc,
        scales: {x: {time: true}},
        series: [{}, {label: "p50", stroke: "#2a9d8f", width: 1.5, value: (u, v) => fmtNum(v) + " ms"},
          {label: "p95", stroke: "#e9a03b", width: 1.5, value: (u, v) => fmtNum(v) + " ms"},
          {label: "p99", stroke: "#e63946", width: 1.5, value: (u, v) => fmtNum(v) + " ms"}],
        axes: [timeAxis, {label: "ms", size: 48}],
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
        scales: {x: {time: true}, pct: {auto: true, range: (u, lo, hi) => [0, Math.max(1, hi * 1.1)]}, rate: {auto: true}},
        series: [{},
          {label: "lost %", scale: "pct", stroke: "#c0392b", width: 1.5, value: (u, v) => fmtNum(v) + " %"},
          {label: "rate /s", scale: "rate", stroke: "#1d3557", width: 1.5, value: (u, v) => fmtNum(v) + " /s"}],
        axes: [timeAxis, {scale: "pct", label: "lost %", size: 48}, {scale: "rate", side: 1, label: "per s", size: 56, grid: {show: false}}],
        cursor: {drag: {x: false, y: false}}, legend: {live: false},
      }, lData, lBox.querySelector(".plot"));
    } else {
      p.charts.loss.setData(lData);
    }
    markDrawn(lBox, "loss", p);
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

  function drawCdf(p) {
    const box = p.el.cdf;
    const s = S.probes.get(p.name);
    const d = p.dqs;
    const obs = d && d.observed, calc = d && d.calculated;
    if (!obs && !calc) {
      box.querySelector(".sub").textContent = "no ΔQ yet";
      if (p.charts.cdf) {
        p.charts.cdf.destroy();
        p.charts.cdf = null;
      }
      return;
    }
    const dmaxMs = s ? s.dmax_ms : null;
    const qta = s && s.qta ? s.qta : null;
    const width = Math.min(obs ? obs.bin_width : Infinity, calc ? calc.bin_width : Infinity);
    const horizon = Math.max(obs ? obs.bin_width * obs.bins : 0, calc ? calc.bin_width * calc.bins : 0);
    const oc = obs ? cumulative(obs.pdf) : null, cc = calc ? cumulative(calc.pdf) : null;
    // where the curves have done their rising: the first time each reaches its tangible mass
    const settle = (q, c) => {
      if (!q) return 0;
      const top = c[c.length - 1];
      for (let i = 0; i < c.length; i++) if (c[i] >= top - 1e-4) return (i + 1) * q.bin_width;
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
        yc[i] = calc ? cdfAt(cc, calc.bin_width, t) : null;
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
    if (obs) sub.push("observed n " + obs.n + ", lost " + fmtPct(obs.lost) + " @ " + fmtClock(obs.start));
    if (calc) sub.push("calculated lost " + fmtPct(calc.lost));
    box.querySelector(".sub").textContent = sub.join(" · ");
    box.dataset.xmaxMs = String(x[n - 1]);
    box.dataset.view = p.density ? "density" : "cdf";
    const data = [x, yo, yc, yq];
    const draw = (u) => {
      const ctx = u.ctx;
      const r = uPlot.pxRatio || 1;
      const {left, top, width: bw, height: bh} = u.bbox;
      ctx.save();
      ctx.font = (11 * r) + "px DejaVu Sans, sans-serif";
      ctx.lineWidth = r;
      if (dmaxMs !== null) {
        const xd = u.valToPos(dmaxMs, "x", true);
        ctx.strokeStyle = "#6c757d";
        ctx.fillStyle = "#6c757d";
        ctx.setLineDash([4 * r, 3 * r]);
        if (xd >= left && xd <= left + bw) {
          ctx.beginPath();
          ctx.moveTo(xd, top);
          ctx.lineTo(xd, top + bh);
          ctx.stroke();
          ctx.fillText("dMax", xd - 34 * r, top + 12 * r);
        } else {
          ctx.fillText("dMax " + fmtDur(dmaxMs / 1000) + " →", left + bw - 110 * r, top + bh - 8 * r);
        }
      }
      if (!p.density && lostObs !== null && lostObs > 0) {
        const yl = u.valToPos(1 - lostObs, "y", true);
        ctx.strokeStyle = "#c0392b";
        ctx.fillStyle = "#c0392b";
        ctx.setLineDash([2 * r, 3 * r]);
        ctx.beginPath();
        ctx.moveTo(left, yl);
        ctx.lineTo(left + bw, yl);
        ctx.stroke();
        ctx.fillText("failure mass " + fmtPct(lostObs), left + 6 * r, yl - 4 * r);
      }
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
    if (!p.charts.cdf) {
      const stepped = uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({align: 1}) : undefined;
      const unit = p.density ? " /ms" : "";
      p.charts.cdf = new uPlot({
        ...plotSize(box.querySelector(".plot")),
        scales: {x: {time: false}, y: p.density ? {auto: true} : {auto: false, range: [0, 1.02]}},
        series: [
          {label: "t", value: (u, v) => fmtNum(v) + " ms"},
          {label: "observed", stroke: "#1d3557", width: 2, paths: stepped, points: {show: false},
            value: (u, v) => fmtNum(v) + unit},
          {label: "calculated", stroke: "#e63946", width: 1.5, dash: [6, 4], paths: stepped, points: {show: false},
            value: (u, v) => fmtNum(v) + unit},
          {label: "QTA", stroke: "#2a9d8f", width: 1.5, paths: stepped, points: {show: false},
            fill: "rgba(42,157,143,0.08)", value: (u, v) => fmtNum(v)},
        ],
        axes: [{label: "delay (ms)"}, {label: p.density ? "density (per ms)" : "P(delay ≤ t)", size: 52}],
        hooks: {draw: [draw]},
        cursor: {drag: {x: true, y: false}}, legend: {live: false},
      }, data, box.querySelector(".plot"));
      p.charts.cdf.__draw = draw;
    } else {
      p.charts.cdf.hooks.draw = [draw];
      p.charts.cdf.setData(data);
    }
    markDrawn(box, "cdf", p);
  }

  /* ---- actions ----------------------------------------------------------------------- */

  function putProbe(p, body, what) {
    return api("PUT", "/api/v1/probes/" + enc(p.name), body).then((d) => {
      S.probes.set(p.name, d);
      dirty.numbers.add(p.name);
      dirty.panels.add(p.name);
      schedule();
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
    }).catch(failed(p.name + ": " + what));
  }
  function setEnabled(p) {
    const s = S.probes.get(p.name);
    const on = !(s && s.enabled);
    putProbe(p, {enabled: on}, on ? "enabled" : "disabled");
  }
  function setDmax(p) {
    const v = p.el.dmax.value.trim();
    if (!v) return toast("dMax: give a duration, e.g. 250ms or 1.5s", true);
    putProbe(p, {dmax_ms: /^[0-9.]+$/.test(v) ? Number(v) : v}, "dMax " + v);
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
      return toast(e.message, true);
    }
    putProbe(p, {qta: q}, "QTA set");
  }
  function clearQta(p) {
    putProbe(p, {qta: null}, "QTA cleared");
  }
  function diagnose(p) {
    const body = {node: p.name, requested_by: "the dashboard"};
    if (p.el.overload.checked) body.overload = true;
    api("POST", "/api/v1/diagnose", body).then((d) => {
      toast((d.already_open ? "investigation " + d.investigation + " was already open at " : "investigation " + d.investigation + " opened at ") + p.name);
      S.invSelected = d.investigation;
      refreshInvestigations();
      loadInvDetail(d.investigation);
      selectTab("investigations");
    }).catch(failed("diagnose " + p.name));
  }
  function abortInvestigation(id) {
    api("DELETE", "/api/v1/investigations/" + id + "?requested_by=" + enc("the dashboard")).then(() => {
      toast("investigation " + id + " aborted");
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
      el("td", null, inv.id), el("td", null, fmtWhen(inv.opened)), el("td", null, inv.node),
      el("td", null, inv.problem), el("td", null, inv.open ? "searching…" : inv.verdict || "-"),
      el("td", null, inv.verdict_node || ""));
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
    if (st.ok !== undefined) parts.push("n " + n + (st.windows !== undefined ? " in " + st.windows + " windows" : ""));
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
      (inv.origin === "trigger" ? "trigger #" + inv.trigger : (inv.requested_by || "a person")) +
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
          el("td", null, c.share === undefined || c.share === null ? "-" : fmtPct(c.share))));
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
            (best.share !== undefined && best.share !== null ? " (" + fmtPct(best.share) + ")" : "") +
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
      if (snapChart) {
        snapChart.destroy();
        snapChart = null;
      }
      box.append(el("h3", null, "Snapshot " + snap.id + " of " + snap.probe),
        el("div", null, snap.reason + " at " + fmtWhen(snap.time) + " UTC; " + snap.windows + " windows before and after" +
          (snap.investigation ? ", investigation " + snap.investigation : "")));
      // the probe's observed ΔQs before and after the firing, each side pooled
      const sides = {before: null, after: null};
      const counts = {before: 0, after: 0};
      for (const q of snap.dqs || []) {
        if (q.probe !== snap.probe || q.kind !== "observed") continue;
        const side = q.end <= snap.time + 1e-9 ? "before" : "after";
        let acc = sides[side];
        if (!acc || acc.bin_width !== q.bin_width) {
          if (acc) continue; // another grid: not pooled
          acc = sides[side] = {bin_width: q.bin_width, pdf: new Array(q.pdf.length).fill(0)};
        }
        for (let i = 0; i < q.pdf.length && i < acc.pdf.length; i++) acc.pdf[i] += q.pdf[i];
        counts[side]++;
      }
      for (const k of ["before", "after"]) {
        if (sides[k]) sides[k].pdf = sides[k].pdf.map((v) => v / counts[k]);
      }
      const plot = el("div", {class: "plot"});
      box.append(el("h4", null, "observed CDF, " + counts.before + " windows before and " + counts.after + " after"), plot);
      if (!sides.before && !sides.after) {
        plot.append(el("p", {class: "hint"}, "no observed ΔQ of " + snap.probe + " in it"));
        return;
      }
      const w = (sides.before || sides.after).bin_width;
      const cb = sides.before ? cumulative(sides.before.pdf) : null, ca = sides.after ? cumulative(sides.after.pdf) : null;
      const n = Math.max(cb ? cb.length : 0, ca ? ca.length : 0);
      let last = 1;
      for (let i = 0; i < n; i++) {
        if ((cb && cb[i] < cb[cb.length - 1] - 1e-4) || (ca && ca[i] < ca[ca.length - 1] - 1e-4)) last = i + 1;
      }
      const m = Math.min(n, Math.ceil(last * 1.25) + 2);
      const x = [], yb = [], ya = [];
      for (let i = 0; i <= m; i++) {
        x.push(i * w * 1e3);
        yb.push(cb ? cdfAt(cb, 1, i) : null);
        ya.push(ca ? cdfAt(ca, 1, i) : null);
      }
      const stepped = uPlot.paths.stepped({align: 1});
      snapChart = new uPlot({
        width: Math.max(300, box.clientWidth - 30), height: 260,
        scales: {x: {time: false}, y: {auto: false, range: [0, 1.02]}},
        series: [{label: "t", value: (u, v) => fmtNum(v) + " ms"},
          {label: "before", stroke: "#1d3557", width: 2, paths: stepped, points: {show: false}},
          {label: "after", stroke: "#e76f51", width: 2, paths: stepped, points: {show: false}}],
        axes: [{label: "delay (ms)"}, {label: "P(delay ≤ t)", size: 52}],
      }, [x, yb, ya], plot);
      plot.dataset.drawn = "1";
    }).catch(failed("snapshot " + id));
  }

  /* ---- tabs, filter, start ---------------------------------------------------------------- */

  function selectTab(name) {
    S.tab = name;
    for (const b of document.querySelectorAll(".tabs button")) b.classList.toggle("active", b.dataset.tab === name);
    for (const t of ["probes", "investigations", "snapshots"]) $("#tab-" + t).hidden = t !== name;
  }

  let resizeTimer = 0;
  function onResize() {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      for (const p of S.panels.values()) {
        for (const [k, boxKey] of [["cdf", "cdf"], ["q", "q"], ["loss", "loss"]]) {
          const c = p.charts[k];
          if (c) c.setSize(plotSize(p.el[boxKey].querySelector(".plot")));
        }
      }
    }, 150);
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
    const m = /^#open=(.*)$/.exec(location.hash);
    if (m) {
      for (const name of m[1].split(",")) if (name) openPanel(decodeURIComponent(name), false);
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
