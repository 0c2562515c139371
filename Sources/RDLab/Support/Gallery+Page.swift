extension Gallery {
    /// The page around the cards and the configurations' JSON.
    ///
    /// The script, all inline, sorts and filters the cards (model, tag, modified-date range;
    /// sort by date, name, model or steps) and opens a configuration's page on a click, Enter,
    /// or a `#name` fragment in the address. Script errors are collected from the first line on
    /// (`window.galleryErrors`, and `data-errors` on `<html>`); with `?selftest` in the address
    /// the page also exercises every control once on load and writes the outcome to
    /// `data-selftest` on `<html>` ("ok" or the failures), which the tests read through headless
    /// Chromium.
    static func page(title: String, summary: String, cards: String, json: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en" data-errors="0">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escaped(title))</title>
        <script>
        window.galleryErrors = [];
        window.addEventListener("error", function (event) {
          window.galleryErrors.push(String(event.message) + " (line " + event.lineno + ")");
          document.documentElement.setAttribute("data-errors", String(window.galleryErrors.length));
        });
        window.addEventListener("unhandledrejection", function (event) {
          window.galleryErrors.push("unhandled rejection: " + String(event.reason));
          document.documentElement.setAttribute("data-errors", String(window.galleryErrors.length));
        });
        </script>
        <style>
        \(style)
        </style>
        </head>
        <body>
        <header>
        <h1>rdlab gallery</h1>
        <p class="summary">\(summary).</p>
        <div class="controls" id="controls">
        <label>Model <select id="filter-model"><option value="">all</option></select></label>
        <label>Tag <select id="filter-tag"><option value="">all</option></select></label>
        <label>Modified from <input type="date" id="filter-from"></label>
        <label>to <input type="date" id="filter-to"></label>
        <label>Sort <select id="sort">
        <option value="saved">as saved</option>
        <option value="newest">newest first</option>
        <option value="oldest">oldest first</option>
        <option value="name">name</option>
        <option value="model">model</option>
        <option value="steps">most steps</option>
        </select></label>
        <span id="count" class="count"></span>
        </div>
        </header>
        <main>
        <div class="grid" id="grid">
        \(cards)
        </div>
        <p id="empty" class="empty" hidden>No configuration matches these filters.</p>
        </main>
        <div id="detail" class="detail" hidden>
        <div class="panel" role="dialog" aria-modal="true" aria-labelledby="detail-title">
        <div class="panel-head">
        <button type="button" id="detail-previous" title="previous (←)">‹</button>
        <h2 id="detail-title"></h2>
        <button type="button" id="detail-next" title="next (→)">›</button>
        <button type="button" id="detail-close" class="close" title="close (Esc)">×</button>
        </div>
        <div id="detail-body"></div>
        </div>
        </div>
        <script type="application/json" id="gallery-data">
        \(json)
        </script>
        <script>
        \(script)
        </script>
        </body>
        </html>

        """
    }

    /// The page's style sheet.
    static let style = """
        :root { color-scheme: dark; --bg: #15171c; --panel: #1f232b; --line: #313743;
          --text: #e4e7ec; --muted: #9aa3b2; --accent: #7cc4ff; }
        * { box-sizing: border-box; }
        body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
          background: var(--bg); color: var(--text); margin: 0; }
        header { padding: 1.2em 2em 0.6em; border-bottom: 1px solid var(--line);
          position: sticky; top: 0; background: rgba(21, 23, 28, 0.96); z-index: 2; }
        h1 { margin: 0 0 0.2em; font-size: 1.5em; letter-spacing: 0.02em; }
        .summary { margin: 0 0 0.8em; color: var(--muted); }
        code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; }
        .controls { display: flex; flex-wrap: wrap; gap: 0.6em 1.2em; align-items: center;
          font-size: 0.9em; color: var(--muted); }
        .controls select, .controls input { background: var(--panel); color: var(--text);
          border: 1px solid var(--line); border-radius: 6px; padding: 0.25em 0.4em; margin-left: 0.3em; }
        .count { margin-left: auto; }
        main { padding: 1.5em 2em 3em; }
        .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(196px, 1fr));
          gap: 1.2em; }
        .card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px;
          padding: 12px; cursor: pointer; transition: transform 0.12s, border-color 0.12s; }
        .card:hover, .card:focus { border-color: var(--accent); transform: translateY(-2px);
          outline: none; }
        .card[hidden] { display: none; }
        .thumb { width: 100%; aspect-ratio: 1; background: #000; border-radius: 6px;
          display: flex; align-items: center; justify-content: center; overflow: hidden; }
        .thumb img { width: 100%; height: 100%; object-fit: contain; image-rendering: pixelated; }
        .nothumb { color: var(--muted); font-size: 0.8em; }
        .name { font-weight: 600; margin-top: 0.55em; overflow-wrap: anywhere; }
        .name em { font-weight: 400; color: var(--muted); }
        .meta { font-size: 0.78em; color: var(--muted); margin-top: 0.2em; overflow-wrap: anywhere; }
        .meta.params { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.72em; }
        .model { color: var(--text); }
        .tag { display: inline-block; background: #2c3b52; color: #cfe6ff; border-radius: 999px;
          padding: 0 0.55em; margin: 0.1em 0.15em 0 0; font-size: 0.95em; }
        .empty { color: var(--muted); }
        .detail { position: fixed; inset: 0; background: rgba(6, 8, 12, 0.82); z-index: 5;
          overflow-y: auto; padding: 2.5vh 2vw; }
        .detail[hidden] { display: none; }
        .panel { background: var(--panel); border: 1px solid var(--line); border-radius: 12px;
          max-width: 1280px; margin: 0 auto; padding: 1em 1.5em 1.5em; }
        .panel-head { display: flex; align-items: center; gap: 0.6em; }
        .panel-head h2 { margin: 0; font-size: 1.3em; flex: 1; overflow-wrap: anywhere; }
        .panel-head button { background: #2a303b; color: var(--text); border: 1px solid var(--line);
          border-radius: 6px; font-size: 1.2em; width: 2em; height: 2em; cursor: pointer; }
        .panel-head button:hover { border-color: var(--accent); }
        .subtitle { color: var(--muted); margin: 0.2em 0 1em; }
        .section { margin-top: 1.3em; }
        .section h3 { font-size: 0.85em; text-transform: uppercase; letter-spacing: 0.08em;
          color: var(--muted); margin: 0 0 0.6em; font-weight: 600; }
        .pictures { display: flex; flex-wrap: wrap; gap: 1.2em; align-items: flex-start; }
        figure { margin: 0; }
        figcaption { font-size: 0.82em; color: var(--muted); margin-top: 0.35em; }
        .picture { display: block; background: #000; image-rendering: pixelated; border-radius: 4px; }
        .main-picture { width: min(480px, 88vw); height: auto; }
        .map-picture { width: 232px; height: auto; }
        .colorbar { height: 12px; border-radius: 3px; margin-top: 6px; }
        .bar-labels { display: flex; justify-content: space-between; font-size: 0.75em;
          color: var(--muted); font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
        .timeline { display: flex; gap: 1.2em; flex-wrap: wrap; align-items: center; }
        .frame { width: 256px; height: 256px; object-fit: contain; background: #000;
          image-rendering: pixelated; border-radius: 4px; }
        .timeline-controls { display: flex; flex-direction: column; gap: 0.6em; min-width: 260px; flex: 1; }
        .timeline-controls input[type=range] { width: 100%; }
        .timeline-controls button { align-self: flex-start; background: #2a303b; color: var(--text);
          border: 1px solid var(--line); border-radius: 6px; padding: 0.35em 1em; cursor: pointer; }
        .plots { display: flex; flex-wrap: wrap; gap: 1.2em; }
        .plot { background: #181b21; border: 1px solid var(--line); border-radius: 8px; }
        .plot text { fill: var(--muted); font-size: 11px; font-family: ui-monospace, monospace; }
        .plot .title { fill: var(--text); font-size: 12px; }
        table.parameters { border-collapse: collapse; font-size: 0.9em; }
        table.parameters td { padding: 0.15em 1.2em 0.15em 0; }
        table.parameters td:first-child { color: var(--muted); }
        .facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(280px, 1fr)); gap: 1.2em; }
        .notes { white-space: pre-wrap; margin: 0; color: var(--text); }
        .command { display: flex; gap: 0.6em; align-items: center; }
        .command code { background: #111318; border: 1px solid var(--line); border-radius: 6px;
          padding: 0.55em 0.8em; flex: 1; overflow-x: auto; white-space: nowrap; font-size: 0.85em; }
        .command button { background: #2a303b; color: var(--text); border: 1px solid var(--line);
          border-radius: 6px; padding: 0.45em 0.9em; cursor: pointer; }
        .hint { color: var(--muted); font-size: 0.8em; margin-top: 0.4em; }
        """

    /// The page's script.
    static let script = #"""
        "use strict";
        (function () {
          var data = JSON.parse(document.getElementById("gallery-data").textContent);
          var configurations = data.configurations;
          var grid = document.getElementById("grid");
          var cards = Array.prototype.slice.call(grid.querySelectorAll(".card"));
          var byIndex = {};
          cards.forEach(function (card) { byIndex[card.dataset.index] = card; });
          var modelSelect = document.getElementById("filter-model");
          var tagSelect = document.getElementById("filter-tag");
          var fromInput = document.getElementById("filter-from");
          var toInput = document.getElementById("filter-to");
          var sortSelect = document.getElementById("sort");
          var detail = document.getElementById("detail");
          var body = document.getElementById("detail-body");
          var current = -1;
          var timer = null;

          function element(tag, attributes, children) {
            var node = document.createElement(tag);
            Object.keys(attributes || {}).forEach(function (key) {
              if (key === "text") { node.textContent = attributes[key]; }
              else { node.setAttribute(key, attributes[key]); }
            });
            (children || []).forEach(function (child) { node.appendChild(child); });
            return node;
          }
          var svgNS = "http://www.w3.org/2000/svg";
          function svg(tag, attributes) {
            var node = document.createElementNS(svgNS, tag);
            Object.keys(attributes || {}).forEach(function (key) {
              if (key === "text") { node.textContent = attributes[key]; }
              else { node.setAttribute(key, attributes[key]); }
            });
            return node;
          }
          function number(value) {
            if (value === null || value === undefined) { return "–"; }
            var magnitude = Math.abs(value);
            if (magnitude !== 0 && (magnitude < 0.001 || magnitude >= 10000)) { return value.toExponential(2); }
            return String(Number(value.toPrecision(4)));
          }

          // Filters: the models and tags that occur.
          function addOptions(select, values) {
            values.forEach(function (value) {
              select.appendChild(element("option", { value: value[0], text: value[1] }));
            });
          }
          var models = {};
          var tags = {};
          configurations.forEach(function (configuration) {
            models[configuration.model] = configuration.modelName;
            configuration.tags.forEach(function (tag) { tags[tag.toLowerCase()] = tag; });
          });
          addOptions(modelSelect, Object.keys(models).sort().map(function (key) { return [key, models[key]]; }));
          addOptions(tagSelect, Object.keys(tags).sort().map(function (key) { return [key, tags[key]]; }));

          function visibleCards() {
            return cards.filter(function (card) { return !card.hidden; });
          }
          function update() {
            var model = modelSelect.value;
            var tag = tagSelect.value;
            var from = fromInput.value;
            var to = toInput.value;
            cards.forEach(function (card) {
              var day = card.dataset.modified.slice(0, 10);
              var cardTags = card.dataset.tags ? card.dataset.tags.toLowerCase().split(" ") : [];
              card.hidden = (model && card.dataset.model !== model)
                || (tag && cardTags.indexOf(tag) < 0)
                || (from && day < from) || (to && day > to);
            });
            var order = sortSelect.value;
            var sorted = cards.slice().sort(function (a, b) {
              var x = configurations[a.dataset.index];
              var y = configurations[b.dataset.index];
              switch (order) {
                case "newest": return y.modified < x.modified ? -1 : y.modified > x.modified ? 1 : 0;
                case "oldest": return x.modified < y.modified ? -1 : x.modified > y.modified ? 1 : 0;
                case "name": return x.name.localeCompare(y.name);
                case "model": return x.model.localeCompare(y.model) || x.name.localeCompare(y.name);
                case "steps": return Number(b.dataset.steps) - Number(a.dataset.steps);
                default: return Number(a.dataset.index) - Number(b.dataset.index);
              }
            });
            sorted.forEach(function (card) { grid.appendChild(card); });
            var shown = visibleCards().length;
            document.getElementById("count").textContent = shown + " of " + cards.length + " shown";
            document.getElementById("empty").hidden = shown > 0;
          }
          [modelSelect, tagSelect, fromInput, toInput, sortSelect].forEach(function (control) {
            control.addEventListener("change", update);
            control.addEventListener("input", update);
          });

          // A configuration's page.
          function colorBar(chemical) {
            var stops = data.colorMaps[chemical.map] || [];
            var bar = element("div", { class: "colorbar" });
            bar.style.background = "linear-gradient(to right, " + stops.join(", ") + ")";
            var middle = (chemical.low + chemical.high) / 2;
            var labels = element("div", { class: "bar-labels" }, [
              element("span", { text: number(chemical.low) }),
              element("span", { text: number(middle) }),
              element("span", { text: number(chemical.high) })
            ]);
            return [bar, labels];
          }

          function plot(configuration, chemicalIndex) {
            var width = 400, height = 220, left = 56, right = 30, top = 28, bottom = 36;
            var points = configuration.snapshots.map(function (snapshot) {
              var stats = snapshot.stats[chemicalIndex] || [null, null, null];
              return { step: snapshot.step, low: stats[0], mean: stats[1], high: stats[2] };
            }).filter(function (point) { return point.mean !== null; });
            var root = svg("svg", { class: "plot", width: width, height: height,
              viewBox: "0 0 " + width + " " + height, role: "img",
              "aria-label": configuration.chemicalNames[chemicalIndex] + " over the snapshots" });
            root.appendChild(svg("text", { class: "title", x: left, y: 16,
              text: configuration.chemicalNames[chemicalIndex] + ": mean and range (min to max)" }));
            if (points.length === 0) {
              root.appendChild(svg("text", { x: left, y: height / 2, text: "no finite values" }));
              return root;
            }
            var minStep = points[0].step, maxStep = points[points.length - 1].step;
            if (maxStep === minStep) { minStep -= 1; maxStep += 1; }
            var low = Math.min.apply(null, points.map(function (p) { return p.low; }));
            var high = Math.max.apply(null, points.map(function (p) { return p.high; }));
            if (!(high > low)) { low -= 0.5; high += 0.5; }
            var pad = (high - low) * 0.05; low -= pad; high += pad;
            function x(step) { return left + (step - minStep) / (maxStep - minStep) * (width - left - right); }
            function y(value) { return top + (high - value) / (high - low) * (height - top - bottom); }
            for (var t = 0; t <= 4; t++) {
              var value = low + (high - low) * t / 4;
              root.appendChild(svg("line", { x1: left, x2: width - right, y1: y(value), y2: y(value),
                stroke: "#2a303b", "stroke-width": 1 }));
              root.appendChild(svg("text", { x: left - 6, y: y(value) + 4, "text-anchor": "end", text: number(value) }));
            }
            [minStep, (minStep + maxStep) / 2, maxStep].forEach(function (step) {
              root.appendChild(svg("text", { x: x(step), y: height - bottom + 16, "text-anchor": "middle",
                text: String(Math.round(step)) }));
            });
            root.appendChild(svg("text", { x: (left + width - right) / 2, y: height - 4,
              "text-anchor": "middle", text: "step" }));
            var color = chemicalIndex % 2 === 0 ? "#5ec962" : "#fc8961";
            var band = points.map(function (p) { return x(p.step) + "," + y(p.high); })
              .concat(points.slice().reverse().map(function (p) { return x(p.step) + "," + y(p.low); }));
            if (points.length > 1) {
              root.appendChild(svg("polygon", { class: "range", points: band.join(" "), fill: color,
                "fill-opacity": 0.22, stroke: "none" }));
              root.appendChild(svg("polyline", { class: "mean", fill: "none", stroke: color, "stroke-width": 2,
                points: points.map(function (p) { return x(p.step) + "," + y(p.mean); }).join(" ") }));
            }
            points.forEach(function (p) {
              root.appendChild(svg("line", { class: "range", x1: x(p.step), x2: x(p.step), y1: y(p.low), y2: y(p.high),
                stroke: color, "stroke-opacity": 0.6, "stroke-width": 3 }));
              var dot = svg("circle", { class: "mean", cx: x(p.step), cy: y(p.mean), r: 3.5, fill: color });
              dot.appendChild(svg("title", { text: "step " + p.step + ": min " + number(p.low) +
                ", mean " + number(p.mean) + ", max " + number(p.high) }));
              root.appendChild(dot);
            });
            return root;
          }

          function section(title, children) {
            return element("div", { class: "section" }, [element("h3", { text: title })].concat(children));
          }

          function stopAnimation() {
            if (timer !== null) { clearInterval(timer); timer = null; }
            var button = document.getElementById("play");
            if (button) { button.textContent = "▶ Play"; }
          }

          function showFrame(configuration, index) {
            var snapshot = configuration.snapshots[index];
            var frame = document.getElementById("frame");
            if (!snapshot || !frame) { return; }
            if (snapshot.thumb) { frame.src = snapshot.thumb; }
            document.getElementById("frame-slider").value = String(index);
            document.getElementById("frame-label").textContent = "step " + snapshot.step + " (" +
              (index + 1) + " of " + configuration.snapshots.length + "), saved " + snapshot.timestamp;
          }

          function open(index) {
            stopAnimation();
            var configuration = configurations[index];
            if (!configuration) { return; }
            current = index;
            document.getElementById("detail-title").textContent = configuration.name +
              (configuration.autoSaved ? " (last run)" : "");
            body.textContent = "";
            body.appendChild(element("p", { class: "subtitle", text: configuration.modelName +
              (configuration.preset ? " · preset " + configuration.preset : "") + " · " +
              configuration.width + " × " + configuration.height + " · " + configuration.precision +
              " · " + configuration.boundary + " boundary" }));

            var pictures = [];
            if (configuration.picture) {
              var last = configuration.snapshots[configuration.snapshots.length - 1];
              pictures.push(element("figure", {}, [
                element("img", { class: "picture main-picture", src: configuration.picture,
                  alt: configuration.name + ", latest state" }),
                element("figcaption", { text: "Original look, step " + last.step + ", " +
                  (configuration.pictureShrunk ? "shrunk to 1024 px" : "one pixel per cell") })
              ]));
              configuration.chemicals.forEach(function (chemical) {
                pictures.push(element("figure", { class: "chemical" }, [
                  element("img", { class: "picture map-picture", src: chemical.image,
                    alt: chemical.name + " in " + chemical.map })
                ].concat(colorBar(chemical)).concat([
                  element("figcaption", { text: chemical.name + " (" + chemical.map + ")" })
                ])));
              });
              body.appendChild(section("Latest state", [element("div", { class: "pictures" }, pictures)]));
            } else {
              body.appendChild(section("Latest state", [element("p", { text: "no saved state" })]));
            }

            var snapshots = configuration.snapshots;
            if (snapshots.length > 0) {
              var slider = element("input", { type: "range", id: "frame-slider", min: "0",
                max: String(snapshots.length - 1), value: String(snapshots.length - 1), step: "1" });
              if (snapshots.length < 2) { slider.disabled = true; }
              var play = element("button", { type: "button", id: "play", text: "▶ Play" });
              if (snapshots.length < 2) { play.disabled = true; }
              slider.addEventListener("input", function () {
                stopAnimation();
                showFrame(configuration, Number(slider.value));
              });
              play.addEventListener("click", function () {
                if (timer !== null) { stopAnimation(); return; }
                play.textContent = "❚❚ Pause";
                var at = Number(slider.value);
                if (at >= snapshots.length - 1) { at = -1; }
                timer = setInterval(function () {
                  at += 1;
                  if (at >= snapshots.length) { stopAnimation(); return; }
                  showFrame(configuration, at);
                }, 600);
              });
              body.appendChild(section("Timeline: " + snapshots.length + " snapshot" +
                (snapshots.length === 1 ? "" : "s"), [element("div", { class: "timeline" }, [
                  element("img", { class: "frame", id: "frame", alt: "snapshot" }),
                  element("div", { class: "timeline-controls" }, [
                    slider, element("div", { id: "frame-label", class: "mono" }), play,
                    element("div", { class: "hint", text: "Each snapshot's thumbnail; resume a configuration to add snapshots." })
                  ])
                ])]));
              showFrame(configuration, snapshots.length - 1);
              body.appendChild(section("Chemicals over the snapshots", [element("div", { class: "plots" },
                configuration.chemicalNames.map(function (name, chemical) { return plot(configuration, chemical); }))]));
            }

            var rows = configuration.parameters.map(function (parameter) {
              return element("tr", {}, [element("td", { text: parameter[0] }),
                element("td", { class: "mono", text: parameter[1] === null ? "not a number" : String(parameter[1]) })]);
            });
            var tagNodes = configuration.tags.length ? configuration.tags.map(function (tag) {
              return element("span", { class: "tag", text: tag });
            }) : [element("span", { class: "hint", text: "none (add with rdlab edit NAME --tag TAG)" })];
            body.appendChild(element("div", { class: "facts" }, [
              section("Parameters", [element("table", { class: "parameters" }, rows)]),
              section("Notes", [element("p", { class: "notes",
                text: configuration.notes || "none (write some with rdlab edit NAME --notes TEXT)" })]),
              section("Tags and dates", [element("div", {}, tagNodes),
                element("p", { class: "hint", text: "created " + configuration.created +
                  ", modified " + configuration.modified })])
            ]));
            if (configuration.command) {
              var code = element("code", { id: "command", text: configuration.command });
              var copy = element("button", { type: "button", text: "Copy" });
              copy.addEventListener("click", function () {
                var range = document.createRange();
                range.selectNodeContents(code);
                var selection = window.getSelection();
                selection.removeAllRanges();
                selection.addRange(range);
                if (navigator.clipboard && window.isSecureContext) {
                  navigator.clipboard.writeText(configuration.command).catch(function () {});
                }
                copy.textContent = "Selected";
              });
              body.appendChild(section("Reproduce", [element("div", { class: "command" }, [code, copy]),
                element("p", { class: "hint", text: "Computes the latest state again from the model's seed " +
                  "(runs are deterministic and resuming is bit-identical), with the current parameters." })]));
            }
            detail.hidden = false;
            document.body.style.overflow = "hidden";
            if (location.hash !== "#" + encodeURIComponent(configuration.name)) {
              history.replaceState(null, "", "#" + encodeURIComponent(configuration.name));
            }
          }

          function close() {
            stopAnimation();
            detail.hidden = true;
            document.body.style.overflow = "";
            current = -1;
            if (location.hash) { history.replaceState(null, "", location.pathname + location.search); }
          }

          function step(offset) {
            var visible = visibleCards().map(function (card) { return Number(card.dataset.index); });
            var at = visible.indexOf(current);
            if (visible.length === 0) { return; }
            open(visible[(at + offset + visible.length) % visible.length]);
          }

          cards.forEach(function (card) {
            card.addEventListener("click", function () { open(Number(card.dataset.index)); });
            card.addEventListener("keydown", function (event) {
              if (event.key === "Enter") { open(Number(card.dataset.index)); }
            });
          });
          document.getElementById("detail-close").addEventListener("click", close);
          document.getElementById("detail-previous").addEventListener("click", function () { step(-1); });
          document.getElementById("detail-next").addEventListener("click", function () { step(1); });
          detail.addEventListener("click", function (event) { if (event.target === detail) { close(); } });
          document.addEventListener("keydown", function (event) {
            if (detail.hidden) { return; }
            if (event.key === "Escape") { close(); }
            if (event.key === "ArrowLeft") { step(-1); }
            if (event.key === "ArrowRight") { step(1); }
          });

          function openFromHash() {
            var name = decodeURIComponent(location.hash.slice(1));
            if (!name) { return; }
            for (var i = 0; i < configurations.length; i++) {
              if (configurations[i].name === name) { open(i); return; }
            }
          }
          window.addEventListener("hashchange", openFromHash);
          update();
          openFromHash();

          // ?selftest: use every control once and report into the page.
          if (/[?&]selftest\b/.test(location.search)) {
            var failures = [];
            function check(condition, what) { if (!condition) { failures.push(what); } }
            try {
              ["newest", "oldest", "name", "model", "steps", "saved"].forEach(function (order) {
                sortSelect.value = order;
                update();
                check(visibleCards().length === cards.length, "sorting by " + order + " hides cards");
              });
              sortSelect.value = "name";
              update();
              var names = visibleCards().map(function (card) { return configurations[card.dataset.index].name; });
              check(JSON.stringify(names) === JSON.stringify(names.slice().sort(function (a, b) { return a.localeCompare(b); })),
                "sorting by name does not order the cards by name");
              Object.keys(models).forEach(function (model) {
                modelSelect.value = model;
                update();
                var shown = visibleCards();
                check(shown.length > 0 && shown.every(function (card) { return card.dataset.model === model; }),
                  "the model filter " + model + " shows other models");
              });
              modelSelect.value = "";
              Object.keys(tags).forEach(function (tag) {
                tagSelect.value = tag;
                update();
                check(visibleCards().length > 0, "the tag filter " + tag + " shows nothing");
              });
              tagSelect.value = "";
              fromInput.value = "2999-01-01";
              update();
              check(visibleCards().length === 0, "a date filter in the future shows cards");
              fromInput.value = "";
              update();
              configurations.forEach(function (configuration, index) {
                open(index);
                check(!detail.hidden, "the page of " + configuration.name + " does not open");
                check(body.querySelectorAll("svg.plot").length === configuration.chemicalNames.length ||
                  configuration.snapshots.length === 0, "the page of " + configuration.name + " lacks a plot");
                check(body.querySelectorAll(".colorbar").length === (configuration.chemicals || []).length,
                  "the page of " + configuration.name + " lacks a colour bar");
                if (configuration.snapshots.length > 1) {
                  showFrame(configuration, 0);
                  check(document.getElementById("frame-label").textContent.indexOf("step " +
                    configuration.snapshots[0].step + " ") === 0, "the timeline does not move");
                  document.getElementById("play").click();
                  check(timer !== null, "play does not start the animation");
                  document.getElementById("play").click();
                  check(timer === null, "pause does not stop the animation");
                }
                step(1);
                close();
              });
            } catch (error) {
              failures.push("exception: " + error.message);
            }
            failures = failures.concat(window.galleryErrors);
            document.documentElement.setAttribute("data-selftest", failures.length ? failures.join("; ") : "ok");
          }
        })();
        """#
}
