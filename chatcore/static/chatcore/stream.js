// Replies token by token. A form marked data-stream (the composer, Regenerate,
// Edit, Get a reply) is sent with fetch() asking for text/event-stream; the
// reply's pieces are written into a bubble as they arrive ("delta" events; a
// "tool" event says the model looked something up server-side and answers next),
// Stop aborts the request (the server keeps what was written, marked
// interrupted), and at the end ("done" or "error") the conversation is
// fetched again and swapped in, rendered by the server. Without fetch
// streaming, or without JavaScript, the form posts and redirects as before.
(function () {
  "use strict";

  if (!window.fetch || !window.AbortController || !window.TextDecoder || !window.ReadableStream) return;

  var current = null;  // {controller, stopped}

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function bubble(role, who, text, state) {
    var article = el("article", "msg msg-" + role + " " + state);
    var head = el("header", "msg-head");
    head.appendChild(el("span", "msg-who", who));
    article.appendChild(head);
    var body = el("div", "msg-body stream-body", text);
    article.appendChild(body);
    return {article: article, body: body};
  }

  function scrollToEnd() {
    var area = document.querySelector(".chat-scroll");
    if (area) area.scrollTop = area.scrollHeight;
  }

  function setBusy(busy) {
    var working = document.getElementById("working");
    if (working) working.classList.toggle("htmx-request", busy);
    var main = document.getElementById("channel-main");
    if (main) main.setAttribute("aria-busy", busy ? "true" : "false");
    var stop = document.getElementById("composer-stop");
    if (stop) stop.hidden = !busy;
    var send = document.querySelector("#composer .composer-send");
    if (send) send.disabled = busy;
    document.querySelectorAll("form[data-stream] button[type=submit]").forEach(function (button) {
      if (button !== send) button.disabled = busy;
    });
  }

  // Messages that the new reply replaces on the page (a regenerated answer, an
  // edited turn and what followed) go; the pending bubbles go at the end.
  function clearFrom(form) {
    var from = form.getAttribute("data-stream-from");
    var start = from && document.getElementById(from);
    if (!start) return;
    var node = start;
    while (node && node.id !== "pending") {
      var next = node.nextElementSibling;
      if (node.tagName === "ARTICLE" || node.classList.contains("awaiting")) node.remove();
      node = next;
    }
  }

  function refresh(after) {
    var main = document.getElementById("channel-main");
    var url = main && main.getAttribute("data-refresh-url");
    if (!url || !window.htmx) { window.location.reload(); return; }
    window.htmx.ajax("GET", url, {target: "#channel-main", swap: "outerHTML"}).then(function () {
      scrollToEnd();
      if (after) after();
      var input = document.getElementById("composer-input");
      if (input) input.focus();
    });
  }

  function showError(text, lead) {
    var slot = document.getElementById("pending");
    if (!slot) return;
    var alert = el("p", "alert alert-error");
    alert.setAttribute("role", "alert");
    alert.appendChild(el("strong", "", lead || "The model did not answer. "));
    alert.appendChild(document.createTextNode(text));
    slot.replaceChildren(alert);
  }

  // Server-sent events out of a fetch() body: blocks separated by a blank line.
  function parseEvents(buffer, onEvent) {
    var parts = buffer.split("\n\n");
    var rest = parts.pop();
    parts.forEach(function (block) {
      var name = "message", data = [];
      block.split("\n").forEach(function (line) {
        if (line.indexOf("event:") === 0) name = line.slice(6).trim();
        else if (line.indexOf("data:") === 0) data.push(line.slice(5).replace(/^ /, ""));
      });
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    });
    return rest;
  }

  function stream(form) {
    var text = form.querySelector("textarea") ? form.querySelector("textarea").value : "";
    var slot = document.getElementById("pending");
    if (!slot) return false;
    var body = new FormData(form);
    var controller = new AbortController();
    current = {controller: controller, stopped: false};
    var run = current;
    clearFrom(form);
    slot.replaceChildren();
    if (text.trim()) slot.appendChild(bubble("user", "You", text, "pending").article);
    var reply = bubble("assistant", form.getAttribute("data-assistant") || "Assistant", "", "streaming");
    reply.article.setAttribute("aria-live", "polite");
    slot.appendChild(reply.article);
    setBusy(true);
    scrollToEnd();
    if (form.id === "composer") { form.reset(); }

    var outcome = null;
    fetch(form.action, {
      method: "POST",
      body: body,
      headers: {"Accept": "text/event-stream"},
      credentials: "same-origin",
      signal: controller.signal
    }).then(function (response) {
      if (response.status === 429) {
        // The limit on model calls: nothing was stored. The page's sentence says when to try again.
        return response.text().then(function (html) {
          var page = new DOMParser().parseFromString(html, "text/html");
          var note = page.querySelector("[data-throttled]");
          outcome = {name: "throttled", data: {detail: note ? note.textContent.trim() : "Try again in a minute."}};
        });
      }
      var type = response.headers.get("Content-Type") || "";
      if (type.indexOf("text/event-stream") !== 0) {
        // Not streamed (an invalid form, an expired session): show what the server answered.
        outcome = {name: "page"};
        return;
      }
      var reader = response.body.getReader();
      var decoder = new TextDecoder();
      var buffer = "";
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) return;
          buffer = parseEvents(buffer + decoder.decode(chunk.value, {stream: true}), function (name, data) {
            if (name === "delta") {
              reply.body.textContent += data.content;
              scrollToEnd();
            } else if (name === "tool") {
              // The model looked something up (stored, shown folded after the refresh); its answer follows.
              reply.body.textContent = "";
              var note = el("p", "muted stream-tool", "Looked up with " + (data.names || []).join(", ") + "…");
              reply.article.insertBefore(note, reply.body);
            } else {
              outcome = {name: name, data: data};
            }
          });
          return pump();
        });
      }
      return pump();
    }).catch(function () {
      if (!run.stopped) outcome = {name: "error", data: {detail: "The connection to the server was lost."}};
    }).then(function () {
      current = null;
      setBusy(false);
      if (run.stopped) {
        // The server stores what was written when it sees the request go; give it a moment.
        window.setTimeout(function () { refresh(); }, 400);
      } else if (outcome && outcome.name === "error") {
        refresh(function () { showError(outcome.data.detail || "Try again."); });
      } else if (outcome && outcome.name === "throttled") {
        refresh(function () {
          showError(outcome.data.detail, "Not sent. ");
          // The composer was emptied when the message went; give the words back.
          var input = form.id === "composer" && document.getElementById("composer-input");
          if (input && !input.value) input.value = text;
        });
      } else {
        refresh();
      }
    });
    return true;
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form || !form.hasAttribute || !form.hasAttribute("data-stream")) return;
    if (current) { event.preventDefault(); return; }
    var textarea = form.querySelector("textarea");
    if (textarea && !textarea.value.trim()) return;
    event.preventDefault();
    stream(form);
  }, true);

  document.addEventListener("click", function (event) {
    var stop = event.target.closest && event.target.closest("#composer-stop");
    if (!stop || !current) return;
    event.preventDefault();
    current.stopped = true;
    current.controller.abort();
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && current && !document.querySelector("dialog[open]")) {
      current.stopped = true;
      current.controller.abort();
    }
  });
})();
