// toolhost dashboard. The page keeps a bounded copy of the project's state,
// filled by the server's snapshot and kept current by its Server-Sent
// Events; EventSource reconnects by itself with Last-Event-ID, and the
// server answers with the changes missed or a new snapshot. Every text is
// put in with textContent, never innerHTML: what agents write can never
// become markup here.
(function () {
  "use strict";

  var MAX_ROWS = 500, MAX_TIMELINE = 300;
  // token is the page's decision token: a page gets one only with a
  // session, which the browser gets by entering the code printed on the
  // dashboard's terminal (signIn); until then Approve and Deny are off.
  var token = document.querySelector('meta[name="toolhost-token"]').content;
  var docsBase = document.querySelector('meta[name="toolhost-docs"]').content;
  var S = {
    agents: [], byShort: {}, audit: [], timeline: [], stats: null, approvals: { pending: [], recent: [] },
    bugs: { columns: [], total: 0 }, docs: [], filter: { agent: "", tool: "", status: "" }, filtered: null,
    tools: {}, outcomes: {}
  };
  var $ = function (id) { return document.getElementById(id); };

  // vis shows what agents and callers wrote as it reads: control,
  // bidirectional and other format characters (U+202E, U+2066–U+2069,
  // U+200F, zero-width characters, U+FEFF …), line separators and lone
  // surrogates become escapes (\u202e), newlines and tabs stay. Every text
  // of the page goes through it (el, txt, titles), as the CLI's go through
  // internal/visible.
  var HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\u2028\u2029]/gu;
  function vis(v) {
    return String(v).replace(HIDDEN, function (c) {
      if (c === "\n" || c === "\t") return c;
      var n = c.codePointAt(0), h = n.toString(16);
      return n < 0x20 || n === 0x7f ? "\\x" + (n < 0x10 ? "0" : "") + h : "\\u" + "0000".slice(h.length) + h;
    });
  }
  function txt(v) { return document.createTextNode(vis(v)); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = vis(text);
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) if (arguments[i]) parent.appendChild(arguments[i]);
    return parent;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }

  function pad(n) { return n < 10 ? "0" + n : String(n); }
  function clock(ts) { var d = new Date(ts); return pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()); }
  function ago(ts) {
    var s = Math.max(0, Math.round((Date.now() - new Date(ts).getTime()) / 1000));
    if (s < 60) return s + " s ago";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    if (s < 86400) return Math.floor(s / 3600) + " h ago";
    return Math.floor(s / 86400) + " d ago";
  }
  function relTime(ts) { var e = el("span", "ago", ago(ts)); e.dataset.ts = ts; e.title = vis(new Date(ts).toLocaleString()); return e; }
  function ms(v) { return v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : Math.round(v).toString(); }

  // ---- connection ----
  var es = null, retry = 1000;
  function setConn(state, text) { var c = $("conn"); c.dataset.state = state; c.textContent = text; }
  function connect() {
    if (es) es.close();
    es = new EventSource("/api/events");
    es.onopen = function () { retry = 1000; setConn("live", "live"); };
    es.onerror = function () {
      if (es.readyState === EventSource.CLOSED) {
        // The server refused the stream (restarted, too many pages):
        // open a new one after a pause; it begins with a snapshot.
        setConn("reconnecting", "reconnecting…");
        setTimeout(connect, retry);
        retry = Math.min(retry * 2, 30000);
      } else {
        setConn("reconnecting", "reconnecting…");
      }
    };
    on("snapshot", snapshot);
    on("audit", function (d) { addRows(d.rows, d.skipped); });
    on("timeline", function (d) { addTimeline(d.entries); });
    on("agent", function (c) { S.byShort[c.short] = c; replaceAgent(c); renderKPIs(); renderFilterOptions(); });
    on("stats", function (s) { S.stats = s; renderStats(); renderHours(); renderKPIs(); });
    on("approvals", function (a) { S.approvals = a; renderApprovals(); renderKPIs(); });
    on("bugs", function (b) { S.bugs = b; renderBoard(); renderKPIs(); });
    on("docs", function (d) { S.docs = d; renderDocs(); });
  }
  function on(name, fn) {
    es.addEventListener(name, function (ev) {
      try { fn(JSON.parse(ev.data)); } catch (err) { console.warn("dashboard: bad " + name + " event", err); }
    });
  }

  function snapshot(s) {
    S.agents = s.agents || []; S.byShort = {};
    S.agents.forEach(function (c) { S.byShort[c.short] = c; });
    S.audit = (s.audit || []).slice(0, MAX_ROWS);
    S.timeline = (s.timeline || []).slice(0, MAX_TIMELINE);
    S.stats = s.stats; S.approvals = s.approvals; S.bugs = s.bugs; S.docs = s.docs || [];
    S.tools = {};
    S.audit.forEach(function (r) { S.tools[r.tool] = true; });
    (S.stats && S.stats.tools || []).forEach(function (t) { S.tools[t.tool] = true; });
    if (s.project) $("project").textContent = vis(s.project);
    renderAgents(); renderApprovals(); renderBoard(); renderDocs(); renderStats(); renderFilterOptions();
    if (S.filtered) runFilter(); else renderRows();
    renderTimeline(); renderKPIs();
  }

  // ---- header ----
  function renderKPIs() {
    var k = clear($("kpis"));
    var serving = S.agents.filter(function (c) { return c.serving && c.serving.length; }).length;
    var pending = (S.approvals.pending || []).length;
    var open = 0;
    (S.bugs.columns || []).forEach(function (c) { if (c.status !== "closed" && c.status !== "wontfix" && c.status !== "verified") open += c.count; });
    var st = S.stats || { calls: 0, refusals: 0, failures: 0 };
    function kpi(n, label, cls, target) {
      var e = add(el("span", "kpi" + (cls ? " " + cls : "")), el("b", "", n), txt(label));
      if (target) { e.style.cursor = "pointer"; e.onclick = function () { $(target).scrollIntoView({ behavior: "smooth" }); }; }
      return add(k, e);
    }
    kpi(serving + "/" + S.agents.length, "serving", "", "agents");
    kpi(pending, pending === 1 ? "approval waiting" : "approvals waiting", pending ? "alert" : "", "approvals");
    kpi(open, "open bugs", "", "bugs");
    kpi(st.calls, "calls/h", "", "audit");
    kpi(st.refusals, "refused/h", st.refusals ? "bad" : "", "audit");
    kpi(st.failures, "failed/h", st.failures ? "bad" : "", "audit");
  }

  // ---- agents ----
  function renderAgents() {
    var box = clear($("cards"));
    S.agents.forEach(function (c) { box.appendChild(agentCard(c)); });
  }
  function replaceAgent(c) {
    var i = S.agents.findIndex(function (a) { return a.short === c.short; });
    if (i < 0) { S.agents.push(c); renderAgents(); return; }
    S.agents[i] = c;
    var old = document.querySelector('.card[data-agent="' + CSS.escape(c.short) + '"]');
    if (old) old.replaceWith(agentCard(c)); else renderAgents();
  }
  function agentCard(c) {
    var card = el("article", "card");
    card.dataset.agent = c.short;
    var on = c.serving && c.serving.length;
    var gone = !on && c.last_serve && c.last_serve.state === "gone";
    add(card, add(el("div", "head"), el("span", "dot" + (on ? " on" : gone ? " gone" : "")), el("span", "name", c.short),
      el("span", "model", (c.model || "") + (c.loop ? " · " + c.loop : ""))));
    var sv;
    if (on) {
      sv = el("div", "serve on", "serving · " + c.serving.map(function (s) {
        return "pid " + s.pid + (s.unit_id ? " (" + s.unit_id + ")" : "");
      }).join(", "));
      add(sv, txt(" · since "), relTime(c.serving[0].started_at));
    } else if (c.last_serve) {
      sv = el("div", "serve" + (gone ? " gone" : ""), gone ? "no serve: pid " + c.last_serve.pid + " is gone without ending (killed?)" :
        "no serve running · last ended ");
      if (!gone && c.last_serve.ended_at) add(sv, relTime(c.last_serve.ended_at));
    } else {
      sv = el("div", "serve", "no serve running");
    }
    card.appendChild(sv);
    if (c.runtime) {
      var rt = el("div", "rt");
      if (c.runtime.phase) add(rt, el("span", "phase", c.runtime.phase + " "));
      if (c.runtime.status) add(rt, el("span", "", "[" + c.runtime.status + "] "));
      add(rt, txt(c.runtime.message || ""));
      rt.title = vis((c.runtime.message || "") + " — updated " + new Date(c.runtime.updated_at).toLocaleString());
      card.appendChild(rt);
    }
    if (c.todo) {
      var t = c.todo;
      var bar = add(el("div", "progress"), el("div"));
      bar.firstChild.style.width = Math.max(0, Math.min(100, t.progress_pct)) + "%";
      bar.title = vis(t.done + " of " + t.total + " steps done");
      add(card, add(el("div", "step"), el("b", "", t.progress_pct + "% "), txt(t.done + "/" + t.total + " steps")), bar);
      if (t.current) add(card, add(el("div", "step"), el("span", "id", t.current.id + " "), txt(t.current.description)));
      (t.blocked || []).slice(0, 2).forEach(function (b) {
        add(card, add(el("div", "step blocked"), el("span", "id", b.id + " blocked "), txt(b.note || b.description)));
      });
      if (t.blocked && t.blocked.length > 2) add(card, el("div", "step blocked", "+" + (t.blocked.length - 2) + " more blocked"));
    } else {
      card.appendChild(el("div", "step muted", "no todolist yet"));
    }
    var last = el("div", "last");
    if (c.last_call) {
      add(last, txt("last call "), el("b", "", c.last_call.tool), txt(" "),
        el("span", "status " + c.last_call.status, c.last_call.status + (c.last_call.error_kind ? "/" + c.last_call.error_kind : "")),
        txt(" · "), relTime(c.last_call.ts));
    } else {
      last.textContent = "no call seen";
    }
    card.appendChild(last);
    var hour = el("div", "hour");
    hour.dataset.agent = c.short;
    fillHour(hour, c.short);
    card.appendChild(hour);
    if (c.problem) card.appendChild(el("div", "problem", c.problem));
    card.onclick = function () { openAgent(c.short); };
    return card;
  }
  function fillHour(e, short) {
    var h = (S.stats && S.stats.agents && S.stats.agents[short]) || { calls: 0, refusals: 0, failures: 0 };
    clear(e);
    add(e, el("span", "", h.calls + " calls/h"), el("span", h.refusals ? "ref" : "", h.refusals + " refused"),
      el("span", h.failures ? "ref" : "", h.failures + " failed"));
    var c = S.byShort[short];
    if (c) add(e, el("span", "muted", c.tools.length + " tools"));
  }
  function renderHours() {
    document.querySelectorAll(".hour[data-agent]").forEach(function (e) { fillHour(e, e.dataset.agent); });
  }
  function openAgent(short) {
    var c = S.byShort[short];
    if (!c) return;
    var body = drawer(c.name);
    if (c.runtime) add(body, el("h4", "", "Runtime"), el("pre", "", JSON.stringify(c.runtime, null, 2)));
    if (c.todo) {
      add(body, el("h4", "", "Todolist · " + c.todo.progress_pct + "%"));
      var ol = el("ol", "");
      c.todo.steps.forEach(function (s) {
        add(ol, add(el("li", s.status === "blocked" ? "blocked" : ""), el("span", "id mono", s.id + " "),
          el("b", "", "[" + s.status + "] "), txt(s.description + (s.note ? " — " + s.note : ""))));
      });
      body.appendChild(ol);
    }
    add(body, el("h4", "", "Servers"));
    if (c.serving.length) c.serving.forEach(function (s) { body.appendChild(el("div", "", "pid " + s.pid + " · session " + s.session + (s.unit_id ? " · unit " + s.unit_id : "") + " · since " + new Date(s.started_at).toLocaleString())); });
    else body.appendChild(el("div", "muted", "none running"));
    add(body, el("h4", "", "Tools it may call (" + c.tools.length + (c.hidden_tools ? ", " + c.hidden_tools + " hidden by the policy" : "") + ")"));
    var ul = el("ul", "tools-list");
    c.tools.forEach(function (t) { ul.appendChild(el("li", "", t)); });
    body.appendChild(ul);
  }

  // ---- approvals ----
  function renderApprovals() {
    var list = clear($("approval-list"));
    var p = S.approvals.pending || [];
    $("approvals-count").textContent = p.length ? "(" + p.length + " waiting)" : "";
    if (S.approvals.problem) list.appendChild(el("div", "problem", S.approvals.problem));
    if (!p.length) list.appendChild(el("div", "empty", "no call is waiting for a human"));
    p.forEach(function (a) { list.appendChild(approvalCard(a)); });
    var r = S.approvals.recent || [];
    $("recent-count").textContent = r.length ? "(" + r.length + ")" : "";
    var ul = clear($("recent-list"));
    r.forEach(function (a) {
      var when = a.used_at || a.decided_at || a.created_at;
      var li = el("li", "");
      li.dataset.id = a.id;
      add(ul, add(li, el("b", "", a.status + " "), txt(a.tool + " · " + a.agent + " · " + clock(when) +
        (a.used_by ? " · used by call " + a.used_by : ""))));
    });
  }
  function approvalCard(a) {
    var box = el("div", "approval");
    box.dataset.id = a.id;
    add(box, el("h3", "", a.agent + " wants to run " + a.tool),
      add(el("div", "meta"), txt(a.id + " · session " + a.session + " · asked "), relTime(a.created_at),
        txt(" · expires " + clock(a.expires_at))));
    add(box, el("pre", "", JSON.stringify(a.arguments, null, 2)));
    if (a.diff) box.appendChild(diffView(a.diff));
    var approve = el("button", "", "Approve"), deny = el("button", "danger", "Deny");
    approve.dataset.action = "approve"; deny.dataset.action = "deny";
    if (!token) { approve.disabled = deny.disabled = true; approve.title = deny.title = "sign in with the code first"; }
    var outcome = el("div", "outcome");
    var done = S.outcomes[a.id];
    if (done) { approve.disabled = deny.disabled = true; outcome.textContent = vis(done.text); if (done.err) outcome.className = "outcome err"; box.className = "approval decided"; }
    function decide(action) {
      approve.disabled = deny.disabled = true;
      fetch("/api/confirmations/" + encodeURIComponent(a.id) + "/" + action, {
        method: "POST", headers: { "Content-Type": "application/json", "X-Toolhost-Page-Token": token }, body: "{}", credentials: "same-origin"
      }).then(function (res) {
        return res.json().then(function (j) { return { ok: res.ok, status: res.status, j: j }; });
      }).then(function (r) {
        var text, err = !r.ok;
        if (r.ok) text = (action === "approve" ? "Approved: " : "Denied: ") + r.j.message;
        else if (r.status === 409) text = "This confirmation is no longer pending (" + r.j.error + "); the agent must call again.";
        else if (r.status === 403 || r.status === 401) text = "Refused (" + r.j.error + ").";
        else text = "Failed: " + (r.j.error || r.status);
        S.outcomes[a.id] = { text: text, err: err };
        outcome.textContent = vis(text);
        outcome.className = "outcome" + (err ? " err" : "");
        box.className = "approval decided";
        if (err && r.status !== 409) { approve.disabled = deny.disabled = false; delete S.outcomes[a.id]; }
      }).catch(function (e) {
        outcome.textContent = vis("Failed: " + e); outcome.className = "outcome err";
        approve.disabled = deny.disabled = false;
      });
    }
    approve.onclick = function () { decide("approve"); };
    deny.onclick = function () { decide("deny"); };
    add(box, add(el("div", "buttons"), approve, deny), outcome);
    return box;
  }
  function diffView(d) {
    var wrap = el("div", "");
    add(wrap, el("div", "meta", "what it would change: " + d.path + (d.new_file ? " (new file)" : "") + (d.note ? " — " + d.note : "")));
    if (d.unified) {
      var pre = el("pre", "diff");
      d.unified.split("\n").forEach(function (line) {
        var cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "";
        add(pre, el("span", cls, line + "\n"));
      });
      wrap.appendChild(pre);
    }
    return wrap;
  }

  // ---- bugs ----
  function renderBoard() {
    var b = clear($("board"));
    $("bugs-count").textContent = S.bugs.total ? "(" + S.bugs.total + ")" : "";
    if (S.bugs.problem) b.appendChild(el("div", "problem", S.bugs.problem));
    (S.bugs.columns || []).forEach(function (col) {
      var c = add(el("div", "column" + (col.count ? "" : " none")), el("h3", "", col.status + " · " + col.count));
      c.dataset.status = col.status;
      col.bugs.forEach(function (bug) {
        var card = el("div", "bug " + (bug.severity || ""));
        card.dataset.bug = bug.id;
        add(card, add(el("div", ""), el("span", "bid", bug.id + " "), el("span", "cat", bug.severity || "")), el("div", "title", bug.title || bug.unreadable));
        var meta = [];
        if (bug.unit_id) meta.push(bug.unit_id);
        if (bug.category) meta.push(bug.category + (bug.confidence ? " " + Math.round(bug.confidence * 100) + "%" : ""));
        meta.push(bug.evidence + " evidence");
        if (bug.similar && bug.similar.length) meta.push("similar " + bug.similar.map(function (s) { return s.id; }).join(", "));
        add(card, el("div", "cat", meta.join(" · ")));
        card.onclick = function () { openBug(bug.id); };
        c.appendChild(card);
      });
      if (col.count > col.bugs.length) c.appendChild(el("div", "muted", "+" + (col.count - col.bugs.length) + " more"));
      b.appendChild(c);
    });
  }
  function getJSON(url) {
    return fetch(url, { credentials: "same-origin" }).then(function (r) {
      return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || r.status); return j; });
    });
  }
  function openBug(id) {
    var body = drawer(id);
    body.appendChild(el("div", "muted", "loading…"));
    getJSON("/api/bugs/" + encodeURIComponent(id)).then(function (j) {
      clear(body);
      var bug = j.bug, cites = [];
      (bug.evidence || []).forEach(function (e) {
        if (e.log_file) cites.push({ path: e.log_file, line: e.log_line || 0 });
        if (e.report) cites.push({ path: e.report, line: 0 });
        if (e.run_id) cites.push({ path: "integration/runs/" + e.run_id + ".json", line: 0 });
        if (e.test_file) cites.push({ path: e.test_file, line: 0 });
      });
      ((j.evidence && j.evidence.verified) || []).forEach(function (v) { if (v.path) cites.push({ path: v.path, line: v.line || 0 }); });
      var seen = {};
      cites = cites.filter(function (c) { var k = c.path + ":" + c.line; if (seen[k]) return false; seen[k] = true; return true; });
      add(body, el("h4", "", bug.title));
      if (j.triage) add(body, el("div", "", "triage: " + (j.triage.category || "—") + (j.triage.confidence ? " (" + Math.round(j.triage.confidence * 100) + "%)" : "") +
        (j.triage.similar && j.triage.similar.length ? " · similar " + j.triage.similar.map(function (s) { return s.bug_id + " (" + s.score.toFixed(2) + ")"; }).join(", ") : "")));
      add(body, el("h4", "", "Cited files"));
      var cbox = el("div", "cites");
      if (!cites.length) cbox.appendChild(el("span", "muted", "none"));
      var view = el("div", "");
      cites.forEach(function (c) {
        var btn = el("button", "secondary", c.path + (c.line ? ":" + c.line : ""));
        btn.onclick = function () { showFile(view, c.path, c.line); };
        cbox.appendChild(btn);
      });
      add(body, cbox, view, el("h4", "", "Bug"), el("pre", "", JSON.stringify(bug, null, 2)));
      if (j.evidence) add(body, el("h4", "", "Evidence checked by the triager"), el("pre", "", JSON.stringify(j.evidence, null, 2)));
    }).catch(function (e) { clear(body).appendChild(el("div", "problem", String(e.message || e))); });
  }
  function showFile(box, path, line) {
    clear(box).appendChild(el("div", "muted", "loading " + path + "…"));
    getJSON("/api/file?path=" + encodeURIComponent(path) + (line ? "&line=" + line : "")).then(function (f) {
      clear(box);
      add(box, el("div", "meta", f.path + " · " + f.total_lines + " lines" + (f.truncated ? " (part shown)" : "")));
      var lines = el("div", "lines"), hit = null;
      f.lines.forEach(function (t, i) {
        var n = f.first_line + i;
        var row = add(el("div", n === f.line ? "hit" : ""), el("span", "ln", n), txt(t));
        if (n === f.line) hit = row;
        lines.appendChild(row);
      });
      box.appendChild(lines);
      if (hit) hit.scrollIntoView({ block: "center" });
    }).catch(function (e) { clear(box).appendChild(el("div", "problem", String(e.message || e))); });
  }

  // ---- documents ----
  function renderDocs() {
    var ul = clear($("doc-list"));
    if (!S.docs.length) ul.appendChild(el("li", "empty", "no PRD, SDD or contract yet"));
    S.docs.forEach(function (d) {
      var a = el("a", "", d.title);
      a.href = docsBase + d.path.split("/").map(encodeURIComponent).join("/");
      a.target = "_blank"; a.rel = "noopener noreferrer";
      add(ul, add(el("li", ""), a, el("span", "kind", d.kind === "site" ? d.path : "contract")));
    });
  }

  // ---- audit ----
  function matches(r) {
    var f = S.filter;
    return (!f.agent || r.agent === f.agent) && (!f.tool || r.tool === f.tool) && (!f.status || r.status === f.status);
  }
  function filterOn() { return S.filter.agent || S.filter.tool || S.filter.status; }
  function rowEl(r, fresh) {
    var tr = el("tr", r.status + (fresh ? " fresh" : ""));
    tr.dataset.call = r.call_id;
    var detail = r.status === "ok" || r.status === "ok_false" ? r.args : (r.error_kind ? "[" + r.error_kind + "] " : "") + (r.error || r.args);
    if (r.pin) detail = "definition " + r.pin.action + (r.pin.change ? " (" + r.pin.change + ")" : "") + " " + r.pin.hash;
    var td = el("td", "detail");
    // The rule that decided a refusal (or a confirmation) is its reason.
    if (r.rule) add(td, el("span", "rule", "rule " + r.rule), txt(" "));
    td.appendChild(txt(detail));
    td.title = vis((r.rule ? "decided by policy rule " + r.rule + "\n" : "") + (r.error ? r.error + "\n\n" : "") + "arguments: " + r.args + "\ncall " + r.call_id + (r.unit_id ? " · unit " + r.unit_id : "") +
      (r.session_id ? " · session " + r.session_id : "") +
      (r.client_session_id ? "\nClaude session " + r.client_session_id + (r.client_agent_id ? " · subagent " + r.client_agent_id : "") : "") +
      (r.sandbox ? "\nsandbox: " + r.sandbox : ""));
    add(tr, el("td", "t", clock(r.ts)), el("td", "", r.agent), el("td", "", r.tool),
      el("td", "status " + r.status, r.status + (r.error_kind && r.status !== "ok" ? "/" + r.error_kind : "")), el("td", "ms", ms(r.duration_ms)), td);
    return tr;
  }
  function shownRows() { return S.filtered ? S.filtered : S.audit; }
  function renderRows() {
    var body = clear($("audit-body"));
    var rows = shownRows();
    rows.forEach(function (r) { body.appendChild(rowEl(r, false)); });
    if (!rows.length) { var tr = el("tr", ""); var td = el("td", "empty", filterOn() ? "no row matches" : "no call audited yet"); td.colSpan = 6; body.appendChild(add(tr, td)); }
  }
  function addRows(rows, skipped) {
    if (!rows || !rows.length) return;
    var body = $("audit-body");
    if (body.firstChild && body.firstChild.querySelector(".empty")) clear(body);
    rows.forEach(function (r) {
      S.tools[r.tool] = true;
      S.audit.unshift(r);
      if (S.filtered) { if (matches(r)) S.filtered.unshift(r); else return; }
      body.insertBefore(rowEl(r, true), body.firstChild);
    });
    if (S.audit.length > MAX_ROWS) S.audit.length = MAX_ROWS;
    if (S.filtered && S.filtered.length > MAX_ROWS) S.filtered.length = MAX_ROWS;
    while (body.children.length > MAX_ROWS) body.removeChild(body.lastChild);
    if (skipped) $("filter-note").textContent = skipped + " calls of a burst were not shown one by one";
    renderFilterOptions();
  }
  function renderFilterOptions() {
    fillSelect($("f-agent"), S.agents.map(function (c) { return c.short; }));
    fillSelect($("f-tool"), Object.keys(S.tools).sort());
  }
  function fillSelect(sel, values) {
    var have = Array.prototype.slice.call(sel.options, 1).map(function (o) { return o.value; });
    if (have.join("\n") === values.join("\n")) return;
    var cur = sel.value;
    while (sel.options.length > 1) sel.remove(1);
    values.forEach(function (v) { var o = el("option", "", v); o.value = v; sel.appendChild(o); });
    sel.value = values.indexOf(cur) >= 0 ? cur : "";
  }
  var filterSeq = 0;
  function runFilter() {
    S.filter = { agent: $("f-agent").value, tool: $("f-tool").value, status: $("f-status").value };
    var note = $("filter-note");
    if (!filterOn()) { S.filtered = null; note.textContent = ""; renderRows(); return; }
    S.filtered = S.audit.filter(matches);
    renderRows();
    var seq = ++filterSeq;
    note.textContent = "searching the trail…";
    var q = "agent=" + encodeURIComponent(S.filter.agent) + "&tool=" + encodeURIComponent(S.filter.tool) + "&status=" + encodeURIComponent(S.filter.status);
    getJSON("/api/audit?" + q).then(function (j) {
      if (seq !== filterSeq) return;
      var have = {};
      S.filtered.forEach(function (r) { have[r.call_id + r.status + r.ts] = true; });
      j.rows.forEach(function (r) { if (!have[r.call_id + r.status + r.ts]) S.filtered.push(r); });
      S.filtered.sort(function (a, b) { return a.ts < b.ts ? 1 : a.ts > b.ts ? -1 : 0; });
      if (S.filtered.length > MAX_ROWS) S.filtered.length = MAX_ROWS;
      note.textContent = S.filtered.length + " matching rows" + (j.complete ? "" : " (newest " + j.scanned + " rows searched)");
      renderRows();
    }).catch(function (e) { if (seq === filterSeq) note.textContent = vis("search failed: " + (e.message || e)); });
  }
  function renderStats() {
    var body = clear($("stats-body"));
    var st = S.stats;
    $("stats-note").textContent = st ? "(" + st.calls + " calls" + (st.capped ? ", the newest only" : "") + ")" : "";
    if (!st || !st.tools.length) { var tr = el("tr", ""); var td = el("td", "empty", "no call in the last hour"); td.colSpan = 8; body.appendChild(add(tr, td)); return; }
    st.tools.forEach(function (t) {
      var tr = el("tr", t.rejected ? "rejected" : "");
      add(tr, el("td", "", t.tool), el("td", "", t.count), el("td", "", t.ok), el("td", "", t.ok_false), el("td", "", t.rejected),
        el("td", "", t.failed), el("td", "", (t.approx ? "≈" : "") + ms(t.p50_ms)), el("td", "", (t.approx ? "≈" : "") + ms(t.p99_ms)));
      tr.onclick = function () { $("f-tool").value = t.tool; runFilter(); };
      body.appendChild(tr);
    });
  }

  // ---- timeline ----
  function tlItem(e) {
    var li = el("li", "");
    add(li, el("span", "when", clock(e.ts)), el("span", "who", e.agent + (e.unit_id ? "/" + e.unit_id : "")), el("span", "kind", e.kind),
      txt(e.message));
    if (e.data) li.title = vis(e.data);
    return li;
  }
  function renderTimeline() {
    var ol = clear($("timeline-list"));
    if (!S.timeline.length) ol.appendChild(el("li", "empty", "the timeline is empty"));
    S.timeline.forEach(function (e) { ol.appendChild(tlItem(e)); });
  }
  function addTimeline(entries) {
    var ol = $("timeline-list");
    if (ol.firstChild && ol.firstChild.classList.contains("empty")) clear(ol);
    (entries || []).forEach(function (e) { S.timeline.unshift(e); ol.insertBefore(tlItem(e), ol.firstChild); });
    if (S.timeline.length > MAX_TIMELINE) S.timeline.length = MAX_TIMELINE;
    while (ol.children.length > MAX_TIMELINE) ol.removeChild(ol.lastChild);
  }

  // ---- drawer ----
  function drawer(title) {
    $("drawer-title").textContent = vis(title);
    $("drawer").hidden = false;
    return clear($("drawer-body"));
  }
  $("drawer-close").onclick = function () { $("drawer").hidden = true; };
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") $("drawer").hidden = true; });

  ["f-agent", "f-tool", "f-status"].forEach(function (id) { $(id).onchange = runFilter; });
  $("f-clear").onclick = function () { $("f-agent").value = $("f-tool").value = $("f-status").value = ""; runFilter(); };
  setInterval(function () {
    document.querySelectorAll(".ago[data-ts]").forEach(function (e) { e.textContent = ago(e.dataset.ts); });
  }, 1000);

  // ---- sign-in ----
  function signIn(e) {
    e.preventDefault();
    var note = $("signin-note");
    $("signin-go").disabled = true;
    fetch("/api/session", {
      method: "POST", headers: { "Content-Type": "application/json" }, credentials: "same-origin",
      body: JSON.stringify({ code: $("signin-code").value })
    }).then(function (res) {
      return res.json().then(function (j) { return { ok: res.ok, j: j }; });
    }).then(function (r) {
      $("signin-go").disabled = false;
      if (!r.ok) { note.textContent = vis(r.j.error || "refused"); note.className = "signin-note err"; return; }
      token = r.j.token;
      docsBase = r.j.docs;
      if (r.j.project) $("project").textContent = vis(r.j.project);
      $("signin").hidden = true;
      $("signin-code").value = "";
      renderApprovals();
      renderDocs();
      if (!es || es.readyState !== EventSource.OPEN) connect();
    }).catch(function (err) { $("signin-go").disabled = false; note.textContent = vis("sign-in failed: " + err); note.className = "signin-note err"; });
  }
  $("signin").onsubmit = signIn;
  if (!token) $("signin").hidden = false;
  connect();
})();
