"""The token-score page: its structure (parsed here) and a real headless chromium load
(the DOM and computed styles read in the browser), and a screenshot (skipped, with the
reason, when chromium is not installed; `make browser` installs it)."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from sigmoid_head.evaluation.html import colour, token_texts, write_page
from sigmoid_head.evaluation.spans import SpanConfig, add_errors
from sigmoid_head.scoring.force_decode import score_records

RECORDS = [
    {"source": "el perro come", "candidate": "the dog eats", "label": 1},
    {"source": "la casa grande", "candidate": "the big house <b>&", "label": 0},
]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class _Spans(HTMLParser):
    """Collects the token spans (class, data-p, data-tip, text) of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[dict] = []
        self._open: dict | None = None
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        a = dict(attrs)
        if tag == "span" and "tok" in (a.get("class") or "").split():
            self._open = {**a, "text": ""}

    def handle_data(self, data):
        if self._open is not None:
            self._open["text"] += data

    def handle_endtag(self, tag):
        if tag == "span" and self._open is not None:
            self.tokens.append(self._open)
            self._open = None


@pytest.fixture(scope="module")
def page(causal, tmp_path_factory) -> tuple[Path, list[dict]]:
    model = causal
    rows = score_records(model, RECORDS, with_tokens=True, progress=False)
    rows = [{**rec, **r} for rec, r in zip(RECORDS, rows, strict=True)]
    median = sorted(w["sigmoid"] for r in rows for w in r["words"])[3]
    add_errors(rows, SpanConfig(threshold=median))  # the lowest-scored words become spans
    path = write_page(tmp_path_factory.mktemp("html") / "page.html", rows, model.tokenizer)
    return path, rows


def test_page_structure(page) -> None:
    path, rows = page
    text = path.read_text(encoding="utf-8")
    parser = _Spans()
    parser.feed(text)
    n_tokens = sum(1 for r in rows for t in r["tokens"] if t["token"] not in ("</s>",))
    assert len(parser.tokens) == 3 * n_tokens  # one coloured line per method
    assert {t["data-method"] for t in parser.tokens} == {"sigmoid", "softmax", "boostedprob"}
    for tok in parser.tokens:
        assert float(tok["data-p"]) >= 0 and "sigmoid" in tok["data-tip"]
    # the texts of one line spell the candidate, escaped characters included
    line = [t["text"] for t in parser.tokens if t["data-method"] == "sigmoid"][-len(rows[1]["tokens"]) + 1:]
    assert "".join(line).strip() == RECORDS[1]["candidate"]
    n_err = sum(1 for t in parser.tokens if "err" in t["class"].split())
    assert n_err >= 3 and sum(len(r["errors"]) for r in rows) >= 1
    assert not parser.tags & {"script", "img", "link"}  # self-contained, nothing fetched
    assert not re.search(r"<b>&(?![a-z]+;)", text)  # the candidate's markup is escaped


def test_the_page_shows_every_registered_sequence_column() -> None:
    """A sequence baseline (or a plugin's column) in the rows is a row of the item's
    sequence table, with its direction; a registered column the rows lack is not."""
    from sigmoid_head.evaluation.html import render_page
    from sigmoid_head.registry import columns as cols

    tok = {"token": "a", "start": 0, "end": 1, "sigmoid": 0.5, "softmax": 0.4}
    row = {"candidate": "a", "tokens": [tok], "words": [], "sigmoid": 0.5, "softmax": 0.4,
           "self_judge": 0.625, "entropy_mean": 1.25, "zz_judge": 0.875}
    cols.register(cols.Column("zz_judge", cols.SEQUENCE, cols.HIGHER_BETTER, "[0, 1]", "a test"))
    try:
        text = render_page([row], [["a"]])
    finally:
        cols.unregister("zz_judge")
    for key, value, direction in (("self_judge", "0.625", "higher = better"),
                                  ("entropy_mean", "1.25", "higher = worse"),
                                  ("zz_judge", "0.875", "higher = better")):
        assert re.search(rf"<th>{key}</th><td[^>]*>{value} <small>\({direction}\)", text), key
    assert "<th>comet_kiwi</th>" not in text  # registered, not in the row


def test_colour_scale() -> None:
    assert colour(0.0) == "hsl(0,75%,78%)" and colour(1.0) == "hsl(120,75%,78%)"
    assert colour(2.0) == colour(1.0)


def test_token_texts_spell_the_text(tiny_tokenizer) -> None:
    text = "la ciudad pequeña"
    pieces = tiny_tokenizer.convert_ids_to_tokens(tiny_tokenizer(text, add_special_tokens=False)["input_ids"])
    assert "".join(token_texts(tiny_tokenizer, [*pieces, "</s>"])) == text


def _chromium(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", "--hide-scrollbars"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True,
                          timeout=timeout)


# A page beside the tested one that loads it in a frame and reports, from the DOM and the
# styles as chromium computed them, what a reader would see; --dump-dom prints the report.
HARNESS = """<!doctype html><html><body><pre id="out">not run</pre>
<iframe id="f" src="%s" width="1000" height="700"></iframe><script>
document.getElementById("f").addEventListener("load", () => {
  let res;
  try {
    const w = document.getElementById("f").contentWindow, d = w.document;
    const tokens = [...d.querySelectorAll(".tok")].map(e => {
      const r = e.getBoundingClientRect(), s = w.getComputedStyle(e);
      return {p: +e.dataset.p, method: e.dataset.method, tip: e.dataset.tip, text: e.textContent,
              err: e.classList.contains("err"), bg: s.backgroundColor, w: r.width, h: r.height,
              under: [s.borderBottomStyle, s.borderBottomWidth, s.borderBottomColor].join(" ")};
    });
    const rules = [...d.styleSheets].flatMap(sh => [...sh.cssRules]);
    const hover = rules.find(r => r.selectorText === ".tok:hover::after");
    res = {tokens, items: d.querySelectorAll(".item").length,
           errors: [...d.querySelectorAll(".errors")].map(e => +e.dataset.n),
           hover: hover ? hover.style.content : null,
           fetched: w.performance.getEntriesByType("resource").length};
  } catch (e) { res = {error: String(e)}; }
  document.getElementById("out").textContent = JSON.stringify(res);
});
</script></body></html>
"""


def _rgb(css: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", css)[:3])


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: `make browser` or "
                    "apt-get install chromium")
def test_page_in_headless_chromium(page, tmp_path) -> None:
    import json

    path, rows = page
    harness = path.with_name("harness.html")
    harness.write_text(HARNESS % path.name, encoding="utf-8")
    res = _chromium(f"--user-data-dir={tmp_path / 'profile'}", "--allow-file-access-from-files",
                    "--dump-dom", harness.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(html.unescape(re.search(r'<pre id="out">(.*?)</pre>', res.stdout, re.S)[1]))
    assert "error" not in report, report
    tokens = report["tokens"]
    assert len(tokens) == len(_parse(path).tokens) > 0 and report["items"] == len(rows)
    assert report["errors"] == [len(r["errors"]) for r in rows] and sum(report["errors"]) >= 1
    assert report["fetched"] == 0  # self-contained: nothing loaded besides the page
    assert report["hover"] == "attr(data-tip)"  # the numbers appear on hover
    for tok in tokens:
        assert tok["w"] > 0 and tok["h"] > 0, tok  # laid out, visible
        assert tok["method"] in tok["tip"] and re.search(r"\d", tok["tip"]), tok
        red, green, _ = _rgb(tok["bg"])
        if tok["p"] < 0.4:
            assert red > green, tok  # low scores red
        elif tok["p"] > 0.6:
            assert green > red, tok  # high scores green
        assert (tok["under"] == "solid 3px rgb(204, 0, 0)") == tok["err"], tok
    assert {t["p"] < 0.4 for t in tokens} == {True, False}  # both ends of the scale occur
    shot = tmp_path / "page.png"
    res = _chromium(f"--user-data-dir={tmp_path / 'profile2'}", f"--screenshot={shot}",
                    "--window-size=1000,700", path.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1000, 700)
    assert len(png) > 20_000  # a drawn page, not a blank one


def _parse(path: Path) -> _Spans:
    parser = _Spans()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser
