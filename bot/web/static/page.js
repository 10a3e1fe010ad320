// tallybot's public count page: applies live updates from Server-Sent Events.
// Every text is set with textContent (never as markup); times are shown in the reader's zone.
"use strict";
(function () {
  var main = document.getElementById("count");
  if (!main || !window.EventSource) {
    return;
  }
  var eventsUrl = main.getAttribute("data-events");
  var seq = Number(main.getAttribute("data-seq")) || 0;
  var live = document.getElementById("live");
  var source = null;
  var backoff = 1000;
  var dateFormat = new Intl.DateTimeFormat(undefined, {
    dateStyle: "medium",
    timeStyle: "short",
  });

  function byId(id) {
    return document.getElementById(id);
  }

  function make(tag, text, className) {
    var node = document.createElement(tag);
    if (text) {
      node.textContent = text;
    }
    if (className) {
      node.className = className;
    }
    return node;
  }

  function localTime(node) {
    var at = new Date(node.getAttribute("datetime"));
    if (!isNaN(at.getTime())) {
      node.title = node.textContent;
      node.textContent = dateFormat.format(at);
    }
  }

  function timeNode(segment) {
    var node = make("time", segment.when);
    node.setAttribute("datetime", segment.iso);
    localTime(node);
    return node;
  }

  function setTimed(node, segments) {
    node.replaceChildren();
    segments.forEach(function (s) {
      node.append(document.createTextNode(s.text));
      if (s.iso) {
        node.append(timeNode(s));
      }
    });
  }

  function setRows(rows) {
    var body = byId("rows");
    body.replaceChildren();
    rows.forEach(function (r) {
      var cls = "choice c" + (r.position % 7);
      if (r.leading) {
        cls += " leading";
      }
      if (r.winner) {
        cls += " winner";
      }
      var tr = make("tr", "", cls);
      var th = make("th", r.label);
      th.scope = "row";
      tr.append(th, make("td", r.votes, "num"), make("td", r.share, "num"), make("td", r.note));
      body.append(tr);
    });
  }

  function addEntry(entry) {
    var list = byId("history");
    if (!list || !entry || list.querySelector('li[data-seq="' + entry.seq + '"]')) {
      return;
    }
    var li = make("li");
    li.setAttribute("data-seq", String(entry.seq));
    li.append(make("span", "#" + entry.seq, "seq"), " ", timeNode(entry.at), " ");
    li.append(make("span", entry.headline, "entry"));
    list.prepend(li);
  }

  function apply(v) {
    if (typeof v.seq !== "number" || v.seq <= seq) {
      return;
    }
    seq = v.seq;
    main.setAttribute("data-seq", String(seq));
    byId("title").textContent = v.title;
    var state = byId("state");
    state.textContent = v.state_text;
    state.className = "state state-" + v.state;
    if (live.className === "live on") {
      sayLive(); // a count that just went final says so
    }
    byId("headline").textContent = v.headline;
    var caption = byId("caption-seq");
    if (caption) {
      caption.textContent = String(v.seq);
    }
    setRows(v.rows);
    byId("figures").hidden = v.rows.length === 0;
    var lines = byId("lines");
    lines.replaceChildren();
    v.lines.forEach(function (line) {
      lines.append(make("li", line));
    });
    setTimed(byId("footer"), v.footer);
    setTimed(byId("freshness"), v.freshness);
    byId("freshness").hidden = v.freshness.length === 0;
    if (v.chart) {
      var chart = byId("chart");
      byId("chart-narrow").srcset = v.chart_narrow;
      chart.src = v.chart;
      chart.alt = v.description;
      byId("chart-section").hidden = false;
    }
    addEntry(v.entry);
    document.title = v.title + ": " + v.headline;
  }

  function sayLive() {
    if (byId("state").className.indexOf("state-final") >= 0) {
      live.textContent = "Final: the count is over; a correction would still appear here.";
    } else {
      live.textContent = "Live: new figures appear here as they are counted.";
    }
    live.className = "live on";
  }

  function connect() {
    source = new EventSource(eventsUrl + "?last=" + seq);
    source.addEventListener("tally", function (event) {
      var data;
      try {
        data = JSON.parse(event.data);
      } catch (e) {
        return;
      }
      apply(data);
    });
    source.onopen = function () {
      backoff = 1000;
      sayLive();
    };
    source.onerror = function () {
      live.textContent = "Reconnecting for live updates…";
      live.className = "live off";
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        window.setTimeout(connect, backoff);
        backoff = Math.min(backoff * 2, 30000);
      }
    };
  }

  document.querySelectorAll("time[datetime]").forEach(localTime);
  live.textContent = "Connecting for live updates…";
  connect();
})();
