/* toolproof report: filters and the step-by-step trace view.
   Every value from the report is set with textContent (never as markup). */
(function () {
  "use strict";
  var DATA = null;
  function data() {
    if (DATA === null) {
      var node = document.getElementById("tp-data");
      DATA = node ? JSON.parse(node.textContent) : {};
    }
    return DATA;
  }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var kid = arguments[i];
      if (kid === null || kid === undefined || kid === false) continue;
      parent.appendChild(typeof kid === "string" ? document.createTextNode(kid) : kid);
    }
    return parent;
  }
  var KINDS = { pass: 1, fail: 1, error: 1, skip: 1, skipped: 1, inconclusive: 1, ok: 1, warn: 1,
                flaky: 1, mocked: 1, real: 1, not_run: 1 };
  function badge(kind, text) {
    var k = KINDS[kind] ? kind : "other";
    return el("span", "badge b-" + k, text === undefined ? kind : text);
  }
  function pre(text, cls) { return el("pre", cls || "text", text === null || text === undefined ? "" : text); }
  function asJson(value) {
    try { return JSON.stringify(value, null, 2); } catch (err) { return String(value); }
  }
  function fold(title, content, open) {
    var d = el("details", "fold");
    if (open) d.open = true;
    return add(d, el("summary", null, title), content);
  }
  function ms(v) { return typeof v === "number" ? (v < 1000 ? v.toFixed(1) + " ms" : (v / 1000).toFixed(2) + " s") : "—"; }
  function tokens(u) {
    if (!u) return "";
    var s = (u.input_tokens || 0) + " in · " + (u.output_tokens || 0) + " out";
    if (u.cached_tokens) s += " · " + u.cached_tokens + " cached";
    if (u.reasoning_tokens) s += " · " + u.reasoning_tokens + " reasoning";
    if (u.estimated) s += " (estimated)";
    return s;
  }
  function item(role, label) {
    var li = el("li", "msg r-" + (role === "user" || role === "assistant" || role === "tool" || role === "system" ? role : "other"));
    add(li, el("div", "role", label || role));
    return li;
  }

  function callBox(call, result) {
    var box = el("div", "call");
    var head = el("div", "call-head");
    add(head, el("span", "muted", "→ call "), el("code", "tool", call.name), " ",
        el("span", "muted", "id " + (call.id || "—")));
    box.appendChild(head);
    box.appendChild(pre(asJson(call.arguments), "json"));
    if (call.raw_arguments) box.appendChild(fold("raw arguments", pre(call.raw_arguments)));
    if (call.arguments_error) box.appendChild(el("p", "err", "arguments error: " + call.arguments_error));
    if (result) box.appendChild(resultBox(result));
    else box.appendChild(el("p", "muted", "no result (the call was not run)"));
    return box;
  }
  function resultBox(r) {
    var box = el("div", "result s-" + (r.status === "ok" ? "ok" : "bad"));
    var head = el("div", "call-head");
    add(head, el("span", "muted", "← result "), badge(r.status === "ok" ? "ok" : "fail", r.status), " ",
        badge(r.mocked ? "mocked" : "real", r.mocked ? "mocked" : "real"), " ",
        r.error_type ? el("code", "etype", r.error_type) : null, r.error_type ? " " : null,
        el("span", "muted", ms(r.duration_ms) + " · call id " + (r.call_id || "—")));
    box.appendChild(head);
    box.appendChild(pre(r.content));
    return box;
  }
  function message(m, label) {
    var li = item(m.role, label + ": " + m.role + (m.name ? " " + m.name : ""));
    if (m.content !== null && m.content !== undefined) li.appendChild(pre(m.content));
    (m.tool_calls || []).forEach(function (c) { li.appendChild(callBox(c, null)); });
    if (m.status) li.appendChild(badge(m.status === "ok" ? "ok" : "fail", m.status));
    return li;
  }
  function step(st) {
    var li = item("assistant", "step " + st.index);
    var meta = [st.model_name || "", "latency " + ms(st.latency_ms), "at +" + ms(st.offset_ms),
                tokens(st.usage), "finish: " + (st.finish_reason || "—")];
    if (st.cost !== null && st.cost !== undefined) meta.push("$" + Number(st.cost).toFixed(5));
    if (st.request) {
      meta.push(st.request.message_count + " messages sent");
      if (st.request.trimmed_messages) meta.push(st.request.trimmed_messages + " trimmed");
      if (st.request.summarized) meta.push("summarized");
    }
    li.appendChild(el("div", "step-meta muted", meta.filter(Boolean).join(" · ")));
    var resp = st.response || {};
    if (resp.reasoning) li.appendChild(fold("reasoning", pre(resp.reasoning)));
    if (resp.content !== null && resp.content !== undefined && resp.content !== "") li.appendChild(pre(resp.content));
    var results = {};
    (st.tool_results || []).forEach(function (r) { results[r.call_id] = r; });
    var used = {};
    (resp.tool_calls || []).forEach(function (c) {
      var r = Object.prototype.hasOwnProperty.call(results, c.id) ? results[c.id] : null;
      if (r) used[c.id] = true;
      li.appendChild(callBox(c, r));
    });
    (st.tool_results || []).forEach(function (r) { if (!used[r.call_id]) li.appendChild(resultBox(r)); });
    (st.parse_errors || []).forEach(function (p) { li.appendChild(el("p", "err", "parse error: " + p)); });
    return li;
  }
  function renderTrace(tr, title) {
    var box = el("div", "trace");
    var head = el("div", "trace-head");
    add(head, title ? el("strong", null, title + " ") : null,
        badge(tr.stop_reason === "final" ? "pass" : "fail", "stop: " + tr.stop_reason), " ",
        el("span", "muted", [tr.model, "tools " + tr.tool_mode, ms(tr.duration_ms), tokens(tr.usage),
                             "trace " + tr.id].join(" · ")));
    box.appendChild(head);
    if (tr.stop_detail) box.appendChild(el("p", "muted", "stop detail: " + tr.stop_detail));
    if (tr.error) {
      box.appendChild(el("p", "err", "error: " + tr.error.type + ": " + tr.error.message +
                         (tr.error.tool_name ? " (tool " + tr.error.tool_name + ")" : "")));
    }
    var ol = el("ol", "steps");
    if (tr.system_prompt) {
      var li = item("system", "system prompt");
      li.appendChild(fold(tr.system_prompt.length + " characters" +
                          (tr.system_prompt_hash ? " · " + tr.system_prompt_hash : ""), pre(tr.system_prompt)));
      ol.appendChild(li);
    }
    if (!tr.tools && typeof tr.tools_ref === "number") tr.tools = (data().tool_sets || [])[tr.tools_ref];
    if (tr.tools && tr.tools.length) {
      var tl = item("system", "tools offered");
      tl.appendChild(fold(tr.tools.map(function (t) { return t.name; }).join(", "),
                          pre(asJson(tr.tools), "json")));
      ol.appendChild(tl);
    }
    (tr.history || []).forEach(function (m) { ol.appendChild(message(m, "history")); });
    var user = item("user", "user");
    user.appendChild(pre(tr.input));
    ol.appendChild(user);
    (tr.steps || []).forEach(function (st) { ol.appendChild(step(st)); });
    if (tr.output !== null && tr.output !== undefined) {
      var ans = item("assistant", "final answer");
      ans.appendChild(pre(tr.output));
      ol.appendChild(ans);
    }
    box.appendChild(ol);
    return box;
  }
  function checksTable(trial) {
    var table = el("table", "checks");
    var head = el("tr");
    ["status", "check", "reason"].forEach(function (h) { var th = el("th", null, h); th.scope = "col"; head.appendChild(th); });
    add(table, add(el("thead"), head));
    var body = el("tbody");
    (trial.checks || []).forEach(function (c) {
      var tr = el("tr", "ck-" + (KINDS[c.status] ? c.status : "other"));
      var name = add(el("td"), el("code", null, c.check), c.turn !== undefined && c.turn !== null ? " (turn " + c.turn + ")" : "",
                     el("div", "kind", c.kind));
      var why = add(el("td"), c.reason);
      if (c.criterion) why.appendChild(el("div", "crit", "criterion: " + c.criterion));
      add(tr, add(el("td"), badge(c.status)), name, why);
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }
  function fillTrial(details) {
    if (details.dataset.done) return;
    details.dataset.done = "1";
    var d = data();
    var c = Number(details.dataset.c), t = Number(details.dataset.t);
    var kase = (d.cases || [])[c];
    if (!kase) return;
    var trial = null;
    (kase.trials || []).forEach(function (x) { if (Number(x.index) === t) trial = x; });
    if (!trial) return;
    var checks = details.querySelector(".checks-slot");
    if (checks) { checks.textContent = ""; checks.appendChild(checksTable(trial)); }
    var slot = details.querySelector(".trace-slot");
    if (!slot) return;
    slot.textContent = "";
    var traces = trial.traces || [];
    if (!traces.length) slot.appendChild(el("p", "muted", "no trace kept for this trial"));
    traces.forEach(function (tr, n) {
      slot.appendChild(renderTrace(tr, traces.length > 1 ? "turn " + (n + 1) : "trace"));
    });
  }

  function fillRuns(details) {
    if (details.dataset.done) return;
    details.dataset.done = "1";
    var sample = (data().samples || {})[details.dataset.s] || {};
    details.querySelectorAll(".trace-slot[data-side]").forEach(function (slot) {
      var tr = sample[slot.dataset.side];
      if (tr) { slot.textContent = ""; slot.appendChild(renderTrace(tr, "")); }
    });
  }

  function setupFilters() {
    var form = document.getElementById("filters");
    if (!form) return;
    form.hidden = false;
    form.addEventListener("submit", function (ev) { ev.preventDefault(); });
    var rows = Array.prototype.slice.call(document.querySelectorAll(".rows > details.case"));
    var state = document.getElementById("f-state");
    var tag = document.getElementById("f-tag");
    var text = document.getElementById("f-text");
    var count = document.getElementById("f-count");
    function apply() {
      var s = state ? state.value : "", t = tag ? tag.value : "", q = text ? text.value.trim().toLowerCase() : "";
      var shown = 0;
      for (var i = 0; i < rows.length; i++) {
        var r = rows[i], v = r.getAttribute("data-verdict"), ok = true;
        if (s === "failing") ok = v === "fail" || v === "error";
        else if (s === "flaky") ok = r.getAttribute("data-class") === "flaky";
        else if (s) ok = v === s;
        if (ok && t) ok = r.getAttribute("data-tags").split("\u001f").indexOf(t) >= 0;
        if (ok && q) ok = r.getAttribute("data-search").indexOf(q) >= 0;
        r.hidden = !ok;
        if (ok) shown++;
      }
      if (count) count.textContent = shown + " of " + rows.length + " shown";
    }
    [state, tag, text].forEach(function (n) {
      if (n) { n.addEventListener("input", apply); n.addEventListener("change", apply); }
    });
    apply();
    document.addEventListener("keydown", function (ev) {
      var typing = ev.target && (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT" || ev.target.tagName === "TEXTAREA");
      if (ev.key === "/" && !typing && text) { ev.preventDefault(); text.focus(); return; }
      if ((ev.key === "j" || ev.key === "k") && !typing && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
        var visible = rows.filter(function (r) { return !r.hidden; });
        if (!visible.length) return;
        var at = visible.indexOf(document.activeElement ? document.activeElement.closest("details.case") : null);
        var next = ev.key === "j" ? Math.min(at + 1, visible.length - 1) : Math.max(at - 1, 0);
        visible[next].querySelector("summary").focus();
        ev.preventDefault();
      }
    });
  }

  function init() {
    document.documentElement.classList.add("js");
    setupFilters();
    document.addEventListener("toggle", function (ev) {
      var d = ev.target;
      if (d && d.classList && d.classList.contains("trial") && d.open) fillTrial(d);
      if (d && d.classList && d.classList.contains("rtrace") && d.open) fillRuns(d);
    }, true);
    var single = document.querySelector(".trace-slot[data-trace]");
    if (single) {
      var d = data();
      if (d.trace) { single.textContent = ""; single.appendChild(renderTrace(d.trace, "")); }
    }
    var hash = window.location.hash.slice(1);
    if (/^case-\d+$/.test(hash)) {
      var target = document.getElementById(hash);
      if (target) { target.open = true; target.querySelector("summary").focus(); }
    }
    window.toolproofReadyMs = performance.now();
    document.body.setAttribute("data-ready", "1");
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
