// Prices page: a changed filter applies at once (the form still works without this script).
"use strict";
(function () {
  var form = document.getElementById("filters");
  if (!form) return;
  // On a phone the filters fold under their summary, so the prices come first on screen.
  var box = document.getElementById("filter-box");
  if (box && window.matchMedia && window.matchMedia("(max-width: 600px)").matches) box.open = false;
  form.addEventListener("change", function () {
    // Drop empty fields so the URL holds only the filters in use.
    Array.prototype.forEach.call(form.elements, function (el) {
      if (el.name && !el.value) el.disabled = true;
    });
    form.submit();
  });
})();
