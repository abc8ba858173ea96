// Typesets the formulas of the page with the vendored KaTeX (docs/vendor/katex, no CDN).
// pymdownx.arithmatex (generic mode) wraps inline math as <span class="arithmatex">\(...\)</span>
// and display math as <div class="arithmatex">\[...\]</div>; each element is replaced by
// KaTeX's rendering. A formula KaTeX cannot parse is shown as a red .katex-error element,
// which tests/test_docs_site.py looks for.
(function () {
  "use strict";

  function stripDelimiters(text) {
    var tex = text.trim();
    var pairs = [["\\(", "\\)"], ["\\[", "\\]"], ["$$", "$$"], ["$", "$"]];
    for (var i = 0; i < pairs.length; i++) {
      var open = pairs[i][0], close = pairs[i][1];
      if (tex.startsWith(open) && tex.endsWith(close) && tex.length >= open.length + close.length) {
        return tex.slice(open.length, tex.length - close.length);
      }
    }
    return tex;
  }

  function typeset(root) {
    if (typeof katex === "undefined") {
      console.error("KaTeX is not loaded: the formulas stay as TeX source");
      return;
    }
    root.querySelectorAll(".arithmatex").forEach(function (element) {
      if (element.dataset.typeset) {
        return;
      }
      var display = element.tagName === "DIV";
      katex.render(stripDelimiters(element.textContent), element, {
        displayMode: display,
        throwOnError: false,
        output: "htmlAndMathml",
      });
      element.dataset.typeset = "katex";
    });
  }

  // Material for MkDocs announces every page (also after instant navigation) on document$.
  if (typeof document$ !== "undefined") {
    document$.subscribe(function () {
      typeset(document);
    });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () {
      typeset(document);
    });
  } else {
    typeset(document);
  }
})();
