// The page is kept here as a raw string so that it ships inside the binary, with no build
// step and no framework download (issue 19). It is plain HTML, CSS and JavaScript: it follows
// /api/events (server-sent events), takes a snapshot from /api/state whenever that stream
// (re)connects, and sends every action to /api/request, the same request path as MQTT.

/// The page served at `/`.
enum WebPage {
  /// The HTML document with its style and script.
  static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>gatt2mqtt</title>
    <style>
      :root { --fg:#1d2430; --muted:#6b7585; --line:#dde2ea; --accent:#1f6feb; --ok:#1a7f37; --bad:#cf222e; --bg:#f6f8fa; }
      * { box-sizing: border-box; }
      body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
      header { display: flex; gap: 16px; align-items: center; padding: 10px 16px; background: #fff; border-bottom: 1px solid var(--line); }
      header h1 { font-size: 16px; margin: 0; }
      nav a { margin-right: 12px; color: var(--accent); text-decoration: none; cursor: pointer; }
      nav a.active { font-weight: 600; text-decoration: underline; }
      main { padding: 16px; max-width: 1200px; }
      section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; margin-bottom: 14px; }
      h2 { font-size: 15px; margin: 0 0 8px; }
      table { border-collapse: collapse; width: 100%; }
      th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
      th { color: var(--muted); font-weight: 500; }
      tr.device { cursor: pointer; }
      tr.device:hover { background: #eef4ff; }
      .pill { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px; background: #eef1f5; }
      .pill.good { background: #dafbe1; color: var(--ok); } .pill.bad { background: #ffebe9; color: var(--bad); }
      .muted { color: var(--muted); } .mono { font-family: ui-monospace, monospace; font-size: 13px; }
      input, select, textarea, button { font: inherit; }
      input, select, textarea { border: 1px solid var(--line); border-radius: 4px; padding: 3px 6px; }
      button { border: 1px solid var(--accent); background: #fff; color: var(--accent); border-radius: 4px; padding: 2px 10px; cursor: pointer; }
      button:hover { background: #eef4ff; } button:disabled { opacity: .4; cursor: default; }
      .error { color: var(--bad); } .ok { color: var(--ok); }
      ul.log { list-style: none; margin: 0; padding: 0; max-height: 260px; overflow: auto; }
      ul.log li { border-bottom: 1px solid var(--line); padding: 2px 0; }
      canvas { border: 1px solid var(--line); border-radius: 4px; background: #fff; }
      .row { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
      [hidden] { display: none !important; }
    </style>
    </head>
    <body>
    <header>
      <h1>gatt2mqtt <span id="gateway" class="muted"></span></h1>
      <span id="bridge-state" class="pill">…</span>
      <nav>
        <a data-view="devices" class="active">Devices</a>
        <a data-view="bridge">Bridge</a>
        <a data-view="peripheral">Peripheral</a>
      </nav>
      <span id="stream" class="muted"></span>
    </header>
    <main>
      <div id="view-devices">
        <section>
          <h2>Devices</h2>
          <div class="row"><input id="filter" placeholder="filter by name, address, id"> <span id="device-count" class="muted"></span></div>
          <table>
            <thead><tr><th>name</th><th>address</th><th>RSSI</th><th>presence</th><th>availability</th><th>connection</th><th>gateway</th></tr></thead>
            <tbody id="devices"></tbody>
          </table>
        </section>
      </div>

      <div id="view-device" hidden>
        <section>
          <div class="row"><a id="back" class="muted" style="cursor:pointer">← devices</a></div>
          <h2 id="device-title"></h2>
          <div class="row">
            <span>connection: <span id="device-connection" class="pill"></span></span>
            <button id="device-connect">connect</button>
            <button id="device-disconnect">disconnect</button>
            <span id="device-result"></span>
          </div>
          <p class="mono muted" id="device-advert"></p>
        </section>
        <section>
          <h2>GATT</h2>
          <p id="gatt-empty" class="muted">The GATT tree appears once the gateway is connected to the device.</p>
          <table id="gatt"><tbody></tbody></table>
        </section>
        <section>
          <h2>Chart <span id="chart-name" class="muted"></span></h2>
          <canvas id="chart" width="600" height="140"></canvas>
        </section>
      </div>

      <div id="view-bridge" hidden>
        <section>
          <h2>Bridge</h2>
          <table><tbody>
            <tr><th>state</th><td id="b-state"></td></tr>
            <tr><th>version</th><td id="b-version"></td></tr>
            <tr><th>healthy</th><td id="b-healthy"></td></tr>
            <tr><th>adapters</th><td id="b-adapters" class="mono"></td></tr>
            <tr><th>health</th><td id="b-health" class="mono"></td></tr>
          </tbody></table>
        </section>
        <section>
          <h2>Scan</h2>
          <div class="row">
            <input id="scan-filter" placeholder="name pattern, e.g. sim-*">
            <button id="scan-start">start scan</button><button id="scan-stop">stop scan</button>
            <span id="scan-result"></span>
          </div>
        </section>
        <section>
          <h2>Events</h2>
          <ul id="events" class="log mono"></ul>
        </section>
      </div>

      <div id="view-peripheral" hidden>
        <section>
          <h2>Peripheral role</h2>
          <table><tbody>
            <tr><th>state</th><td id="p-state"></td></tr>
            <tr><th>subscribers</th><td id="p-subscribers" class="mono"></td></tr>
            <tr><th>text</th><td id="p-text" class="mono"></td></tr>
          </tbody></table>
          <p><textarea id="peripheral-text" rows="4" cols="60" placeholder="the text to serve to every subscribed central"></textarea></p>
          <div class="row"><button id="peripheral-send">serve this text</button><span id="peripheral-result"></span></div>
        </section>
        <section>
          <h2>Transfers</h2>
          <ul id="peripheral-events" class="log mono"></ul>
        </section>
      </div>
    </main>
    <script>
    "use strict";
    const token = new URLSearchParams(location.search).get("token");
    const withToken = (path) => token ? path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : path;
    const $ = (id) => document.getElementById(id);
    const el = (tag, attrs = {}, ...children) => {
      const node = document.createElement(tag);
      for (const [k, v] of Object.entries(attrs)) { if (k === "class") node.className = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v); else node.setAttribute(k, v); }
      for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
      return node;
    };
    const S = { base: "", gw: "", retained: {}, rssi: {}, values: {}, health: null, open: null, chart: { key: null, points: [] } };
    const topic = (...levels) => [S.base, ...levels].join("/");
    const bridge = (...levels) => topic("bridge", S.gw, ...levels);
    const text = (payload) => typeof payload === "string" ? payload : JSON.stringify(payload);

    async function request(requestTopic, payload) {
      const response = await fetch(withToken("/api/request"), { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ topic: requestTopic, payload }) });
      const answer = await response.json();
      if (!response.ok) throw new Error(answer.message || answer.error || response.status);
      return answer.payload;
    }
    function show(target, promise) {
      const mark = (state) => { target.classList.remove("ok", "error", "muted"); target.classList.add(state); };
      target.textContent = "…"; mark("muted");
      promise.then((payload) => {
        const failed = payload && payload.status === "error";
        target.textContent = payload === null ? "sent" : failed ? (payload.error + ": " + (payload.message || "")) : (payload.status || "ok");
        mark(failed ? "error" : "ok");
      }).catch((error) => { target.textContent = String(error.message || error); mark("error"); });
    }

    function devices() {
      const list = S.retained[bridge("devices")];
      return Array.isArray(list) ? list : [];
    }
    function renderDevices() {
      const query = $("filter").value.trim().toLowerCase();
      const rows = devices().filter((d) => !query || [d.name, d.address, d.id].some((v) => v && v.toLowerCase().includes(query)));
      $("device-count").textContent = rows.length + " of " + devices().length;
      const body = $("devices"); body.replaceChildren();
      for (const d of rows) {
        const presence = S.retained[topic(d.id, "presence")];
        const availability = S.retained[topic(d.id, "availability")];
        const state = presence ? presence.state : "";
        body.append(el("tr", { class: "device", "data-id": d.id, onclick: () => openDevice(d.id) },
          el("td", {}, d.name || el("span", { class: "muted" }, "(no name)")),
          el("td", { class: "mono" }, d.address),
          el("td", { class: "rssi" }, S.rssi[d.id] ?? d.rssi ?? ""),
          el("td", {}, el("span", { class: "pill " + (state === "present" ? "good" : state ? "bad" : "") }, state)),
          el("td", {}, availability ? availability.state : d.availability || ""),
          el("td", { class: "connection" }, d.connection + (d.subscriber ? ", subscribed" + (d.subscriber.mtu ? " (MTU " + d.subscriber.mtu + ")" : "") : "")),
          el("td", {}, d.owner || S.gw)));
      }
    }

    function openDevice(id) {
      S.open = id; S.chart = { key: null, points: [] };
      location.hash = "device/" + id;
      switchView("device"); renderDevice();
    }
    function renderDevice() {
      const id = S.open; if (!id) return;
      const d = devices().find((x) => x.id === id) || { id };
      $("device-title").textContent = (d.name || id) + "  " + (d.address || "");
      const connection = S.retained[topic(id, "connection")];
      $("device-connection").textContent = connection ? connection.state : (d.connection || "disconnected");
      const tree = S.retained[topic(id, "gatt")];
      const body = $("gatt").tBodies[0];
      $("gatt-empty").hidden = !!(tree && tree.services && tree.services.length);
      const rows = [];
      for (const service of (tree && tree.services) || []) {
        rows.push(el("tr", {}, el("th", { colspan: 4, class: "mono" }, "service " + service.uuid)));
        for (const c of service.characteristics) {
          const key = service.uuid + "/" + c.uuid;
          const existing = body.querySelector(`tr[data-chr="${key}"]`);
          if (existing) { rows.push(existing); continue; }
          rows.push(characteristicRow(id, service.uuid, c));
        }
      }
      body.replaceChildren(...rows);
      for (const [key, value] of Object.entries(S.values[id] || {})) setValue(id, key, value);
    }
    function characteristicRow(id, svc, c) {
      const key = svc + "/" + c.uuid;
      const flags = c.flags || [];
      const can = (name) => flags.some((f) => f === name || f.endsWith("-" + name));
      const writable = flags.includes("write") || flags.includes("write-without-response");
      const notifies = flags.includes("notify") || flags.includes("indicate");
      const result = el("span", { class: "result" });
      const input = el("input", { class: "write-value", placeholder: "value", size: 14 });
      const format = el("select", { class: "write-format" }, el("option", {}, "hex"), el("option", {}, "utf8"), el("option", {}, "base64"));
      const path = (...more) => topic(id, "gatt", svc, c.uuid, ...more);
      const read = el("button", { class: "read", onclick: () => show(result, request(path("get"), {})) }, "read");
      const write = el("button", { class: "write", onclick: () => show(result, request(path("set"), { [format.value]: input.value })) }, "write");
      const on = el("button", { class: "notify", onclick: () => show(result, request(path("notify"), "on")) }, "notify on");
      const off = el("button", { class: "notify-off", onclick: () => show(result, request(path("notify"), "off")) }, "off");
      read.disabled = !can("read"); write.disabled = input.disabled = format.disabled = !writable; on.disabled = off.disabled = !notifies;
      const chart = el("button", { class: "chart", onclick: () => { S.chart = { key, points: [] }; $("chart-name").textContent = key; drawChart(); } }, "chart");
      return el("tr", { "data-chr": key },
        el("td", { class: "mono" }, c.uuid, el("br"), el("span", { class: "muted" }, flags.join(", "))),
        el("td", { class: "value mono" }, ""),
        el("td", {}, el("div", { class: "row" }, read, input, format, write, on, off, chart)),
        el("td", {}, result));
    }
    function setValue(id, key, value) {
      (S.values[id] ||= {})[key] = value;
      if (S.open !== id) return;
      const row = $("gatt").querySelector(`tr[data-chr="${key}"] .value`);
      if (row) row.textContent = text(value);
      if (S.chart.key === key) { const n = numeric(key, value); if (n !== null) { S.chart.points.push(n); S.chart.points = S.chart.points.slice(-120); drawChart(); } }
    }
    function numeric(key, value) {
      if (typeof value === "number") return value;
      if (value && typeof value === "object") { const n = Object.values(value).find((v) => typeof v === "number"); return n ?? null; }
      if (typeof value === "string" && /^([0-9a-f]{2}){1,4}$/i.test(value)) {
        const bytes = value.match(/../g).map((b) => parseInt(b, 16));
        if (key.endsWith("/2a37")) return bytes[0] & 1 ? bytes[1] | (bytes[2] << 8) : bytes[1];
        return bytes.reduceRight((acc, b) => acc * 256 + b, 0);
      }
      return null;
    }
    function drawChart() {
      const canvas = $("chart"), g = canvas.getContext("2d"), p = S.chart.points;
      g.clearRect(0, 0, canvas.width, canvas.height);
      if (p.length < 2) return;
      const min = Math.min(...p), max = Math.max(...p), span = max - min || 1;
      g.strokeStyle = "#1f6feb"; g.lineWidth = 2; g.beginPath();
      p.forEach((v, i) => { const x = i * (canvas.width - 10) / (p.length - 1) + 5, y = canvas.height - 10 - (v - min) / span * (canvas.height - 20); i ? g.lineTo(x, y) : g.moveTo(x, y); });
      g.stroke(); g.fillStyle = "#6b7585"; g.fillText(String(max), 4, 10); g.fillText(String(min), 4, canvas.height - 2);
    }

    function renderBridge() {
      const state = S.retained[bridge("state")], info = S.retained[bridge("info")] || {};
      const online = state && state.state === "online";
      $("bridge-state").textContent = state ? state.state : "unknown";
      $("bridge-state").className = "pill " + (online ? "good" : "bad");
      $("b-state").textContent = state ? state.state : "";
      $("b-version").textContent = [info.version, info.bluez ? "BlueZ " + info.bluez : ""].filter(Boolean).join(", ");
      $("b-adapters").textContent = text(S.retained[bridge("adapters")] ?? "");
      if (S.health) {
        $("b-healthy").textContent = S.health.healthy ? "yes" : "no: " + (S.health.reasons || []).join("; ");
        $("b-healthy").className = S.health.healthy ? "ok" : "error";
        $("b-health").textContent = text(S.health);
      }
    }
    function addEvent(list, line) {
      const li = el("li", {}, line); list.prepend(li);
      while (list.children.length > 100) list.lastChild.remove();
    }
    function renderPeripheral() {
      const p = S.retained[bridge("peripheral/state")];
      $("p-state").textContent = p ? p.state + (p.reason ? " (" + p.reason + ")" : "") : "not running";
      $("p-subscribers").textContent = p ? (p.subscribers || []).map((s) => (s.address || "?") + (s.mtu ? " mtu " + s.mtu : "")).join(", ") || "none" : "";
      $("p-text").textContent = p ? (p.text_preview ?? "") + (p.text_bytes > (p.text_preview || "").length ? " … (" + p.text_bytes + " bytes)" : "") : "";
    }

    function receive(message) {
      const { topic: t, payload, retain } = message;
      if (retain) { if (payload === "" || payload === null) delete S.retained[t]; else S.retained[t] = payload; }
      const prefix = S.base + "/";
      if (t === bridge("health")) { S.health = payload; renderBridge(); return; }
      if (t === bridge("event")) { addEvent($("events"), (payload.type || "") + " " + text(payload.data ?? "")); renderDevices(); return; }
      if (t === bridge("peripheral/event")) { addEvent($("peripheral-events"), text(payload)); return; }
      if (t.startsWith(bridge())) { renderBridge(); renderPeripheral(); if (t === bridge("devices")) { renderDevices(); if (S.open) renderDevice(); } return; }
      if (!t.startsWith(prefix)) return;
      const levels = t.slice(prefix.length).split("/");
      const id = levels[0];
      if (levels[1] === "advertisement" && payload && payload.rssi !== undefined) {
        S.rssi[id] = payload.rssi;
        const cell = $("devices").querySelector(`tr[data-id="${id}"] .rssi`); if (cell) cell.textContent = payload.rssi;
        if (S.open === id) $("device-advert").textContent = text(payload);
        return;
      }
      if (levels[1] === "gatt" && levels.length === 4) { setValue(id, levels[2] + "/" + levels[3], payload); return; }
      if (levels[1] === "gatt" && levels.length === 5 && levels[4] === "result") {
        const cell = $("gatt").querySelector(`tr[data-chr="${levels[2]}/${levels[3]}"] .result`);
        if (cell && S.open === id && payload.status) { cell.textContent = payload.op + " " + payload.status + (payload.error ? ": " + payload.error : ""); cell.className = "result " + (payload.status === "ok" ? "ok" : "error"); }
        return;
      }
      if (retain) { if (["presence", "availability"].includes(levels[1])) renderDevices(); if (S.open === id) renderDevice(); }
    }

    function switchView(name) {
      for (const view of ["devices", "device", "bridge", "peripheral"]) $("view-" + view).hidden = view !== name;
      document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.view === name || (name === "device" && a.dataset.view === "devices")));
    }
    document.querySelectorAll("nav a").forEach((a) => a.addEventListener("click", () => { S.open = null; location.hash = a.dataset.view; switchView(a.dataset.view); }));
    $("back").addEventListener("click", () => { S.open = null; location.hash = "devices"; switchView("devices"); });
    $("filter").addEventListener("input", renderDevices);
    $("device-connect").addEventListener("click", () => show($("device-result"), request(bridge("request/device/connect"), { device: S.open })));
    $("device-disconnect").addEventListener("click", () => show($("device-result"), request(bridge("request/device/disconnect"), { device: S.open })));
    $("scan-start").addEventListener("click", () => { const name = $("scan-filter").value.trim(); show($("scan-result"), request(bridge("request/scan"), name ? { action: "start", filter: { name } } : { action: "start" })); });
    $("scan-stop").addEventListener("click", () => show($("scan-result"), request(bridge("request/scan"), { action: "stop" })));
    $("peripheral-send").addEventListener("click", () => show($("peripheral-result"), request(bridge("peripheral/text/set"), $("peripheral-text").value)));

    let loaded = false;
    async function snapshot() {
      const state = await (await fetch(withToken("/api/state"))).json();
      S.base = state.base; S.gw = state.gateway; S.retained = state.retained;
      $("gateway").textContent = S.gw;
      if (!loaded) for (const event of state.events) if (event && event.type) addEvent($("events"), event.type + " " + text(event.data ?? ""));
      renderDevices(); renderBridge(); renderPeripheral(); if (S.open) renderDevice();
      if (!loaded) {
        loaded = true;
        const hash = location.hash.slice(1);
        if (hash.startsWith("device/")) openDevice(hash.slice(7)); else if (["bridge", "peripheral"].includes(hash)) switchView(hash);
      }
    }
    async function start() {
      // The stream first, then the snapshot, on every (re)connection: nothing published between
      // the two is lost.
      const stream = new EventSource(withToken("/api/events"));
      stream.onopen = () => {
        snapshot().then(() => { $("stream").textContent = "live"; document.body.dataset.live = "1"; })
          .catch((error) => { $("stream").textContent = "cannot load: " + error; });
      };
      stream.onerror = () => { $("stream").textContent = "reconnecting…"; };
      stream.onmessage = (event) => { if (loaded) receive(JSON.parse(event.data)); };
    }
    start().catch((error) => { $("stream").textContent = "cannot load: " + error; });
    </script>
    </body>
    </html>
    """#
}
