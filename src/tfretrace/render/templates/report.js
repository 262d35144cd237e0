// Filtering by function and sorting of the ranked table; reads names from the JSON block only.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("tfretrace-data").textContent);
  var filter = document.getElementById("filter");
  var only = document.getElementById("only-retracing");
  var count = document.getElementById("shown-count");
  if (!filter) { return; }

  function apply() {
    var query = filter.value.trim().toLowerCase();
    var shown = 0;
    data.functions.forEach(function (f) {
      var text = (f.name + " " + f.location).toLowerCase();
      var visible = text.indexOf(query) !== -1 && (!only.checked || f.retracing);
      if (visible) { shown += 1; }
      document.querySelectorAll('[data-fn="' + f.id + '"]').forEach(function (el) {
        el.hidden = !visible;
      });
    });
    count.textContent = shown + " of " + data.functions.length + " functions shown";
  }
  filter.addEventListener("input", apply);
  only.addEventListener("change", apply);
  apply();

  // Header buttons: reachable by Tab, Enter or Space sort; aria-sort says the current order.
  // A first click sorts text A to Z and numbers largest first; the next click reverses.
  var table = document.getElementById("ranking");
  var headers = table.querySelectorAll("th");
  headers.forEach(function (th, column) {
    th.querySelector("button").addEventListener("click", function () {
      var numeric = th.getAttribute("data-type") === "num";
      var now = th.getAttribute("aria-sort");
      var descending = now === "none" ? numeric : now === "ascending";
      headers.forEach(function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].getAttribute("data-sort");
        var y = b.cells[column].getAttribute("data-sort");
        var order = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        return descending ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
})();
