// "Copy" buttons: copy the text of the element named by data-copy, and say so.
document.addEventListener("click", function (event) {
  var button = event.target.closest("button[data-copy]");
  if (!button) return;
  var text = document.getElementById(button.dataset.copy).textContent.trim();
  var done = function () {
    button.textContent = "Copied";
    if (button.hasAttribute("aria-label")) button.setAttribute("aria-label", "Copied");
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, function () { select(text); done(); });
  } else {
    select(text);
    done();
  }
  function select(value) {
    var area = document.createElement("textarea");
    area.value = value;
    document.body.appendChild(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
});
