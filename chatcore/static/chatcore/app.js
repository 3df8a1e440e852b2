// Small enhancements on top of pages that work without JavaScript:
// the composer (Enter to send, the pending message, working state) and the
// Summarize & Continue panel as a modal dialog (Esc closes, focus stays
// inside while open and returns to the opener afterwards).
(function () {
  "use strict";

  function scrollToEnd() {
    var area = document.querySelector(".chat-scroll");
    if (!area) return;
    // A short or narrow window shows the page as one document (see the reflow rules in app.css).
    if (area.scrollHeight > area.clientHeight + 1) area.scrollTop = area.scrollHeight;
    else window.scrollTo(0, document.documentElement.scrollHeight);
  }

  // One tab stop for the whole conversation (a roving tabindex): the message you are on is in the
  // tab order with its actions; the arrow keys, Home and End move to another message. Without
  // JavaScript every control stays in the tab order.
  var CONTROLS = "a[href], button, input, select, textarea, summary, [tabindex]:not(.msg)";

  function conversationMessages(main) {
    return Array.prototype.filter.call(main.querySelectorAll(".msg"), function (m) { return !m.closest(".originals"); });
  }

  function setCurrent(main, current) {
    conversationMessages(main).forEach(function (m) {
      var on = m === current;
      m.tabIndex = on ? 0 : -1;
      m.querySelectorAll(CONTROLS).forEach(function (c) {
        if (on) { if (c.hasAttribute("data-roving")) { c.removeAttribute("tabindex"); c.removeAttribute("data-roving"); } }
        else if (!c.hasAttribute("data-roving")) { c.setAttribute("tabindex", "-1"); c.setAttribute("data-roving", ""); }
      });
    });
  }

  function initRoving() {
    var main = document.getElementById("channel-main");
    if (!main) return;
    var list = conversationMessages(main);
    if (list.length) setCurrent(main, list[list.length - 1]);
  }

  document.addEventListener("focusin", function (event) {
    var main = document.getElementById("channel-main");
    var message = event.target.closest && event.target.closest(".msg");
    if (main && message && main.contains(message) && !message.closest(".originals") && message.tabIndex !== 0) {
      setCurrent(main, message);
    }
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (!target.classList || !target.classList.contains("msg") || event.altKey || event.ctrlKey || event.metaKey) return;
    var main = document.getElementById("channel-main");
    if (!main || !main.contains(target)) return;
    var list = conversationMessages(main);
    var index = list.indexOf(target);
    var next = { ArrowDown: index + 1, ArrowUp: index - 1, Home: 0, End: list.length - 1 }[event.key];
    if (next === undefined || index < 0) return;
    event.preventDefault();
    var to = list[Math.max(0, Math.min(list.length - 1, next))];
    setCurrent(main, to);
    to.focus();
  });

  // Skip links: the composer, or the newest message of the conversation as it is now.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("[data-skip]");
    if (!link) return;
    var main = document.getElementById("channel-main");
    var target = link.hasAttribute("data-skip-latest") && main ?
      conversationMessages(main).pop() || main : document.querySelector(link.getAttribute("href"));
    if (!target) return;
    event.preventDefault();
    if (main && target.classList.contains("msg")) setCurrent(main, target);
    target.focus();
    target.scrollIntoView({ block: "nearest" });
  });

  function announce(text) {
    var region = document.getElementById("announcer");
    if (!region) return;
    region.textContent = "";
    window.setTimeout(function () { region.textContent = text; }, 50);
  }

  function composer() { return document.getElementById("composer"); }

  function autosize(textarea) {
    textarea.style.height = "auto";
    textarea.style.height = Math.min(textarea.scrollHeight + 2, window.innerHeight * 0.4) + "px";
  }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target && target.id === "composer-input" && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (target.value.trim()) target.form.requestSubmit();
    }
  });

  document.addEventListener("input", function (event) {
    if (event.target && event.target.id === "composer-input") autosize(event.target);
  });

  // The message shows at once, greyed, while the model works.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = composer();
    if (!form || event.detail.elt !== form) return;
    var text = form.querySelector("textarea").value;
    var slot = document.getElementById("pending");
    if (!slot || !text.trim()) return;
    var article = document.createElement("article");
    article.className = "msg msg-user pending";
    var head = document.createElement("header");
    head.className = "msg-head";
    var who = document.createElement("span");
    who.className = "msg-who";
    who.textContent = "You";
    head.appendChild(who);
    var body = document.createElement("div");
    body.className = "msg-body";
    body.style.whiteSpace = "pre-wrap";
    body.textContent = text;
    article.appendChild(head);
    article.appendChild(body);
    slot.replaceChildren(article);
    var main = document.getElementById("channel-main");
    if (main) main.setAttribute("aria-busy", "true");
    scrollToEnd();
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var form = composer();
    if (!form || event.detail.elt !== form) return;
    // The turn is stored even when the model fails, so the box is cleared
    // whenever the server answered; only a request that never arrived keeps the text.
    if (event.detail.xhr && event.detail.xhr.status > 0) {
      form.reset();
      autosize(form.querySelector("textarea"));
    }
    form.querySelector("textarea").focus();
  });

  // A button inside the conversation (‹ ›, Regenerate, Undo…) is replaced with
  // the conversation; keep the keyboard focus on its counterpart in the new one.
  var refocus = null;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    var main = document.getElementById("channel-main");
    if (!main || !elt || elt.tagName !== "FORM" || !main.contains(elt) || !elt.className) { refocus = null; return; }
    var selector = "form." + elt.className.trim().split(/\s+/).join(".");
    var submitter = document.activeElement && elt.contains(document.activeElement) ? document.activeElement : null;
    refocus = {
      selector: selector,
      index: Array.prototype.indexOf.call(main.querySelectorAll(selector), elt),
      value: submitter ? submitter.value : null
    };
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    initRoving();
    var form = composer();
    if (form && event.detail.requestConfig && event.detail.requestConfig.elt === form) { scrollToEnd(); return; }
    var main = document.getElementById("channel-main");
    if (!refocus || !main) return;
    var forms = main.querySelectorAll(refocus.selector);
    var match = forms[Math.min(refocus.index, forms.length - 1)];
    var version = match && match.classList.contains("siblings") && match.querySelector("[data-version]");
    if (version) announce(version.textContent + " shown");
    if (match && match.closest(".msg")) setCurrent(main, match.closest(".msg"));
    var button = match && ((refocus.value && match.querySelector("button[value='" + refocus.value + "']:not([disabled])")) ||
                           match.querySelector("button:not([disabled])"));
    (button || document.getElementById("composer-input") || main).focus({ preventScroll: true });
    refocus = null;
  });

  document.addEventListener("htmx:sendError", function () {
    var slot = document.getElementById("pending");
    if (slot) {
      var p = document.createElement("p");
      p.className = "alert alert-error";
      p.setAttribute("role", "alert");
      p.textContent = "The server could not be reached. Check the connection and try again.";
      slot.replaceChildren(p);
    }
  });

  // A session that ended answers with the login page (the site's, named on the body): go there instead of
  // swapping it in.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    var login = new URL(document.body.dataset.loginUrl || "/login/", window.location.href).pathname;
    if (xhr && xhr.responseURL && new URL(xhr.responseURL).pathname === login) {
      event.detail.shouldSwap = false;
      window.location.assign(xhr.responseURL);
    }
  });

  // The panel.
  var opener = null;

  function dialog() { return document.getElementById("panel-dialog"); }

  function focusables(root) {
    return Array.prototype.filter.call(
      root.querySelectorAll("a[href], button:not([disabled]), input:not([disabled]):not([type=hidden]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex='-1'])"),
      function (el) { return el.offsetParent !== null || el === document.activeElement; }
    );
  }

  function focusFirst(root) {
    var preferred = root.querySelector("[data-focus]") ||
      focusables(root).filter(function (el) { return /^(SELECT|INPUT|TEXTAREA)$/.test(el.tagName); })[0] ||
      focusables(root)[0];
    if (preferred) preferred.focus();
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("[data-panel-open]");
    var box = dialog();
    if (link && box && window.htmx) {
      event.preventDefault();
      opener = link;
      window.htmx.ajax("GET", link.getAttribute("href"), { target: "#panel-body", swap: "innerHTML" }).then(function () {
        if (!box.open) box.showModal();
        focusFirst(box);
      });
      return;
    }
    var closer = event.target.closest && event.target.closest("[data-panel-close]");
    if (closer && box && box.open) {
      event.preventDefault();
      box.close();
    }
  });

  document.addEventListener("keydown", function (event) {
    var box = dialog();
    if (!box || !box.open || event.key !== "Tab") return;
    var items = focusables(box);
    if (!items.length) return;
    var first = items[0], last = items[items.length - 1];
    if (event.shiftKey && (document.activeElement === first || !box.contains(document.activeElement))) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (document.activeElement === last || !box.contains(document.activeElement))) {
      event.preventDefault();
      first.focus();
    }
  });

  // A model select beside a team select (data-team-field names it) offers only the models the picked team
  // allows: each option lists those teams in data-teams; the default option has none and stays. A model the
  // new team does not allow is unselected. The server refuses such a model whatever the page shows.
  function filterTeamModels(select) {
    var team = select.form && select.form.elements[select.getAttribute("data-team-field")];
    if (!team) return;
    Array.prototype.forEach.call(select.options, function (option) {
      if (!option.hasAttribute("data-teams")) return;
      var allowed = !team.value || option.getAttribute("data-teams").split(" ").indexOf(team.value) !== -1;
      option.hidden = !allowed;
      option.disabled = !allowed;
      if (!allowed && option.selected) select.value = "";
    });
  }

  document.addEventListener("change", function (event) {
    var form = event.target.form;
    if (!form || !event.target.name) return;
    form.querySelectorAll("select[data-team-field='" + event.target.name + "']").forEach(filterTeamModels);
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("select[data-team-field]").forEach(filterTeamModels);
    var box = dialog();
    if (box) {
      box.addEventListener("close", function () {
        var target = opener && document.body.contains(opener) ? opener : document.getElementById("composer-input");
        if (target) target.focus();
        opener = null;
      });
    }
    initRoving();
    if (composer() && !window.location.hash) scrollToEnd();
  });

  // After Replace the server swaps the conversation and asks for the panel to close.
  document.addEventListener("compaction-done", closePanel);
  function closePanel() {
    var box = dialog();
    if (box && box.open) box.close();
  }

  // New panel content (a preview, an error) takes the focus to its first control.
  document.addEventListener("htmx:afterSwap", function (event) {
    var box = dialog();
    if (box && box.open && event.detail.target && event.detail.target.id === "panel-body") {
      focusFirst(box);
    }
  });
})();
