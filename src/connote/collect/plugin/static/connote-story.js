/* connote-collect: the VIST storyboard (choose photos, order them, one sentence per card).
 * Drives the inputs the connote_story scheme renders; Potato saves them as ordinary text answers.
 * The hidden "order" input is required, and it is filled only when the story is complete and varied
 * (enough cards, a sentence on each, enough words, no sentence repeated, enough different words) or the
 * item is skipped, so Potato's own required-field check keeps the worker on the page until then.
 * Modes: "choose" (pick at least N of the album's photos), "pick" (choose one of the item's sequences,
 * recorded in the hidden "choice" input), "fixed" (the item's photos are the storyboard).
 * The same rules are applied again at import (connote.collect.vist_storytelling.text_problems). */
(function () {
  "use strict";

  // a word has a letter or digit; words are compared lower-cased, without other characters
  function wordList(text) {
    return (text || "").trim().split(/\s+/).filter(function (w) { return /[A-Za-z0-9]/.test(w); });
  }
  function norm(word) { return word.toLowerCase().replace(/[^a-z0-9]/g, ""); }
  function words(text) { return wordList(text).length; }

  // what keeps the sentences from being a complete, varied text (the import's text_problems)
  function textProblems(sentences, minWords, minEach, minDistinct) {
    var problems = [];
    var total = 0, distinct = {}, seen = {};
    sentences.forEach(function (s, i) {
      var ws = wordList(s);
      total += ws.length;
      ws.forEach(function (w) { var n = norm(w); if (n) distinct[n] = true; });
      var key = ws.map(norm).filter(Boolean).join(" ");
      if (ws.length && ws.length < minEach) {
        problems.push("card " + (i + 1) + " has " + ws.length + " words; each needs at least " + minEach);
      }
      if (key && seen[key] !== undefined) {
        problems.push("cards " + (seen[key] + 1) + " and " + (i + 1) + " say the same; write a different sentence");
      } else if (key) { seen[key] = i; }
    });
    if (total < minWords) problems.push("the text has " + total + " words; it needs at least " + minWords);
    var nd = Object.keys(distinct).length;
    if (total >= minWords && nd < minDistinct) {
      problems.push("the text repeats itself: it uses " + nd + " different words; use at least " + minDistinct);
    }
    return problems;
  }
  window.connoteTextProblems = textProblems;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function number(form, name, fallback) {
    var v = parseInt(form.getAttribute("data-" + name), 10);
    return isNaN(v) ? fallback : v;
  }

  function setup(form, photos, sequences) {
    var mode = form.getAttribute("data-mode");
    var need = number(form, "photos", 5);
    var most = Math.max(need, number(form, "max-photos", need));
    var minWords = number(form, "min-words", 0);
    var minEach = number(form, "min-words-each", 1);
    var minDistinct = number(form, "min-distinct", 0);
    var album = form.querySelector(".connote-story-album");
    var choices = form.querySelector(".connote-story-choices");
    var board = form.querySelector(".connote-story-board");
    var status = form.querySelector(".connote-story-status");
    var full = form.querySelector(".connote-story-text");
    var help = form.querySelector(".connote-story-help");
    var order = form.querySelector(".connote-story-order");
    var choiceInput = form.querySelector(".connote-story-choice");
    var skipBox = form.querySelector(".connote-story-skip-box");
    var areas = Array.prototype.slice.call(form.querySelectorAll(".connote-story-sentence"));
    var byId = {};
    photos.forEach(function (p) { byId[String(p.id)] = p; });
    sequences = (sequences || []).map(function (s) {
      return s.map(String).filter(function (id) { return byId[id]; });
    });
    var chosen = 0;  // pick mode: 1-based sequence number, 0 = none yet
    // cards: [{id, text}] in story order
    var cards = [];
    var saved = (order.value || "").trim();
    function fromIds(ids) {
      return ids.map(function (id, i) { return {id: id, text: areas[i] ? areas[i].value : ""}; });
    }
    if (mode === "fixed") {
      cards = fromIds(photos.slice(0, most).map(function (p) { return String(p.id); }));
    } else if (mode === "pick") {
      chosen = parseInt((choiceInput && choiceInput.value) || "0", 10) || 0;
      if (!chosen && sequences.length === 1) chosen = 1;
      if (chosen > sequences.length) chosen = 0;
      if (chosen) cards = fromIds(sequences[chosen - 1]);
    } else if (saved && saved !== "skip") {
      saved.split(",").forEach(function (id, i) {
        if (byId[id] && cards.length < most) cards.push({id: id, text: areas[i] ? areas[i].value : ""});
      });
    }
    if (saved === "skip" && skipBox) skipBox.checked = true;
    var given = form.getAttribute("data-help");
    if (given) help.textContent = given;
    else if (mode === "fixed") {
      help.textContent = "The photos below are already in story order. Write one sentence for each photo so that "
        + "together they tell a story.";
    } else if (mode === "pick") {
      help.textContent = "The album is shown in the order its photos were taken. Below it are the photo "
        + "sequences other people made from it: choose the one you want to tell, then write one sentence on each "
        + "card of the storyboard so that together they tell a story.";
    } else {
      help.textContent = "Click at least " + need + " photos of the album to put them on the storyboard, use the "
        + "arrows to put them in story order, then write one sentence on each card. Click a chosen photo again "
        + "(or \u2715) to take it off.";
    }

    function renderAlbum() {
      if (mode === "fixed") { album.style.display = "none"; return; }
      album.innerHTML = "";
      photos.forEach(function (p, i) {
        var at = cards.findIndex(function (c) { return c.id === String(p.id); });
        var b = el("button", "connote-story-photo" + (at >= 0 ? " chosen" : "") + (mode === "choose" ? "" : " shown"));
        b.type = "button";
        b.setAttribute("data-photo", String(p.id));
        b.title = "Photo " + (i + 1) + (at >= 0 ? " (card " + (at + 1) + ")" : "");
        var img = el("img");
        img.src = p.url;
        img.alt = "Album photo " + (i + 1);
        b.appendChild(img);
        b.appendChild(el("span", "connote-story-badge", at >= 0 ? "card " + (at + 1) : String(i + 1)));
        if (mode === "choose") {
          b.addEventListener("click", function () {
            var where = cards.findIndex(function (c) { return c.id === String(p.id); });
            if (where >= 0) { cards.splice(where, 1); } else if (cards.length < most) {
              cards.push({id: String(p.id), text: ""});
            }
            refresh();
          });
        } else {
          b.disabled = true;
        }
        album.appendChild(b);
      });
    }

    function renderChoices() {
      if (mode !== "pick") { choices.style.display = "none"; return; }
      choices.innerHTML = "";
      sequences.forEach(function (seq, i) {
        var row = el("button", "connote-story-choice-row" + (chosen === i + 1 ? " chosen" : ""));
        row.type = "button";
        row.setAttribute("data-sequence", String(i + 1));
        row.setAttribute("aria-pressed", chosen === i + 1 ? "true" : "false");
        row.appendChild(el("span", "connote-story-choice-label",
          (chosen === i + 1 ? "\u2714 " : "") + "Sequence " + (i + 1) + " (" + seq.length + " photos)"));
        var strip = el("span", "connote-story-choice-strip");
        seq.forEach(function (id, k) {
          var img = el("img");
          img.src = byId[id].url;
          img.alt = "Sequence " + (i + 1) + ", photo " + (k + 1);
          strip.appendChild(img);
        });
        row.appendChild(strip);
        row.addEventListener("click", function () {
          if (chosen === i + 1) return;
          chosen = i + 1;
          cards = seq.map(function (id) { return {id: id, text: ""}; });
          refresh();
        });
        choices.appendChild(row);
      });
    }

    function renderBoard() {
      // detach the sentence boxes, then put box k on card k
      areas.forEach(function (a) { if (a.parentNode) a.parentNode.removeChild(a); });
      board.innerHTML = "";
      var shown = mode === "choose" ? Math.max(need, cards.length) : cards.length;
      if (mode === "pick" && !chosen) {
        board.appendChild(el("div", "connote-story-empty", "Choose a photo sequence above."));
      }
      for (var k = 0; k < areas.length; k++) {
        var c = cards[k];
        var area = areas[k];
        if (k >= shown) { area.value = ""; area.disabled = true; continue; }
        var card = el("div", "connote-story-card");
        if (c) {
          var img = el("img");
          img.src = byId[c.id].url;
          img.alt = "Card " + (k + 1);
          card.appendChild(img);
          if (mode === "choose") {
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

    function setInput(input, value) {
      if (!input || input.value === value) return false;
      input.value = value;
      input.dispatchEvent(new Event("input", {bubbles: true}));
      input.dispatchEvent(new Event("change", {bubbles: true}));
      return true;
    }

    function check() {
      var total = cards.reduce(function (n, c) { return n + words(c.text); }, 0);
      var missing = cards.filter(function (c) { return words(c.text) === 0; }).length;
      var problems = [];
      if (mode === "pick" && !chosen) problems.push("choose one of the photo sequences");
      else if (cards.length < need) problems.push("choose " + (need - cards.length) + " more photo(s)");
      if (missing) problems.push("write a sentence on " + missing + " card(s)");
      problems = problems.concat(textProblems(cards.map(function (c) { return c.text; }), minWords, minEach,
                                              minDistinct));
      var skipped = skipBox && skipBox.checked;
      var value = skipped ? "skip" : (problems.length ? "" : cards.map(function (c) { return c.id; }).join(","));
      var changed = setInput(choiceInput, skipped || !chosen ? "" : String(chosen));
      changed = setInput(order, value) || changed;
      // refresh Potato's "please answer" notice, which would otherwise outlive a now complete story
      if (changed && typeof window.validateRequiredFields === "function") window.validateRequiredFields({});
      full.textContent = cards.map(function (c) { return c.text.trim(); }).filter(Boolean).join(" ");
      status.className = "connote-story-status " + (value ? "ok" : "todo");
      status.textContent = skipped ? "Marked to skip; press Next to go on."
        : (problems.length ? "To finish: " + problems.join("; ") + "."
          : (form.getAttribute("data-done") || "Story complete") + " (" + total + " words); press Next.");
    }

    function refresh() { renderAlbum(); renderChoices(); renderBoard(); check(); }

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
        var data = (inst && inst.data) || {};
        forms.forEach(function (f) { setup(f, data.photos || [], data.sequences || []); });
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
