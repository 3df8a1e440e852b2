// The API tokens page: "Copy" puts the new key on the clipboard.
// A static file (no inline script) so the page keeps a strict CSP.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy-target]");
    if (!button) return;
    var field = document.getElementById(button.getAttribute("data-copy-target"));
    var status = button.parentElement.querySelector("[data-copy-status]");
    if (!field) return;
    field.select();
    var done = function () { if (status) status.textContent = "Copied."; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, function () {
        if (status) status.textContent = "Select the key and copy it (Ctrl+C).";
      });
    } else {
      try { document.execCommand("copy"); done(); } catch (e) {
        if (status) status.textContent = "Select the key and copy it (Ctrl+C).";
      }
    }
  });
})();
