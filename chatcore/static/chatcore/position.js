// In-place actions (Undo summary, ‹ ›, Edit, Regenerate) swap the whole
// conversation. Keep the reader's place: the message acted on (or, for Undo,
// the confirmation the server put where the summary's bar was) stays at the
// same height in the scroll area, and a confirmation or error shows there,
// not at the far end of a long history. A static file: no inline script (CSP).
(function () {
  "use strict";
  var saved = null;

  function scroller() { return document.querySelector(".chat-scroll"); }
  function top(el, box) { return el.getBoundingClientRect().top - box.getBoundingClientRect().top; }

  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt, main = document.getElementById("channel-main"), box = scroller();
    saved = null;
    if (!main || !box || !elt || !main.contains(elt) || elt.id === "composer") return;
    var message = elt.closest("article.msg");
    var boundary = elt.closest("section.boundary");
    if (!message && !boundary) return;
    saved = {
      depth: message ? message.getAttribute("data-depth") : null,
      // For Undo the bar disappears: what the reader looked at is the button itself.
      offset: message ? top(message, box) : top(elt, box)
    };
  });

  document.addEventListener("htmx:afterSettle", function () {
    var state = saved, main = document.getElementById("channel-main"), box = scroller();
    saved = null;
    if (!state || !main || !box) return;
    var placed = main.querySelector("[data-scroll-anchor]");
    var target = placed || (state.depth !== null && main.querySelector('article.msg[data-depth="' + state.depth + '"]'));
    if (!target) return;
    var rest = main.querySelector("[data-flash-rest]");
    if (rest && !placed) target.after(rest);
    var offset = Math.max(0, Math.min(state.offset, box.clientHeight - 80));
    box.scrollTop += top(target, box) - offset;
    if (placed) placed.focus({ preventScroll: true });
  });
})();
