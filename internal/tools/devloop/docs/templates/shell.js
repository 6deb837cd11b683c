// toolhost document site shell: builds the sidebar from the site data and
// runs the client-side search. The data comes from site-data.js and
// search-index.js (globals), because Chromium refuses fetch() of local JSON
// from file:// pages; under a static server the JSON files are used if the
// globals are missing. Everything is inserted with textContent, never
// innerHTML, so page text can never become markup.
(function () {
  "use strict";
  var body = document.body;
  var root = body.getAttribute("data-root") || "";
  var current = body.getAttribute("data-page") || "";

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function load(globalName, file) {
    if (window[globalName]) return Promise.resolve(window[globalName]);
    if (!window.fetch || location.protocol === "file:") return Promise.resolve(null);
    return fetch(root + file).then(function (r) { return r.ok ? r.json() : null; })
      .catch(function () { return null; });
  }

  function buildSidebar(site) {
    var toc = document.getElementById("toc");
    if (!toc || !site) return;
    function list(title, pages, numbered) {
      if (!pages || !pages.length) return;
      toc.appendChild(el("h3", "", title));
      var ol = el(numbered ? "ol" : "ul");
      pages.forEach(function (p, i) {
        var li = el("li");
        var a = el("a");
        a.href = root + p.page;
        if (numbered) a.appendChild(el("span", "num", String(i + 1).padStart(2, "0")));
        a.appendChild(document.createTextNode(p.title));
        if (p.page === current) { a.className = "current"; a.setAttribute("aria-current", "page"); }
        li.appendChild(a);
        ol.appendChild(li);
      });
      toc.appendChild(ol);
    }
    list("Chapters", site.chapters, true);
    list("Prototypes", site.prototypes, false);
  }

  function terms(q) {
    return q.toLowerCase().split(/\s+/).filter(function (t) { return t.length > 0; });
  }

  // snippet returns the text around the first hit, at most ~160 characters.
  function snippet(text, ts) {
    var low = text.toLowerCase();
    var at = -1;
    ts.forEach(function (t) { var i = low.indexOf(t); if (i >= 0 && (at < 0 || i < at)) at = i; });
    var start = Math.max(0, at - 60);
    var s = text.slice(start, start + 160);
    return (start > 0 ? "…" : "") + s + (start + 160 < text.length ? "…" : "");
  }

  // highlight appends text to parent with every term wrapped in <mark>.
  function highlight(parent, text, ts) {
    var low = text.toLowerCase();
    var pos = 0;
    while (pos < text.length) {
      var best = -1, len = 0;
      ts.forEach(function (t) {
        var i = low.indexOf(t, pos);
        if (i >= 0 && (best < 0 || i < best)) { best = i; len = t.length; }
      });
      if (best < 0) break;
      parent.appendChild(document.createTextNode(text.slice(pos, best)));
      parent.appendChild(el("mark", "", text.slice(best, best + len)));
      pos = best + len;
    }
    parent.appendChild(document.createTextNode(text.slice(pos)));
  }

  function setupSearch(index, site) {
    var input = document.getElementById("search");
    var results = document.getElementById("results");
    var count = document.getElementById("result-count");
    if (!input || !results) return;
    var entries = (index && index.entries) || [];
    var titles = {};
    if (site) (site.chapters || []).concat(site.prototypes || []).forEach(function (p) { titles[p.page] = p.title; });
    function run() {
      var ts = terms(input.value);
      results.textContent = "";
      if (!ts.length) { count.textContent = ""; return; }
      var hits = entries.filter(function (e) {
        var hay = ((e.heading || "") + "\n" + (e.text || "")).toLowerCase();
        return ts.every(function (t) { return hay.indexOf(t) >= 0; });
      });
      count.textContent = hits.length === 1 ? "1 result" : hits.length + " results";
      hits.slice(0, 30).forEach(function (e) {
        var li = el("li", "hit");
        var a = el("a", "hit-title");
        a.href = root + e.page + (e.unit ? "#" + encodeURIComponent(e.unit) : "");
        highlight(a, e.heading || titles[e.page] || e.page, ts);
        li.appendChild(a);
        li.appendChild(el("span", "hit-page", titles[e.page] || e.page));
        var sn = el("span", "hit-snippet");
        highlight(sn, snippet(e.text || "", ts), ts);
        li.appendChild(sn);
        results.appendChild(li);
      });
    }
    input.addEventListener("input", run);
    if (input.form) input.form.addEventListener("submit", function (ev) { ev.preventDefault(); run(); });
    var q = new URLSearchParams(location.search).get("q");
    if (q) { input.value = q; }
    run();
  }

  Promise.all([load("TOOLHOST_SITE", "site.json"), load("TOOLHOST_SEARCH", "search-index.json")])
    .then(function (data) {
      buildSidebar(data[0]);
      setupSearch(data[1], data[0]);
    });
})();
