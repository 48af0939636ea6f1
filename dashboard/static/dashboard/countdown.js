// Countdowns: an element with data-countdown="<ISO time>" shows the time left to it, every
// second; when it is reached the page is loaded again, to show what the server says now.
(function () {
  var elements = document.querySelectorAll("[data-countdown]");
  if (!elements.length) return;
  function left(ms) {
    var total = Math.max(0, Math.floor(ms / 1000));
    var days = Math.floor(total / 86400);
    var hours = Math.floor((total % 86400) / 3600);
    var minutes = Math.floor((total % 3600) / 60);
    var seconds = total % 60;
    var parts = [];
    if (days) parts.push(days + (days === 1 ? " day" : " days"));
    if (days || hours) parts.push(hours + " h");
    if (days || hours || minutes) parts.push(minutes + " min");
    parts.push((seconds < 10 && parts.length ? "0" : "") + seconds + " s");
    return parts.join(" ");
  }
  var reloading = false;
  function tick() {
    var now = Date.now();
    elements.forEach(function (element) {
      var ms = Date.parse(element.dataset.countdown) - now;
      if (ms > 0) {
        element.textContent = left(ms);
      } else {
        element.textContent = "no time";
        if (!reloading) {
          reloading = true;
          setTimeout(function () { window.location.reload(); }, 1500);
        }
      }
    });
  }
  tick();
  setInterval(tick, 1000);
})();
