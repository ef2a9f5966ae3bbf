/* connote-collect: the VIST storyboard (choose photos, order them, one sentence per card).
 * Drives the inputs the connote_story scheme renders; Potato saves them as ordinary text answers.
 * The hidden "order" input is required, and it is filled only when the story is complete
 * (N cards, a sentence on each, at least min_words words) or the album is skipped, so Potato's own
 * required-field check keeps the worker on the page until then. */
(function () {
  "use strict";

  function words(text) {
    return (text || "").trim().split(/\s+/).filter(function (w) { return /[A-Za-z0-9]/.test(w); }).length;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function setup(form, photos) {
    var mode = form.getAttribute("data-mode");
    var need = parseInt(form.getAttribute("data-photos"), 10) || 5;
    var minWords = parseInt(form.getAttribute("data-min-words"), 10) || 0;
    var album = form.querySelector(".connote-story-album");
    var board = form.querySelector(".connote-story-board");
    var status = form.querySelector(".connote-story-status");
    var full = form.querySelector(".connote-story-text");
    var help = form.querySelector(".connote-story-help");
    var order = form.querySelector(".connote-story-order");
    var skipBox = form.querySelector(".connote-story-skip-box");
    var areas = Array.prototype.slice.call(form.querySelectorAll(".connote-story-sentence"));
    var byId = {};
    photos.forEach(function (p) { byId[String(p.id)] = p; });
    // cards: [{id, text}] in story order
    var cards = [];
    var saved = (order.value || "").trim();
    if (mode === "fixed") {
      cards = photos.slice(0, need).map(function (p, i) { return {id: String(p.id), text: areas[i] ? areas[i].value : ""}; });
    } else if (saved && saved !== "skip") {
      saved.split(",").forEach(function (id, i) {
        if (byId[id]) cards.push({id: id, text: areas[i] ? areas[i].value : ""});
      });
    }
    if (saved === "skip" && skipBox) skipBox.checked = true;
    help.textContent = mode === "fixed"
      ? "The photos below are already in story order. Write one sentence for each photo so that together they tell a story."
      : "Click " + need + " photos of the album to put them on the storyboard, use the arrows to put them in story order, "
        + "then write one sentence on each card. Click a chosen photo again (or \u2715) to take it off.";
    if (mode === "fixed") {
      album.style.display = "none";
    }

    function renderAlbum() {
      if (mode === "fixed") return;
      album.innerHTML = "";
      photos.forEach(function (p, i) {
        var chosen = cards.findIndex(function (c) { return c.id === String(p.id); });
        var b = el("button", "connote-story-photo" + (chosen >= 0 ? " chosen" : ""));
        b.type = "button";
        b.setAttribute("data-photo", String(p.id));
        b.title = "Photo " + (i + 1) + (chosen >= 0 ? " (card " + (chosen + 1) + ")" : "");
        var img = el("img");
        img.src = p.url;
        img.alt = "Album photo " + (i + 1);
        b.appendChild(img);
        b.appendChild(el("span", "connote-story-badge", chosen >= 0 ? "card " + (chosen + 1) : String(i + 1)));
        b.addEventListener("click", function () {
          var at = cards.findIndex(function (c) { return c.id === String(p.id); });
          if (at >= 0) { cards.splice(at, 1); } else if (cards.length < need) { cards.push({id: String(p.id), text: ""}); }
          refresh();
        });
        album.appendChild(b);
      });
    }

    function renderBoard() {
      // detach the sentence boxes, then put box k on card k
      areas.forEach(function (a) { if (a.parentNode) a.parentNode.removeChild(a); });
      board.innerHTML = "";
      for (var k = 0; k < need; k++) {
        var card = el("div", "connote-story-card");
        var c = cards[k];
        var area = areas[k];
        if (c) {
          var img = el("img");
          img.src = byId[c.id].url;
          img.alt = "Card " + (k + 1);
          card.appendChild(img);
          if (mode !== "fixed") {
            var tools = el("div", "connote-story-tools");
            [["\u25c0", -1, "Move left"], ["\u25b6", 1, "Move right"], ["\u2715", 0, "Take off the storyboard"]]
              .forEach(function (t) {
                var b = el("button", "connote-story-move", t[0]);
                b.type = "button";
                b.title = t[2];
                b.setAttribute("aria-label", t[2] + " (card " + (k + 1) + ")");
                (function (at, step) {
                  b.addEventListener("click", function () {
                    if (step === 0) { cards.splice(at, 1); }
                    else {
                      var to = at + step;
                      if (to < 0 || to >= cards.length) return;
                      var tmp = cards[at]; cards[at] = cards[to]; cards[to] = tmp;
                    }
                    refresh();
                  });
                })(k, t[1]);
                tools.appendChild(b);
              });
            card.appendChild(tools);
          }
          area.value = c.text;
          area.disabled = false;
        } else {
          card.classList.add("empty");
          card.appendChild(el("div", "connote-story-empty", "Card " + (k + 1) + ": choose a photo"));
          area.value = "";
          area.disabled = true;
        }
        card.appendChild(el("div", "connote-story-cardno", "Card " + (k + 1)));
        card.appendChild(area);
        board.appendChild(card);
      }
    }

    function check() {
      var total = cards.reduce(function (n, c) { return n + words(c.text); }, 0);
      var missing = cards.filter(function (c) { return words(c.text) === 0; }).length;
      var problems = [];
      if (cards.length < need) problems.push("choose " + (need - cards.length) + " more photo(s)");
      if (missing) problems.push("write a sentence on " + missing + " card(s)");
      if (total < minWords) problems.push("the story has " + total + " words; it needs at least " + minWords);
      var skipped = skipBox && skipBox.checked;
      var value = skipped ? "skip" : (problems.length ? "" : cards.map(function (c) { return c.id; }).join(","));
      if (order.value !== value) {
        order.value = value;
        order.dispatchEvent(new Event("input", {bubbles: true}));
        order.dispatchEvent(new Event("change", {bubbles: true}));
        // refresh Potato's "please answer" notice, which would otherwise outlive a now complete story
        if (typeof window.validateRequiredFields === "function") window.validateRequiredFields({});
      }
      full.textContent = cards.map(function (c) { return c.text.trim(); }).filter(Boolean).join(" ");
      status.className = "connote-story-status " + (value ? "ok" : "todo");
      status.textContent = skipped ? "Album marked as not storyable; press Next to go on."
        : (problems.length ? "To finish: " + problems.join("; ") + "." : "Story complete (" + total + " words); press Next.");
    }

    function refresh() { renderAlbum(); renderBoard(); check(); }

    areas.forEach(function (a, k) {
      a.addEventListener("input", function () { if (cards[k]) { cards[k].text = a.value; check(); } });
    });
    if (skipBox) skipBox.addEventListener("change", check);
    refresh();
  }

  function start() {
    var forms = document.querySelectorAll("form.connote-story");
    if (!forms.length) return;
    fetch("/api/current_instance", {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (inst) {
        var photos = (inst && inst.data && inst.data.photos) || [];
        forms.forEach(function (f) { setup(f, photos); });
      })
      .catch(function (e) {
        forms.forEach(function (f) {
          f.querySelector(".connote-story-status").textContent = "Could not load the album (" + e + "); reload the page.";
        });
      });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
