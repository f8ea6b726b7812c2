"""``index.html`` in a real headless browser: it renders, and it fetches nothing.

Skips (saying why) when no Chromium/Chrome is installed. On Debian/Ubuntu:
``apt-get install chromium``; elsewhere set ``RACECHECK_BROWSER`` to a
Chromium-family binary.

The network check reads Chromium's own net log. The browser makes background
requests of its own (update checks, accounts) even with those features turned
off; they carry the initiator "not an origin", while a request made by the
page carries the page's origin (``null`` for file://). A control page with an
external image proves the check would catch a real fetch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType

import pytest

from racecheck.report import RunRecord, write_reports

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _find_browser() -> str | None:
    configured = os.environ.get("RACECHECK_BROWSER")
    if configured:
        return shutil.which(configured) or (configured if Path(configured).is_file() else None)
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)


def _samples() -> ModuleType:
    """The hand-built records of test_reports.py (loaded by path: tests is no package)."""
    spec = importlib.util.spec_from_file_location(
        "_racecheck_report_samples", Path(__file__).with_name("test_reports.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def browser() -> str:
    found = _find_browser()
    if found is None:
        pytest.skip(
            "no headless browser: install Chromium (Debian: apt-get install chromium) "
            "or set RACECHECK_BROWSER to a Chromium/Chrome binary"
        )
    return found


@pytest.fixture(scope="module")
def records() -> list[RunRecord]:
    samples = _samples()
    return [*samples.sample_records(), samples.hostile_record()]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, records: list[RunRecord]) -> Path:
    out = tmp_path_factory.mktemp("reports")
    return write_reports(records, out, formats=("html",))[0]


@pytest.fixture(scope="module")
def dom(browser: str, page: Path, tmp_path_factory: pytest.TempPathFactory) -> _Dom:
    """The page as the browser built it (``--dump-dom``), parsed."""
    parsed = _Dom()
    tmp = tmp_path_factory.mktemp("dom")
    parsed.feed(_run(browser, tmp, "--dump-dom", url=page.as_uri()).stdout)
    return parsed


def _run(browser: str, tmp: Path, *args: str, url: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    cmd = [browser, *FLAGS, f"--user-data-dir={profile}", *args, url]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{browser} did not finish in 120 s: {' '.join(cmd)}")
    assert done.returncode == 0, done.stderr[-2000:]
    return done


class _Dom(HTMLParser):
    """What the tests need from a DOM: matrix, lanes per picture, scripts, text."""

    def __init__(self) -> None:
        super().__init__()
        self.matrices = 0
        self.lanes: list[int] = []  # per swimlane svg
        self.lane_names: list[list[str]] = []
        self.scripts = 0
        self.text: list[str] = []
        self._in_lane_name = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "table" and "matrix" in classes:
            self.matrices += 1
        elif tag == "svg" and "swimlane" in classes:
            self.lanes.append(0)
            self.lane_names.append([])
        elif tag == "g" and "lane" in classes:
            self.lanes[-1] += 1
        elif tag == "text" and "lane-name" in classes:
            self._in_lane_name = True
            self.lane_names[-1].append("")
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "text":
            self._in_lane_name = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_lane_name:
            self.lane_names[-1][-1] += data


def _page_requests(net_log: Path) -> list[str]:
    """URLs the page itself asked the network for (browser housekeeping excluded)."""
    log = json.loads(net_log.read_text("utf-8"))
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in log["events"]:
        params = event.get("params") or {}
        if event["type"] != start_job or "url" not in params:
            continue
        if params.get("initiator") == "not an origin":  # the browser's own traffic
            continue
        if not params["url"].startswith(("file:", "data:")):
            urls.append(params["url"])
    return urls


def test_dom_shows_the_matrix_and_one_lane_per_actor(dom: _Dom, records: list[RunRecord]) -> None:
    assert dom.matrices == 1
    text = "".join(dom.text)
    for r in records[:-1]:
        assert r.scenario in text and r.variant in text
    traced = [r.trace for r in records if r.trace is not None]
    assert dom.lanes == [len(t.actors) for t in traced]
    assert dom.lane_names[0] == [a.name + (" ✗" if a.id == 1 else "") for a in traced[0].actors]
    assert "AssertionError: 5 != 15" in text
    assert "racecheck replay scenarios/account.py rc1:asyncio:AAEC" in text
    assert "… 140 more steps" in text


def test_hostile_strings_render_as_text(dom: _Dom) -> None:
    assert dom.scripts == 0
    text = "".join(dom.text)
    assert "ValueError: <script>alert(1)</script>" in text
    assert "<img src=x onerror=alert(2)>" in text
    assert dom.lane_names[-1] == ["<b>Task-1</b> · x()", "<script>alert(1)</script> & co ✗"]


def test_nothing_is_fetched_from_the_network(browser: str, page: Path, tmp_path: Path) -> None:
    html = page.read_text("utf-8")
    parser = _Refs()
    parser.feed(html)
    assert parser.external == []
    assert "url(http" not in html and "@import" not in html

    log = tmp_path / "net.json"
    _run(browser, tmp_path, f"--log-net-log={log}", "--dump-dom", url=page.as_uri())
    assert _page_requests(log) == []

    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><img src="https://example.invalid/x.png">', "utf-8")
    control_log = tmp_path / "control-net.json"
    _run(browser, tmp_path, f"--log-net-log={control_log}", "--dump-dom", url=control.as_uri())
    assert _page_requests(control_log) == ["https://example.invalid/x.png"], "check is blind"


class _Refs(HTMLParser):
    """src/href-like attributes that point off the page."""

    def __init__(self) -> None:
        super().__init__()
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "poster", "data", "srcset"):
                ref = (value or "").strip().lower()
                if ref.startswith(("http:", "https:", "//", "ftp:")):
                    self.external.append(f"<{tag} {name}={value}>")


def _png_size_and_colours(png: bytes) -> tuple[int, int, int]:
    """Width, height and a rough count of distinct byte values in the pixel data."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    pos, data = 8, b""
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        if kind == b"IDAT":
            data += png[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(data)))


def test_screenshot_is_drawn(browser: str, page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    _run(browser, tmp_path, f"--screenshot={shot}", "--window-size=1400,1000", url=page.as_uri())
    width, height, colours = _png_size_and_colours(shot.read_bytes())
    assert (width, height) == (1400, 1000)
    assert colours > 64, "the screenshot looks blank"
    keep = os.environ.get("RACECHECK_SCREENSHOT_DIR")
    if keep:  # for people: look at the picture
        shutil.copy(shot, Path(keep) / "report.png")


# ------------------------------------------------- a report written by pytest


class _DevTools:
    """Chromium driven over ``--remote-debugging-pipe`` (fd 3 in, fd 4 out).

    Enough of the DevTools protocol to click like a person does: the page's
    CSP forbids scripts, and a real mouse event on a ``<summary>`` is what
    must open its ``<details>``.
    """

    def __init__(self, browser: str, tmp: Path, url: str) -> None:
        to_browser_r, self._write = os.pipe()
        self._read, from_browser_w = os.pipe()
        os.set_inheritable(to_browser_r, True)
        os.set_inheritable(from_browser_w, True)
        # the child must find them at 3 and 4 (dash cannot name fds past 9)
        trampoline = "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4);"
        trampoline += " os.execv(sys.argv[3], sys.argv[3:])"
        cmd = [
            sys.executable,
            "-c",
            trampoline,
            str(to_browser_r),
            str(from_browser_w),
            browser,
            *FLAGS,
            "--remote-debugging-pipe",
            f"--user-data-dir={tmp / 'profile-devtools'}",
            "--window-size=1200,900",
            url,
        ]
        self.proc = subprocess.Popen(
            cmd,
            pass_fds=(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0
        self.session: str | None = None

    def call(self, method: str, **params: object) -> dict[str, object]:
        self._next += 1
        message: dict[str, object] = {"id": self._next, "method": method, "params": params}
        if self.session is not None and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                result = reply.get("result", {})
                assert isinstance(result, dict)
                return result

    def _receive(self) -> dict[str, object]:
        import select

        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._read], [], [], 60)
            if not ready:
                raise AssertionError("the browser did not answer in 60 s")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise AssertionError("the browser closed its DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        found = json.loads(raw)
        assert isinstance(found, dict)
        return found

    def attach(self, url: str) -> None:
        import time

        deadline = time.monotonic() + 60
        while True:
            targets = self.call("Target.getTargets")["targetInfos"]
            assert isinstance(targets, list)
            pages = [t for t in targets if t.get("type") == "page" and t.get("url") == url]
            if pages:
                break
            assert time.monotonic() < deadline, "no page target"
            time.sleep(0.1)
        attached = self.call("Target.attachToTarget", targetId=pages[0]["targetId"], flatten=True)
        self.session = str(attached["sessionId"])
        # the target shows the URL before its document replaced about:blank
        while self.evaluate("location.href + ' ' + document.readyState") != f"{url} complete":
            assert time.monotonic() < deadline, "the page never finished loading"
            time.sleep(0.1)

    def evaluate(self, expression: str) -> object:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        value = result["result"]
        assert isinstance(value, dict)
        return value.get("value")

    def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def close(self) -> None:
        os.close(self._write)
        os.close(self._read)
        self.proc.kill()
        self.proc.wait(30)


@pytest.fixture(scope="module")
def pytest_page(browser: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """index.html written by a real pytest run with --racecheck-report-dir."""
    spec = importlib.util.spec_from_file_location(
        "_racecheck_plugin_reports", Path(__file__).with_name("test_plugin_reports.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    project = tmp_path_factory.mktemp("pytest-project")
    (project / "test_bank.py").write_text(module.TESTS, "utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    done = subprocess.run(
        [
            "python"
            if not os.environ.get("VIRTUAL_ENV")
            else os.path.join(os.environ["VIRTUAL_ENV"], "bin", "python"),
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--racecheck-report-dir=out",
            "--racecheck-db=none",
            "test_bank.py",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    return project / "out" / "index.html"


def test_pytest_report_renders_with_a_swimlane(
    browser: str, pytest_page: Path, tmp_path: Path
) -> None:
    parsed = _Dom()
    parsed.feed(_run(browser, tmp_path, "--dump-dom", url=pytest_page.as_uri()).stdout)
    assert parsed.matrices == 0
    assert len(parsed.lanes) == 1 and parsed.lanes[0] >= 3
    text = "".join(parsed.text)
    assert "test_one_deposit" in text and "AssertionError" in text
    assert parsed.scripts == 0


def test_pytest_report_traces_expand_on_a_click(
    browser: str, pytest_page: Path, tmp_path: Path
) -> None:
    tools = _DevTools(browser, tmp_path, pytest_page.as_uri())
    try:
        tools.attach(pytest_page.as_uri())
        count = tools.evaluate("document.querySelectorAll('details').length")
        assert isinstance(count, int) and count >= 1
        before = tools.evaluate("document.querySelector('details').open")
        assert before is False
        box = tools.evaluate(
            "(() => { const s = document.querySelector('details > summary');"
            " s.scrollIntoView(); const r = s.getBoundingClientRect();"
            " return [r.x + 5, r.y + r.height / 2]; })()"
        )
        assert isinstance(box, list)
        tools.click(float(box[0]), float(box[1]))
        assert tools.evaluate("document.querySelector('details').open") is True
        height = tools.evaluate("document.querySelector('details pre').offsetHeight")
        assert isinstance(height, int) and height > 50, "the trace text did not show"
        shown = tools.evaluate("document.querySelector('details pre').innerText")
        assert isinstance(shown, str) and "deposit(10)" in shown
    finally:
        tools.close()


def test_pytest_report_fetches_nothing(browser: str, pytest_page: Path, tmp_path: Path) -> None:
    log = tmp_path / "net.json"
    _run(browser, tmp_path, f"--log-net-log={log}", "--dump-dom", url=pytest_page.as_uri())
    assert _page_requests(log) == []
