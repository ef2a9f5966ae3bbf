/* connote-collect: text answers that are too short never leave the page.
 * Potato's text scheme shows a counter for min_chars but lets Next through; this wraps Potato's
 * navigateToNext so that every visible text box of a scheme with data-min-chars holds at least that
 * many characters (after trimming) before the page moves on. Hidden questions (display_logic) are
 * not checked. */
(function () {
  "use strict";

  function visible(el) {
    return !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  }

  function shortAnswers() {
    var problems = [];
    document.querySelectorAll("form.annotation-form[data-min-chars]").forEach(function (form) {
      if (!visible(form)) return;
      var need = parseInt(form.getAttribute("data-min-chars"), 10) || 0;
      form.querySelectorAll("textarea.annotation-input, input[type=text].annotation-input").forEach(function (box) {
        var have = (box.value || "").trim().length;
        var note = form.querySelector(".connote-too-short");
        if (have < need) {
          problems.push(box);
          if (!note) {
            note = document.createElement("div");
            note.className = "connote-too-short";
            note.setAttribute("role", "alert");
            form.appendChild(note);
          }
          note.textContent = (have ? "This answer is too short" : "This answer is empty") +
            ": write at least " + need + " characters (now " + have + ").";
        } else if (note && !problems.some(function (p) { return form.contains(p); })) {
          note.remove();
        }
      });
    });
    return problems;
  }

  function install() {
    var original = window.navigateToNext;
    if (typeof original !== "function" || original.connoteChecked) return;
    var checked = function (options) {
      var problems = shortAnswers();
      if (problems.length && !(options && options.bypassRequired)) {
        problems[0].scrollIntoView({block: "center"});
        problems[0].focus();
        return undefined;
      }
      return original.apply(this, arguments);
    };
    checked.connoteChecked = true;
    window.navigateToNext = checked;
  }

  document.addEventListener("input", function (e) {
    if (e.target && e.target.closest && e.target.closest("form[data-min-chars]") &&
        e.target.closest("form").querySelector(".connote-too-short")) shortAnswers();
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", install);
  else install();
  window.addEventListener("load", install);
})();
